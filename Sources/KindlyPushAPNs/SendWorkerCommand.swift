internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore

/// `send --redis`: `send` as a ``DocumentCommand``, so that the Redis Streams worker runs it as it
/// runs `seal` or `decrypt`: each entry's document is sent, and the result line (or the error
/// object) is the entry's output, committed once with the worker's script.
///
/// The worker hands over one entry at a time, so each push waits for its answer before the next
/// goes (one round trip per entry, on the one connection the worker keeps); run more workers for
/// more at once. An entry taken over after a worker died is sent again: at least once, as
/// `send --jsonl` after a dropped connection.
struct SendWorkerCommand: DocumentCommand, DocumentProcessor {
    static let name = SendCommand.name
    static let abstract = SendCommand.abstract
    static let options = SendCommand.options

    /// The sender; the worker runs on one thread.
    final class Box: @unchecked Sendable {
        let sender: APNsSender
        init(_ sender: APNsSender) { self.sender = sender }
    }

    let box: Box
    let stream: StreamOptions
    /// `--dead-letter` is given: APNs's permanent refusals go there instead of the results.
    let deadLetters: Bool

    init(sender: APNsSender, deadLetters: Bool) {
        box = Box(sender)
        self.deadLetters = deadLetters
        // One entry at a time: the sender is one HTTP/2 connection, used from this thread only.
        stream = try! StreamOptions(
            ParsedArguments.parse(["--jsonl", "--jobs", "1"], specs: StreamOptions.specs, command: Self.name), command: Self.name)
    }

    /// Never called: `send` makes this command itself (``APNsSendServices``).
    init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        throw CodedError(.io, "'send --redis' runs in \(SiblingBinary.send.name)")
    }

    /// Sends one document and appends its result line (or its error object), without a newline.
    func process(bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(CodedError) -> Completion {
        let sender = box.sender
        sender.submit(bytes)
        var line: [UInt8] = []
        while true {
            sender.takeWritable(into: &line)
            if sender.isIdle { break }
            _ = sender.step(waitingFor: -1, timeout: 200)
        }
        if line.last == 0x0A { line.removeLast() }
        try Self.check(line, deadLetters: deadLetters)
        output += line
        // A result is a success whatever APNs answered; a line's error object names its code.
        guard line.firstRange(of: Array(#""error":{"code":"#.utf8)) != nil else { return .success }
        return .errorObject(.badInput)
    }

    /// What the worker must not commit as the entry's result: a push that reached no server
    /// after the sender's retries (`io`), or that APNs answered 429 or 5xx to after them, is a
    /// transient failure (the entry stays pending and is sent again later: at least once); with
    /// `--dead-letter`, a permanent refusal (4xx other than 410 and 429) goes to the dead letters
    /// with its original document. A 410 is a result: the backend drops the device.
    static func check(_ line: [UInt8], deadLetters: Bool) throws(CodedError) {
        guard let result = try? JSONReader.parse(line) else { return }
        if let error = result["error"], error["code"]?.stringValue == ErrorCode.io.rawValue {
            var failure = CodedError(.io, error["message"]?.stringValue ?? "no answer from APNs")
            failure.isTransient = true
            throw failure
        }
        guard let status = result["status"]?.numberValue?.integerValue(in: 100...599) else { return }
        let reason = result["reason"]?.stringValue.map { " \($0)" } ?? ""
        if status == 429 || status >= 500 {
            var failure = CodedError(.io, "APNs answered \(status)\(reason) after the retries")
            failure.isTransient = true
            throw failure
        }
        if deadLetters, (400..<500).contains(status), status != 410 {
            throw CodedError(.badInput, "APNs refused the push: \(status)\(reason)")
        }
    }

    func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> Completion {
        try JSONWriter.compactBytes(document).withBytes { (bytes) throws(CodedError) in try process(bytes: bytes, into: &output) }
    }
}

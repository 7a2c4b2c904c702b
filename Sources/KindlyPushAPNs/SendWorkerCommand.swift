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
struct SendWorkerCommand: DocumentCommand {
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

    init(sender: APNsSender) {
        box = Box(sender)
        stream = try! StreamOptions(ParsedArguments.parse(["--jsonl"], specs: StreamOptions.specs, command: Self.name), command: Self.name)
    }

    /// Never called: `send` makes this command itself (``APNsSendServices``).
    init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) {
        throw CLIError(.io, "'send --redis' runs in \(SendBinary.name)")
    }

    /// Sends one document and appends its result line (or its error object), without a newline.
    func process(bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(CLIError) -> Completion {
        let sender = box.sender
        sender.submit(bytes)
        var line: [UInt8] = []
        while true {
            sender.takeWritable(into: &line)
            if sender.isIdle { break }
            _ = sender.step(waitingFor: -1, timeout: 200)
        }
        if line.last == 0x0A { line.removeLast() }
        output += line
        // A result is a success whatever APNs answered; a line's error object names its code.
        guard line.firstRange(of: Array(#""error":{"code":"#.utf8)) != nil else { return .success }
        return .errorObject(line.firstRange(of: Array(#""code":"io""#.utf8)) != nil ? .io : .badInput)
    }

    func process(_ document: JSONValue, into output: inout [UInt8]) throws(CLIError) -> Completion {
        try JSONWriter.compactBytes(document).withBytes { (bytes) throws(CLIError) in try process(bytes: bytes, into: &output) }
    }
}

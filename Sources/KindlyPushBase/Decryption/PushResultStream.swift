internal import KindlyPushCore

/// One push's result in a decrypted stream (``KindlyPushDecryption/decryptStream(_:jobs:)``):
/// what happened, and the JSON line `kindly-push decrypt --jsonl` prints for the push, byte for
/// byte (without its newline).
///
/// ```swift
/// for try await result in decryption.decryptStream(pushes, jobs: 2) {
///     switch result.outcome {
///     case .decrypted: forward(result.json)             // the payload's compact JSON
///     case .failed(let failure): log(failure.reason.code)
///     case .badInput(let detail): log(detail)           // not a JSON object, over 64 KiB
///     }
/// }
/// ```
///
/// ``json`` of a decrypted push holds its plaintext payload: it is the caller's to wipe.
public struct PushStreamResult: Sendable, Hashable {
    /// What became of one input document.
    public enum Outcome: Sendable, Hashable {
        /// The push decrypted: ``PushStreamResult/json`` is its payload object, as compact JSON.
        case decrypted
        /// A JSON object that did not decrypt, for one of the reasons of wire format section 7.3
        /// (`not_kindly` for another provider's push).
        case failed(DecryptionFailure)
        /// The document is not a JSON object: not UTF-8, not JSON, empty, another JSON value, or
        /// over 64 KiB. The command's `bad_input`; the detail is its message.
        case badInput(String)
    }

    /// What became of the document.
    public let outcome: Outcome
    /// The line `kindly-push decrypt --jsonl` prints for this document, without its newline: the
    /// payload object, or `{"error":{"code":CODE,"message":TEXT}}`.
    public let json: [UInt8]

    /// A result; for tests and for hosts that build their own results.
    public init(outcome: Outcome, json: [UInt8]) {
        self.outcome = outcome
        self.json = json
    }

    /// The decrypted payload, read from ``json`` (each call reads it again); `nil` unless the
    /// push decrypted.
    public var payload: DecryptedPayload? {
        guard case .decrypted = outcome else { return nil }
        return json.withUnsafeBytes { try? DecryptedPayload(plaintext: $0) }
    }

    /// Why the push did not decrypt; `nil` when it did or when the document was not a JSON object.
    public var failure: DecryptionFailure? {
        guard case .failed(let failure) = outcome else { return nil }
        return failure
    }

    /// The outcome's code: `decrypted`, a reason's code (`not_kindly`, …) or `bad_input`.
    public var code: String {
        switch outcome {
        case .decrypted: return "decrypted"
        case .failed(let failure): return failure.reason.code
        case .badInput: return "bad_input"
        }
    }
}

extension KindlyPushDecryption {
    /// Decrypts a stream of pushes (one JSON document each) on `jobs` threads of its own, and
    /// gives each push's result in input order: the stream engine of `kindly-push decrypt --jsonl`.
    ///
    /// ```swift
    /// let decryption = KindlyPushDecryption(keyring: CachingKeyring(FileKeyring(folder: folder)))
    /// for try await result in decryption.decryptStream(pushes, jobs: 2) {  // pushes: [UInt8] each
    ///     if case .decrypted = result.outcome { try await send(result.json) }
    /// }
    /// ```
    ///
    /// Pushes are taken from `documents` by a task of the stream's own as they come, a bounded
    /// number ahead of the consumer (back-pressure: memory stays flat however long the stream),
    /// and decrypted in batches by the `jobs` threads, never on the concurrency runtime's threads:
    /// a keyring that waits (the Secret Service) blocks only them. Whatever arrived is decrypted
    /// without waiting for a batch to fill, so a slow stream's results come as its pushes do.
    /// One bad push gives its result and the stream goes on; a failure of `documents` itself ends
    /// the stream with that error, after the results of the pushes before it.
    ///
    /// When the consumer stops iterating (or its task is cancelled) the stream ends without
    /// waiting for the keyring: a look-up not answered yet is given up (it goes on on a detached
    /// thread of its own, and its answer is dropped, a key's storage wiped, when it comes; a
    /// look-up that never returns keeps only that thread), the threads skip the pushes they have
    /// not begun and end, every buffer that held a plaintext is zeroed, and the next `next()`
    /// returns `nil`. The bound is the time a thread takes to finish the chunk of at most 16
    /// pushes it holds, each of which then fails at once instead of asking the keyring:
    /// milliseconds, whatever the keyring does (6 to 13 ms measured from `cancel()` to the end of
    /// the consumer's loop with a keyring that blocks 2 s per look-up, which is waited for no
    /// longer). So that this costs nothing per push, the threads ask a ``CachingKeyring``'s
    /// remembered keys and pins directly between its checks, and an in-memory keyring directly;
    /// any other look-up is made on a thread of its own.
    ///
    /// - Parameters:
    ///   - documents: the pushes' JSON texts, one document each (as APNs delivers `userInfo`).
    ///   - jobs: the number of threads that decrypt, at least 1.
    public func decryptStream<Documents: AsyncSequence & Sendable>(
        _ documents: Documents, jobs: Int = 1
    ) -> PushResultStream<Documents> where Documents.Element == [UInt8] {
        PushResultStream(documents, decryption: self, jobs: jobs, lines: false)
    }

    /// Decrypts a stream of bytes read as JSON lines, one push per line, as `kindly-push decrypt
    /// --jsonl` reads its input, on `jobs` threads; each line's result comes in input order. The
    /// bytes come in chunks of any size (a socket's or a file's reads); lines are cut as the
    /// command cuts them (docs/spec/streams.md): every line counts, an empty one included, a last line without a
    /// newline counts, and a line over 64 KiB is `bad_input` without being kept whole.
    ///
    /// ```swift
    /// for try await result in decryption.decryptStream(jsonLines: chunks, jobs: 2) {
    ///     output.append(contentsOf: result.json)
    ///     output.append(0x0A)                              // what the command prints
    /// }
    /// ```
    public func decryptStream<Chunks: AsyncSequence & Sendable>(
        jsonLines chunks: Chunks, jobs: Int = 1
    ) -> PushResultStream<PushLines<Chunks>> where Chunks.Element == [UInt8] {
        PushResultStream(PushLines(chunks), decryption: self, jobs: jobs, lines: true)
    }
}

/// The lines of a stream of byte chunks (without their newlines), as `--jsonl` reads them: every
/// line counts, an empty one included; a last line without a newline counts; the newline that
/// ends the input does not start another. A line over 64 KiB is given cut to 64 KiB and one byte
/// (what ``KindlyPushDecryption/decryptStream(_:jobs:)`` refuses as over 64 KiB), so that memory
/// stays bounded.
public struct PushLines<Chunks: AsyncSequence & Sendable>: AsyncSequence, Sendable where Chunks.Element == [UInt8] {
    /// Each element is one line's bytes.
    public typealias Element = [UInt8]
    /// The chunks' failure.
    public typealias Failure = Chunks.Failure

    let chunks: Chunks

    /// The lines of `chunks`.
    public init(_ chunks: Chunks) {
        self.chunks = chunks
    }

    /// An iterator over the lines.
    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: chunks.makeAsyncIterator())
    }

    /// Cuts the chunks into lines.
    public struct Iterator: AsyncIteratorProtocol {
        /// The chunks' failure.
        public typealias Failure = Chunks.Failure
        var chunks: Chunks.AsyncIterator
        var chunk: [UInt8] = []
        var start = 0
        /// The command's splitter, lines over 64 KiB cut to 64 KiB and one byte.
        var splitter = LineSplitter(maximumLineLength: WireFormat.maximumInputSize, oversized: .cut)
        var line = LineBatchReader.Batch()
        var ended = false

        init(chunks: Chunks.AsyncIterator) {
            self.chunks = chunks
        }

        /// The next line, or `nil` at the end of the input.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(Chunks.Failure) -> [UInt8]? {
            line.bytes.removeAll(keepingCapacity: true)
            line.lines.removeAll(keepingCapacity: true)
            while !ended {
                if start < chunk.count {
                    let ended = chunk.withUnsafeBytes { splitter.takeLine(from: $0, start: &start, into: &line) }
                    if ended { return takeLine() }
                    continue
                }
                guard let next = try await chunks.next(isolation: actor) else {
                    ended = true
                    break
                }
                chunk = next
                start = 0
            }
            return splitter.finish(into: &line) ? takeLine() : nil
        }

        /// The one line in ``line``.
        private func takeLine() -> [UInt8] {
            guard case .text(let range) = line.lines[0] else { return [] }
            return Array(line.bytes[range])
        }

        /// The next line, or `nil` at the end of the input.
        public mutating func next() async throws -> [UInt8]? {
            try await next(isolation: nil)
        }
    }
}

/// The results of ``KindlyPushDecryption/decryptStream(_:jobs:)``, one per input document, in
/// input order. Iterate it once.
public struct PushResultStream<Documents: AsyncSequence & Sendable>: AsyncSequence, Sendable where Documents.Element == [UInt8] {
    /// Each element is one document's result.
    public typealias Element = PushStreamResult
    /// The failure of the documents' sequence, which ends the stream.
    public typealias Failure = Documents.Failure

    let documents: Documents
    let decryption: KindlyPushDecryption
    let jobs: Int
    let lines: Bool

    init(_ documents: Documents, decryption: KindlyPushDecryption, jobs: Int, lines: Bool) {
        precondition(jobs >= 1, "jobs must be at least 1")
        self.documents = documents
        self.decryption = decryption
        self.jobs = jobs
        self.lines = lines
    }

    /// Starts the stream: its reading task and its threads.
    public func makeAsyncIterator() -> Iterator {
        // The threads ask the keyring through the stream's abandonment, which its end gives up.
        let abandonment = LookupAbandonment()
        let threads = KindlyPushDecryption(
            keyring: AbandonableKeyring.wrapping(decryption.keyring, abandonment), pinnedSenderKeys: decryption.pinnedSenderKeys)
        return Iterator(
            engine: PushStreamEngine(
                documents, work: LineEngine.Work(processor: DecryptProcessor(threads), keepsLines: true, lines: lines), jobs: jobs,
                abandonment: abandonment))
    }

    /// Gives the results in input order; when it is dropped, the stream's task and threads end.
    public struct Iterator: AsyncIteratorProtocol {
        /// The failure of the documents' sequence.
        public typealias Failure = Documents.Failure
        let engine: PushStreamEngine<Documents>

        /// The next document's result, or `nil` at the end of the input (or once the task is
        /// cancelled).
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(Documents.Failure)
            -> PushStreamResult?
        {
            try await engine.next(isolation: actor)
        }

        /// The next document's result, or `nil` at the end of the input.
        public mutating func next() async throws -> PushStreamResult? {
            try await engine.next(isolation: nil)
        }
    }
}

extension PushStreamResult {
    /// Said for a line that ends inside its JSON document (`{` alone, as `jq .` writes it). docs/spec/streams.md:
    /// every line still gives its own output line; the lines after it get the error that is theirs.
    package static let spreadDocumentAdvice =
        "a JSON document goes on past the end of its line, but --jsonl reads one document per line: compact pretty-printed JSON first, with jq -c"
}

/// Why an input document is not a JSON object: the `bad_input` message of docs/spec/streams.md.
package struct InputProblem: Error, Sendable {
    package let message: String
    /// The text is the start of a JSON object or array that its end cuts short between two
    /// tokens, as a pretty-printer ends a line: with `lines`, the message is
    /// ``PushStreamResult/spreadDocumentAdvice``.
    package let endsInsideDocument: Bool
}

extension PushDecryptor.Outcome {
    /// For a text that is no JSON object (``notJSON(_:)``, ``notObject(_:)``): the `bad_input`
    /// problem that the command and the stream report for `document`; `nil` for a push.
    package func inputProblem(in document: UnsafeRawBufferPointer, lines: Bool) -> InputProblem? {
        switch self {
        case .decrypted, .failed: return nil
        case .notJSON(let error): return JSONReader.inputProblem(error, in: document, what: "input", lines: lines)
        case .notObject(let kind): return JSONReader.inputProblem(notObject: kind, what: "input")
        }
    }
}

extension JSONReader {
    /// Reads one input document that must be an object, with the strict reader; the failure is
    /// the message the command prints for `bad_input` (`what`: "input", "line", …). With
    /// `lines`, a document that its line's end cuts short gets
    /// ``PushStreamResult/spreadDocumentAdvice``.
    package static func parseInputObject(_ bytes: UnsafeRawBufferPointer, what: String, lines: Bool = false) -> Result<
        JSONValue, InputProblem
    > {
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes)
        } catch {
            return .failure(inputProblem(error, in: bytes, what: what, lines: lines))
        }
        guard case .object = value else { return .failure(inputProblem(notObject: value.kind, what: what)) }
        return .success(value)
    }

    /// The `bad_input` message for `bytes`, which the strict reader refuses with `error` (see
    /// ``parseInputObject(_:what:lines:)``).
    package static func inputProblem(_ error: JSONReadError, in bytes: UnsafeRawBufferPointer, what: String, lines: Bool) -> InputProblem {
        switch error.kind {
        case .invalidUTF8: return InputProblem(message: "the \(what) is not UTF-8 (\(error))", endsInsideDocument: false)
        case .empty: return InputProblem(message: "the \(what) is empty", endsInsideDocument: false)
        case .unexpectedEnd where startsDocument(bytes) && endsBetweenTokens(bytes):
            // `jq .`'s first line, not a line cut inside a name, a string or a number (a partial
            // write), which ends too early as a whole document does.
            return InputProblem(
                message: lines ? PushStreamResult.spreadDocumentAdvice : "the \(what) is not JSON: \(error)", endsInsideDocument: true)
        default: return InputProblem(message: "the \(what) is not JSON: \(error)", endsInsideDocument: false)
        }
    }

    /// The `bad_input` message for a JSON document of type `kind`, not an object.
    package static func inputProblem(notObject kind: JSONKind, what: String) -> InputProblem {
        InputProblem(message: "the \(what) is \(kind.typeName), not a JSON object", endsInsideDocument: false)
    }

    /// Whether the last byte other than blanks is where a pretty-printer ends a line inside a
    /// document: after `{`, `[`, `,` or `:`. A line cut short elsewhere (inside a string, a
    /// number, a name) is a partial write.
    private static func endsBetweenTokens(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let last = bytes.last(where: { !isBlank($0) }) else { return false }
        return [UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: ","), UInt8(ascii: ":")].contains(last)
    }

    /// A space, a tab or a carriage return (a line's newline is not in it).
    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D }

    /// Whether the first byte other than blanks opens an object or an array.
    private static func startsDocument(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let first = bytes.first(where: { !isBlank($0) }) else { return false }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
    }
}

/// A stream's state: the engine's threaded processing, the task that reads the documents, the
/// results of the batch being given. Used by one iterator, so by one task at a time.
final class PushStreamEngine<Documents: AsyncSequence & Sendable>: @unchecked Sendable where Documents.Element == [UInt8] {
    private let processing: ThreadedLines<DecryptProcessor>
    private let channel: DocumentChannel<Documents.Failure>
    private let reader: Task<Void, Never>
    /// The keyring look-ups of the threads, given up when the stream ends.
    private let abandonment: LookupAbandonment
    /// The results of the batch handed over last, given one by one.
    private var results = ResultQueue()
    private var done = false

    init(_ documents: Documents, work: LineEngine.Work<DecryptProcessor>, jobs: Int, abandonment: LookupAbandonment) {
        self.abandonment = abandonment
        processing = ThreadedLines(work, jobs: jobs, keptOutputCapacity: nil)
        let channel = DocumentChannel<Documents.Failure>(
            maximumDocuments: StreamBatching.batchLines * 2, maximumBytes: StreamBatching.batchBytes * 2)
        self.channel = channel
        reader = Task {
            var iterator = documents.makeAsyncIterator()
            do throws(Documents.Failure) {
                while let document = try await iterator.next(isolation: nil) {
                    guard await channel.send(document) else { return }
                }
                channel.finish(.success(()))
            } catch {
                channel.finish(.failure(error))
            }
        }
    }

    deinit { end() }

    /// Stops reading, gives up the keyring look-ups not answered yet (so that no thread waits
    /// for the keyring), stops and joins the threads, zeroes the buffers.
    private func end() {
        guard !done else { return }
        done = true
        channel.close()
        reader.cancel()
        abandonment.abandon()
        processing.cancel()
        results.removeAll()
        processing.finish()
    }

    /// The next result, on the caller's executor (no hop per result: only a batch's wait suspends).
    func next(isolation actor: isolated (any Actor)?) async throws(Documents.Failure) -> PushStreamResult? {
        while !done {
            // A cancelled task gets no more results, not even those of a batch being given.
            if Task.isCancelled {
                end()
                return nil
            }
            if let result = results.next() { return result }
            publishWhatArrived()
            if !processing.isIdle {
                // Cancelled while the threads work (or wait for the keyring): they give up their
                // look-ups and skip what they have not begun, so the batch comes back at once.
                let abandonment = self.abandonment
                _ = await withTaskCancellationHandler {
                    await processing.deliver(to: &results)
                } onCancel: {
                    abandonment.abandon()
                }
                // Keep the threads busy while this batch's results are given.
                publishWhatArrived()
                continue
            }
            let channel = self.channel
            let wait = await withTaskCancellationHandler {
                await channel.waitForDocuments()
            } onCancel: {
                channel.close()
            }
            switch wait {
            case .documents: continue
            case .ended(.success):
                end()
                return nil
            case .ended(.failure(let error)):
                end()
                throw error
            }
        }
        return nil
    }

    /// Fills free slots with the documents that have arrived, without waiting for more.
    private func publishWhatArrived() {
        let channel = self.channel
        while processing.hasRoom {
            var taken = false
            processing.take { batch in
                channel.take(into: &batch, maximumLines: StreamBatching.batchLines, maximumBytes: StreamBatching.batchBytes)
                taken = !batch.lines.isEmpty
            }
            guard taken else { return }
        }
    }

    /// The stream's sink: each line's result of a batch, given one by one.
    struct ResultQueue: LineSink {
        private var results: [PushStreamResult] = []
        private var head = 0

        mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool {
            for (range, outcome) in chunk.lines {
                results.append(PushStreamResult(outcome: PushStreamResult.Outcome(outcome), json: Array(chunk.bytes[range])))
            }
            return true
        }

        mutating func flush() -> Bool { true }

        /// The next result taken, or nil when every one was given (the storage is kept).
        mutating func next() -> PushStreamResult? {
            guard head < results.count else {
                results.removeAll(keepingCapacity: true)
                head = 0
                return nil
            }
            head += 1
            return results[head - 1]
        }

        mutating func removeAll() {
            results.removeAll()
            head = 0
        }
    }
}

extension PushStreamResult.Outcome {
    /// The outcome of a line of the line engine: decrypted, the push's failure, or `bad_input`.
    init(_ line: LineEngine.LineOutcome) {
        if line.error == nil {
            self = .decrypted
        } else if let failure = line.failure {
            self = .failed(failure)
        } else {
            self = .badInput(line.message)
        }
    }
}

/// The documents read ahead by a stream's task, bounded in number and bytes: the task waits
/// (suspended) while it is full, the consumer while it is empty.
final class DocumentChannel<Failure: Error>: Sendable {
    private struct State: Sendable {
        var documents: [[UInt8]] = []
        var head = 0
        var bytes = 0
        var end: Result<Void, Failure>?
        var closed = false
        var consumer: UnsafeContinuation<Void, Never>?
        var producer: UnsafeContinuation<Void, Never>?
        var count: Int { documents.count - head }
    }

    enum Wait {
        case documents
        case ended(Result<Void, Failure>)
    }

    private let state = Locked(State())
    private let maximumDocuments: Int
    private let maximumBytes: Int

    init(maximumDocuments: Int, maximumBytes: Int) {
        self.maximumDocuments = maximumDocuments
        self.maximumBytes = maximumBytes
    }

    /// Adds a document, waiting while the channel is full; false once the consumer is gone.
    func send(_ document: [UInt8]) async -> Bool {
        while true {
            let (accepted, consumer) = state.withLock { state -> (Bool?, UnsafeContinuation<Void, Never>?) in
                if state.closed { return (false, nil) }
                guard state.count < maximumDocuments, state.count == 0 || state.bytes + document.count <= maximumBytes else {
                    return (nil, nil)
                }
                state.documents.append(document)
                state.bytes += document.count
                defer { state.consumer = nil }
                return (true, state.consumer)
            }
            consumer?.resume()
            if let accepted { return accepted }
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let wait = state.withLock { state -> Bool in
                    guard !state.closed, state.count >= maximumDocuments || state.bytes + document.count > maximumBytes else {
                        return false
                    }
                    state.producer = continuation
                    return true
                }
                if !wait { continuation.resume() }
            }
        }
    }

    /// The documents have ended (or failed).
    func finish(_ end: Result<Void, Failure>) {
        let consumer = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            state.end = end
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume()
    }

    /// The consumer is gone: the documents are dropped and the task stops waiting.
    func close() {
        let (producer, consumer) = state.withLock { state in
            state.closed = true
            state.documents = []
            state.head = 0
            state.bytes = 0
            defer {
                state.producer = nil
                state.consumer = nil
            }
            return (state.producer, state.consumer)
        }
        producer?.resume()
        consumer?.resume()
    }

    /// Moves the documents that have arrived into `batch` (cleared first), up to the bounds.
    func take(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) {
        batch.bytes.removeAll(keepingCapacity: true)
        batch.lines.removeAll(keepingCapacity: true)
        let producer = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            while state.count > 0, batch.lines.count < maximumLines, batch.bytes.count < maximumBytes {
                let document = state.documents[state.head]
                state.documents[state.head] = []
                state.head += 1
                state.bytes -= document.count
                if document.count > WireFormat.maximumInputSize {
                    batch.lines.append(.oversized)
                } else {
                    let start = batch.bytes.count
                    batch.bytes.append(contentsOf: document)
                    batch.lines.append(.text(start..<batch.bytes.count))
                }
            }
            if state.head == state.documents.count {
                state.documents.removeAll(keepingCapacity: true)
                state.head = 0
            }
            defer { state.producer = nil }
            return state.producer
        }
        producer?.resume()
    }

    /// Waits until a document has arrived or the documents have ended.
    func waitForDocuments() async -> Wait {
        while true {
            let now = state.withLock { state -> Wait? in
                if state.count > 0 { return .documents }
                if let end = state.end { return .ended(end) }
                if state.closed { return .ended(.success(())) }
                return nil
            }
            if let now { return now }
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let wait = state.withLock { state -> Bool in
                    guard state.count == 0, state.end == nil, !state.closed else { return false }
                    state.consumer = continuation
                    return true
                }
                if !wait { continuation.resume() }
            }
        }
    }
}

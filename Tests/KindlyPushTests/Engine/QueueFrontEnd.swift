import KindlyPushBase
import KindlyPushCore

/// The worked example of docs/architecture.md, "Adding a front end": a message queue's
/// messages in, each one's outcome acknowledged, on the engine. The source hands over what the
/// queue holds, the sink records each message's output line and code, and the engine
/// (`LineEngine.drive`) does the rest: threads, order, limits, errors. The library's parity
/// matrix runs it for every wire version and mode.
struct QueueSource: LineSource {
    /// The messages not handed over yet, one document each.
    var messages: [[UInt8]]

    /// A queue in memory never waits.
    mutating func wouldBlock() -> Bool { false }

    mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool {
        batch.bytes.removeAll(keepingCapacity: true)
        batch.lines.removeAll(keepingCapacity: true)
        while let message = messages.first, batch.lines.count < maximumLines, batch.bytes.count < maximumBytes {
            messages.removeFirst()
            // A message over the engine's limit is its line's bad_input, not the queue's failure.
            guard message.count <= WireFormat.maximumInputSize else {
                batch.lines.append(.oversized)
                continue
            }
            let start = batch.bytes.count
            batch.bytes += message
            batch.lines.append(.text(start..<batch.bytes.count))
        }
        return !batch.lines.isEmpty
    }
}

/// Each message's acknowledgement: its output line (the payload, or the error object that is
/// its outcome) and its code, in the queue's order.
struct AcknowledgingSink: LineSink {
    var acknowledged: [(code: String, line: String)] = []

    mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool {
        for (range, outcome) in chunk.lines {
            acknowledged.append((outcome.error?.rawValue ?? "ok", String(decoding: chunk.bytes[range], as: UTF8.self)))
        }
        return true
    }

    /// Nothing is gathered: every acknowledgement is made as it comes.
    mutating func flush() -> Bool { true }
}

/// The front end: `messages` decrypted with `decryption` on `jobs` threads.
func acknowledge(_ messages: [[UInt8]], decryption: KindlyPushDecryption, jobs: Int) -> [(code: String, line: String)] {
    var source = QueueSource(messages: messages)
    var sink = AcknowledgingSink()
    let processing = ThreadedLines(LineEngine.Work(processor: DecryptProcessor(decryption), keepsLines: true), jobs: jobs)
    defer { processing.finish() }
    _ = LineEngine.drive(source: &source, processing: processing, sink: &sink)
    return sink.acknowledged
}

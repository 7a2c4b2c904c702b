internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushSend

#if canImport(Glibc)
    import Glibc
#endif

/// `send --jsonl`'s input: standard input and files (``ReaderSource``), never waited for in
/// `read`: with nothing to read yet it hands over no lines, and the gateway waits for the input
/// in its `poll` (``GatewayLines/wait(input:timeout:)``), serving its connections meanwhile. A
/// stop signal (SIGTERM, SIGINT) ends the input: what was read is still answered.
struct SendLineSource: ~Copyable, LineSource {
    /// The inputs, read once per batch, with standard input's readiness when it is one of them.
    var reader: ReaderSource
    /// What ``wouldBlock()`` found last, for the ``next(into:maximumLines:maximumBytes:)`` that
    /// follows it (input that came since is read by the next one): one `poll` for both.
    var blocked: Bool?

    mutating func wouldBlock() -> Bool {
        let blocks = !StopSignals.requested && reader.wouldBlock()
        blocked = blocks
        return blocks
    }

    mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool {
        let blocks = blocked ?? reader.wouldBlock()
        blocked = nil
        guard !StopSignals.requested, !blocks else {
            batch.lines.removeAll(keepingCapacity: true)
            return !StopSignals.requested
        }
        return try reader.next(into: &batch, maximumLines: maximumLines, maximumBytes: maximumBytes)
    }

    var readiness: Int32? { reader.readiness }
}

/// `send --jsonl`'s output: the result lines, in input order. Results answered one at a time are
/// gathered for up to ``SendTiming/resultGathering`` milliseconds (``flushDeadline``), or up to
/// 64 KiB, and written at once; ``GatewayLines`` has them written as soon as nothing is left to
/// answer or a stop signal came.
struct ResultSink: ~Copyable, LineSink {
    /// Standard output or `--output`'s file.
    var stdout: OutputStream
    /// When the results not written yet began to gather (monotonic milliseconds); `nil`: none wait.
    var gatheredSince: Int?
    /// The bytes of the results not written yet.
    var gathered = 0
    /// No write has failed: once one has, nothing more is taken.
    var open = true

    mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool {
        guard open else { return false }
        guard !chunk.bytes.isEmpty else { return true }
        stdout.write(chunk.bytes)
        gathered += chunk.bytes.count
        if gatheredSince == nil { gatheredSince = MonotonicClock.milliseconds() }
        return gathered >= 1 << 16 ? flush() : true
    }

    mutating func flush() -> Bool {
        guard open, gatheredSince != nil else { return open }
        gatheredSince = nil
        gathered = 0
        open = stdout.flush()
        return open
    }

    var flushDeadline: Int? { gatheredSince.map { $0 + SendTiming.resultGathering } }
}

/// The one document of a single `send` as a source: one line, its whole text, then the end.
struct DocumentSource: ~Copyable, LineSource {
    /// The document until it is handed over.
    var document: [UInt8]?

    mutating func wouldBlock() -> Bool { false }

    mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool {
        batch.lines.removeAll(keepingCapacity: true)
        if let document = document.take() {
            batch.bytes = document
            batch.lines.append(.text(0..<batch.bytes.count))
        }
        return false
    }
}

/// A single `send`'s output: its one result line (with its newline) and what became of the push.
struct ResultLine: ~Copyable, LineSink {
    /// The result line, newline included.
    var bytes: [UInt8] = []
    /// What became of the push; `nil` until it is answered.
    var outcome: LineEngine.LineOutcome?

    mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool {
        if let line = chunk.lines.first {
            bytes = chunk.bytes
            outcome = line.outcome
        }
        return true
    }

    mutating func flush() -> Bool { true }
}

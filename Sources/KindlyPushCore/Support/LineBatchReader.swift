#if canImport(Glibc)
    import Glibc
#endif

/// Splits a stream into lines for `--jsonl` (cli.md), in batches, with flat memory: a line over
/// the limit is not buffered whole, only marked oversized and skipped to its end.
///
/// Every line counts, an empty one included; a final line without a newline counts; the newline
/// that ends the input does not start another. Public so that the fuzz targets reach it.
package struct LineBatchReader: ~Copyable {
    /// One input line of a batch.
    package enum Line: Sendable, Equatable {
        /// The line's bytes in ``Batch/bytes``, without its newline.
        case text(Range<Int>)
        /// The line was longer than the limit; its content was dropped.
        case oversized
    }

    /// Lines and the arena that holds their bytes.
    package struct Batch: Sendable {
        package var bytes: [UInt8] = []
        package var lines: [Line] = []

        package init() {}
    }

    /// Why the stream could not be read: `read(2)` failed with ``errorNumber``.
    package struct ReadError: Error, Sendable, Equatable, CustomStringConvertible {
        package let errorNumber: Int32

        package var description: String { String(cString: strerror(errorNumber)) }
    }

    private let descriptor: Int32
    private let maximumLineLength: Int
    private var chunk: [UInt8]
    private var chunkStart = 0
    private var chunkEnd = 0
    private var endOfInput = false
    /// The current line's bytes so far, when it spans chunks.
    private var pending: [UInt8] = []
    private var pendingOversized = false
    private var pendingStarted = false

    /// A reader of `descriptor` (not closed by the reader) whose lines over `maximumLineLength`
    /// bytes are oversized, reading `chunkSize` bytes at a time.
    package init(descriptor: Int32 = STDIN_FILENO, maximumLineLength: Int, chunkSize: Int = 1 << 16) {
        precondition(chunkSize > 0, "the chunk size must be positive")
        self.descriptor = descriptor
        self.maximumLineLength = maximumLineLength
        self.chunk = [UInt8](repeating: 0, count: chunkSize)
    }

    /// Reads up to `maximumLines` lines into `batch` (cleared first), stopping early once the
    /// batch holds `maximumBytes` bytes. An empty batch means the input has ended.
    package mutating func nextBatch(into batch: inout Batch, maximumLines: Int, maximumBytes: Int = .max) throws(ReadError) {
        batch.bytes.removeAll(keepingCapacity: true)
        batch.lines.removeAll(keepingCapacity: true)
        while batch.lines.count < maximumLines, batch.bytes.count < maximumBytes {
            if chunkStart == chunkEnd {
                if endOfInput { break }
                try refill()
                if chunkStart == chunkEnd {
                    // End of input: a final line without a newline still counts.
                    if pendingStarted { finishLine(into: &batch) }
                    break
                }
            }
            let newline = chunk.withUnsafeBytes { raw -> Int? in
                let start = raw.baseAddress! + chunkStart
                guard let found = memchr(start, 0x0A, chunkEnd - chunkStart) else { return nil }
                return chunkStart + (UnsafeRawPointer(found) - UnsafeRawPointer(start))
            }
            if let newline, !pendingStarted {
                // The whole line is in the chunk: straight into the batch.
                if newline - chunkStart > maximumLineLength {
                    batch.lines.append(.oversized)
                } else {
                    let start = batch.bytes.count
                    batch.bytes.append(contentsOf: chunk[chunkStart..<newline])
                    batch.lines.append(.text(start..<batch.bytes.count))
                }
                chunkStart = newline + 1
                continue
            }
            let end = newline ?? chunkEnd
            appendToPending(chunkStart..<end)
            chunkStart = newline.map { $0 + 1 } ?? chunkEnd
            if newline != nil { finishLine(into: &batch) }
        }
    }

    private mutating func appendToPending(_ range: Range<Int>) {
        pendingStarted = true
        guard !pendingOversized else { return }
        if pending.count + range.count > maximumLineLength {
            pendingOversized = true
            pending.removeAll(keepingCapacity: true)
            return
        }
        pending.append(contentsOf: chunk[range])
    }

    private mutating func finishLine(into batch: inout Batch) {
        if pendingOversized {
            batch.lines.append(.oversized)
        } else {
            let start = batch.bytes.count
            batch.bytes.append(contentsOf: pending)
            batch.lines.append(.text(start..<batch.bytes.count))
        }
        pending.removeAll(keepingCapacity: true)
        pendingOversized = false
        pendingStarted = false
    }

    /// Zeroes the reader's buffers (what it read last may be a plaintext, for `seal`).
    package mutating func wipe() {
        chunk.wipeCapacity()
        pending.wipeCapacity()
    }

    private mutating func refill() throws(ReadError) {
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { throw ReadError(errorNumber: errno) }
            chunkStart = 0
            chunkEnd = count
            if count == 0 { endOfInput = true }
            return
        }
    }
}

#if canImport(Glibc)
    import Glibc
#endif

/// Splits a stream into lines for `--jsonl` (docs/spec/streams.md), in batches, with flat memory: a line over
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

    /// The streams read one after the other, as one (`cat` of several files).
    private let descriptors: [Int32]
    private var current = 0
    private var descriptor: Int32 { descriptors[current] }
    private var chunk: [UInt8]
    private var chunkStart = 0
    private var chunkEnd = 0
    private var endOfInput = false
    private var splitter: LineSplitter
    /// The bytes read so far, of every stream (for a progress line's share of a known size).
    package private(set) var bytesRead = 0

    /// A reader of `descriptor` (not closed by the reader) whose lines over `maximumLineLength`
    /// bytes are oversized, reading `chunkSize` bytes at a time.
    package init(descriptor: Int32 = STDIN_FILENO, maximumLineLength: Int, chunkSize: Int = 1 << 16) {
        self.init(descriptors: [descriptor], maximumLineLength: maximumLineLength, chunkSize: chunkSize)
    }

    /// A reader of several descriptors in turn, as one stream: the end of one is not the end of a
    /// line (a last line without a newline continues into the next), as `cat` joins files.
    package init(descriptors: [Int32], maximumLineLength: Int, chunkSize: Int = 1 << 16) {
        precondition(chunkSize > 0, "the chunk size must be positive")
        precondition(!descriptors.isEmpty, "there must be a descriptor to read")
        self.descriptors = descriptors
        self.splitter = LineSplitter(maximumLineLength: maximumLineLength)
        self.chunk = [UInt8](repeating: 0, count: chunkSize)
    }

    /// Whether the input has ended and every line has been returned.
    package var isAtEnd: Bool { endOfInput && chunkStart == chunkEnd && !splitter.hasPartialLine }

    /// Whether the next read would wait: nothing is buffered, the input has not ended, and the
    /// descriptor has nothing to read right now (`poll` with no timeout). A live filter writes
    /// what it has before such a read, so that a result appears as soon as its line has.
    package func inputWouldBlock() -> Bool {
        guard chunkStart == chunkEnd, !endOfInput else { return false }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        // An error or hang-up is not "would block": the read then reports it or the end.
        return (try? valueOrErrno { poll(&entry, 1, 0) }) == 0
    }

    /// Reads up to `maximumLines` lines into `batch` (cleared first), stopping early once the
    /// batch holds `maximumBytes` bytes. An empty batch means the input has ended.
    ///
    /// With `maximumReads` (a live stream, read when `poll` says so), the call reads at most that
    /// many times and returns the whole lines it has, possibly none: then an empty batch means
    /// the input has ended only when ``isAtEnd`` says so. A failed `read(2)` throws its ``Errno``.
    ///
    /// With `live`, a batch that holds at least one line ends as soon as the next read would
    /// wait (``inputWouldBlock()``): the lines that arrived are handed over at once, and only an
    /// empty batch waits for input. A stream at full speed never waits, so its batches stay full.
    package mutating func nextBatch(
        into batch: inout Batch, maximumLines: Int, maximumBytes: Int = .max, maximumReads: Int = .max, live: Bool = false
    ) throws(Errno) {
        batch.bytes.removeAll(keepingCapacity: true)
        batch.lines.removeAll(keepingCapacity: true)
        var reads = 0
        while batch.lines.count < maximumLines, batch.bytes.count < maximumBytes {
            if chunkStart == chunkEnd {
                if endOfInput || reads == maximumReads { break }
                if live, !batch.lines.isEmpty, inputWouldBlock() { break }
                reads += 1
                try refill()
                if chunkStart == chunkEnd {
                    // End of input: a final line without a newline still counts.
                    splitter.finish(into: &batch)
                    break
                }
            }
            chunk.withUnsafeBytes { raw in
                _ = splitter.takeLine(from: UnsafeRawBufferPointer(rebasing: raw[..<chunkEnd]), start: &chunkStart, into: &batch)
            }
        }
    }

    /// Zeroes the reader's buffers (what it read last may be a plaintext, for `seal`).
    package mutating func wipe() {
        chunk.wipeCapacity()
        splitter.wipe()
    }

    private mutating func refill() throws(Errno) {
        while true {
            let source = FileDescriptor(rawValue: descriptor)
            let count = try chunk.withMutableBytes { (raw) throws(Errno) in try source.read(into: raw) }
            if count == 0, current + 1 < descriptors.count {
                current += 1
                continue
            }
            chunkStart = 0
            chunkEnd = count
            bytesRead += count
            if count == 0 { endOfInput = true }
            return
        }
    }
}

import KindlyPush

#if canImport(Glibc)
    import Glibc
#endif

/// Reading pushes from standard input: one document, or one document per line (`--jsonl`).
enum StandardInput {
    /// The limit of cli.md: a document (or a line) over 64 KiB is `bad_input`.
    static let maximumDocumentSize = WireFormat.maximumInputSize

    /// Reads all of standard input as one document, refusing more than 64 KiB without
    /// reading further than one byte past the limit.
    static func readDocument(descriptor: Int32 = STDIN_FILENO) throws(CLIError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: maximumDocumentSize + 1)
        var length = 0
        while length < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + length, $0.count - length) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { throw CLIError(.io, "cannot read standard input: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            length += count
        }
        guard length <= maximumDocumentSize else {
            throw CLIError(.badInput, "the input is over 64 KiB")
        }
        bytes.removeSubrange(length...)
        return bytes
    }

    /// Reads one JSON document that must be an object, with the strict reader.
    static func parseObject(_ bytes: UnsafeRawBufferPointer, what: String = "input") throws(CLIError) -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes)
        } catch {
            switch error.kind {
            case .invalidUTF8: throw CLIError(.badInput, "the \(what) is not UTF-8 (\(error))")
            case .empty: throw CLIError(.badInput, "the \(what) is empty")
            default: throw CLIError(.badInput, "the \(what) is not JSON: \(error)")
            }
        }
        guard case .object = value else {
            throw CLIError(.badInput, "the \(what) is \(value.typeName), not a JSON object")
        }
        return value
    }
}

/// Splits standard input into lines for `--jsonl`, in batches, with flat memory: a line over
/// 64 KiB is not buffered whole, only marked oversized and skipped to its end.
struct LineBatchReader: ~Copyable {
    /// One input line of a batch.
    enum Line: Sendable {
        /// The line's bytes in ``Batch/bytes``, without its newline.
        case text(Range<Int>)
        /// The line was longer than the limit; its content was dropped.
        case oversized
    }

    /// Lines and the arena that holds their bytes.
    struct Batch: Sendable {
        var bytes: [UInt8] = []
        var lines: [Line] = []
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

    init(descriptor: Int32 = STDIN_FILENO, maximumLineLength: Int = StandardInput.maximumDocumentSize, chunkSize: Int = 1 << 16) {
        self.descriptor = descriptor
        self.maximumLineLength = maximumLineLength
        self.chunk = [UInt8](repeating: 0, count: chunkSize)
    }

    /// Reads up to `maximumLines` lines into `batch` (cleared first), stopping early once the
    /// batch holds `maximumBytes` bytes. An empty batch means the input has ended.
    mutating func nextBatch(into batch: inout Batch, maximumLines: Int, maximumBytes: Int = .max) throws(CLIError) {
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

    private mutating func refill() throws(CLIError) {
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { throw CLIError(.io, "cannot read standard input: \(String(cString: strerror(errno)))") }
            chunkStart = 0
            chunkEnd = count
            if count == 0 { endOfInput = true }
            return
        }
    }
}

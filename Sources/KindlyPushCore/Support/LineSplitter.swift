#if canImport(Glibc)
    import Glibc
#endif

/// Cuts a stream's bytes into lines, as `--jsonl` reads them (docs/spec/streams.md): every line
/// counts, an empty one included; a last line without a newline counts (``finish(into:)``); the
/// newline that ends the input does not start another. The one splitter of every source: standard
/// input and files (``LineBatchReader``), `notify --follow`'s file or FIFO, and the library's
/// async chunks (`PushLines`). Memory stays bounded: a line over the limit is never held whole.
package struct LineSplitter {
    /// What becomes of a line over ``maximumLineLength`` bytes.
    package enum Oversized: Sendable {
        /// Its bytes are dropped; it is a ``LineBatchReader/Line/oversized`` line.
        case marked
        /// It is given cut to ``maximumLineLength`` + 1 bytes, which its reader refuses as over the
        /// limit (the public `PushLines` says so).
        case cut
    }

    package let maximumLineLength: Int
    private let oversized: Oversized
    /// The current line's bytes so far, when it spans chunks.
    private var pending: [UInt8] = []
    private var pendingOversized = false
    /// Whether a line has begun and not ended (its bytes are in hand).
    package private(set) var hasPartialLine = false
    /// The bytes in hand of the line begun (none of an oversized line that is marked).
    package var partialLineCount: Int { pending.count }
    /// Whether the line begun is over the limit already.
    package var isInOversizedLine: Bool { pendingOversized }

    package init(maximumLineLength: Int, oversized: Oversized = .marked) {
        self.maximumLineLength = maximumLineLength
        self.oversized = oversized
    }

    /// Takes the next line of `bytes` from `start` into `batch` and moves `start` past it:
    /// `true` when a line ended (the batch's last line is it). `false` when `bytes` ended first:
    /// what they held of the line is kept for the next call, and `start` is at their end.
    package mutating func takeLine(from bytes: UnsafeRawBufferPointer, start: inout Int, into batch: inout LineBatchReader.Batch) -> Bool {
        let end = bytes.count
        guard start < end else { return false }
        let from = bytes.baseAddress! + start
        let newline = memchr(from, 0x0A, end - start).map { start + (UnsafeRawPointer($0) - from) }
        if let newline, !hasPartialLine {
            // The whole line is in these bytes: straight into the batch.
            append(UnsafeRawBufferPointer(rebasing: bytes[start..<newline]), to: &batch, over: newline - start > maximumLineLength)
            start = newline + 1
            return true
        }
        keep(UnsafeRawBufferPointer(rebasing: bytes[start..<(newline ?? end)]))
        start = newline.map { $0 + 1 } ?? end
        guard newline != nil else { return false }
        finishPending(into: &batch)
        return true
    }

    /// The end of the input: the line without a newline, if one began, into `batch` (`true`).
    @discardableResult
    package mutating func finish(into batch: inout LineBatchReader.Batch) -> Bool {
        guard hasPartialLine else { return false }
        finishPending(into: &batch)
        return true
    }

    /// Forgets the line begun (its input was truncated, to be read again from its start).
    package mutating func discardPartialLine() {
        pending.removeAll(keepingCapacity: true)
        pendingOversized = false
        hasPartialLine = false
    }

    /// Zeroes what the splitter holds (a line may be a plaintext, for `seal`).
    package mutating func wipe() {
        pending.wipeCapacity()
    }

    private mutating func keep(_ bytes: UnsafeRawBufferPointer) {
        hasPartialLine = true
        guard !pendingOversized else { return }
        if pending.count + bytes.count > maximumLineLength {
            pendingOversized = true
            if oversized == .cut {
                pending.append(contentsOf: bytes.prefix(maximumLineLength + 1 - pending.count))
            } else {
                pending.removeAll(keepingCapacity: true)
            }
            return
        }
        pending.append(contentsOf: bytes)
    }

    private mutating func finishPending(into batch: inout LineBatchReader.Batch) {
        pending.withUnsafeBytes { append($0, to: &batch, over: pendingOversized) }
        pending.removeAll(keepingCapacity: true)
        pendingOversized = false
        hasPartialLine = false
    }

    private func append(_ line: UnsafeRawBufferPointer, to batch: inout LineBatchReader.Batch, over: Bool) {
        if over, oversized == .marked {
            batch.lines.append(.oversized)
            return
        }
        let start = batch.bytes.count
        batch.bytes.append(contentsOf: over ? line.prefix(maximumLineLength + 1) : line[...])
        batch.lines.append(.text(start..<batch.bytes.count))
    }
}

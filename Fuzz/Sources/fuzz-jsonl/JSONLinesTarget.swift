import FuzzSupport
import KindlyPush
import KindlyPushCore

/// The `--jsonl` line splitter (`LineBatchReader`) reading a real file descriptor.
///
/// The first three input bytes choose the line limit, the read size and the batch size (0xFF:
/// the command's own values), so that lines cross chunk and batch boundaries and hit the limit;
/// the rest is the stream. Invariants, from docs/spec/streams.md's counting rule: one line per
/// newline-separated segment (a final segment without a newline counts, the newline that ends
/// the input starts no other, an empty input has no line); a segment over the limit is
/// oversized and every other line has exactly the segment's bytes; a batch is full unless it is
/// the last, the arena holds only its lines' bytes, and after the end every batch is empty.
enum JSONLinesTarget {
    static let file = MemoryFile(name: "fuzz-jsonl")

    static func check(_ input: UnsafeRawBufferPointer) {
        var maximumLineLength = WireFormat.maximumInputSize
        var chunkSize = 1 << 16
        var maximumLines = 64
        var stream = input
        if input.count >= 3 {
            if input[0] != 0xFF { maximumLineLength = Int(input[0]) % 80 }
            if input[1] != 0xFF { chunkSize = 1 + Int(input[1]) % 96 }
            if input[2] != 0xFF { maximumLines = 1 + Int(input[2]) % 16 }
            stream = UnsafeRawBufferPointer(rebasing: input[3...])
        }

        // docs/spec/streams.md's rule, computed directly.
        var segments = stream.split(separator: 0x0A, omittingEmptySubsequences: false).map { Array($0) }
        if stream.last == 0x0A || stream.isEmpty { segments.removeLast() }

        file.reset(to: stream)
        var reader = LineBatchReader(descriptor: file.descriptor, maximumLineLength: maximumLineLength, chunkSize: chunkSize)
        var batch = LineBatchReader.Batch()
        var lineCount = 0
        var ended = false
        for _ in 0...(segments.count + 2) {
            do {
                try reader.nextBatch(into: &batch, maximumLines: maximumLines)
            } catch {
                fail("reading the memory file failed: \(error)")
            }
            if ended {
                require(batch.lines.isEmpty && batch.bytes.isEmpty, "a batch after the end of input")
                continue
            }
            require(batch.lines.count <= maximumLines, "a batch of \(batch.lines.count) lines, the maximum is \(maximumLines)")
            var arenaLength = 0
            for line in batch.lines {
                require(lineCount < segments.count, "more lines than the \(segments.count) segments of the input")
                let segment = segments[lineCount]
                switch line {
                case .oversized:
                    require(segment.count > maximumLineLength, "line \(lineCount) (\(segment.count) bytes) is marked oversized")
                case .text(let range):
                    require(segment.count <= maximumLineLength, "line \(lineCount) (\(segment.count) bytes) is not marked oversized")
                    require(range.lowerBound == arenaLength, "line \(lineCount) does not follow the previous one in the arena")
                    require(batch.bytes[range].elementsEqual(segment), "line \(lineCount) has other bytes than its segment")
                    arenaLength = range.upperBound
                }
                lineCount += 1
            }
            require(batch.bytes.count == arenaLength, "the arena holds \(batch.bytes.count) bytes for \(arenaLength) bytes of lines")
            if batch.lines.count < maximumLines {
                // Only the last batch is short: the input has ended.
                require(lineCount == segments.count, "a short batch after \(lineCount) of \(segments.count) lines")
                ended = true
            }
        }
        require(ended, "the reader never reported the end of input")
        require(lineCount == segments.count, "\(lineCount) lines for \(segments.count) segments")
    }
}

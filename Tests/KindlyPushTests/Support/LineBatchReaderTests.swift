import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("The --jsonl line splitter", .offThePool)
struct LineBatchReaderTests {
    /// Every line of `input` read through a pipe, with small limits so that lines cross reads.
    func lines(of input: String, maximumLineLength: Int = 5, chunkSize: Int = 3, maximumLines: Int = 2) throws -> [String?] {
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(Data(input.utf8))
        try pipe.fileHandleForWriting.close()
        var reader = LineBatchReader(
            descriptor: pipe.fileHandleForReading.fileDescriptor, maximumLineLength: maximumLineLength, chunkSize: chunkSize)
        var batch = LineBatchReader.Batch()
        var lines: [String?] = []
        while true {
            try reader.nextBatch(into: &batch, maximumLines: maximumLines)
            if batch.lines.isEmpty { break }
            #expect(batch.lines.count <= maximumLines)
            for line in batch.lines {
                switch line {
                case .text(let range): lines.append(String(decoding: batch.bytes[range], as: UTF8.self))
                case .oversized: lines.append(nil)
                }
            }
        }
        return lines
    }

    @Test("one line per newline-separated segment, as streams.md counts them; nil for an oversized one")
    func counting() throws {
        #expect(try lines(of: "") == [])
        #expect(try lines(of: "\n") == [""])
        #expect(try lines(of: "a") == ["a"])
        #expect(try lines(of: "a\n") == ["a"])
        #expect(try lines(of: "a\n\nbc\n") == ["a", "", "bc"])
        #expect(try lines(of: "12345\n123456\nx") == ["12345", nil, "x"])
        #expect(try lines(of: "1234567890123\n\n") == [nil, ""])
        #expect(try lines(of: "ab\r\n \n", maximumLines: 1) == ["ab\r", " "])
    }
}

@Suite("The line splitter of a live stream (notify --jsonl)", .offThePool)
struct LiveLineBatchReaderTests {
    @Test("with maximumReads 1 a call never blocks for more: whole lines now, a partial line when it ends, the end once")
    func oneReadAtATime() throws {
        let pipe = Pipe()
        var reader = LineBatchReader(descriptor: pipe.fileHandleForReading.fileDescriptor, maximumLineLength: 8, chunkSize: 64)
        var batch = LineBatchReader.Batch()
        func read() throws -> [String] {
            try reader.nextBatch(into: &batch, maximumLines: .max, maximumReads: 1)
            return batch.lines.map { line in
                guard case .text(let range) = line else { return "<oversized>" }
                return String(decoding: batch.bytes[range], as: UTF8.self)
            }
        }
        pipe.fileHandleForWriting.write(Data("one\ntw".utf8))
        #expect(try read() == ["one"])
        let endedEarly = reader.isAtEnd
        #expect(!endedEarly)
        pipe.fileHandleForWriting.write(Data("o\nthree\n".utf8))
        #expect(try read() == ["two", "three"])
        pipe.fileHandleForWriting.write(Data("0123456789\nlast".utf8))
        #expect(try read() == ["<oversized>"])
        try pipe.fileHandleForWriting.close()
        #expect(try read() == ["last"])
        let ended = reader.isAtEnd
        #expect(ended)
    }
}

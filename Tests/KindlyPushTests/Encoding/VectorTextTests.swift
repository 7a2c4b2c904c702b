import CVectorText
import Testing

/// The vector loops of CVectorText against references that share nothing with them: the
/// standard library's UTF-8 decoder, Foundation's base64 decoder, and plain byte tests. Every
/// byte value is tried at every place of a block, so that each entry of their lookup tables is
/// read; random texts of mixed scripts and lengths take them through block ends and stops.
/// (On x86-64 the SSE2, SSSE3 and, where the CPU has it, AVX2 forms run: texts of two 32-byte
/// blocks take the AVX2 loops across their lanes and blocks. The forms a CPU without AVX2 runs,
/// the SSE2 ASCII loop, SSSE3 alone, and the portable ASCII scan other CPUs run, are checked
/// beside them by the same references.)
@Suite("Vector text loops", .offThePool)
struct VectorTextTests {
    static func isPlainASCII(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x80 && byte != 0x22 && byte != 0x5C
    }

    /// The scan as the CPU runs it, the SSE2 loop past the first sixteen bytes (when those are
    /// plain, its precondition; `nil` otherwise or off x86-64) and the portable scan.
    static func asciiPrefix(_ bytes: [UInt8]) -> (vector: Int, narrow: Int?, portable: Int) {
        bytes.withUnsafeBufferPointer { buffer in
            var narrow: Int?
            #if arch(x86_64)
                if buffer.count > 16, buffer.prefix(16).allSatisfy(isPlainASCII) {
                    narrow = kp_plain_ascii_prefix_sse2(buffer.baseAddress, buffer.count, 16)
                }
            #endif
            return (
                kp_plain_ascii_prefix(buffer.baseAddress, buffer.count), narrow,
                kp_plain_ascii_prefix_portable(buffer.baseAddress, buffer.count)
            )
        }
    }

    @Test("the ASCII scan stops at the first byte a string must look at, every byte at every place")
    func asciiEveryByte() {
        // Past 48 bytes the scan goes on out of line, 32 bytes at a time where the CPU has AVX2.
        // The three scans run on one buffer whose byte at `place` takes every value in turn (the
        // loop's own work kept small: it is most of this test's time in a sanitized build).
        var mismatches = Mismatches()
        for count in [1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 80, 81, 111, 112, 113] {
            var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: count)
            bytes.withUnsafeMutableBufferPointer { buffer in
                let base = UnsafePointer(buffer.baseAddress)
                for place in 0..<count {
                    for value in 0...255 {
                        let byte = UInt8(value)
                        buffer[place] = byte
                        let expected = Self.isPlainASCII(byte) ? count : place
                        let vector = kp_plain_ascii_prefix(base, count)
                        let portable = kp_plain_ascii_prefix_portable(base, count)
                        mismatches.check(vector == expected, "count \(count), byte \(value) at \(place): \(vector)")
                        mismatches.check(portable == expected, "portable: count \(count), byte \(value) at \(place)")
                        #if arch(x86_64)
                            // The SSE2 loop past the first sixteen bytes, when those are plain (its precondition).
                            if count > 16, place >= 16 || Self.isPlainASCII(byte) {
                                let narrow = kp_plain_ascii_prefix_sse2(base, count, 16)
                                mismatches.check(narrow == expected, "SSE2: count \(count), byte \(value) at \(place)")
                            }
                        #endif
                    }
                    buffer[place] = UInt8(ascii: "a")
                }
            }
        }
        mismatches.expectNone()
    }

    @Test("the ASCII scan on random texts")
    func asciiRandom() {
        var generator = SeededGenerator(seed: 41)
        var mismatches = Mismatches()
        for _ in 0..<20000 {
            let count = Int.random(in: 0...150, using: &generator)
            let bytes = (0..<count).map { _ in
                Int.random(in: 0..<20, using: &generator) == 0
                    ? UInt8.random(in: 0...255, using: &generator) : UInt8.random(in: 0x20...0x7E, using: &generator)
            }
            let expected = bytes.firstIndex { !Self.isPlainASCII($0) } ?? count
            let (vector, narrow, portable) = Self.asciiPrefix(bytes)
            mismatches.check(vector == expected, "\(bytes)")
            mismatches.check(narrow == nil || narrow == expected, "SSE2: \(bytes)")
            mismatches.check(portable == expected, "portable: \(bytes)")
        }
        mismatches.expectNone()
    }

    /// The longest prefix that is well-formed UTF-8 with no `"`, `\` or control character, by the
    /// standard library's decoder, and where each of its characters starts.
    static func plainTextReference(_ bytes: [UInt8]) -> (length: Int, starts: Set<Int>) {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        var starts: Set<Int> = [0]
        while case .scalarValue(let scalar) = decoder.decode(&iterator) {
            if scalar.value < 0x20 || scalar == "\"" || scalar == "\\" { break }
            offset += UTF8.width(scalar)
            starts.insert(offset)
        }
        return (offset, starts)
    }

    /// The scan as the CPU runs it and with SSSE3 alone (`narrow`) must each answer as below.
    static func checkTextPrefix(_ bytes: [UInt8], _ mismatches: inout Mismatches, _ note: @autoclosure () -> String) {
        checkTextPrefix(bytes, narrow: false, &mismatches, note())
        checkTextPrefix(bytes, narrow: true, &mismatches, "SSSE3 alone: " + note())
    }

    static func checkTextPrefix(_ bytes: [UInt8], narrow: Bool, _ mismatches: inout Mismatches, _ note: @autoclosure () -> String) {
        let found = bytes.withUnsafeBufferPointer {
            narrow ? kp_plain_text_prefix_narrow($0.baseAddress, $0.count) : kp_plain_text_prefix($0.baseAddress, $0.count)
        }
        let (length, starts) = plainTextReference(bytes)
        mismatches.check(found <= length && starts.contains(found), "\(note()): \(found) past the plain text (\(length))")
        guard bytes.count >= 16 else {
            mismatches.check(found == 0, "\(note())")
            return
        }
        // Every block wholly inside the plain text is taken; a stop the blocks reach is found
        // exactly, when the text before it is plain.
        let wholeBlocks = length / 16 * 16
        if length < bytes.count, bytes[length] < 0x20 || bytes[length] == 0x22 || bytes[length] == 0x5C, wholeBlocks + 16 <= bytes.count {
            mismatches.check(found == length, "\(note()): stop at \(length) not found (\(found))")
        } else {
            mismatches.check(found >= wholeBlocks - 4, "\(note()): \(found) short of \(wholeBlocks)")
        }
    }

    /// Texts of two blocks with two-, three- and four-byte characters across the blocks' and the
    /// lanes' boundaries: two 16-byte blocks (bytes 14 to 17), and two 32-byte blocks (bytes 14
    /// to 17 and 46 to 49 across the lanes, 31 to 33 across the blocks) for the AVX2 loop.
    static let twoBlocks = ["abcdefghijklé😀€mnopqrstuvw", "abcdefghijklé😀€mnopqrstuv漢wxyzABCDEFGH😀IJKLMNOPQRSTUV"]

    @Test("the UTF-8 scan: every byte value at every place of two blocks", arguments: twoBlocks)
    func textEveryByte(_ text: String) {
        let base = Array(text.utf8)
        #expect(base.count == 32 || base.count == 64)
        var mismatches = Mismatches()
        var bytes = base + Array("\"}".utf8)
        for place in base.indices {
            for value in 0...255 {
                bytes[place] = UInt8(value)
                Self.checkTextPrefix(bytes, &mismatches, "byte \(value) at \(place) of \(base.count)")
            }
            bytes[place] = base[place]
        }
        mismatches.expectNone()
    }

    @Test("the UTF-8 scan on random texts of mixed scripts")
    func textRandom() {
        var generator = SeededGenerator(seed: 43)
        let pieces: [[UInt8]] = ["a", "Z", " ", "é", "ß", "€", "漢", "😀", "\u{FFFF}", "\u{10FFFF}", "\"", "\\", "\n", "\u{7F}"].map {
            Array($0.utf8)
        }
        // Bytes no well-formed text has, or only in another place: overlong leads, surrogates,
        // leads past U+10FFFF, lone continuations, truncations.
        let wrong: [[UInt8]] = [
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5], [0xFF], [0x80],
            [0xE2, 0x82], [0xF0, 0x9F, 0x98],
        ]
        var mismatches = Mismatches()
        for _ in 0..<30000 {
            var bytes: [UInt8] = []
            let characters = Int.random(in: 0...40, using: &generator)
            for _ in 0..<characters {
                if Int.random(in: 0..<60, using: &generator) == 0 {
                    bytes += wrong.randomElement(using: &generator)!
                } else if Int.random(in: 0..<30, using: &generator) == 0 {
                    bytes += pieces[10...].randomElement(using: &generator)!
                } else {
                    bytes += pieces[..<10].randomElement(using: &generator)!
                }
            }
            Self.checkTextPrefix(bytes, &mismatches, "\(bytes)")
        }
        mismatches.expectNone()
    }

    static let urlAlphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Runs the base64 blocks (with SSSE3 alone when `narrow`) on `text` into an output of `room`
    /// bytes with sixteen guard bytes after it; checks nothing past `room` was written, and
    /// returns the characters decoded, the bytes and the alphabet flags.
    static func decodeBlocks(_ text: [UInt8], room: Int, narrow: Bool = false, _ mismatches: inout Mismatches) -> (
        consumed: Int, bytes: [UInt8], alphabets: UInt32
    ) {
        var output = [UInt8](repeating: 0xA5, count: room + 16)
        var alphabets: UInt32 = 0xFFFF
        let consumed = text.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer {
                narrow
                    ? kp_base64_decode_blocks_narrow(input.baseAddress, input.count, $0.baseAddress, room, &alphabets)
                    : kp_base64_decode_blocks(input.baseAddress, input.count, $0.baseAddress, room, &alphabets)
            }
        }
        mismatches.check(output[room...].allSatisfy { $0 == 0xA5 }, "\(text): written at or past \(room)")
        return (consumed, Array(output[0..<(consumed / 4 * 3)]), alphabets)
    }

    /// Two blocks of 16 characters (room for their stores: 28 bytes), and two of 32 (48 bytes)
    /// for the AVX2 loop.
    /// Two blocks of 16 characters, and two of 32 for the AVX2 loop, each with the room sixteen-
    /// byte stores need (28 and 52 bytes); each as the CPU runs it and with SSSE3 alone.
    @Test(
        "base64url blocks: every byte value at every place of two blocks",
        arguments: [(32, 28, false), (64, 52, false), (32, 28, true), (64, 52, true)])
    func base64EveryByte(_ count: Int, _ room: Int, _ narrow: Bool) {
        var generator = SeededGenerator(seed: UInt64(47 + count))
        let alphabet = Array(Self.urlAlphabet)
        var mismatches = Mismatches()
        for place in 0..<count {
            // A random text per place, its byte at `place` taking every value: the texts a
            // value outside the alphabet stops share their prefix, so Foundation decodes each
            // prefix once.
            var text = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            var references: [[UInt8]: [UInt8]?] = [:]
            for value in 0...255 {
                text[place] = UInt8(value)
                let (consumed, bytes, alphabets) = Self.decodeBlocks(text, room: room, narrow: narrow, &mismatches)
                let note = { "byte \(value) at \(place) of \(count)\(narrow ? ", SSSE3 alone" : "")" }
                // Every sixteen characters before the one not taken, whatever the loop.
                let expected = Self.urlAlphabet.contains(UInt8(value)) ? count : place / 16 * 16
                mismatches.check(consumed == expected, "\(note()): \(consumed)")
                let decoded = Array(text[0..<consumed])
                let reference: [UInt8]?
                if let known = references[decoded] {
                    reference = known
                } else {
                    reference = FastPathTests.foundationCanonicalDecoding(decoded)
                    references[decoded] = .some(reference)
                }
                mismatches.check(bytes == reference, note())
                mismatches.check(alphabets == (decoded.contains(0x2D) || decoded.contains(0x5F) ? 2 : 0), note())
            }
        }
        mismatches.expectNone()
    }

    @Test("base64url blocks stop where the output has no room for a whole store")
    func base64Room() {
        let text = Array(String(repeating: "QUJD", count: 16).utf8)  // 64 characters, 48 bytes
        var mismatches = Mismatches()
        defer { mismatches.expectNone() }
        for room in 0...60 {
            // With sixteen-character blocks alone, block n stores sixteen bytes from 12n: exactly
            // that many blocks. A thirty-two-character block stores its twenty-four bytes alone,
            // so the loops together may go further, never past the room.
            let sixteens = room < 16 ? 0 : min(4, (room - 16) / 12 + 1)
            let (narrow, narrowBytes, _) = Self.decodeBlocks(text, room: room, narrow: true, &mismatches)
            #expect(narrow == sixteens * 16, "SSSE3 alone, room \(room): \(narrow)")
            #expect(narrowBytes == Array(repeating: Array("ABC".utf8), count: narrow / 4).flatMap { $0 }, "SSSE3 alone, room \(room)")
            let (consumed, bytes, _) = Self.decodeBlocks(text, room: room, &mismatches)
            #expect(consumed % 16 == 0 && consumed >= sixteens * 16 && consumed / 4 * 3 <= room, "room \(room): \(consumed)")
            #expect(bytes == Array(repeating: Array("ABC".utf8), count: consumed / 4).flatMap { $0 }, "room \(room)")
        }
    }
}

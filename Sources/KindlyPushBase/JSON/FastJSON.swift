internal import KindlyPushCore

/// An allocation-free reader for the hot paths (`decrypt --jsonl`, `seal --jsonl`), for the
/// shapes of document they see almost always.
///
/// It applies the rules of ``JSONReader`` (RFC 8259, strict UTF-8, no control characters in
/// strings, numbers by ``JSONReader/numberLength(in:at:)``) but handles only a subset of valid
/// texts. Every method returns `nil` or `false` both for invalid text and for valid text outside
/// that subset; the caller then takes the general path, which decides and explains. So this
/// reader never decides that a text is wrong, and it must never accept a text that
/// ``JSONReader`` refuses (`FastPathTests` checks the two against each other).
///
/// Two modes:
/// - **document** (`compact == false`): whitespace between tokens is allowed; strings must hold
///   no escape at all (the envelope fields are base64, the rest of a push is only stepped over).
/// - **compact** (`compact == true`): no whitespace anywhere, and a string's escapes must be
///   exactly those ``JSONWriter`` writes, so that the text is already what the writer would
///   write for the value it holds, byte for byte.
package struct FastJSON {
    package let base: UnsafePointer<UInt8>
    package let end: Int
    package let compact: Bool
    package var index = 0

    /// Nesting deeper than this is left to the general reader.
    package static let maximumDepth = 32

    package init(_ bytes: UnsafeRawBufferPointer, compact: Bool) {
        // An empty buffer may have no address; any valid pointer will do for zero bytes.
        self.base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(bitPattern: 1)!
        self.end = bytes.count
        self.compact = compact
    }

    package var atEnd: Bool { index >= end }

    /// The byte at `index`, or 0 (never a valid token start) past the end.
    package var current: UInt8 { index < end ? base[index] : 0 }

    package mutating func skipWhitespace() {
        guard !compact else { return }
        while index < end {
            switch base[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Steps over `byte` when it comes next (after whitespace in document mode).
    package mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < end, base[index] == byte else { return false }
        index += 1
        return true
    }

    /// Whether the text at `range` is exactly `name` (ASCII).
    package func text(_ range: Range<Int>, is name: StaticString) -> Bool {
        guard range.count == name.utf8CodeUnitCount else { return false }
        return memcmp(base + range.lowerBound, name.utf8Start, range.count) == 0
    }

    /// Whether the texts at two ranges are the same bytes.
    package func same(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        a.count == b.count && memcmp(base + a.lowerBound, base + b.lowerBound, a.count) == 0
    }

    // MARK: Strings

    /// A string at `index` (its opening quote, after whitespace in document mode): the range of
    /// its text between the quotes. `nil` for invalid text, for any escape in document mode, and
    /// for an escape ``JSONWriter`` would not write in compact mode.
    package mutating func string() -> Range<Int>? {
        skipWhitespace()
        guard index < end, base[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        let start = index
        skipPlainASCII()
        while index < end {
            let byte = base[index]
            if byte >= 0x80 {
                // Non-ASCII text tends to come in runs: stay in this loop for it.
                guard utf8Sequence() else { return nil }
            } else if byte == UInt8(ascii: "\"") {
                index += 1
                return start..<(index - 1)
            } else if byte == UInt8(ascii: "\\") {
                guard compact, canonicalEscape() else { return nil }
            } else if byte < 0x20 {
                return nil
            } else {
                index += 1
                skipPlainASCII()
            }
        }
        return nil
    }

    /// A string at `index` whose text the caller decodes as base64 before trusting it: only its
    /// closing quote is looked for here. Base64 decoding takes nothing but base64 characters, so
    /// no escape, control character or non-ASCII byte can get through; until the caller has
    /// decoded it, the range is not known to be a valid JSON string.
    package mutating func base64String() -> Range<Int>? {
        skipWhitespace()
        guard index < end, base[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        guard let quote = memchr(base + index, 0x22, end - index) else { return nil }
        let start = index
        index = UnsafeRawPointer(quote) - UnsafeRawPointer(base) + 1
        return start..<(index - 1)
    }

    /// Steps over ASCII bytes that need no attention in a string (not `"`, `\`, a control
    /// character or a non-ASCII byte), eight at a time.
    @inline(__always)
    private mutating func skipPlainASCII() {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while index + 8 <= end {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            let quotes = word ^ (ones &* 0x22)
            let backslashes = word ^ (ones &* 0x5C)
            // Per byte: high bit set, below 0x20, equal to `"`, equal to `\` (exact as a whole).
            let stop =
                (word & highs) | ((word &- ones &* 0x20) & ~word & highs)
                | ((quotes &- ones) & ~quotes & highs) | ((backslashes &- ones) & ~backslashes & highs)
            if stop != 0 {
                index += (stop.trailingZeroBitCount >> 3)
                return
            }
            index += 8
        }
    }

    /// An escape as ``JSONWriter/writeString(_:to:)`` writes it: `\"`, `\\`, `\n`, `\r`, `\t`,
    /// `\b`, `\f`, or `\u00XX` (lowercase hex) for another control character.
    private mutating func canonicalEscape() -> Bool {
        guard index + 1 < end else { return false }
        switch base[index + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"),
            UInt8(ascii: "b"), UInt8(ascii: "f"):
            index += 2
            return true
        case UInt8(ascii: "u"):
            guard index + 6 <= end, base[index + 2] == UInt8(ascii: "0"), base[index + 3] == UInt8(ascii: "0") else { return false }
            func nibble(_ byte: UInt8) -> UInt8? {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
                default: return nil
                }
            }
            guard let high = nibble(base[index + 4]), let low = nibble(base[index + 5]) else { return false }
            let value = high << 4 | low
            // Below 0x20, and not one the writer gives a short form.
            guard value < 0x20, ![0x08, 0x09, 0x0A, 0x0C, 0x0D].contains(value) else { return false }
            index += 6
            return true
        default:
            return false
        }
    }

    /// One well-formed multi-byte UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
    /// nothing above U+10FFFF), as the standard library's validation accepts.
    @inline(__always)
    private mutating func utf8Sequence() -> Bool {
        let lead = base[index]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            high = 0x9F
        case 0xF0:
            length = 4
            low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            high = 0x8F
        default: return false
        }
        guard index + length <= end else { return false }
        let second = base[index + 1]
        guard second >= low, second <= high else { return false }
        for offset in 2..<length where base[index + offset] & 0xC0 != 0x80 { return false }
        index += length
        return true
    }

    // MARK: Other values

    /// A number at `index`: the range of its literal.
    package mutating func number() -> Range<Int>? {
        skipWhitespace()
        let bytes = UnsafeRawBufferPointer(start: base, count: end)
        guard let length = JSONReader.numberLength(in: bytes, at: index) else { return nil }
        index += length
        return (index - length)..<index
    }

    /// Steps over one value of any type, checking it. Objects are not checked for duplicate
    /// names: callers that need that check use this only for scalars.
    package mutating func skipValue(depth: Int = 0) -> Bool {
        skipWhitespace()
        guard index < end else { return false }
        switch base[index] {
        case UInt8(ascii: "\""): return string() != nil
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number() != nil
        case UInt8(ascii: "{"):
            guard depth < FastJSON.maximumDepth else { return false }
            index += 1
            if consume(UInt8(ascii: "}")) { return true }
            repeat {
                guard string() != nil, consume(UInt8(ascii: ":")), skipValue(depth: depth + 1) else { return false }
            } while consume(UInt8(ascii: ","))
            return consume(UInt8(ascii: "}"))
        case UInt8(ascii: "["):
            guard depth < FastJSON.maximumDepth else { return false }
            index += 1
            if consume(UInt8(ascii: "]")) { return true }
            repeat {
                guard skipValue(depth: depth + 1) else { return false }
            } while consume(UInt8(ascii: ","))
            return consume(UInt8(ascii: "]"))
        default: return false
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count <= end, memcmp(base + index, word.utf8Start, count) == 0 else { return false }
        index += count
        return true
    }

    // MARK: Objects

    /// The member names seen so far in one object, for the duplicate rule. Objects with more
    /// members than this are left to the general reader.
    package struct Names {
        static let capacity = 16
        private var ranges:
            (
                Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>,
                Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>
            ) = (0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0)
        private var count = 0

        /// Adds `name`; false when it was there already or there is no room.
        package mutating func insert(_ name: Range<Int>, in reader: FastJSON) -> Bool {
            guard count < Names.capacity else { return false }
            let known = withUnsafeBytes(of: &ranges) { raw in
                let seen = raw.bindMemory(to: Range<Int>.self)
                for index in 0..<count where reader.same(seen[index], name) { return true }
                return false
            }
            guard !known else { return false }
            withUnsafeMutableBytes(of: &ranges) { raw in raw.bindMemory(to: Range<Int>.self)[count] = name }
            count += 1
            return true
        }
    }
}

#if canImport(Glibc)
    import Glibc
#endif

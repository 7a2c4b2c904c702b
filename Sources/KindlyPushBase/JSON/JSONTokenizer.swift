internal import CVectorText
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The one scanner of JSON text (RFC 8259): ``JSONReader`` builds its tree on it, and the hot
/// paths (`decrypt --jsonl`, `seal --jsonl`) read documents with it without building one.
///
/// **Strict** methods (`throws(JSONReadError)`) apply every rule of the strict reader: whitespace,
/// literals, numbers by ``JSONReader/numberLength(in:at:)``, strings with every escape (surrogate
/// pairs included) and strict UTF-8, nesting at most ``JSONReader/maximumDepth`` levels, no
/// byte-order mark, nothing after the document. They throw the first mistake in the text, with
/// the kind and offset ``JSONReader/parse(_:)-(UnsafeRawBufferPointer)`` reports, because that
/// reader is these methods and a tree builder. A value can be stepped over with full checking
/// and no tree (``skipValue()``), and a string's text comes back as its raw range, or decoded
/// into a caller's buffer when it holds escapes (``string(_:)``).
///
/// **Compact** methods (`compact == true`; they return `nil` or `false`) say whether a text is
/// already exactly what ``JSONWriter`` writes: no whitespace anywhere, and a string's escapes
/// exactly those the writer writes. They stop at the first byte that is not so, which says
/// nothing about validity (the strict methods decide that).
package struct JSONTokenizer {
    package let base: UnsafePointer<UInt8>
    package let end: Int
    package let compact: Bool
    package var index = 0
    /// Objects and arrays open at `index`.
    package var depth = 0

    package init(_ bytes: UnsafeRawBufferPointer, compact: Bool = false) {
        // An empty buffer may have no address; any valid pointer will do for zero bytes.
        self.base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(bitPattern: 1)!
        self.end = bytes.count
        self.compact = compact
    }

    package var atEnd: Bool { index >= end }

    /// The byte at `index`, or 0 (never a valid token start) past the end.
    package var current: UInt8 { index < end ? base[index] : 0 }

    /// The bytes at `range`.
    package func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count)
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

    /// Steps over whitespace (none in compact mode, where there must be none). Inline as far as
    /// the first byte, which is seldom whitespace.
    @inline(__always)
    package mutating func skipWhitespace() {
        guard !compact, index < end, base[index] <= 0x20 else { return }
        skipWhitespaceRun()
    }

    private mutating func skipWhitespaceRun() {
        while index < end {
            switch base[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    // MARK: Strict reading

    package func failure(_ kind: JSONReadError.Kind) -> JSONReadError {
        JSONReadError(kind: kind, offset: index)
    }

    /// The start of a document: no byte-order mark, whitespace, then a value.
    package mutating func beginDocument() throws(JSONReadError) {
        if end >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF { throw failure(.byteOrderMark) }
        skipWhitespace()
        guard index < end else { throw failure(.empty) }
    }

    /// The end of a document: whitespace, then nothing.
    package mutating func endDocument() throws(JSONReadError) {
        skipWhitespace()
        guard index == end else { throw failure(.trailingContent) }
    }

    /// The first byte of the value at `index` (after whitespace), which the caller reads with
    /// the method for it; a byte that starts no value is for ``skipValue()`` to refuse.
    package mutating func valueStart() throws(JSONReadError) -> UInt8 {
        skipWhitespace()
        guard index < end else { throw failure(.unexpectedEnd) }
        return base[index]
    }

    /// Opens the object at `index` (its `{`); `false` when it is empty (and then closed already).
    package mutating func beginObject() throws(JSONReadError) -> Bool {
        try begin(closing: UInt8(ascii: "}"))
    }

    /// A member's name and its `:`; the value comes next (after whitespace). Escapes are decoded
    /// into `decoded` (see ``string(_:)``).
    package mutating func memberName<Sink: JSONStringSink>(_ decoded: inout Sink) throws(JSONReadError) -> JSONStringToken {
        skipWhitespace()
        guard index < end else { throw failure(.unexpectedEnd) }
        guard base[index] == UInt8(ascii: "\"") else { throw failure(.unexpectedByte) }
        let name = try string(&decoded)
        skipWhitespace()
        guard index < end else { throw failure(.unexpectedEnd) }
        guard base[index] == UInt8(ascii: ":") else { throw failure(.unexpectedByte) }
        index += 1
        skipWhitespace()
        return name
    }

    /// After a member's value: `true` for a `,` (another member follows), `false` for the `}`.
    package mutating func nextMember() throws(JSONReadError) -> Bool {
        try next(closing: UInt8(ascii: "}"))
    }

    /// Opens the array at `index` (its `[`); `false` when it is empty (and then closed already).
    package mutating func beginArray() throws(JSONReadError) -> Bool {
        try begin(closing: UInt8(ascii: "]"))
    }

    private mutating func begin(closing: UInt8) throws(JSONReadError) -> Bool {
        try enter()
        index += 1
        skipWhitespace()
        if index < end, base[index] == closing {
            index += 1
            depth -= 1
            return false
        }
        return true
    }

    /// After an element: `true` for a `,` (another element follows), `false` for the `]`.
    package mutating func nextElement() throws(JSONReadError) -> Bool {
        try next(closing: UInt8(ascii: "]"))
    }

    private mutating func next(closing: UInt8) throws(JSONReadError) -> Bool {
        skipWhitespace()
        guard index < end else { throw failure(.unexpectedEnd) }
        if base[index] == UInt8(ascii: ",") {
            index += 1
            return true
        }
        guard base[index] == closing else { throw failure(.unexpectedByte) }
        index += 1
        depth -= 1
        return false
    }

    private mutating func enter() throws(JSONReadError) {
        depth += 1
        guard depth <= JSONReader.maximumDepth else { throw failure(.tooDeep) }
    }

    /// The literal `word` (`true`, `false`, `null`) at `index`.
    package mutating func literal(_ word: StaticString) throws(JSONReadError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= end else { throw failure(.unexpectedEnd) }
        for offset in 0..<count where base[index + offset] != word.utf8Start[offset] {
            index += offset
            throw failure(.unexpectedByte)
        }
        index += count
    }

    /// The number at `index`: the range of its literal.
    package mutating func number() throws(JSONReadError) -> Range<Int> {
        guard let length = JSONReader.numberLength(in: UnsafeRawBufferPointer(start: base, count: end), at: index) else {
            throw failure(.invalidNumber)
        }
        index += length
        return (index - length)..<index
    }

    /// Steps over the value at `index` (after whitespace), checking all of it; no tree is built
    /// and no string decoded. Duplicate member names are no mistake of JSON's: not looked for.
    package mutating func skipValue() throws(JSONReadError) {
        var discard = JSONStringDiscard()
        switch try valueStart() {
        case UInt8(ascii: "{"):
            guard try beginObject() else { return }
            repeat {
                _ = try memberName(&discard)
                try skipValue()
            } while try nextMember()
        case UInt8(ascii: "["):
            guard try beginArray() else { return }
            repeat { try skipValue() } while try nextElement()
        case UInt8(ascii: "\""): _ = try string(&discard)
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try number()
        default: throw failure(.unexpectedByte)
        }
    }

    /// The string at `index` (its opening quote): the range of its raw text between the quotes.
    /// When it holds an escape, its decoded UTF-8 is appended to `decoded` (the raw text alone
    /// otherwise is the string). Mistakes come as the strict reader has always reported them:
    /// a control character, a bad escape, an unpaired surrogate or the end of the text where it
    /// stands; invalid UTF-8 once the string is read, at its first bad byte (at the string's
    /// start for a string with escapes).
    package mutating func string<Sink: JSONStringSink>(_ decoded: inout Sink) throws(JSONReadError) -> JSONStringToken {
        index += 1  // opening quote
        let start = index
        var valid = true
        while true {
            skipPlainASCII()
            guard index < end else { throw failure(.unexpectedEnd) }
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                if !valid {
                    index = start + JSONTokenizer.firstInvalidUTF8Offset(bytes(start..<index))
                    throw failure(.invalidUTF8)
                }
                index += 1
                return JSONStringToken(raw: start..<(index - 1), hasEscapes: false)
            } else if byte == UInt8(ascii: "\\") {
                break
            } else if byte < 0x20 {
                throw failure(.controlCharacterInString)
            } else if byte >= 0x80 {
                if !utf8Sequence() {
                    valid = false
                    index += 1
                }
            } else {
                index += 1
            }
        }
        decoded.append(bytes(start..<index))
        while index < end {
            let byte = base[index]
            switch byte {
            case UInt8(ascii: "\""):
                if !valid {
                    index = start
                    throw failure(.invalidUTF8)
                }
                index += 1
                return JSONStringToken(raw: start..<(index - 1), hasEscapes: true)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < end else { throw failure(.unexpectedEnd) }
                let escape = base[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): decoded.append(0x22)
                case UInt8(ascii: "\\"): decoded.append(0x5C)
                case UInt8(ascii: "/"): decoded.append(0x2F)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try unicodeEscape()
                    UTF8.encode(scalar) { decoded.append($0) }
                default:
                    index -= 1
                    throw failure(.invalidEscape)
                }
            default:
                if byte < 0x20 { throw failure(.controlCharacterInString) }
                let from = index
                if byte < 0x80 {
                    index += 1
                    skipPlainASCII()
                } else if !utf8Sequence() {
                    valid = false
                    index += 1
                }
                decoded.append(bytes(from..<index))
            }
        }
        throw failure(.unexpectedEnd)
    }

    /// The four hex digits after `\u` (and a second escape for a surrogate pair).
    private mutating func unicodeEscape() throws(JSONReadError) -> Unicode.Scalar {
        let escapeStart = index - 2
        let first = try hex4()
        switch first {
        case 0xD800...0xDBFF:
            guard index + 1 < end, base[index] == UInt8(ascii: "\\"), base[index + 1] == UInt8(ascii: "u") else {
                index = escapeStart
                throw failure(.unpairedSurrogate)
            }
            index += 2
            let second = try hex4()
            guard (0xDC00...0xDFFF).contains(second) else {
                index = escapeStart
                throw failure(.unpairedSurrogate)
            }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
        case 0xDC00...0xDFFF:
            index = escapeStart
            throw failure(.unpairedSurrogate)
        default:
            return Unicode.Scalar(first)!
        }
    }

    private mutating func hex4() throws(JSONReadError) -> UInt32 {
        guard index + 4 <= end else { throw failure(.unexpectedEnd) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = base[index]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: throw failure(.invalidEscape)
            }
            value = value << 4 | UInt32(nibble)
            index += 1
        }
        return value
    }

    /// The offset of the first byte of `raw` that is not part of well-formed UTF-8.
    package static func firstInvalidUTF8Offset(_ raw: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        var iterator = raw.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput, .error: return offset
            }
        }
    }

    // MARK: Shared scanning

    /// Steps over ASCII bytes that need no attention in a string (not `"`, `\`, a control
    /// character or a non-ASCII byte), sixteen at a time (`kp_plain_ascii_prefix`).
    @inline(__always)
    private mutating func skipPlainASCII() {
        index += kp_plain_ascii_prefix(base + index, end - index)
    }

    /// One well-formed multi-byte UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
    /// nothing above U+10FFFF), as the standard library's validation accepts; `index` is left
    /// where it was when there is none.
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
        // The continuation bytes after the second, unrolled (a range loop costs more than they do).
        if length > 2 {
            guard base[index + 2] & 0xC0 == 0x80 else { return false }
            if length > 3, base[index + 3] & 0xC0 != 0x80 { return false }
        }
        index += length
        return true
    }

    // MARK: Compact reading

    /// Steps over `byte` when it comes next (after whitespace unless compact).
    package mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < end, base[index] == byte else { return false }
        index += 1
        return true
    }

    /// A string at `index` (its opening quote) spelt as ``JSONWriter`` writes it: the range of
    /// its text between the quotes, or `nil` (invalid, or an escape the writer would not write).
    package mutating func compactString() -> Range<Int>? {
        guard index < end, base[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        let start = index
        skipPlainASCII()
        // A string of plain ASCII (a name, an id) ends here: no vector scan, no automaton.
        if current == UInt8(ascii: "\"") {
            index += 1
            return start..<(index - 1)
        }
        return JSONTokenizer.plainTextAutomaton.withUnsafeBufferPointer { automaton -> Range<Int>? in
            let rows = automaton.baseAddress!
            while true {
                // Sixteen bytes at a time where the CPU can (SSSE3), which mostly ends at the
                // closing quote; then eight at a time through the automaton.
                index += kp_plain_text_prefix(base + index, end - index)
                if current != UInt8(ascii: "\"") { index = JSONTokenizer.plainTextPrefix(base, from: index, end: end, rows: rows) }
                // What stopped it (the closing quote, an escape, a byte that is not allowed),
                // or the last bytes, one character at a time.
                while true {
                    guard index < end else { return nil }
                    let byte = base[index]
                    if byte >= 0x80 {
                        guard utf8Sequence() else { return nil }
                    } else if byte == UInt8(ascii: "\"") {
                        index += 1
                        return start..<(index - 1)
                    } else if byte == UInt8(ascii: "\\") {
                        guard canonicalEscape() else { return nil }
                        break
                    } else if byte < 0x20 {
                        return nil
                    } else {
                        index += 1
                    }
                }
            }
        }
    }

    /// Where the bytes from `start` (the start of a character) stop being plain text for
    /// certain, eight at a time through the automaton `rows`, with no branch per character
    /// (mixed scripts make a branch on each character's length a guess the CPU keeps losing):
    /// the start of the character that runs into the first eight bytes with a byte the automaton
    /// stops on, or into the last few bytes. Locals only, so that the loop keeps them in registers.
    @inline(__always)
    private static func plainTextPrefix(_ base: UnsafePointer<UInt8>, from start: Int, end: Int, rows: UnsafePointer<UInt64>) -> Int {
        var index = start
        var state = PlainTextState.text
        while index &+ 8 <= end {
            let bytes = base + index
            // Shifts take their count modulo 64: the bits above a state's six need no masking
            // until the state is compared.
            var next = rows[Int(bytes[0])] &>> state
            next = rows[Int(bytes[1])] &>> next
            next = rows[Int(bytes[2])] &>> next
            next = rows[Int(bytes[3])] &>> next
            next = rows[Int(bytes[4])] &>> next
            next = rows[Int(bytes[5])] &>> next
            next = rows[Int(bytes[6])] &>> next
            next = rows[Int(bytes[7])] &>> next
            next &= 63
            if next == PlainTextState.stop { break }
            index &+= 8
            state = next
        }
        guard state != PlainTextState.text else { return index }
        // Inside a character: back to its lead byte, which the automaton has already checked,
        // like the continuation bytes between (at most three, none before `start`).
        var lead = index &- 1
        while base[lead] & 0xC0 == 0x80 { lead &-= 1 }
        return lead
    }

    /// The states of ``plainTextAutomaton``, each the offset of its 6-bit field in a row.
    private enum PlainTextState {
        /// A byte that ends the fast scan: `"`, `\`, a control character, or not well-formed UTF-8.
        static let stop: UInt64 = 0
        /// Between characters.
        static let text: UInt64 = 6
        /// Inside a multi-byte character: one, two or three continuation bytes to come.
        static let tail1: UInt64 = 12, tail2: UInt64 = 18, tail3: UInt64 = 24
        /// After a lead byte whose second byte has a narrower range (no overlong forms, no
        /// surrogates, nothing above U+10FFFF): E0 (A0–BF), ED (80–9F), F0 (90–BF), F4 (80–8F).
        static let afterE0: UInt64 = 30, afterED: UInt64 = 36, afterF0: UInt64 = 42, afterF4: UInt64 = 48
    }

    /// A shift automaton for the text of a compact string: row `b` holds, in the 6-bit field at
    /// each state's offset, the state after byte `b`; `stop` is absorbing (its field is zero in
    /// every row). It accepts what ``utf8Sequence()`` accepts and stops where the character loop
    /// must look: it only decides faster, never differently.
    private static let plainTextAutomaton: [UInt64] = (0...255).map { (byte: Int) -> UInt64 in
        typealias S = PlainTextState
        var row: UInt64 = 0
        func on(_ from: UInt64, go to: UInt64) { row |= to << from }
        switch byte {
        case 0x20...0x7F where byte != 0x22 && byte != 0x5C: on(S.text, go: S.text)
        case 0xC2...0xDF: on(S.text, go: S.tail1)
        case 0xE0: on(S.text, go: S.afterE0)
        case 0xE1...0xEC, 0xEE...0xEF: on(S.text, go: S.tail2)
        case 0xED: on(S.text, go: S.afterED)
        case 0xF0: on(S.text, go: S.afterF0)
        case 0xF1...0xF3: on(S.text, go: S.tail3)
        case 0xF4: on(S.text, go: S.afterF4)
        default: break
        }
        if (0x80...0xBF).contains(byte) {
            on(S.tail1, go: S.text)
            on(S.tail2, go: S.tail1)
            on(S.tail3, go: S.tail2)
        }
        if (0xA0...0xBF).contains(byte) { on(S.afterE0, go: S.tail1) }
        if (0x80...0x9F).contains(byte) { on(S.afterED, go: S.tail1) }
        if (0x90...0xBF).contains(byte) { on(S.afterF0, go: S.tail2) }
        if (0x80...0x8F).contains(byte) { on(S.afterF4, go: S.tail2) }
        return row
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

    /// A number at `index`: the range of its literal, or `nil`.
    package mutating func compactNumber() -> Range<Int>? {
        guard let length = JSONReader.numberLength(in: UnsafeRawBufferPointer(start: base, count: end), at: index) else { return nil }
        index += length
        return (index - length)..<index
    }

    /// A scalar (string, number, literal) at `index` spelt as the writer writes it.
    package mutating func compactScalar() -> Bool {
        guard index < end else { return false }
        switch base[index] {
        case UInt8(ascii: "\""): return compactString() != nil
        case UInt8(ascii: "t"): return compactLiteral("true")
        case UInt8(ascii: "f"): return compactLiteral("false")
        case UInt8(ascii: "n"): return compactLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return compactNumber() != nil
        default: return false
        }
    }

    private mutating func compactLiteral(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count <= end, memcmp(base + index, word.utf8Start, count) == 0 else { return false }
        index += count
        return true
    }

    // MARK: Member names

    /// The member names seen so far in one object, for the duplicate rule: the first sixteen raw
    /// names kept inline (no allocation), any more, or a name with escapes, in a set of decoded
    /// names. Names compare by their UTF-8 bytes, as ``JSONObject`` compares them.
    package struct Names {
        static let capacity = 16
        private var ranges:
            (
                Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>,
                Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>
            ) = (0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0, 0..<0)
        private var count = 0
        private var spilled: Set<[UInt8]>?

        package init() {}

        /// Adds the raw name at `name` (a name without escapes, or any name in compact mode,
        /// whose escapes have one spelling); false when it was there already.
        package mutating func insert(_ name: Range<Int>, in reader: JSONTokenizer) -> Bool {
            if spilled == nil, count < Names.capacity {
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
            return insert(decoded: reader.bytes(name), in: reader)
        }

        /// Adds a name given by its decoded bytes; false when it was there already.
        package mutating func insert(decoded name: UnsafeRawBufferPointer, in reader: JSONTokenizer) -> Bool {
            if spilled == nil {
                var set = Set<[UInt8]>()
                withUnsafeBytes(of: &ranges) { raw in
                    let seen = raw.bindMemory(to: Range<Int>.self)
                    for index in 0..<count { set.insert(Array(reader.bytes(seen[index]))) }
                }
                spilled = set
            }
            return spilled!.insert(Array(name)).inserted
        }
    }

    /// A few member names known in advance, each at most 16 bytes of UTF-8, found by a text's
    /// length and its bytes compared as two words: no loop over the bytes, no `String`. A reader
    /// keeps the duplicate rule for them in a bit per name (``index(of:)``), and ``Names`` for the
    /// others only.
    package struct KnownNames: Sendable {
        private let entries: [(count: Int, words: Words)]
        private typealias Words = (UInt64, UInt64)

        /// `names`, in the order ``index(of:)`` counts them.
        package init(_ names: [String]) {
            entries = names.map { name in
                let bytes = Array(name.utf8)
                precondition(bytes.count <= 16, "a known name of more than 16 bytes")
                return (bytes.count, bytes.withUnsafeBytes(KnownNames.words))
            }
        }

        /// The index in the list of the name whose bytes are `text`, or `nil`.
        package func index(of text: UnsafeRawBufferPointer) -> Int? {
            guard text.count <= 16 else { return nil }
            let words = KnownNames.words(text)
            for index in entries.indices where entries[index].count == text.count && entries[index].words == words {
                return index
            }
            return nil
        }

        /// Up to 16 bytes as two words, zero past them: a few loads, no loop and no call.
        @inline(__always)
        private static func words(_ text: UnsafeRawBufferPointer) -> Words {
            let low = min(text.count, 8)
            return (word(text, 0, low), word(text, low, text.count &- low))
        }

        /// `count` bytes (at most 8) from `start` as one little-endian word, zero past them.
        @inline(__always)
        private static func word(_ text: UnsafeRawBufferPointer, _ start: Int, _ count: Int) -> UInt64 {
            func load<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> UInt64 {
                UInt64(T(littleEndian: text.loadUnaligned(fromByteOffset: start &+ offset, as: T.self)))
            }
            switch count {
            case 0: return 0
            case 1: return load(0, UInt8.self)
            case 2: return load(0, UInt16.self)
            case 3: return load(0, UInt16.self) | load(2, UInt8.self) << 16
            case 4: return load(0, UInt32.self)
            // Two loads that overlap: the bytes in both are the same bytes.
            case 5...7: return load(0, UInt32.self) | load(count &- 4, UInt32.self) << ((count &- 4) &* 8)
            default: return load(0, UInt64.self)
            }
        }
    }
}

/// Where a string's text is between its quotes, and whether it holds escapes (then its
/// decoded text went to the caller's buffer).
package struct JSONStringToken {
    package let raw: Range<Int>
    package let hasEscapes: Bool
}

/// Where ``JSONTokenizer/string(_:)`` puts the decoded text of a string with escapes.
package protocol JSONStringSink {
    mutating func append(_ byte: UInt8)
    mutating func append(_ bytes: UnsafeRawBufferPointer)
}

/// Decodes nothing: for strings that are only checked.
package struct JSONStringDiscard: JSONStringSink {
    package init() {}
    @inline(__always) package mutating func append(_ byte: UInt8) {}
    @inline(__always) package mutating func append(_ bytes: UnsafeRawBufferPointer) {}
}

extension Array: JSONStringSink where Element == UInt8 {
    package mutating func append(_ bytes: UnsafeRawBufferPointer) { append(contentsOf: bytes) }
}

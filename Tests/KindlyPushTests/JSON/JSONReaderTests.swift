import KindlyPush
import KindlyPushBase
import KindlyPushCore
import Testing

@Suite("Strict JSON reader", .offThePool)
struct JSONReaderTests {
    @Test(
        "accepts RFC 8259 documents",
        arguments: [
            "{}", " {\"a\" : [1, -0, 1.5e-3, true, false, null, \"x\"]}\r\n", "[]", "0", "\"\\u00e9\\ud83d\\ude00\\/\"",
            "{\"a\":{\"b\":{}}}",
        ])
    func acceptsValidDocuments(_ text: String) throws {
        _ = try JSONReader.parse(Array(text.utf8))
    }

    @Test(
        "refuses what RFC 8259 does not allow, with the reason",
        arguments: [
            ("", JSONReadError.Kind.empty), ("  \n", .empty), ("{", .unexpectedEnd), ("{}x", .trailingContent),
            ("{} {}", .trailingContent), ("{'a':1}", .unexpectedByte), ("{\"a\":01}", .unexpectedByte), ("01", .trailingContent),
            ("[1.]", .invalidNumber), ("[-]", .invalidNumber), ("[1e]", .invalidNumber), ("[NaN]", .unexpectedByte),
            ("[\"\\x\"]", .invalidEscape), ("[\"\\ud800\"]", .unpairedSurrogate), ("[\"\\udc00\\ud800\"]", .unpairedSurrogate),
            ("[\"\\ud800\\u0041\"]", .unpairedSurrogate), ("[\"a\tb\"]", .controlCharacterInString), ("[1,]", .unexpectedByte),
            ("{\"a\":1,}", .unexpectedByte), ("[tru]", .unexpectedByte),
        ])
    func refusesInvalidDocuments(_ text: String, _ kind: JSONReadError.Kind) {
        #expect(throws: JSONReadError.self) { try JSONReader.parse(Array(text.utf8)) }
        do {
            _ = try JSONReader.parse(Array(text.utf8))
        } catch {
            #expect(error.kind == kind)
        }
    }

    @Test(
        "refuses invalid UTF-8, overlong forms, encoded surrogates and a byte-order mark",
        arguments: [
            [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xE0, 0x80, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xC3, 0x22], [0xEF, 0xBB, 0xBF, 0x7B, 0x7D], [0x7B, 0x7D, 0x00],
        ] as [[UInt8]])
    func refusesBadBytes(_ bytes: [UInt8]) {
        #expect(throws: JSONReadError.self) { try JSONReader.parse(bytes) }
    }

    @Test("finds a known member name by its bytes, and no other text")
    func knownNames() {
        // A name of each length from 1 to 16 bytes, and some of the envelope's; every text that
        // differs from one of them in one bit, or by a byte more or less, is looked up too.
        func name(ofLength length: Int) -> String {
            let bytes: [UInt8] = (0..<length).map { index in UInt8(97 + (index * 7 + length) % 26) }
            return String(decoding: bytes, as: UTF8.self)
        }
        let names: [String] = (1...16).map(name(ofLength:)) + ["kid", "sid", "epk", "\u{E9}"]
        let known = JSONTokenizer.KnownNames(names)
        func found(_ bytes: [UInt8]) -> Int? { bytes.withUnsafeBytes { known.index(of: $0) } }
        func expected(_ bytes: [UInt8]) -> Int? { names.firstIndex { Array($0.utf8) == bytes } }
        for (position, name) in names.enumerated() {
            let bytes = Array(name.utf8)
            #expect(found(bytes) == position, "\(name)")
            for place in bytes.indices {
                for bit in 0..<8 {
                    var changed = bytes
                    changed[place] ^= 1 << bit
                    #expect(found(changed) == expected(changed), "\(name), byte \(place) bit \(bit)")
                }
            }
            #expect(found(bytes + [bytes[0]]) == expected(bytes + [bytes[0]]), "\(name) and a byte more")
            #expect(found(Array(bytes.dropLast())) == expected(Array(bytes.dropLast())), "\(name) less a byte")
        }
        #expect(found(Array(repeating: 97, count: 17)) == nil)
        #expect(found([]) == nil)
    }

    @Test("keeps duplicate members and says so, comparing names by scalars")
    func seesDuplicates() throws {
        let value = try JSONReader.parse(Array(#"{"a":1,"b":{"c":1,"c":2},"\u0061":3}"#.utf8))
        let object = try #require(value.objectValue)
        #expect(object.hasDuplicateKeys)
        #expect(object.count == 3)
        #expect(object["a"] == 1)
        #expect(object["b"]?.objectValue?.hasDuplicateKeys == true)
        // "é" precomposed and decomposed are different names to JSON, though Swift strings compare them equal.
        let distinct = try JSONReader.parse(Array("{\"\u{E9}\":1,\"e\u{301}\":2}".utf8))
        #expect(distinct.objectValue?.hasDuplicateKeys == false)
    }

    @Test("bounds nesting instead of overflowing the stack")
    func boundsNesting() {
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000) + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        do {
            _ = try JSONReader.parse(deep)
            Issue.record("a 100,000-deep document was accepted")
        } catch {
            #expect(error.kind == .tooDeep)
        }
        let fine = [UInt8](repeating: UInt8(ascii: "["), count: 500) + [UInt8](repeating: UInt8(ascii: "]"), count: 500)
        #expect(throws: Never.self) { try JSONReader.parse(fine) }
    }

    @Test("writes compactly and reads back the same value")
    func roundTrips() throws {
        let text = #"{"t":"a/b \"q\" \\ é 😀 \u0001\n","n":[1.50,-0,1e400,12345678901234567890],"o":{"x":null,"y":true}}"#
        let value = try JSONValue(parsing: text)
        let written = value.compactText
        #expect(written == #"{"t":"a/b \"q\" \\ é 😀 \u0001\n","n":[1.50,-0,1e400,12345678901234567890],"o":{"x":null,"y":true}}"#)
        #expect(try JSONValue(parsing: written) == value)
    }

    @Test(
        "compares numbers by exact decimal value",
        arguments: [
            ("1", "1.0", true), ("1", "1e0", true), ("10e-1", "0.1e1", true), ("1", "1.0000000000000000001", false), ("-0", "0", true),
            ("1e400", "1e401", false),
        ])
    func numberEquality(_ lhs: String, _ rhs: String, _ equal: Bool) {
        #expect((JSONNumber(literal: lhs)! == JSONNumber(literal: rhs)!) == equal)
    }

    @Test(
        "reads whole numbers whatever their spelling, and nothing else",
        arguments: [
            ("15", Int64?(15)), ("1.5e1", 15), ("15e-1", nil), ("9007199254740991", 9_007_199_254_740_991), ("9007199254740992", nil),
            ("-1", nil), ("-0", 0), ("1e16", nil), ("1.0", 1), ("1e1000000000000", nil), (String(repeating: "9", count: 10_000), nil),
        ])
    func integerValues(_ literal: String, _ expected: Int64?) {
        #expect(JSONNumber(literal: literal)!.integerValue(in: 0...((1 << 53) - 1)) == expected)
    }

    // Found by the fuzz-json target: Int64.min was refused because its magnitude is not an Int64.
    @Test(
        "reads every Int64 at the ends of the full range, and nothing past them",
        arguments: [
            ("-9223372036854775808", Int64?(Int64.min)), ("-9.223372036854775808e18", Int64.min), ("9223372036854775807", Int64.max),
            ("-9223372036854775809", nil), ("9223372036854775808", nil), ("-18446744073709551616", nil),
        ])
    func integerValuesAtTheEnds(_ literal: String, _ expected: Int64?) {
        #expect(JSONNumber(literal: literal)!.integerValue(in: Int64.min...Int64.max) == expected)
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Hostile input through the real binary: every case answers with the spec's code (written
/// here, not derived from the code under test), within a time limit, with no crash.
@Suite("Hostile input", .offThePool)
struct HostileInputTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let input: [UInt8]
        /// The expected code, or "ok" for a push that must decrypt.
        let expected: String
        var testDescription: String { name }
    }

    static let device = DeviceKey.generate()

    /// A valid sealed push for `device`, as an object to mutate.
    static let push: JSONObject = {
        let bytes = try! KindlyPushSealer.seal(try! DecryptedPayload(chatId: "c", title: "t", body: "b"), for: device.publicKey)
        return try! JSONReader.parse(bytes).objectValue!
    }()

    static var envelope: JSONObject { push["kindly"]!.objectValue! }

    static func with(_ field: String, _ value: JSONValue?) -> [UInt8] {
        var envelope = envelope
        envelope[field] = value
        var document = push
        document["kindly"] = .object(envelope)
        return JSONWriter.compactBytes(.object(document))
    }

    static func text(_ string: String) -> [UInt8] { Array(string.utf8) }

    static func fieldText(_ field: String) -> String { envelope[field]!.stringValue! }

    static let cases: [Case] = {
        var cases: [Case] = [
            Case(name: "the valid push decrypts", input: JSONWriter.compactBytes(.object(push)), expected: "ok"),
            Case(name: "empty input", input: [], expected: "bad_input"),
            Case(name: "whitespace only", input: text(" \t\r\n "), expected: "bad_input"),
            Case(name: "null", input: text("null"), expected: "bad_input"),
            Case(name: "an array", input: text("[{\"kindly\":{}}]"), expected: "bad_input"),
            Case(name: "a number", input: text("1"), expected: "bad_input"),
            Case(name: "a string", input: text("\"kindly\""), expected: "bad_input"),
            Case(name: "true", input: text("true"), expected: "bad_input"),
            Case(
                name: "100,000-deep arrays", input: text(String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)),
                expected: "bad_input"),
            Case(
                name: "100,000-deep objects inside kindly",
                input: text("{\"kindly\":" + String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_001)),
                expected: "bad_input"),
            Case(
                name: "64 KiB + 1 bytes", input: text("{\"x\":\"" + String(repeating: "a", count: 65_537 - 8) + "\"}"),
                expected: "bad_input"),
            Case(
                name: "a number with 10,000 digits as v", input: text("{\"kindly\":{\"v\":" + String(repeating: "1", count: 10_000) + "}}"),
                expected: "unsupported_version"),
            Case(
                name: "1 followed by 10,000 fractional zeros as v is version 1",
                input: with("v", .number(JSONNumber(literal: "1." + String(repeating: "0", count: 10_000))!)), expected: "ok"),
            Case(
                name: "1.000…001 as v", input: text("{\"kindly\":{\"v\":1." + String(repeating: "0", count: 10_000) + "1}}"),
                expected: "unsupported_version"),
            Case(
                name: "an exponent with 10,000 digits elsewhere", input: text("{\"x\":1e" + String(repeating: "9", count: 10_000) + "}"),
                expected: "not_kindly"),
            Case(name: "invalid UTF-8", input: [0x7B, 0x22, 0x78, 0x22, 0x3A, 0x22, 0xFE, 0x22, 0x7D], expected: "bad_input"),
            Case(
                name: "an overlong encoding of '/'", input: [0x7B, 0x22, 0x78, 0x22, 0x3A, 0x22, 0xC0, 0xAF, 0x22, 0x7D],
                expected: "bad_input"),
            Case(
                name: "a UTF-8-encoded surrogate", input: [0x7B, 0x22, 0x78, 0x22, 0x3A, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x7D],
                expected: "bad_input"),
            Case(name: "a lone high surrogate escape", input: text(#"{"x":"\ud800","kindly":{}}"#), expected: "bad_input"),
            Case(name: "a lone low surrogate escape", input: text(#"{"x":"\udc00"}"#), expected: "bad_input"),
            Case(name: "a raw NUL byte in a string", input: [0x7B, 0x22, 0x78, 0x22, 0x3A, 0x22, 0x00, 0x22, 0x7D], expected: "bad_input"),
            Case(name: "a raw NUL byte after the document", input: text("{}") + [0x00], expected: "bad_input"),
            Case(name: "an escaped NUL as kid", input: with("kid", "\u{0}"), expected: "malformed"),
            Case(name: "a byte-order mark", input: [0xEF, 0xBB, 0xBF] + JSONWriter.compactBytes(.object(push)), expected: "bad_input"),
            Case(name: "trailing garbage", input: JSONWriter.compactBytes(.object(push)) + text("x"), expected: "bad_input"),
            Case(name: "a second document", input: JSONWriter.compactBytes(.object(push)) + text("{}"), expected: "bad_input"),
            Case(
                name: "a duplicate top-level member", input: JSONWriter.compactBytes(.object(JSONObject(push.members + [push.members[0]]))),
                expected: "malformed"),
            Case(
                name: "two kindly members",
                input: JSONWriter.compactBytes(.object(JSONObject(push.members + [.init(key: "kindly", value: .object(envelope))]))),
                expected: "malformed"),
            Case(
                name: "a duplicate member inside kindly",
                input: JSONWriter.compactBytes(
                    .object(
                        JSONObject([
                            push.members[0], .init(key: "kindly", value: .object(JSONObject(envelope.members + [envelope.members[1]]))),
                        ]))), expected: "malformed"),
            Case(
                name: "a duplicate member inside aps is not the envelope's concern",
                input: JSONWriter.compactBytes(
                    .object(
                        JSONObject([
                            .init(
                                key: "aps", value: .object(JSONObject([.init(key: "sound", value: "a"), .init(key: "sound", value: "b")]))),
                            .init(key: "kindly", value: .object(envelope)),
                        ]))), expected: "ok"),
            Case(name: "a duplicate top-level member without kindly", input: text(#"{"a":1,"a":2}"#), expected: "not_kindly"),
            Case(name: "duplicate members before a bad version", input: text(#"{"kindly":{"v":2,"v":2}}"#), expected: "malformed"),
        ]
        for (name, value) in [("null", "null"), ("true", "true"), ("a number", "1"), ("a string", "\"x\""), ("an array", "[]")] {
            cases.append(Case(name: "kindly as \(name)", input: text("{\"kindly\":\(value)}"), expected: "not_kindly"))
        }
        cases.append(Case(name: "kindly as an empty object", input: text("{\"kindly\":{}}"), expected: "unsupported_version"))
        let types: [(String, JSONValue)] = [
            ("null", .null), ("true", true), ("a number", 1), ("an array", []), ("an object", [:]), ("a string", "1"),
        ]
        for (name, value) in types {
            // The numbers 1, 2 and 3 are versions: another number stands in for "v as a number".
            cases.append(Case(name: "v as \(name)", input: with("v", name == "a number" ? 4 : value), expected: "unsupported_version"))
            for field in ["kid", "epk", "n", "ct"] where name != "a string" {
                cases.append(Case(name: "\(field) as \(name)", input: with(field, value), expected: "malformed"))
            }
        }
        for field in ["kid", "epk", "n", "ct"] {
            let good = fieldText(field)
            let bytes = try! Base64.decode(good)
            let half = good.index(good.startIndex, offsetBy: good.count / 2)
            cases += [
                Case(name: "\(field) missing", input: with(field, nil), expected: "malformed"),
                Case(
                    name: "\(field) with a space inside", input: with(field, .string(good[..<half] + " " + good[half...])),
                    expected: "malformed"),
                Case(
                    name: "\(field) with a line break inside", input: with(field, .string(good[..<half] + "\n" + good[half...])),
                    expected: "malformed"),
                Case(name: "\(field) with a trailing space", input: with(field, .string(good + " ")), expected: "malformed"),
                Case(name: "\(field) empty", input: with(field, ""), expected: "malformed"),
                Case(
                    name: "\(field) with a character outside both alphabets", input: with(field, .string("*" + good.dropFirst())),
                    expected: "malformed"),
                Case(
                    name: "\(field) one byte short", input: with(field, .string(Base64.urlEncoded(Array(bytes.dropLast())))),
                    expected: "malformed"),
                Case(name: "\(field) one byte long", input: with(field, .string(Base64.urlEncoded(bytes + [0]))), expected: "malformed"),
                Case(name: "\(field) one character short", input: with(field, .string(String(good.dropLast()))), expected: "malformed"),
                Case(name: "\(field) one character long", input: with(field, .string(good + "A")), expected: "malformed"),
                Case(name: "\(field) with wrong padding", input: with(field, .string(good + "===")), expected: "malformed"),
                Case(
                    name: "\(field) in standard base64 with padding decrypts", input: with(field, .string(standard(bytes, padded: true))),
                    expected: "ok"),
                Case(
                    name: "\(field) in standard base64 without padding decrypts",
                    input: with(field, .string(standard(bytes, padded: false))), expected: "ok"),
                Case(name: "\(field) in base64url with padding decrypts", input: with(field, .string(padded(good))), expected: "ok"),
            ]
            if let mixed = mixedAlphabets(bytes) {
                cases.append(Case(name: "\(field) mixing both alphabets", input: with(field, .string(mixed)), expected: "malformed"))
            }
            if let trailing = nonZeroTrailingBits(good) {
                cases.append(
                    Case(name: "\(field) with non-zero trailing bits", input: with(field, .string(trailing)), expected: "malformed"))
            }
        }
        let ct = try! Base64.decode(fieldText("ct"))
        for length in [15, 16, 79, 81, 143, 145] {
            cases.append(
                Case(
                    name: "ct of \(length) bytes",
                    input: with(
                        "ct", .string(Base64.urlEncoded(Array(ct.prefix(length)) + [UInt8](repeating: 0, count: max(0, length - ct.count))))
                    ), expected: "malformed"))
        }
        cases.append(
            Case(
                name: "ct of 144 bytes is well-formed but does not authenticate",
                input: with("ct", .string(Base64.urlEncoded(ct + [UInt8](repeating: 0, count: 64)))), expected: "authentication_failed"))
        return cases
    }()

    static func standard(_ bytes: [UInt8], padded: Bool) -> String {
        var text = Base64.urlEncoded(bytes).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if padded { text = Self.padded(text) }
        return text
    }

    static func padded(_ text: String) -> String {
        text + String(repeating: "=", count: (4 - text.count % 4) % 4)
    }

    /// The base64url text with one URL-only character swapped for its standard twin, when the
    /// text has a URL-only character and another position that can hold a standard one.
    static func mixedAlphabets(_ bytes: [UInt8]) -> String? {
        let url = Array(Base64.urlEncoded(bytes))
        let standardText = Array(standard(bytes, padded: false))
        guard let urlOnly = url.firstIndex(where: { $0 == "-" || $0 == "_" }),
            let standardIndex = standardText.indices.last(where: { ($0 != urlOnly) && (standardText[$0] == "+" || standardText[$0] == "/") }
            )
        else {
            // Force a mix: replace the first character with '-' and the second with '/'.
            guard url.count > 2 else { return nil }
            var forced = url
            forced[0] = "-"
            forced[1] = "/"
            return String(forced)
        }
        var mixed = url
        mixed[standardIndex] = standardText[standardIndex]
        return String(mixed)
    }

    /// The text with its last character's unused low bits set, when it has unused bits.
    static func nonZeroTrailingBits(_ text: String) -> String? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let unusedBits: Int
        switch text.count % 4 {
        case 2: unusedBits = 4
        case 3: unusedBits = 2
        default: return nil
        }
        var characters = Array(text)
        let value = alphabet.firstIndex(of: characters[characters.count - 1])!
        characters[characters.count - 1] = alphabet[value | 1 << (unusedBits - 1)]
        return String(characters)
    }

    /// docs/spec/streams.md's exit statuses, written out here rather than taken from the code under test.
    static let exitStatus: [String: Int32] = [
        "not_kindly": 1, "unsupported_version": 2, "malformed": 3, "key_unavailable": 4, "authentication_failed": 5,
        "bad_plaintext": 6, "bad_input": 65,
    ]

    @Test("each hostile input gets its code, with no crash and no hang", arguments: cases)
    func hostileInput(_ item: Case) throws {
        let folder = try KeyFolder(key: Self.device)
        let output = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: item.input, timeLimit: 20)
        #expect(!output.timedOut)
        if item.expected == "ok" {
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stdout == #"{"chat_id":"c","title":"t","body":"b"}"# + "\n")
        } else {
            #expect(output.status == Self.exitStatus[item.expected], "\(item.expected)")
            #expect(output.stdout == "")
            #expect(output.stderr.hasPrefix("kindly-push: \(item.expected): "), "\(output.stderr)")
            #expect(output.stderr.filter { $0 == "\n" }.count == 1)
        }
    }

    @Test("the same hostile inputs as one --jsonl stream give one line each, in order")
    func hostileStream() throws {
        // A line cannot hold a newline: inputs with one are left to the test above.
        let streamable = Self.cases.filter { !$0.input.contains(0x0A) && !$0.input.contains(0x0D) }
        var input: [UInt8] = []
        for item in streamable { input += item.input + [0x0A] }
        let folder = try KeyFolder(key: Self.device)
        let output = try CLI.run(["decrypt", "--jsonl", "--key-file", folder.keyFile], stdin: input, timeLimit: 60)
        #expect(output.status == 0)
        let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == streamable.count)
        for (line, item) in zip(lines, streamable) {
            let value = try JSONValue(parsing: String(line))
            let code = value["error"]?["code"]?.stringValue ?? "ok"
            #expect(code == item.expected, "\(item.name)")
        }
    }
}

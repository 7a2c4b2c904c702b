import Testing

@testable import KindlyPushBase

/// A plaintext in another spelling is written compactly without a tree
/// (``CompactPlaintextWriter``, under ``DecryptedPayload/appendCompact(_:to:)``). Against the tree
/// path it stands in for (the strict reader, ``DecryptedPayload/init(validating:)``, ``JSONWriter``):
/// the writer takes exactly the texts the tree takes and writes the same bytes, and
/// `appendCompact` gives the same output or the same problem.
@Suite("A plaintext in any spelling, written compactly without a tree", .offThePool)
struct CompactRewriteTests {
    /// Checks `text` against the tree path; whether the tree took it.
    @discardableResult
    static func check(_ text: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let shown = String(decoding: text, as: UTF8.self)
        let tree = text.withUnsafeBytes { DecryptedPayload.parse($0) }
        var written: [UInt8] = []
        let taken = text.withUnsafeBytes { raw in
            var writer = CompactPlaintextWriter(raw)
            defer { writer.wipe() }
            return writer.write(into: &written)
        }
        var appended: [UInt8] = [0x2A]
        let problem = text.withUnsafeBytes { DecryptedPayload.appendCompact($0, to: &appended) }
        switch tree {
        case .success(let payload):
            let expected = JSONWriter.compactBytes(.object(payload.object))
            #expect(taken, "the writer refused what the tree takes: \(shown)", sourceLocation: sourceLocation)
            #expect(!taken || written == expected, "\(shown)", sourceLocation: sourceLocation)
            #expect(problem == nil, "\(shown)", sourceLocation: sourceLocation)
            #expect(appended == [0x2A] + expected, "\(shown)", sourceLocation: sourceLocation)
            return true
        case .failure(let refusal):
            #expect(!taken, "the writer took what the tree refuses (\(refusal)): \(shown)", sourceLocation: sourceLocation)
            #expect(problem == refusal, "\(shown)", sourceLocation: sourceLocation)
            #expect(appended == [0x2A], "nothing is left of a refused text: \(shown)", sourceLocation: sourceLocation)
            return false
        }
    }

    @Test("other spellings, every kind of value and escape, nested extras, and each refusal")
    func spellings() {
        let texts = [
            // Python's json.dumps: ", " and ": ", non-ASCII as \u escapes (a surrogate pair too).
            #"{"chat_id": "c", "title": "Caf\u00e9 \ud83c\udf5c", "body": "b\/\"\\\n", "sent_at": 1764460800}"#,
            "{\n  \"chat_id\": \"c\",\n  \"title\": \"t\",\n  \"body\": \"b\",\n  \"truncated\": true\n}",
            #"{ "x" : { "y" : [ 1 , -0.5e+3 , { "z" : null } , [ ] , { } ] } , "chat_id":"c","title":"","body":"b" }"#,
            #"{"chat_id":"c","title":"t","body":"b","sent_at":1.5e1}"#, #"{"chat_id":"c","title":"t","body":"b","sent_at":15.0}"#,
            #"{"chat_id":"c","title":"t","body":"b","message_id":"\u0000\u001f\u007f"}"#,
            #"{"chat_id":"c","title":"t","body":"b","\u0078":1,"x":2}"#, #"{"chat_id":"c","title":"t","body":"b","x":{"y":1,"y":2}}"#,
            #"{"chat_id":"c","title":"t","body":"b","x":[{"y":1},{"y":1,"y":1}]}"#,
            #"{"chat_id":"c","title":"t","body":"b","x":{"y":1},"z":{"y":1}}"#, #"{"chat_id":"c","title":"t","body":"b","x":"\ud800"}"#,
            #"{"chat_id":"","title":"t","body":"b" }"#, #"{"chat_id":"c","title":"t" }"#, #"{"chat_id":"c","title":1,"body":"b" }"#,
            #"{"chat_id":"c","title":"t","body":"b","sent_at":-1 }"#, #"{"chat_id":"c","title":"t","body":"b","sent_at":"1" }"#,
            #"{"chat_id":"c","title":"t","body":"b","sent_at":9007199254740992 }"#,
            #"{"chat_id":"c","title":"t","body":"b","truncated":0 }"#,
            #"{"chat_id":"c","title":"t","body":"b","message_id":null }"#, #"{"chat_id":"c","title":"t","body":"b","chat_id":"c" }"#,
            #"{"chat_id":"c","title":"t","body":"b" } x"#, #"{"chat_id":"c","title":"t","body":"b""#, #"{"chat_id": "c", "title": "t", "#,
            #"{"chat_id":"c","title":"t","body":"b","x":[1,}"#, #"{"chat_id":"c","title":"t","body":"b","x":01}"#,
            " [] ", " \"x\" ", " ", "", "\u{FEFF}" + #"{"chat_id":"c","title":"t","body":"b"}"#,
            "{" + (0..<40).map { "\"k\($0)\": \($0), " }.joined() + #""chat_id":"c","title":"t","body":"b"}"#,
            "{" + (0..<40).map { "\"k\($0 % 30)\": \($0), " }.joined() + #""chat_id":"c","title":"t","body":"b"}"#,
            #"{"chat_id":"c","title":"t","body":"b","x": "# + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}",
        ]
        var taken = 0
        for text in texts where Self.check(Array(text.utf8)) { taken += 1 }
        // Not all alike: some taken, most refused, each for its own reason.
        #expect(taken >= 6 && taken < texts.count - 10, "\(taken) of \(texts.count)")
        // Invalid UTF-8, in a name and in a value.
        Self.check(Array(#"{"chat_id":"c","title":"t","body":"b","#.utf8) + [0x22, 0xC3, 0x28, 0x22] + Array(#":1 }"#.utf8))
        Self.check(Array(#"{"chat_id":"c","title":"t","body":"#.utf8) + [0x22, 0xED, 0xA0, 0x80, 0x22] + Array(" }".utf8))
    }

    @Test("written payloads respelt and mutated: the writer and the tree agree on every one")
    func mutations() throws {
        var generator = SeededGenerator(seed: 35)
        let pieces = ["a", "é", "世", "🍜", "\"", "\\", "\n", "\t", "\u{1}", "/", " ", "\u{2028}"]
        // Ways to spell the same text, and bytes that break it.
        let respellings = [" ", "\n  ", "\t", "\\u00e9", "\\/", "\\ud83c\\udf5c", "\\n", "\\u0041"]
        let breakers = ["{", "}", "[", "]", ",", ":", "\"", "\\", "1", "-", "e", "\\u", "\u{0}", "null"]
        for round in 0..<3000 {
            func text() -> String {
                (0..<Int.random(in: 0...8, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            }
            let extras: JSONObject =
                round % 3 == 0
                ? [text(): .string(text()), "n": .array([1, [text(): nil], .object([text(): 2])]), "z": nil, "b": true] : [:]
            let payload = try DecryptedPayload(
                chatId: "c" + text(), title: text(), body: text(), messageId: Bool.random(using: &generator) ? text() : nil,
                sentAt: Bool.random(using: &generator) ? Int64.random(in: 0...WireFormat.maximumSentAt, using: &generator) : nil,
                extras: extras)
            var spelt = JSONWriter.compactBytes(.object(payload.object))
            // Whitespace between tokens, or another escape inside a string: the same payload.
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 1..<spelt.count, using: &generator)
                let piece = respellings.randomElement(using: &generator)!
                spelt.insert(contentsOf: Array(piece.utf8), at: position)
            }
            Self.check(spelt)
            if round % 2 == 0 {
                var broken = spelt
                let position = Int.random(in: 0..<broken.count, using: &generator)
                broken.insert(contentsOf: Array(breakers.randomElement(using: &generator)!.utf8), at: position)
                if Bool.random(using: &generator) { broken.remove(at: Int.random(in: 0..<broken.count, using: &generator)) }
                Self.check(broken)
            }
        }
    }

    /// What ``JSONTokenizer/compactString()`` must say of the string at the start of `text`:
    /// its contents' range when the strict reader reads it and the writer spells its text the
    /// same way, else `nil`.
    static func expectedCompactString(_ text: [UInt8]) -> Range<Int>? {
        text.withUnsafeBytes { raw -> Range<Int>? in
            var reader = JSONTokenizer(raw)
            var decoded: [UInt8] = []
            guard let token = try? reader.string(&decoded) else { return nil }
            let contents = token.hasEscapes ? decoded : Array(raw[token.raw])
            var written: [UInt8] = []
            contents.withUnsafeBytes { JSONWriter.writeString(utf8: $0, to: &written) }
            return written.elementsEqual(raw[(token.raw.lowerBound - 1)...token.raw.upperBound]) ? token.raw : nil
        }
    }

    @Test("compact strings: the eight-byte automaton decides exactly as the writer spells, at every offset")
    func compactStrings() {
        var generator = SeededGenerator(seed: 3535)
        // Each length of character and its edges, and each way a byte breaks a compact string:
        // a bad or cut-short sequence, an overlong form, a surrogate, a control character, an
        // escape the writer would not write, the closing quote.
        let pieces: [[UInt8]] = [
            Array("a".utf8), Array(" ".utf8), Array("~\u{7F}".utf8), Array("é".utf8), Array("\u{80}".utf8), Array("\u{7FF}".utf8),
            Array("\u{800}".utf8), Array("世".utf8), Array("\u{D7FF}".utf8), Array("\u{E000}".utf8), Array("\u{FFFF}".utf8),
            Array("\u{10000}".utf8), Array("🍜".utf8), Array("\u{10FFFF}".utf8), Array(#"\""#.utf8), Array(#"\\"#.utf8),
            Array(#"\n"#.utf8), Array(#"\u001f"#.utf8), [0x22], [0x5C], [0x01], [0x1F], [0x80], [0xBF], [0xC0, 0x80], [0xC1, 0xBF],
            [0xC3], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xE4, 0xB8],
            [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF0, 0x9F, 0x8D], [0xF5, 0x80, 0x80, 0x80], [0xFE], [0xFF],
            Array(#"\u001F"#.utf8), Array(#"\u0041"#.utf8), Array(#"\/"#.utf8), Array(#"\u0009"#.utf8), Array(#"\x"#.utf8),
        ]
        var compact = 0
        for round in 0..<20000 {
            // Mostly good text (the first 16 pieces), so that the bytes that break it fall at
            // every offset of the automaton's eight.
            var text: [UInt8] = [0x22]
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                let good = Int.random(in: 0..<10, using: &generator) < 8
                text += good ? pieces[Int.random(in: 0..<16, using: &generator)] : pieces.randomElement(using: &generator)!
            }
            // Closed, or cut short where the text ends.
            if round % 5 != 0 { text += [0x22] + Array(",\"x\":1}".utf8) }
            let expected = Self.expectedCompactString(text)
            let found = text.withUnsafeBytes { raw -> Range<Int>? in
                var reader = JSONTokenizer(raw, compact: true)
                return reader.compactString()
            }
            #expect(found == expected, "\(text.map { String($0, radix: 16) })")
            if expected != nil { compact += 1 }
        }
        // Both answers come up often.
        #expect(compact > 2000 && compact < 18000, "\(compact) of 20000")
    }
}

import Foundation
import KindlyPushTesting
import KindlyPushVectors
import Testing

@testable import KindlyPush
@testable import KindlyPushBase
@testable import KindlyPushCore

/// The fast paths (``PushDecryptor``, ``JSONTokenizer``, ``Base64``'s quick loop) against the general
/// ones they stand in for: whatever a fast path decides, the general path must decide the same,
/// with the same output, on every test vector and on many mutated pushes.
@Suite("Fast paths agree with the general ones", .offThePool)
struct FastPathTests {
    /// The general path's result for push bytes, as the CLI takes it: JSON first, then decryption.
    enum General: Equatable {
        case notJSON(JSONReadError)
        case notObject(String)
        case payload([UInt8])
        case failure(DecryptionFailure)
    }

    static func general(_ bytes: [UInt8], _ decryption: KindlyPushDecryption) -> General {
        let document: JSONValue
        do throws(JSONReadError) {
            document = try JSONReader.parse(bytes)
        } catch {
            return .notJSON(error)
        }
        guard case .object = document else { return .notObject(document.typeName) }
        switch decryption.decryptResult(userInfo: document) {
        case .success(let payload): return .payload(JSONWriter.compactBytes(.object(payload.object)))
        case .failure(let failure): return .failure(failure)
        }
    }

    /// Checks the fast path against the general one on `bytes`; returns the fast outcome.
    @discardableResult
    static func check(_ bytes: [UInt8], _ decryptor: inout PushDecryptor, sourceLocation: SourceLocation = #_sourceLocation)
        -> PushDecryptor.Outcome
    {
        var output: [UInt8] = [0x7B]
        let outcome = bytes.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) }
        let general = general(bytes, decryptor.decryption)
        let fast: General
        switch outcome {
        case .decrypted: fast = .payload(Array(output.dropFirst()))
        case .failed(let failure): fast = .failure(failure)
        case .notJSON(let error): fast = .notJSON(error)
        case .notObject(let kind): fast = .notObject(kind.typeName)
        }
        #expect(fast == general, "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        if outcome != .decrypted { #expect(output == [0x7B], sourceLocation: sourceLocation) }
        return outcome
    }

    @Test("every test vector: the fast path decides as the general path")
    func vectors() throws {
        for url in try Resources.vectorFiles() {
            for vector in try TestVector.vectors(inFile: [UInt8](Data(contentsOf: url))) {
                var decryptor = PushDecryptor(
                    KindlyPushDecryption(keyring: InMemoryKeyring(keys: [vector.deviceKey], pinnedSenders: vector.pinnedSenderKeys)))
                let compact = JSONWriter.compactBytes(vector.apns)
                Self.check(compact, &decryptor)
                Self.check(Array(" \n".utf8) + compact + Array("\r\n\t ".utf8), &decryptor)
                if let sealing = vector.sealing {
                    let text = Array(sealing.plaintext.utf8)
                    Self.checkReading(text)
                }
            }
        }
    }

    @Test("mutated pushes: whatever the fast path decides, the general path decides the same")
    func mutations() throws {
        let key = DeviceKey.generate()
        var decryptor = PushDecryptor(KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])))
        var generator = SeededGenerator(seed: 5)
        let texts = ["Anna", "", "a \"quoted\" \\ back\\slash\nnew line\t\u{1}\u{1F}\u{7F}", "Привет 世界 🍜 é", "/ slash"]
        var pushes: [[UInt8]] = []
        for (index, text) in texts.enumerated() {
            let payload = try DecryptedPayload(
                chatId: "c-\(index)", title: text, body: text + text, messageId: index % 2 == 0 ? "m" : nil,
                sentAt: index % 3 == 0 ? 1_764_460_800 : nil, extras: index == 4 ? ["x": true, "y": [1, 2]] : [:])
            let push = try KindlyPushSealer.seal(payload, for: key.publicKey)
            #expect(Self.check(push, &decryptor) == .decrypted, "push \(index)")
            pushes.append(push)
        }
        let insertions: [[UInt8]] = [
            [0x20], [0x22], [0x5C], [0x7B], [0x7D], [0x2C], [0x3A], [0x80], [0xC3], [0xED, 0xA0, 0x80], [0x00], [0x0A],
            Array("\"v\":1,".utf8), Array("\"kid\":\"AAAAAAAAAAA\",".utf8), Array("\"kindly\":{},".utf8), Array("1.0".utf8),
            Array("\\u0041".utf8), Array("=".utf8), Array("+".utf8), Array("-".utf8),
        ]
        for _ in 0..<20000 {
            var bytes = pushes.randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 1...2, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(contentsOf: insertions.randomElement(using: &generator)!, at: position)
                default:
                    // Swap in a byte from elsewhere in the push (keeps it closer to valid).
                    bytes[position] = bytes[Int.random(in: 0..<bytes.count, using: &generator)]
                }
            }
            Self.check(bytes, &decryptor)
        }
    }

    @Test("a payload's compact text is taken as is exactly when the writer would write it so")
    func canonicalPlaintexts() throws {
        var generator = SeededGenerator(seed: 7)
        let pieces = [
            "a", "é", "世", "🍜", "\"", "\\", "\n", "\t", "\u{8}", "\u{C}", "\r", "\u{1}", "\u{1F}", "\u{7F}", "/", " ", "\u{2028}",
        ]
        for _ in 0..<2000 {
            func text() -> String {
                (0..<Int.random(in: 0...12, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            }
            let payload = try DecryptedPayload(
                chatId: "c" + text(), title: text(), body: text(), messageId: Bool.random(using: &generator) ? text() : nil,
                sentAt: Bool.random(using: &generator) ? Int64.random(in: 0...WireFormat.maximumSentAt, using: &generator) : nil,
                extras: Bool.random(using: &generator) ? [text(): .string(text()), "n": 1.5e3 == 1500 ? 7 : 0, "z": nil] : [:])
            let written = JSONWriter.compactBytes(.object(payload.object))
            #expect(Self.checkReading(written) == .compact, "\(String(decoding: written, as: UTF8.self))")
            // Mutations: whatever the one pass finds, the tree path finds the same.
            var mutated = written
            let position = Int.random(in: 0..<mutated.count, using: &generator)
            mutated.insert(contentsOf: Array(pieces.randomElement(using: &generator)!.utf8), at: position)
            if Bool.random(using: &generator) { mutated.remove(at: Int.random(in: 0..<mutated.count, using: &generator)) }
            Self.checkReading(mutated)
        }
        for text in [
            #"{"chat_id":"c","title":"t","body":"b"}"#, #"{"chat_id":"c","title":"t","body":"b","sent_at":9007199254740991}"#,
        ] {
            #expect(Self.checkReading(Array(text.utf8)) == .compact, "\(text)")
        }
        for text in [
            #"{"chat_id":"","title":"t","body":"b"}"#, #"{"chat_id":"c","title":"t"}"#,
            #"{"chat_id":"c","title":"t","body":"b","body":"b"}"#,
            #"{"chat_id":"c","title":"t","body":"b","sent_at":9007199254740992}"#, #"{"chat_id":"c","title":"t","body":"b","sent_at":1.0}"#,
            #"{"chat_id":"c","title":"t","body":"b","x":{}}"#, #"{"chat_id":"c","title":"t","body":"\/"}"#,
            #"{"chat_id":"c","title":"t","body":"\u00e9"}"#, #"{"chat_id":"c","title":"t","body":"\u000A"}"#,
            #"{"chat_id":"c", "title":"t","body":"b"}"#,
            #"{"chat_id":"c","title":"t","body":"b"} "#, "\u{FEFF}" + #"{"chat_id":"c","title":"t","body":"b"}"#,
            #"{"chat_id":"c","title":"t","body":1}"#, #"{"chat_id":"c","title":"t","body":"b","message_id":2}"#,
        ] {
            #expect(Self.checkReading(Array(text.utf8)) != .compact, "\(text)")
        }
    }

    /// What the one plaintext reader makes of a text.
    enum PlaintextReading: Equatable {
        /// Already the writer's compact form (``DecryptedPayload/isCompact(_:)``): copied as it is.
        case compact
        /// A plaintext in another spelling, written compactly.
        case rewritten
        /// Not a plaintext.
        case refused(DecryptedPayload.Problem)
    }

    /// What the plaintext reader does with `text`, checked against the tree path it stands in
    /// for (the strict reader, then ``DecryptedPayload/init(validating:)``):
    /// ``DecryptedPayload/appendCompact(_:to:)`` writes what the tree's payload writes or gives
    /// the tree's problem (``CompactRewriteTests/check(_:sourceLocation:)``), and
    /// ``DecryptedPayload/isCompact(_:)`` says yes exactly when the writer writes that payload as
    /// `text`, every extra is a scalar, `sent_at` is digits alone and there are at most 16
    /// members (``PlaintextShape``).
    @discardableResult
    static func checkReading(_ text: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> PlaintextReading {
        let taken = CompactRewriteTests.check(text, sourceLocation: sourceLocation)
        let compact = text.withUnsafeBytes { DecryptedPayload.isCompact($0) }
        let shape = taken && (try? JSONReader.parse(text))?.objectValue.map { PlaintextShape.isCompact($0, text: text) } == true
        #expect(compact == shape, "\(String(decoding: text, as: UTF8.self))", sourceLocation: sourceLocation)
        if compact { return .compact }
        if taken { return .rewritten }
        guard case .failure(let problem) = text.withUnsafeBytes({ DecryptedPayload.parse($0) }) else { return .rewritten }
        return .refused(problem)
    }

    @Test("the one plaintext reader: other spellings, errors after a compact start, many members, nested extras")
    func plaintextReading() {
        let texts: [String] = [
            // Python's json.dumps: ", " and ": ", non-ASCII as \u escapes.
            #"{"chat_id": "c", "title": "Caf\u00e9", "body": "b", "sent_at": 1764460800}"#,
            #"{"chat_id":"c","title":"t","body":"b" }"#, #"{"chat_id":"c","title":"t","body":"b" ,"x":1}"#,
            #"{"chat_id":"c","title":"t","body":"b",  "x":1}"#, "{\n  \"chat_id\": \"c\",\n  \"title\": \"t\",\n  \"body\": \"b\"\n}",
            #"{"chat_id":"c","title":"t","body":"b","x":{"y":[1,{"z":null}]}}"#,
            #"{"chat_id":"c","title":"t","body":"b","x":{"y":1,"y":2}}"#,
            #"{"chat_id":"c","title":"t","body":"b","x":[1,}"#, #"{"chat_id":"c","title":"t","body":"b" x}"#,
            #"{"chat_id":"c","title":"t","body":"b","x":"\ud800"}"#, #"{"chat_id":"c","title":"t","body":"b","chat_id":"d"}"#,
            #"{"chat_id":"c","title":"t","body":"b"}x"#, #"{"chat_id":"c","title":"t","body":"b""#, #"{"chat_id":"c","title":"t","#,
            #"{"chat_id":"c","title":"t","body":"b","sent_at":-1}"#, #"{"chat_id":"c","title":"t","body":"b","truncated":1}"#,
            #"{"chat_id":"c","title":"t","body":"b","sent_at":1e3}"#, #"{"chat_id":"c","title":"t","sent_at":01}"#,
            #"{"chat_id":"c","title":"t","body":"b","\u0078":1,"x":2}"#, #"{"title":"t","body":"b"}"#, "{}", " {}", "[]", "\"x\"", "",
            "{" + (0..<17).map { "\"k\($0)\":\($0)," }.joined() + #""chat_id":"c","title":"t","body":"b"}"#,
            "{" + (0..<13).map { "\"k\($0)\":\($0)," }.joined() + #""chat_id":"c","title":"t","body":"b"}"#,
            "{" + (0..<14).map { "\"k\($0)\":\($0)," }.joined() + #""chat_id":"c","title":"t","body":"b"}"#,
            "{" + (0..<17).map { "\"k\($0 % 16)\":\($0)," }.joined() + #""chat_id":"c","title":"t","body":"b"}"#,
            String(repeating: "[", count: 600),
            #"{"chat_id":"c","title":"t","body":"b","x":"#.appending(String(repeating: "[", count: 600)),
        ]
        var readings: [PlaintextReading] = []
        for text in texts { readings.append(Self.checkReading(Array(text.utf8))) }
        // The cases above are not all alike: some compact, some rewritten, each kind of refusal.
        #expect(readings.contains(.compact))
        #expect(readings.contains(.rewritten))
        for problem in ["notJSON", "notObject", "breaksRule"] {
            #expect(readings.contains { "\($0)".contains(problem) }, "\(problem)")
        }
    }

    @Test("the fast sealer writes what the general sealer writes, for the same ephemeral key and nonce")
    func sealing() throws {
        let key = DeviceKey.generate()
        var generator = SeededGenerator(seed: 17)
        let placeholders = [KindlyPushSealer.Placeholder.default, .init(title: "Nouveau \"message\" 📩", body: "a\\b\n/")]
        for (mode, placeholder) in [
            (KindlyPushSealer.Mode.visible, placeholders[0]), (.visible, placeholders[1]), (.silent, placeholders[0]),
        ] {
            var sealer = PushSealer(recipient: key.publicKey, mode: mode, placeholder: placeholder)
            for length in [0, 1, 20, 63, 64, 200, 1000, 2000, 2900, 3000, 5000] {
                let body = String((0..<length).map { _ in "aé世🍜\"\n".randomElement(using: &generator)! })
                let text = JSONWriter.compactBytes(.object(try DecryptedPayload(chatId: "c", title: "t", body: body).object))
                let ephemeralSecretKey = SecureBytes.random(count: 32)
                let nonce = (0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }
                var output: [UInt8] = [0x41]
                let outcome = text.withUnsafeBytes {
                    sealer.seal(plaintext: $0, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce, appendingTo: &output)
                }
                let envelope = try KindlyPushSealer.sealMessage(
                    text, for: key.publicKey, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce)
                let document = JSONWriter.compactBytes(KindlyPushSealer.apnsDocument(envelope, mode: mode, placeholder: placeholder))
                if document.count <= WireFormat.maximumPayloadSize {
                    #expect(outcome == .sealed, "length \(length)")
                    #expect(Array(output.dropFirst()) == document, "length \(length)")
                } else {
                    // The general path's refusal, with the size it measured.
                    #expect(outcome == .failed(.payloadTooLarge(size: document.count)), "length \(length)")
                    #expect(output == [0x41])
                }
            }
            // Other spellings are sealed as the general path seals their compact form.
            for text in [
                #"{"chat_id": "c", "title": "Caf\u00e9", "body": "b", "sent_at": 1764460800}"#,
                #"{"chat_id":"c","title":"t","body":"b","x":{"y":[1,{"z":null}]}}"#,
                "{" + (0..<20).map { "\"k\($0)\":\($0)," }.joined() + #""chat_id":"c","title":"t","body":"b"}"#,
            ] {
                let payload = try KindlyPushSealer.payload(plaintext: try JSONReader.parse(Array(text.utf8)))
                let ephemeralSecretKey = SecureBytes.random(count: 32)
                let nonce = Sodium.randomBytes(count: 24)
                var output: [UInt8] = []
                let outcome = Array(text.utf8).withUnsafeBytes {
                    sealer.seal(plaintext: $0, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce, appendingTo: &output)
                }
                let envelope = try KindlyPushSealer.sealMessage(
                    JSONWriter.compactBytes(.object(payload.object)), for: key.publicKey, ephemeralSecretKey: ephemeralSecretKey,
                    nonce: nonce)
                #expect(outcome == .sealed, "\(text)")
                #expect(output == JSONWriter.compactBytes(KindlyPushSealer.apnsDocument(envelope, mode: mode, placeholder: placeholder)))
            }
            // What is no plaintext gets the general path's error, and nothing is written.
            var output: [UInt8] = []
            let refusals: [(String, PushSealer.Outcome)] = [
                (#"{"chat_id":"","title":"t","body":"b"}"#, .failed(.invalidPlaintext(#""chat_id" is empty"#))),
                (#"{"chat_id":"c","title":"t"}"#, .failed(.invalidPlaintext(#""body" is missing"#))),
                (#"{"chat_id":"c","title":"t","body":"b" x}"#, .notJSON(JSONReadError(kind: .unexpectedByte, offset: 38))),
                ("[]", .notObject(.array)), ("", .notJSON(JSONReadError(kind: .empty, offset: 0))),
            ]
            for (text, expected) in refusals {
                #expect(Array(text.utf8).withUnsafeBytes { sealer.seal(plaintext: $0, appendingTo: &output) } == expected, "\(text)")
            }
            #expect(output.isEmpty)
        }
    }

    @Test("--fit: a plaintext too long for APNs is cut by the general path from the payload the sealer read")
    func sealingFits() throws {
        let key = DeviceKey.generate()
        var sealer = PushSealer(recipient: key.publicKey, oversize: .truncateBody)
        let body = String(repeating: "é", count: 3000)
        for text in [
            JSONWriter.compactBytes(.object(try DecryptedPayload(chatId: "c", title: "t", body: body).object)),
            Array(#"{"chat_id": "c", "title": "t", "body": "\#(body)"}"#.utf8),
        ] {
            var output: [UInt8] = []
            #expect(text.withUnsafeBytes { sealer.seal(plaintext: $0, appendingTo: &output) } == .sealed)
            #expect(output.count <= WireFormat.maximumPayloadSize)
            let payload = try KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])).decryptResult(
                userInfo: try JSONReader.parse(output)
            ).get()
            let general = try KindlyPushSealer.seal(
                try KindlyPushSealer.payload(plaintext: try JSONReader.parse(text)), for: key.publicKey, oversize: .truncateBody)
            let expected = try KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])).decryptResult(
                userInfo: try JSONReader.parse(general)
            ).get()
            #expect(payload.truncated == true)
            #expect(payload == expected)
        }
    }

    @Test("strings: the fast reader's UTF-8 check is the standard library's")
    func utf8() {
        var generator = SeededGenerator(seed: 11)
        let interesting: [UInt8] = [
            0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3,
            0xF4, 0xF5, 0xFF,
        ]
        for _ in 0..<20000 {
            let content = (0..<Int.random(in: 0...12, using: &generator)).map { _ in interesting.randomElement(using: &generator)! }
            let quoted = [0x22] + content + [0x22]
            let fast = quoted.withUnsafeBytes { raw -> Bool in
                var reader = JSONTokenizer(raw)
                var discard = JSONStringDiscard()
                return (try? reader.string(&discard))?.raw == 1..<(quoted.count - 1)
            }
            let standard = content.withUnsafeBytes { String(validating: $0, as: UTF8.self) } != nil
            #expect(fast == standard, "\(content)")
        }
    }

    @Test("base64: the quick loop takes exactly the canonical texts, with Foundation's bytes")
    func base64() throws {
        var generator = SeededGenerator(seed: 13)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=A".utf8) + [0x20, 0x0A, 0x80]
        for _ in 0..<30000 {
            let text: [UInt8]
            if Bool.random(using: &generator) {
                // Long enough for the two-group steps and every way they end.
                let bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                var url = Array(Base64.urlEncoded(bytes).utf8)
                if Bool.random(using: &generator) { url = url.map { $0 == 0x2D ? 0x2B : $0 == 0x5F ? 0x2F : $0 } }
                if Bool.random(using: &generator) { url += [UInt8](repeating: 0x3D, count: (4 - url.count % 4) % 4) }
                if Bool.random(using: &generator), !url.isEmpty {
                    url[Int.random(in: 0..<url.count, using: &generator)] = alphabet.randomElement(using: &generator)!
                }
                text = url
            } else {
                text = (0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            }
            let reference = Self.foundationCanonicalDecoding(text)
            // Exactly the decoded length, with a guard byte after it that must stay untouched.
            var output = [UInt8](repeating: 0xA5, count: (reference?.count ?? 64) + 1)
            let quick = text.withUnsafeBytes { raw in
                output.withUnsafeMutableBytes { Base64.quickDecode(raw, into: UnsafeMutableRawBufferPointer(rebasing: $0.dropLast())) }
            }
            let shown = String(decoding: text, as: UTF8.self)
            if let quick {
                #expect(reference == Array(output[0..<quick]), "\(shown)")
                #expect(output.last == 0xA5, "\(shown): written past the decoded length")
            } else {
                #expect(reference == nil, "\(shown) is canonical but the quick loop refused it")
            }
        }
    }

    /// `text`'s bytes by Foundation's decoder when `text` is their one canonical spelling in its
    /// alphabet and padding (Foundation's encoding of them, mapped back, gives `text` again).
    static func foundationCanonicalDecoding(_ text: [UInt8]) -> [UInt8]? {
        let url = text.contains(0x2D) || text.contains(0x5F)
        if url, text.contains(0x2B) || text.contains(0x2F) { return nil }
        let padded = text.last == 0x3D
        var standard = String(decoding: text.map { $0 == 0x2D ? 0x2B : $0 == 0x5F ? 0x2F : $0 }, as: UTF8.self)
        if !padded { standard += String(repeating: "=", count: (4 - text.count % 4) % 4) }
        guard let data = Data(base64Encoded: standard) else { return nil }
        var again = Array(data.base64EncodedString().utf8)
        if !padded { again.removeAll { $0 == 0x3D } }
        if url { again = again.map { $0 == 0x2B ? 0x2D : $0 == 0x2F ? 0x5F : $0 } }
        return again == text ? Array(data) : nil
    }
}

/// A small deterministic generator (SplitMix64), so that a failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

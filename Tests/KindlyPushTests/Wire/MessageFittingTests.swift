import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

/// `KindlyPushSealer.seal(_:for:mode:placeholder:oversize:)` against real sealing: the fitted
/// push is checked by sealing and measuring, never by the arithmetic under test.
@Suite("Messages that always fit", .offThePool)
struct MessageFittingTests {
    let key = DeviceKey.generate()

    /// A payload whose compact plaintext text is exactly `length` bytes.
    static func payload(ofLength length: Int) throws -> DecryptedPayload {
        let frame = #"{"chat_id":"c","title":"","body":""}"#.utf8.count
        return try DecryptedPayload(chatId: "c", title: "", body: String(repeating: "x", count: length - frame))
    }

    @Test(
        "the budget is the exact largest plaintext: that length seals within 4096 bytes, one byte more does not",
        arguments: [0, 1, 2, 3, 17, 40, 63, 64, 65, 100, 127, 128, 129, 500])
    func exactBudget(_ titleLength: Int) throws {
        for mode in KindlyPushSealer.Mode.allCases {
            let placeholder = KindlyPushSealer.Placeholder(title: String(repeating: "t", count: titleLength), body: "b")
            let template = MessageFitting.templateLength(
                for: key.publicKey, mode: mode, placeholder: mode == .visible ? placeholder : .default)
            let budget = MessageFitting.plaintextBudget(templateLength: template)
            let used = mode == .visible ? placeholder : .default
            let fits = try KindlyPushSealer.seal(try Self.payload(ofLength: budget), for: key.publicKey, mode: mode, placeholder: used)
            #expect(fits.count <= 4096)
            #expect(fits.count == MessageFitting.documentLength(templateLength: template, plaintextLength: budget))
            #expect(throws: KindlyPushSealer.SealingError.self) {
                try KindlyPushSealer.seal(try Self.payload(ofLength: budget + 1), for: key.publicKey, mode: mode, placeholder: used)
            }
        }
    }

    @Test("the escaped length of every byte is what the writer writes")
    func escapedLengths() {
        for scalar in (0..<0x80).compactMap(Unicode.Scalar.init) + ["é", "€", "😀"] {
            let text = String(Character(scalar))
            var written: [UInt8] = []
            JSONWriter.writeString(text, to: &written)
            #expect(
                written.count - 2 == text.utf8.reduce(0) { $0 + JSONWriter.escapedLength(of: $1) }, "U+\(String(scalar.value, radix: 16))")
        }
    }

    static let bodies: [(String, String)] = [
        ("Latin", "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "),
        ("CJK", "你好世界，这是一个很长的消息。日本語のテキスト。"),
        ("emoji with skin tones", "👍🏽👋🏿🧑🏻‍💻👩🏾‍🚀🏳️‍🌈 "),
        ("combining marks", "e\u{301}a\u{308}\u{323}o\u{302}\u{303}\u{304}n\u{303} "),
        ("JSON escapes", "\"quoted\" \\back\\slash\u{1}\u{1f}\n\t\r\u{8}\u{c} "),
    ]

    @Test("a long body is cut to the longest prefix of whole characters that fits, with … and truncated: true")
    func longBodies() throws {
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        for (name, unit) in Self.bodies {
            for target in [3_000, 4_000, 10_000, 100_000] {
                var body = ""
                while body.utf8.count < target { body += unit }
                let payload = try DecryptedPayload(
                    chatId: "chat-1", title: "A title", body: body, messageId: "m-1", sentAt: 1_700_000_000, extras: ["x": true])
                let push = try KindlyPushSealer.seal(payload, for: key.publicKey, oversize: .truncateBody)
                #expect(push.count <= 4096, "\(name) \(target)")
                let got = try #require(decryption.decrypt(userInfo: try JSONReader.parse(push)), "\(name) \(target)")
                #expect(got.object["truncated"] == true)
                #expect(got.chatId == "chat-1" && got.title == "A title" && got.messageId == "m-1" && got.sentAt == 1_700_000_000)
                #expect(got.object["x"] == true)
                let cut = Array(got.body.utf8)
                let ellipsis = Array("…".utf8)
                try #require(cut.suffix(3).elementsEqual(ellipsis), "\(name) \(target)")
                let prefix = Array(cut.dropLast(3))
                // The prefix is whole characters of the body, by bytes.
                var characters = Array(body)
                var count = 0
                var bytes = 0
                while bytes < prefix.count {
                    bytes += characters[count].utf8.count
                    count += 1
                }
                #expect(bytes == prefix.count && Array(String(characters[..<count]).utf8) == prefix, "\(name) \(target)")
                // One more character does not fit.
                characters = Array(characters[...count])
                var longer = payload.object
                longer["body"] = .string(String(characters) + "…")
                longer["truncated"] = true
                #expect(throws: KindlyPushSealer.SealingError.self, "\(name) \(target)") {
                    try KindlyPushSealer.seal(try DecryptedPayload(validating: longer), for: self.key.publicKey)
                }
            }
        }
    }

    @Test("a message that fits is sealed unchanged, without the flag, even one byte under the limit")
    func fitsUnchanged() throws {
        let budget = MessageFitting.plaintextBudget(
            templateLength: MessageFitting.templateLength(for: key.publicKey, mode: .visible, placeholder: .default))
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        for payload in [try DecryptedPayload(chatId: "c", title: "t", body: "short"), try Self.payload(ofLength: budget)] {
            let push = try KindlyPushSealer.seal(payload, for: key.publicKey, oversize: .truncateBody)
            #expect(decryption.decrypt(userInfo: try JSONReader.parse(push)) == payload)
        }
    }

    @Test("a title too long for any body gives the minimal plaintext; a chat_id too long for that is refused")
    func minimal() throws {
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        let payload = try DecryptedPayload(
            chatId: "c", title: String(repeating: "T", count: 5_000), body: "hi", messageId: "m", sentAt: 5, extras: ["x": 1])
        let push = try KindlyPushSealer.seal(payload, for: key.publicKey, oversize: .truncateBody)
        let got = try #require(decryption.decrypt(userInfo: try JSONReader.parse(push)))
        #expect(
            JSONWriter.compactBytes(.object(got.object))
                == Array(#"{"chat_id":"c","message_id":"m","title":"","body":"","truncated":true}"#.utf8))
        let without = try DecryptedPayload(chatId: "c", title: String(repeating: "T", count: 5_000), body: "hi")
        let minimal = try KindlyPushSealer.seal(without, for: key.publicKey, oversize: .truncateBody)
        #expect(
            JSONWriter.compactBytes(.object(try #require(decryption.decrypt(userInfo: try JSONReader.parse(minimal))).object))
                == Array(#"{"chat_id":"c","title":"","body":"","truncated":true}"#.utf8))
        let hopeless = try DecryptedPayload(chatId: String(repeating: "c", count: 4_000), title: "t", body: "b")
        #expect {
            try KindlyPushSealer.seal(hopeless, for: key.publicKey, oversize: .truncateBody)
        } throws: { error in
            guard case .payloadTooLarge(let size) = error as? KindlyPushSealer.SealingError else { return false }
            return size > 4096
        }
        #expect(throws: KindlyPushSealer.SealingError.self) { try KindlyPushSealer.seal(payload, for: key.publicKey, oversize: .refuse) }
    }

    @Test("truncated in the message: false becomes true in place when the body is cut; a non-boolean is refused")
    func existingFlag() throws {
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        let long = try DecryptedPayload(validating: [
            "chat_id": "c", "truncated": false, "title": "t", "body": .string(String(repeating: "y", count: 5_000)),
        ])
        let push = try KindlyPushSealer.seal(long, for: key.publicKey, oversize: .truncateBody)
        let got = try #require(decryption.decrypt(userInfo: try JSONReader.parse(push)))
        #expect(got.object.keys == ["chat_id", "truncated", "title", "body"])
        #expect(got.object["truncated"] == true)
        let short = try DecryptedPayload(validating: ["chat_id": "c", "title": "t", "body": "b", "truncated": true])
        #expect(
            decryption.decrypt(
                userInfo: try JSONReader.parse(try KindlyPushSealer.seal(short, for: key.publicKey, oversize: .truncateBody)))
                == short)
        // A non-boolean `truncated` never reaches the sealer: the payload itself refuses it
        // (wire-format section 4), so neither oversize choice can seal one.
        #expect(throws: PlaintextError.self) {
            try DecryptedPayload(validating: ["chat_id": "c", "title": "t", "body": "b", "truncated": "yes"])
        }
    }
}

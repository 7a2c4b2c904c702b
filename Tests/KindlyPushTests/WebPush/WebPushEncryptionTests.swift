import Foundation
import KindlyPush
import KindlyPushBase
import KindlyPushCore
import KindlyPushLibcrypto
import KindlyPushWebPush
import Testing

/// RFC 8291's message encryption: RFC 8291's own example byte for byte, the messages that
/// http_ece wrote (TestVectors/webpush/, tools/webpush-vectors) reproduced and opened, and the
/// malformed ones refused for their reasons.
@Suite("Web Push message encryption (RFC 8291)", .offThePool)
struct WebPushEncryptionTests {
    static func b64(_ text: String) -> [UInt8] { try! Base64.decode(text) }
    static func secret(_ text: String) -> SecureBytes { b64(text).withUnsafeBytes { SecureBytes(copying: $0) } }
    static func plain(_ bytes: SecureBytes) -> [UInt8] { bytes.withUnsafeBytes { Array($0) } }

    /// RFC 8291, appendix A.
    enum AppendixA {
        static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
        static let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let asPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let message =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_"
            + "yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    @Test("RFC 8291's example message is reproduced byte for byte from its keys, salt and plaintext")
    func appendixAEncrypts() throws {
        let subscription = try WebPushSubscriptionKeys(p256dh: AppendixA.uaPublic, auth: AppendixA.auth)
        let ephemeral = try P256.PrivateKey(scalar: Self.secret(AppendixA.asPrivate))
        #expect(Base64.urlEncoded(ephemeral.publicKey) == AppendixA.asPublic)
        let message = try AppendixA.plaintext.withUnsafeBytes {
            try WebPushEncryption.encrypt($0, for: subscription, salt: Self.b64(AppendixA.salt), ephemeralKey: ephemeral)
        }
        #expect(Base64.urlEncoded(message) == AppendixA.message)
    }

    @Test("RFC 8291's example message opens with the user agent's private key and auth secret")
    func appendixADecrypts() throws {
        let receiver = try P256.PrivateKey(scalar: Self.secret(AppendixA.uaPrivate))
        #expect(Base64.urlEncoded(receiver.publicKey) == AppendixA.uaPublic)
        let plaintext = try Self.b64(AppendixA.message).withUnsafeBytes {
            try WebPushEncryption.decrypt($0, privateKey: receiver, auth: Self.secret(AppendixA.auth))
        }
        #expect(Self.plain(plaintext) == AppendixA.plaintext)
    }

    @Test("a fresh message is 86 bytes of header (salt, rs 4096, idlen 65, the ephemeral key), one record, and opens")
    func freshMessageRoundTrip() throws {
        let receiver = try P256.PrivateKey.generate()
        let auth = SecureBytes.random(count: 16)
        let subscription = try WebPushSubscriptionKeys(p256dh: receiver.publicKey, auth: auth)
        let plaintext = Array(#"{"aps":{"alert":"x"}}"#.utf8)
        let first = try plaintext.withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscription) }
        let second = try plaintext.withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscription) }
        #expect(first.count == 86 + plaintext.count + 1 + 16)
        #expect(Array(first[16..<21]) == [0, 0, 0x10, 0, 65])
        #expect(first[21] == 0x04)
        // A fresh salt and ephemeral key per message.
        #expect(first[0..<16] != second[0..<16])
        #expect(first[21..<86] != second[21..<86])
        for message in [first, second] {
            let opened = try message.withUnsafeBytes { try WebPushEncryption.decrypt($0, privateKey: receiver, auth: auth) }
            #expect(Self.plain(opened) == plaintext)
        }
        // An empty plaintext is one record all the same: the delimiter alone.
        let empty = try [UInt8]().withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscription) }
        #expect(empty.count == 86 + 1 + 16)
        #expect(try empty.withUnsafeBytes { try WebPushEncryption.decrypt($0, privateKey: receiver, auth: auth) }.count == 0)
    }

    @Test("every truncation and every one-bit change of a message is refused, never opened to other bytes")
    func changedMessagesAreRefused() throws {
        let receiver = try P256.PrivateKey(scalar: Self.secret(AppendixA.uaPrivate))
        let auth = Self.secret(AppendixA.auth)
        let message = Self.b64(AppendixA.message)
        func open(_ bytes: [UInt8]) -> [UInt8]? {
            try? bytes.withUnsafeBytes { Self.plain(try WebPushEncryption.decrypt($0, privateKey: receiver, auth: auth)) }
        }
        var opened: [String] = []
        for length in 0..<message.count where open(Array(message.prefix(length))) != nil { opened.append("the first \(length) bytes") }
        for offset in message.indices {
            for bit in 0..<8 {
                var changed = message
                changed[offset] ^= 1 << bit
                guard let plaintext = open(changed) else { continue }
                // The record size is not in the key schedule (RFC 8188): another one that still
                // holds the record reads the same plaintext. Any other change must be refused.
                if !(16..<20).contains(offset) || plaintext != AppendixA.plaintext { opened.append("bit \(bit) of byte \(offset)") }
            }
        }
        #expect(opened.isEmpty, "opened: \(opened.prefix(10))")
    }

    @Test("the budget is 3993 bytes: such a plaintext makes a 4096-byte body, one more is refused")
    func budget() throws {
        #expect(WebPushEncryption.maximumPlaintextLength == 3993)
        // What seal --recipients-inline and send hold a Web Push document to is this limit.
        #expect(PushPlatform.webPush.maximumPayloadSize == WebPushEncryption.maximumPlaintextLength)
        #expect(WebPushEncryption.headerLength == 86)
        let receiver = try P256.PrivateKey.generate()
        let subscription = try WebPushSubscriptionKeys(p256dh: receiver.publicKey, auth: SecureBytes.random(count: 16))
        let full = [UInt8](repeating: 0x61, count: 3993)
        let body = try full.withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscription) }
        #expect(body.count == WebPushEncryption.maximumBodyLength)
        let over = [UInt8](repeating: 0x61, count: 3994)
        #expect(throws: WebPushError.tooLong(3994)) { try over.withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscription) } }
    }

    @Test("subscription keys that are not a P-256 point and a 16-byte auth secret are refused")
    func subscriptionKeysAreChecked() throws {
        let receiver = try P256.PrivateKey.generate()
        var offCurve = receiver.publicKey
        offCurve[64] ^= 1
        for (p256dh, auth) in [
            (offCurve, 16), (Array(receiver.publicKey.prefix(33)), 16), (receiver.publicKey, 15), ([UInt8](repeating: 0, count: 65), 16),
        ] {
            #expect(throws: WebPushError.self) { try WebPushSubscriptionKeys(p256dh: p256dh, auth: SecureBytes.random(count: auth)) }
        }
        #expect(throws: WebPushError.self) { try WebPushSubscriptionKeys(p256dh: "not base64!", auth: AppendixA.auth) }
    }

    // MARK: TestVectors/webpush/aes128gcm.json (http_ece)

    struct Vector: CustomTestStringConvertible, Sendable {
        let name: String
        let fields: [String: String]
        var testDescription: String { name }
        subscript(_ key: String) -> [UInt8] { WebPushEncryptionTests.b64(fields[key]!) }
        func secret(_ key: String) -> SecureBytes { WebPushEncryptionTests.secret(fields[key]!) }

        /// The vector's message decrypted with its receiver's keys.
        func open() throws -> [UInt8] {
            let receiver = try P256.PrivateKey(scalar: secret("ua_private"))
            let opened = try self["message"].withUnsafeBytes {
                try WebPushEncryption.decrypt($0, privateKey: receiver, auth: secret("auth"))
            }
            return WebPushEncryptionTests.plain(opened)
        }
    }

    static func vectors(_ group: String) -> [Vector] {
        guard let file = try? Resources.json("webpush/aes128gcm.json"), let entries = file[group]?.arrayValue else { return [] }
        return entries.map { entry in
            var fields: [String: String] = [:]
            for member in entry.objectValue!.members { fields[member.key] = member.value.stringValue }
            return Vector(name: fields["name"]!, fields: fields)
        }
    }

    static let messages = vectors("messages")
    static let padded = vectors("padded")
    static let refusals = vectors("refusals")

    @Test("the vectors of http_ece are there")
    func vectorsAreThere() {
        #expect(Self.messages.count == 10)
        #expect(Self.padded.count == 3)
        #expect(Self.refusals.count == 19)
    }

    @Test("our encryption gives http_ece's message byte for byte, and our decryption opens it", arguments: messages)
    func reproducesHTTPECE(_ vector: Vector) throws {
        let subscription = try WebPushSubscriptionKeys(p256dh: vector["ua_public"], auth: vector.secret("auth"))
        let ephemeral = try P256.PrivateKey(scalar: vector.secret("as_private"))
        let message = try vector["plaintext"].withUnsafeBytes {
            try WebPushEncryption.encrypt($0, for: subscription, salt: vector["salt"], ephemeralKey: ephemeral)
        }
        // Compared as text: a mismatch prints two lines, not two arrays of 4,000 numbers.
        #expect(Base64.urlEncoded(message) == vector.fields["message"])
        #expect(try vector.open() == vector["plaintext"])
    }

    @Test("a record with zeros after its delimiter opens to the plaintext before it", arguments: padded)
    func opensPadded(_ vector: Vector) throws {
        #expect(try vector.open() == vector["plaintext"])
    }

    @Test("a malformed message is refused with its reason, never opened", arguments: refusals)
    func refusesMalformed(_ vector: Vector) throws {
        let error = #expect(throws: WebPushError.self) { try vector.open() }
        let reason = vector.fields["reason"]!
        #expect(error?.description.contains(reason) == true, "\(error.map { "\($0)" } ?? "nothing") does not say \(reason)")
    }
}

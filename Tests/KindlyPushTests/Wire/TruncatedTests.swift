import Foundation
import KindlyPushTesting
import Testing

@testable import KindlyPush
@testable import KindlyPushCore

/// The optional plaintext key `truncated` (wire format section 4): a boolean, or bad_plaintext.
@Suite("The plaintext key truncated", .offThePool)
struct TruncatedTests {
    static func text(_ value: String) -> String {
        #"{"chat_id":"c","title":"t","body":"b","message_id":"m","truncated":\#(value)}"#
    }

    @Test(
        "true and false are read and are no extra; anything else is refused",
        arguments: ["true", "false", #""yes""#, "1", "0", "null", "[true]", "{}"])
    func validation(_ value: String) throws {
        let bytes = Array(Self.text(value).utf8)
        let result = Result { () throws(PlaintextError) in
            try bytes.withBytes { (raw) throws(PlaintextError) in try DecryptedPayload(plaintext: raw) }
        }
        switch value {
        case "true", "false":
            let payload = try result.get()
            #expect(payload.truncated == (value == "true"))
            #expect(payload.extras.members.isEmpty)
            #expect(payload.object["truncated"] == .bool(value == "true"))
        default:
            #expect(throws: PlaintextError.self) { try result.get() }
        }
        #expect(try DecryptedPayload(chatId: "c", title: "t", body: "b").truncated == nil)
    }

    @Test(
        "the fast path takes truncated as it is only when it is a boolean, and agrees with the general path",
        arguments: ["true", "false", #""yes""#, "1", "null"])
    func fastPath(_ value: String) throws {
        let text = Array(Self.text(value).utf8)
        let canonical = text.withUnsafeBytes { DecryptedPayload.isCompact($0) }
        #expect(canonical == (value == "true" || value == "false"))
        let key = DeviceKey.generate()
        let envelope = try KindlyPushSealer.sealMessage(
            text, for: key.publicKey, ephemeralSecretKey: SecureBytes.random(count: 32), nonce: Sodium.randomBytes(count: 24))
        let push = JSONWriter.compactBytes(KindlyPushSealer.apnsDocument(envelope, mode: .silent))
        var decryptor = PushDecryptor(KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])))
        let outcome = FastPathTests.check(push, &decryptor)
        if canonical {
            #expect(outcome == .decrypted)
        } else {
            #expect(
                outcome
                    == .failed(
                        DecryptionFailure(
                            .badPlaintext,
                            #""truncated" is \#(value == "null" ? "null" : value == "1" ? "a number" : "a string"), not a boolean"#)))
        }
    }
}

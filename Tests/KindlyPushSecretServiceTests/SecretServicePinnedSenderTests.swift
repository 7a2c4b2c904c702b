import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushSecretService
import Testing

/// Pinned sender keys in the Secret Service keyring (wire format section 7.1).
@Suite("Pinned sender keys in the Secret Service keyring", .offThePool)
struct SecretServicePinnedSenderTests {
    @Test("the Secret Service keyring pins, lists, refuses a pinned sid, unpins, and switches pinned mode", .needsSecretService)
    func secretServiceContract() throws {
        let collection = try SecretServiceControl.createCollection()
        try PinnedSenderContract.check(SecretServiceKeyring(collection: .objectPath(collection), timeout: hangCap))
    }

    @Test("a pin is an item of the schema ai.kindly.push.SenderKey that secret-tool finds by sid", .needsSecretService)
    func secretServiceSchema() throws {
        let collection = try SecretServiceControl.createCollection()
        let keyring = SecretServiceKeyring(collection: .objectPath(collection), timeout: hangCap)
        let sender = SenderKey.generate()
        try keyring.pinSender(sender.publicKey, label: "schema test")
        let search = try run("/usr/bin/secret-tool", ["search", "--all", "--", "sid", sender.sid.base64URL])
        let text = String(decoding: search.standardOutput + search.standardError, as: UTF8.self)
        #expect(text.contains("attribute.public_key = \(sender.publicKey.base64URL)"))
        #expect(text.contains("schema = ai.kindly.push.SenderKey"))
        #expect(text.contains("attribute.label = schema test"))
        #expect(try keyring.list().isEmpty)
    }

    @Test("a locked collection: the pins cannot be read, so nothing is trusted; unlocked, it decrypts", .needsSecretService)
    func secretServiceLocked() throws {
        let collection = try SecretServiceControl.createCollection()
        let keyring = SecretServiceKeyring(collection: .objectPath(collection), timeout: hangCap)
        let device = DeviceKey.generate()
        let sender = SenderKey.generate()
        try keyring.store(device, label: "d")
        try keyring.pinSender(sender.publicKey, label: "s")
        let v2 = try JSONReader.parse(try KindlyPushSealer.seal(PinnedSenderContract.payload, for: device.publicKey, from: sender))
        #expect(decryptionFailure(v2, with: keyring) == nil)
        try SecretServiceControl.lock(collection)
        guard case .locked? = keyringError({ try keyring.pinnedSenders() }) else {
            Issue.record("a locked collection's pins did not fail as locked")
            return
        }
        #expect(decryptionFailure(v2, with: keyring) == .keyUnavailable)
        #expect(KindlyPushDecryption(keyring: keyring).isInPinnedMode)
        try SecretServiceControl.unlock(collection)
        #expect(decryptionFailure(v2, with: keyring) == nil)
    }
}

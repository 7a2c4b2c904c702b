import KindlyPush
import KindlyPushCore
import Testing

/// What every keyring must do with pinned sender keys (wire format section 7.1); the test
/// targets of KindlyPush and of KindlyPushSecretService both run it (this file is linked into the
/// second).
enum PinnedSenderContract {
    static let payload = try! DecryptedPayload(chatId: "c-9", title: "T", body: "B")

    /// Pins, lists, refuses a pinned sid, unpins, and says which sid is missing; pinning puts the
    /// keyring's reader in pinned mode and unpinning takes it out.
    static func check(_ keyring: any Keyring) throws {
        let device = DeviceKey.generate()
        try keyring.store(device, label: "device")
        defer { try? keyring.delete(device.kid) }
        let first = SenderKey.generate()
        let second = SenderKey.generate()
        let v1 = try JSONReader.parse(try KindlyPushSealer.seal(payload, for: device.publicKey))
        let v2 = try JSONReader.parse(try KindlyPushSealer.seal(payload, for: device.publicKey, from: second))
        let before = try keyring.pinnedSenders().map(\.sid)
        #expect(decryptionFailure(v1, with: keyring) == (before.isEmpty ? nil : .untrustedSender))

        // Degenerate keys (all-zero, the base point, an order-8 point, the
        // base point spelt p + 9) are refused with their reason, and nothing is pinned.
        let order8: [UInt8] = [
            0xE0, 0xEB, 0x7A, 0x7C, 0x3B, 0x41, 0xB8, 0xAE, 0x16, 0x56, 0xE3, 0xFA, 0xF1, 0x9F, 0xC4, 0x6A, 0xDA, 0x09, 0x8D, 0xEB, 0x9C,
            0x32, 0xB1, 0xFD, 0x86, 0x62, 0x05, 0x16, 0x5F, 0x49, 0xB8, 0x00,
        ]
        let pPlus9: [UInt8] = [0xF6] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
        for bytes in [[UInt8](repeating: 0, count: 32), [9] + [UInt8](repeating: 0, count: 31), order8, pPlus9] {
            let key = try SenderPublicKey(rawRepresentation: bytes)
            guard case .io(let message)? = keyringError({ try keyring.pinSender(key, label: "degenerate") }) else {
                Issue.record("\(key) was pinned")
                continue
            }
            #expect(message.hasPrefix("cannot pin the sender key: the sender public key "), "\(message)")
        }
        #expect(try keyring.pinnedSenders().map(\.sid) == before)

        try keyring.pinSender(first.publicKey, label: "first")
        try keyring.pinSender(second.publicKey, label: "second")
        #expect(keyringError { try keyring.pinSender(first.publicKey, label: "again") } == .senderAlreadyPinned(first.sid))
        let pinned = try keyring.pinnedSenders().filter { [first.sid, second.sid].contains($0.sid) }
        #expect(Set(pinned.map(\.label)) == ["first", "second"])
        #expect(Set(pinned.map(\.publicKey)) == [first.publicKey, second.publicKey])
        #expect(try keyring.pinnedSenders() == keyring.pinnedSenders().sorted())
        // Pins are not device keys, and device keys are not pins.
        #expect(try !keyring.list().contains { [first.sid.base64URL, second.sid.base64URL].contains($0.kid.base64URL) })
        #expect(try !keyring.pinnedSenders().contains { $0.sid.base64URL == device.kid.base64URL })

        #expect(decryptionFailure(v1, with: keyring) == .untrustedSender)
        #expect(decryptionFailure(v2, with: keyring) == nil)

        try keyring.unpinSender(second.sid)
        #expect(keyringError { try keyring.unpinSender(second.sid) } == .senderNotFound(second.sid))
        #expect(decryptionFailure(v2, with: keyring) == .untrustedSender)
        try keyring.unpinSender(first.sid)
        #expect(try keyring.pinnedSenders().map(\.sid) == before)
        #expect(decryptionFailure(v1, with: keyring) == (before.isEmpty ? nil : .untrustedSender))
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

/// What every keyring promises (Keyring.swift), checked on the keyrings that need nothing
/// around them. The Secret Service keyring has the same checks in SecretServiceKeyringTests,
/// where they show as skipped, by name, when no service runs.
@Suite("Every keyring keeps the same contract", .offThePool)
struct KeyringContractTests {
    static let kinds = ["memory", "file"]

    /// A fresh keyring of `kind`, and what must stay alive as long as it is used.
    static func make(_ kind: String) throws -> (keyring: any Keyring, folder: TemporaryFolder?) {
        switch kind {
        case "memory": return (InMemoryKeyring(), nil)
        default:
            let folder = try TemporaryFolder()
            return (FileKeyring(folder: folder.path + "/keys"), folder)
        }
    }

    @Test("stores, finds by kid, refuses a stored kid, lists, deletes, and says which kid is missing", arguments: kinds)
    func contract(kind: String) throws {
        let (keyring, folder) = try Self.make(kind)
        defer { withExtendedLifetime(folder) {} }
        #expect(keyring.name == kind)
        let first = DeviceKey.generate()
        let second = DeviceKey.generate()
        try keyring.store(first, label: "first")
        try keyring.store(second, label: "second")
        defer { try? keyring.delete(second.kid) }

        #expect(keyringError { try keyring.store(first, label: "again") } == .alreadyExists(first.kid))
        #expect(try keyring.key(for: first.kid).secretKey == first.secretKey)
        #expect(try keyring.key(for: second.kid).publicKey == second.publicKey)
        let listed = try keyring.list().filter { [first.kid, second.kid].contains($0.kid) }
        #expect(Set(listed.map(\.label)) == ["first", "second"])
        #expect(listed.allSatisfy { [first.publicKey, second.publicKey].contains($0.publicKey) })

        try keyring.delete(first.kid)
        #expect(keyringError { try keyring.key(for: first.kid) } == .notFound(first.kid))
        #expect(keyringError { try keyring.delete(first.kid) } == .notFound(first.kid))
        #expect(decryptionFailure(try sealedPush(for: second), with: keyring) == nil)
        #expect(decryptionFailure(try sealedPush(for: first), with: keyring) == .keyUnavailable)
    }

    @Test("the in-memory keyring, locked, is key_unavailable; unlocked, it decrypts again")
    func inMemoryLock() throws {
        let key = DeviceKey.generate()
        let keyring = InMemoryKeyring(keys: [key])
        let push = try sealedPush(for: key)
        keyring.isLocked = true
        #expect(keyringError { try keyring.key(for: key.kid) } == .locked("in-memory keyring"))
        #expect(decryptionFailure(push, with: keyring) == .keyUnavailable)
        keyring.isLocked = false
        #expect(decryptionFailure(push, with: keyring) == nil)
        #expect(keyring.lookupCount == 3)
    }
}

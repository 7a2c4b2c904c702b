import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

/// Pinned sender keys in every keyring (wire format section 7.1).
@Suite("Pinned sender keys in the keyrings", .offThePool)
struct PinnedSenderTests {
    @Test(
        "memory and file keyrings pin, list, refuse a pinned sid, unpin, and switch pinned mode", arguments: ["memory", "file", "caching"])
    func contract(_ kind: String) throws {
        let folder = try TemporaryFolder()
        let keyring: any Keyring =
            switch kind {
            case "memory": InMemoryKeyring()
            case "file": FileKeyring(folder: folder.path + "/keys")
            default: CachingKeyring(FileKeyring(folder: folder.path + "/keys"))
            }
        try PinnedSenderContract.check(keyring)
    }

    @Test("the file keyring keeps each pin in its own 0600 file in a 0700 senders folder, with nothing else left behind")
    func fileLayout() throws {
        let previous = umask(0)
        defer { umask(previous) }
        let folder = try TemporaryFolder()
        let keyring = FileKeyring(folder: folder.path + "/keys")
        let sender = SenderKey.generate()
        try keyring.pinSender(sender.publicKey, label: "backend")
        #expect(keyring.sendersFolder == folder.path + "/keys/senders")
        let attributes = try FileManager.default.attributesOfItem(atPath: keyring.sendersFolder)
        #expect(attributes[.posixPermissions] as? Int == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: keyring.sendersFolder)
        #expect(files == ["\(sender.sid.base64URL).json"])
        let path = keyring.sendersFolder + "/" + files[0]
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        let object = try #require(try JSONReader.parse([UInt8](Data(contentsOf: URL(fileURLWithPath: path)))).objectValue)
        #expect(object.keys == ["sid", "public_key", "label", "created"])
        #expect(object["public_key"] == .string(sender.publicKey.base64URL))
        #expect(try keyring.list().isEmpty)
    }

    @Test("a pin the file keyring cannot read is an error, never skipped: its reader then trusts no push")
    func unreadablePin() throws {
        let folder = try TemporaryFolder()
        let keyring = FileKeyring(folder: folder.path + "/keys")
        let device = DeviceKey.generate()
        try keyring.store(device, label: "d")
        let v1 = try sealedPush(for: device)
        let sender = SenderKey.generate()
        try keyring.pinSender(sender.publicKey, label: "s")
        let path = keyring.sendersFolder + "/\(sender.sid.base64URL).json"

        chmod(path, 0o644)
        #expect(keyringError { try keyring.pinnedSenders() } == .io(PrivateFileError.tooOpen(path: path, mode: 0o100644).description))
        #expect(decryptionFailure(v1, with: keyring) == .untrustedSender)
        chmod(path, 0o600)
        chmod(keyring.sendersFolder, 0o755)
        #expect(keyringError { try keyring.pinnedSenders() } != nil)
        #expect(decryptionFailure(v1, with: keyring) == .untrustedSender)
        chmod(keyring.sendersFolder, 0o700)

        // A file whose sid is not its key's, or not its name's.
        let other = SenderKey.generate()
        try Data(#"{"sid":"\#(other.sid)","public_key":"\#(sender.publicKey)","label":"x","created":1}"#.utf8)
            .write(to: URL(fileURLWithPath: keyring.sendersFolder + "/\(sender.sid.base64URL).json.tmp"))
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(atPath: path + ".tmp", toPath: path)
        chmod(path, 0o600)
        #expect(keyringError { try keyring.pinnedSenders() } == .io("\(path): the sid is not the public key's"))
        #expect(decryptionFailure(v1, with: keyring) == .untrustedSender)
        try FileManager.default.removeItem(atPath: path)
        // Files that are not pins are skipped: hidden files, other names.
        #expect(FileManager.default.createFile(atPath: keyring.sendersFolder + "/.kindly-push-abc", contents: Data("x".utf8)))
        #expect(FileManager.default.createFile(atPath: keyring.sendersFolder + "/notes.txt", contents: Data("x".utf8)))
        // The marker alone keeps pinned mode with no pin left; removed, the
        // files that are not pins leave no pin.
        #expect(keyringError { try keyring.pinnedSenders() }?.description.hasSuffix(": the pins cannot be read") == true)
        #expect(decryptionFailure(v1, with: keyring) == .untrustedSender)
        #expect(unlink(keyring.pinnedModeMarker) == 0)
        #expect(try keyring.pinnedSenders().isEmpty)
        #expect(decryptionFailure(v1, with: keyring) == nil)
    }

    @Test("the caching keyring reads the pins once, and again after a pin or unpin through it")
    func cachingKeyring() throws {
        let base = InMemoryKeyring()
        let caching = CachingKeyring(base)
        let first = SenderKey.generate().publicKey
        #expect(try caching.pinnedSenders().isEmpty)
        try base.pinSender(first, label: "behind its back")
        #expect(try caching.pinnedSenders().isEmpty)
        let second = SenderKey.generate().publicKey
        try caching.pinSender(second, label: "through it")
        #expect(Set(try caching.pinnedSenders().map(\.publicKey)) == [first, second])
        try caching.unpinSender(first.sid)
        #expect(try caching.pinnedSenders().map(\.publicKey) == [second])
    }

    /// A keyring written before pinning existed: only the device-key requirements.
    struct DeviceKeysOnly: Keyring {
        let name = "device-keys-only"
        let inner = InMemoryKeyring()
        func store(_ key: DeviceKey, label: String) throws(KeyringError) { try inner.store(key, label: label) }
        func key(for kid: KeyID) throws(KeyringError) -> DeviceKey { try inner.key(for: kid) }
        func list() throws(KeyringError) -> [KeyringEntry] { try inner.list() }
        func delete(_ kid: KeyID) throws(KeyringError) { try inner.delete(kid) }
    }

    @Test("a keyring that cannot hold pins holds none, cannot pin, and has none to unpin")
    func defaults() throws {
        let keyring = DeviceKeysOnly()
        let sender = SenderKey.generate()
        #expect(try keyring.pinnedSenders().isEmpty)
        #expect(
            keyringError { try keyring.pinSender(sender.publicKey, label: "x") }
                == .io("the device-keys-only keyring cannot hold pinned sender keys"))
        #expect(keyringError { try keyring.unpinSender(sender.sid) } == .senderNotFound(sender.sid))
        let device = DeviceKey.generate()
        try keyring.store(device, label: "d")
        #expect(decryptionFailure(try sealedPush(for: device), with: keyring) == nil)
        #expect(!KindlyPushDecryption(keyring: keyring).isInPinnedMode)
    }

    @Test("the in-memory keyring lists its pins while locked (they are public) and refuses to pin")
    func inMemoryLock() throws {
        let sender = SenderKey.generate().publicKey
        let keyring = InMemoryKeyring(pinnedSenders: [sender, sender])
        keyring.isLocked = true
        #expect(try keyring.pinnedSenders().map(\.publicKey) == [sender])
        #expect(keyringError { try keyring.pinSender(SenderKey.generate().publicKey, label: "x") } == .locked("in-memory keyring"))
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("Key files", .offThePool)
final class KeyFileTests {
    /// A folder of each test's own, removed when the test ends. Its mode is set, not left to the
    /// umask, which `writeAndRead` sets to 0 for the whole process while other tests run: a folder
    /// that others may write to is refused for keys.
    let folder: String = {
        let path = NSTemporaryDirectory() + "kindly-keyfile-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return path
    }()

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    @Test("a written key file is 0600 and reads back as the same key, even with a permissive umask")
    func writeAndRead() throws {
        let previous = umask(0)
        defer { umask(previous) }
        let key = DeviceKey.generate()
        let path = folder + "/key.json"
        try KeyFile.write(key, to: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
        #expect(mode == 0o600)
        let read = try KeyFile.read(path)
        #expect(read.secretKey == key.secretKey)
        #expect(read.kid == key.kid)
    }

    @Test("an existing key file is never overwritten")
    func noOverwrite() throws {
        let path = folder + "/key.json"
        let first = DeviceKey.generate()
        try KeyFile.write(first, to: path)
        #expect(throws: PrivateFileError.exists(path: path)) { try KeyFile.write(DeviceKey.generate(), to: path) }
        #expect(try KeyFile.read(path).kid == first.kid)
    }

    @Test("a key file that group or others can read is refused", arguments: [0o640, 0o604, 0o644, 0o666])
    func loosePermissions(_ mode: Int) throws {
        let path = folder + "/key.json"
        try KeyFile.write(DeviceKey.generate(), to: path)
        chmod(path, mode_t(mode))
        #expect(throws: PrivateFileError.tooOpen(path: path, mode: UInt32(0o100000 | mode))) { try KeyFile.read(path) }
    }

    @Test(
        "malformed key files are refused with a reason that never holds the secret",
        arguments: [
            "{}", "[]", "not json", #"{"kid":"x","public_key":"y","secret_key":"\u0041"}"#,
            #"{"kid":"AAAAAAAAAAA","public_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","secret_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#,
        ])
    func malformed(_ text: String) throws {
        let path = folder + "/bad.json"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        #expect(throws: PrivateFileError.self) { try KeyFile.read(path) }
        do {
            _ = try KeyFile.read(path)
        } catch {
            #expect(!error.description.contains("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"))
        }
    }

    @Test("a missing key file is reported as missing")
    func missing() {
        #expect(throws: PrivateFileError.missing(path: folder + "/none.json")) { try KeyFile.read(folder + "/none.json") }
    }

    @Test("the file keyring stores, lists without secrets, finds and deletes keys")
    func fileKeyring() throws {
        let keyring = FileKeyring(folder: folder + "/keys")
        let a = DeviceKey.generate()
        let b = DeviceKey.generate()
        try keyring.store(a, label: "phone")
        try keyring.store(b, label: "tablet")
        #expect(throws: KeyringError.alreadyExists(a.kid)) { try keyring.store(a, label: "again") }
        #expect(Set(try keyring.list().map(\.label)) == ["phone", "tablet"])
        #expect(try keyring.key(for: b.kid).secretKey == b.secretKey)
        try keyring.delete(a.kid)
        #expect(throws: KeyringError.notFound(a.kid)) { try keyring.key(for: a.kid) }
        let mode = try FileManager.default.attributesOfItem(atPath: folder + "/keys")[.posixPermissions] as! Int
        #expect(mode == 0o700)
    }

    @Test(
        "a key file's folder is the path up to its last slash, byte for byte",
        arguments: [
            ("keys/device.json", "keys"), ("/device.json", "/"), ("device.json", "."), ("/a/b/c.json", "/a/b"),
            // A combining accent after the slash: one Character with it, but the kernel splits on the byte.
            ("dossier/\u{301}clé.json", "dossier"), ("é/x", "é"),
        ])
    func folderOfAKeyFile(_ path: String, _ folder: String) {
        #expect(PrivateFile.folderName(of: path) == folder)
    }
}

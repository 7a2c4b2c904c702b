import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("File keyring", .offThePool)
struct FileKeyringTests {
    @Test("stores each key in a 0600 file inside a 0700 folder, even with umask 0")
    func permissionsUnderUmaskZero() throws {
        let root = try TemporaryFolder()
        let folder = "\(root.path)/data/kindly-push/keys"
        let keyring = FileKeyring(folder: folder)
        let key = DeviceKey.generate()
        let previous = umask(0)
        defer { umask(previous) }
        try keyring.store(key, label: "umask 0")

        #expect(try mode(of: folder) == 0o700)
        #expect(try mode(of: "\(folder)/\(key.kid.base64URL).json") == 0o600)
        #expect(try keyring.key(for: key.kid).secretKey == key.secretKey)
    }

    @Test("refuses a key file that group or others can read", arguments: [0o644, 0o640, 0o604, 0o660, 0o606] as [mode_t])
    func refusesLooseFile(permissions: mode_t) throws {
        let root = try TemporaryFolder()
        let keyring = FileKeyring(folder: root.path + "/keys")
        let key = DeviceKey.generate()
        try keyring.store(key, label: "loose file")
        let path = "\(keyring.folder)/\(key.kid.base64URL).json"
        #expect(chmod(path, permissions) == 0)

        let shown = String(permissions, radix: 8)
        for error in [keyringError { try keyring.key(for: key.kid) }, keyringError { try keyring.list() }] {
            guard case .io(let message)? = error else {
                Issue.record("a \(shown) key file gave \(String(describing: error)), not .io")
                continue
            }
            #expect(message.contains("permissions \(shown) are too open"))
            #expect(message.contains("chmod 600"))
        }
    }

    @Test("refuses a key folder that group or others can enter", arguments: [0o755, 0o750, 0o705, 0o777, 0o711] as [mode_t])
    func refusesLooseFolder(permissions: mode_t) throws {
        let root = try TemporaryFolder()
        let keyring = FileKeyring(folder: root.path + "/keys")
        let key = DeviceKey.generate()
        try keyring.store(key, label: "loose folder")
        #expect(chmod(keyring.folder, permissions) == 0)

        let shown = String(permissions, radix: 8)
        let errors = [
            keyringError { try keyring.key(for: key.kid) },
            keyringError { try keyring.list() },
            keyringError { try keyring.store(DeviceKey.generate(), label: "into a loose folder") },
        ]
        for error in errors {
            guard case .io(let message)? = error else {
                Issue.record("a \(shown) key folder gave \(String(describing: error)), not .io")
                continue
            }
            #expect(message.contains("permissions \(shown) are too open; a key folder must be 0700"))
        }
    }

    @Test("refuses a folder that was made loose before the first store, and writes nothing into it")
    func refusesExistingLooseFolder() throws {
        let root = try TemporaryFolder()
        let folder = root.path + "/keys"
        #expect(mkdir(folder, 0o755) == 0)
        #expect(chmod(folder, 0o755) == 0)
        let keyring = FileKeyring(folder: folder)
        guard case .io(let message)? = keyringError({ try keyring.store(DeviceKey.generate(), label: "x") }) else {
            Issue.record("storing into a 0755 folder did not fail with .io")
            return
        }
        #expect(message.contains("permissions 755"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    @Test("several keys coexist: each is found by its kid, a stored kid is refused, delete removes one")
    func storeLookUpDelete() throws {
        let root = try TemporaryFolder()
        let keyring = FileKeyring(folder: root.path + "/keys")
        let old = DeviceKey.generate()
        let new = DeviceKey.generate()
        try keyring.store(old, label: "old")
        try keyring.store(new, label: "new")

        #expect(keyringError { try keyring.store(old, label: "again") } == .alreadyExists(old.kid))
        #expect(try keyring.key(for: old.kid).secretKey == old.secretKey)
        #expect(try keyring.key(for: new.kid).secretKey == new.secretKey)
        #expect(decryptionFailure(try sealedPush(for: old), with: keyring) == nil)
        #expect(decryptionFailure(try sealedPush(for: new), with: keyring) == nil)

        try keyring.delete(old.kid)
        #expect(!FileManager.default.fileExists(atPath: "\(keyring.folder)/\(old.kid.base64URL).json"))
        #expect(keyringError { try keyring.key(for: old.kid) } == .notFound(old.kid))
        #expect(keyringError { try keyring.delete(old.kid) } == .notFound(old.kid))
        #expect(decryptionFailure(try sealedPush(for: old), with: keyring) == .keyUnavailable)
        #expect(try keyring.list().map(\.kid) == [new.kid])
        #expect(try keyring.list().map(\.label) == ["new"])
    }

    @Test("a keyring folder that does not exist yet holds no keys")
    func missingFolder() throws {
        let root = try TemporaryFolder()
        let keyring = FileKeyring(folder: root.path + "/not/yet")
        let kid = DeviceKey.generate().kid
        #expect(try keyring.list().isEmpty)
        #expect(keyringError { try keyring.key(for: kid) } == .notFound(kid))
        #expect(keyringError { try keyring.delete(kid) } == .notFound(kid))
    }

    @Test("list gives public information only, never a secret")
    func listHasNoSecrets() throws {
        let root = try TemporaryFolder()
        let keyring = FileKeyring(folder: root.path + "/keys")
        let key = DeviceKey.generate()
        try keyring.store(key, label: "public only")
        let entries = try keyring.list()
        #expect(entries == [KeyringEntry(kid: key.kid, publicKey: key.publicKey, label: "public only", created: entries[0].created)])

        // A throwaway key: the test may hold its secret as text to look for it.
        let secret = key.secretKey.withUnsafeBytes { base64URL(Data($0)) }
        let file = try String(contentsOfFile: "\(keyring.folder)/\(key.kid.base64URL).json", encoding: .utf8)
        #expect(file.contains(secret), "the key file holds the secret key")
        for shown in [
            String(describing: entries), String(reflecting: entries), "\(keyringError { try keyring.key(for: DeviceKey.generate().kid) }!)",
        ] {
            #expect(!shown.contains(secret))
        }
    }

    @Test("files that are not keys are never taken for keys: hidden temporary files, other names")
    func ignoresOtherFiles() throws {
        let root = try TemporaryFolder()
        let keyring = FileKeyring(folder: root.path + "/keys")
        let key = DeviceKey.generate()
        try keyring.store(key, label: "the only key")
        let stray = DeviceKey.generate().kid.base64URL
        for name in [".kindly-push-Ab12Cd", ".\(stray).json", "\(stray).json.tmp", "notes.txt", "not-a-kid.json"] {
            #expect(
                FileManager.default.createFile(
                    atPath: "\(keyring.folder)/\(name)", contents: Data("{\"kid\": \"partial".utf8), attributes: [.posixPermissions: 0o600])
            )
        }
        #expect(try keyring.list().map(\.kid) == [key.kid])
    }

    @Test("many threads storing keys at once lose none")
    func concurrentStores() throws {
        let root = try TemporaryFolder()
        let keyring = FileKeyring(folder: root.path + "/keys")
        let threads = 16
        let keysPerThread = 8
        let keys = (0..<threads * keysPerThread).map { _ in DeviceKey.generate() }
        let failures = onThreads(threads) { index in
            for key in keys[(index * keysPerThread)..<((index + 1) * keysPerThread)] {
                try keyring.store(key, label: "thread \(index)")
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(Set(try keyring.list().map(\.kid)) == Set(keys.map(\.kid)))
        for key in keys {
            #expect(try keyring.key(for: key.kid).secretKey == key.secretKey)
        }
        // Only the keys are left: no temporary file survives a completed store.
        #expect(try FileManager.default.contentsOfDirectory(atPath: keyring.folder).count == keys.count)
    }

    @Test("many threads storing the same key at once store it exactly once")
    func concurrentStoresOfOneKey() throws {
        let root = try TemporaryFolder()
        let keyring = FileKeyring(folder: root.path + "/keys")
        let key = DeviceKey.generate()
        let failures = onThreads(8) { _ in try keyring.store(key, label: "same") }
        #expect(failures.count == 7)
        #expect(failures.allSatisfy { $0.contains("is stored already") })
        #expect(try keyring.key(for: key.kid).secretKey == key.secretKey)
        #expect(try FileManager.default.contentsOfDirectory(atPath: keyring.folder) == ["\(key.kid.base64URL).json"])
    }

    @Test(
        "the default folder follows KINDLY_PUSH_KEYRING_DIR, then XDG_DATA_HOME, then HOME",
        arguments: [
            (["KINDLY_PUSH_KEYRING_DIR": "/k", "XDG_DATA_HOME": "/x", "HOME": "/h"], "/k"),
            (["KINDLY_PUSH_KEYRING_DIR": "", "XDG_DATA_HOME": "/x", "HOME": "/h"], "/x/kindly-push/keys"),
            (["HOME": "/h"], "/h/.local/share/kindly-push/keys"),
            // A relative XDG_DATA_HOME is ignored, as the XDG specification says.
            (["XDG_DATA_HOME": "x", "HOME": "/h"], "/h/.local/share/kindly-push/keys"),
        ])
    func defaultFolder(environment: [String: String], expected: String) throws {
        #expect(try FileKeyring.defaultFolder(environment: environment) == expected)
    }

    @Test("without HOME the default folder is under the password database's home, never the current folder")
    func defaultFolderWithoutHome() throws {
        let home = try #require(getpwuid(geteuid())?.pointee.pw_dir.map { String(cString: $0) })
        for environment in [[:], ["HOME": ""]] {
            #expect(try FileKeyring.defaultFolder(environment: environment) == home + "/.local/share/kindly-push/keys")
        }
    }
}

/// The permission bits of `path`.
func mode(of path: String) throws -> mode_t {
    var status = stat()
    guard stat(path, &status) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    return status.st_mode & 0o777
}

/// base64url without padding.
func base64URL(_ data: Data) -> String {
    data.base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The embedded default keyring: one key file per key in a folder only its owner can enter,
/// and one file per pinned sender key in its `senders` folder (see ``sendersFolder``).
///
/// Each file is `KID.json` (the kid in base64url), holding the key-file object of cli.md plus
/// `label` and `created`. Files are 0600 and written atomically (a nameless file, fsync, link
/// under its name, fsync of the folder; see `PrivateFile.write`), so a crash or `kill -9` never
/// leaves a torn key or a stray copy, and two writers, threads or processes, never lose one: each
/// key has its own name, and a name is only ever created, never overwritten. Looser permissions
/// on the folder or a file are refused, as ssh refuses them.
public struct FileKeyring: Keyring {
    public let name = "file"
    /// The folder holding the key files.
    public let folder: String

    /// A keyring in `folder`, which is created (0700) on first store.
    public init(folder: String) {
        self.folder = folder
    }

    /// The folder cli.md names: `$KINDLY_PUSH_KEYRING_DIR`, else `$XDG_DATA_HOME/kindly-push/keys`,
    /// else `~/.local/share/kindly-push/keys`.
    public static func defaultFolder(environment: [String: String]) -> String {
        if let folder = environment["KINDLY_PUSH_KEYRING_DIR"], !folder.isEmpty { return folder }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return data + "/kindly-push/keys" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "."
        return home + "/.local/share/kindly-push/keys"
    }

    func path(for kid: KeyID) -> String {
        "\(folder)/\(kid.base64URL).json"
    }

    public func store(_ key: DeviceKey, label: String) throws(KeyringError) {
        do throws(PrivateFileError) {
            try PrivateFile.makePrivateFolder(folder)
            let contents = KeyFile.serialize(
                key,
                extra: [
                    .init(key: "label", value: .string(label)),
                    .init(key: "created", value: .number(JSONNumber(Int(unixTimeNow())))),
                ])
            try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in
                try PrivateFile.write(bytes, to: path(for: key.kid))
            }
        } catch .exists {
            throw .alreadyExists(key.kid)
        } catch {
            throw .io(error.description)
        }
    }

    public func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        try load(kid).key
    }

    private func load(_ kid: KeyID) throws(KeyringError) -> (key: DeviceKey, object: JSONObject) {
        let path = path(for: kid)
        do throws(PrivateFileError) {
            try PrivateFile.checkPrivateFolder(folder)
            let contents = try PrivateFile.read(path)
            let parsed = try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in try KeyFile.parse(bytes, path: path) }
            guard parsed.key.kid == kid else { throw PrivateFileError.malformed(path: path, reason: "holds another kid") }
            return parsed
        } catch .missing {
            throw .notFound(kid)
        } catch {
            throw .io(error.description)
        }
    }

    public func list() throws(KeyringError) -> [KeyringEntry] {
        guard let directory = opendir(folder) else {
            if errno == ENOENT { return [] }
            throw .io(PrivateFileError.system(path: folder, operation: "opendir", errno: errno).description)
        }
        defer { closedir(directory) }
        var kids: [KeyID] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasSuffix(".json"), !name.hasPrefix("."), let kid = KeyID(base64: String(name.dropLast(5))) else {
                continue
            }
            kids.append(kid)
        }
        var entries: [KeyringEntry] = []
        for kid in kids {
            let loaded: (key: DeviceKey, object: JSONObject)
            do throws(KeyringError) {
                loaded = try load(kid)
            } catch .notFound {
                continue  // deleted by another process since the folder was read
            }
            let created = loaded.object["created"]?.numberValue?.integerValue(in: 0...Int64.max) ?? 0
            entries.append(
                KeyringEntry(kid: kid, publicKey: loaded.key.publicKey, label: loaded.object["label"]?.stringValue ?? "", created: created))
        }
        return entries.sorted()
    }

    public func delete(_ kid: KeyID) throws(KeyringError) {
        let path = path(for: kid)
        guard unlink(path) == 0 else {
            if errno == ENOENT { throw .notFound(kid) }
            throw .io(PrivateFileError.system(path: path, operation: "unlink", errno: errno).description)
        }
        PrivateFile.syncFolder(folder)
        SenderSecretCache.shared.evict(kid: kid)
    }
}

/// One key file used as a keyring (`--key-file`): it holds exactly one key.
public struct KeyFileKeyring: Keyring {
    public let name = "key-file"
    /// The one key, read from the file when the keyring was made.
    public let key: DeviceKey
    /// The key file it was read from.
    public let path: String

    /// Reads the key file at `path` now, so that a missing or loose file is reported up front.
    public init(path: String) throws(PrivateFileError) {
        self.path = path
        self.key = try KeyFile.read(path)
    }

    public func store(_ key: DeviceKey, label: String) throws(KeyringError) {
        throw .io("\(path): a key file holds one key; write a new one with keygen --key-file")
    }

    public func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        guard kid == key.kid else { throw .notFound(kid) }
        return key
    }

    public func list() throws(KeyringError) -> [KeyringEntry] {
        [KeyringEntry(kid: key.kid, publicKey: key.publicKey, label: path, created: 0)]
    }

    public func delete(_ kid: KeyID) throws(KeyringError) {
        throw .io("\(path): delete the key file itself")
    }
}

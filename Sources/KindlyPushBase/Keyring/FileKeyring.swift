internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The embedded default keyring: one key file per key in a folder only its owner can enter,
/// and one file per pinned sender key in its `senders` folder (see ``sendersFolder``).
///
/// Each file is `KID.json` (the kid in base64url), holding the key-file object of docs/spec/streams.md plus
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

    /// The folder docs/spec/streams.md names: `$KINDLY_PUSH_KEYRING_DIR`, else `$XDG_DATA_HOME/kindly-push/keys`
    /// (an absolute `XDG_DATA_HOME` only, as the XDG specification says), else
    /// `~/.local/share/kindly-push/keys`, where `~` is `$HOME` or, when `HOME` is unset or empty,
    /// the effective user's home folder in the password database.
    ///
    /// - Throws: ``KeyringError/io(_:)`` when there is no home folder either: never a folder
    ///   relative to the current one.
    public static func defaultFolder(environment: [String: String]) throws(KeyringError) -> String {
        try defaultFolder { environment[$0] }
    }

    /// ``defaultFolder(environment:)`` with each variable read through `variable`: for an
    /// environment that is not a dictionary (the command line's, which hashes nothing).
    package static func defaultFolder(variable: (String) -> String?) throws(KeyringError) -> String {
        if let problem = locationProblem(variable: variable) { throw .io(problem) }
        if let folder = variable("KINDLY_PUSH_KEYRING_DIR"), !folder.isEmpty { return folder }
        if let data = variable("XDG_DATA_HOME"), data.utf8.first == UInt8(ascii: "/") { return data + "/kindly-push/keys" }
        guard let home = variable("HOME").flatMap({ $0.isEmpty ? nil : $0 }) ?? PrivateFile.passwordDatabaseHome() else {
            throw .io(
                "cannot place the file keyring: HOME is not set and the password database has no home folder for uid \(geteuid()); "
                    + "set KINDLY_PUSH_KEYRING_DIR")
        }
        return home + "/.local/share/kindly-push/keys"
    }

    /// Why the variable that ``defaultFolder(variable:)`` would place the keyring by
    /// (`KINDLY_PUSH_KEYRING_DIR`, else `HOME` when `XDG_DATA_HOME` is not absolute) is refused,
    /// or `nil`.
    package static func locationProblem(variable: (String) -> String?) -> String? {
        if let folder = variable("KINDLY_PUSH_KEYRING_DIR"), !folder.isEmpty {
            return locationProblem(folder, variable: "KINDLY_PUSH_KEYRING_DIR")
        }
        if variable("XDG_DATA_HOME")?.utf8.first == UInt8(ascii: "/") { return nil }
        guard let home = variable("HOME"), !home.isEmpty else { return nil }
        return locationProblem(home, variable: "HOME")
    }

    /// Why the folder `value` of the environment variable `variable` is refused for keys, or
    /// `nil`: it must be an absolute path (a relative one would put keys wherever the command
    /// happens to run, as ssh refuses a relative IdentityFile), with no line break and no space
    /// or tab at either end (a folder named so is a mistake of quoting, never meant).
    package static func locationProblem(_ value: String, variable: String) -> String? {
        if value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) {
            return "\(variable) holds a line break ('\(value)'); set it to the folder's absolute path without one"
        }
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        if let first = value.utf8.first, let last = value.utf8.last, isBlank(first) || isBlank(last) {
            return "\(variable) begins or ends with a space or a tab ('\(value)'); set it to the folder's absolute path without them"
        }
        guard value.utf8.first == UInt8(ascii: "/") else {
            return "\(variable) is not an absolute path ('\(value)'); keys are never placed relative to the current folder"
        }
        return nil
    }

    /// Removes what interrupted writes left in the key folder and in its `senders` folder
    /// (``PrivateFile/removeLeftovers(in:)``) and returns their paths.
    @discardableResult
    func sweep() -> [String] {
        PrivateFile.removeLeftovers(in: folder) + PrivateFile.removeLeftovers(in: sendersFolder)
    }

    func path(for kid: KeyID) -> String {
        "\(folder)/\(kid.base64URL).json"
    }

    public func store(_ key: DeviceKey, label: String) throws(KeyringError) {
        if let problem = KeyringLabel.problem(with: label) { throw .io("cannot store the key: \(problem)") }
        do throws(PrivateFileError) {
            try PrivateFile.makePrivateFolder(folder)
            sweep()
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
        try load(kid, sweeping: true).key
    }

    /// Reads the entry of `kid`, after checking the folder (and, when `sweeping`, removing what
    /// interrupted writes left in it).
    private func load(_ kid: KeyID, sweeping: Bool = false) throws(KeyringError) -> (key: DeviceKey, object: JSONObject) {
        let path = path(for: kid)
        do throws(PrivateFileError) {
            try PrivateFile.checkPrivateFolder(folder)
            if sweeping { sweep() }
            let parsed = try PrivateFile.read(path) { (bytes, path) throws(PrivateFileError) in try KeyFile.parse(bytes, path: path) }
            guard parsed.key.kid == kid else { throw PrivateFileError.malformed(path: path, reason: "holds another kid") }
            return parsed
        } catch .missing {
            throw .notFound(kid)
        } catch {
            throw .io(error.description)
        }
    }

    /// Every stored key's public information. An entry that cannot be read (not a regular file,
    /// too open, too large, another user's, malformed) is an error; `scan()` lists the others.
    public func list() throws(KeyringError) -> [KeyringEntry] {
        let listing = try scan()
        if let problem = listing.problems.first { throw problem }
        return listing.entries
    }

    /// What `scan()` found in the folder.
    package struct Listing: Sendable {
        /// The keys that could be read, sorted as ``KeyringEntry`` sorts.
        package var entries: [KeyringEntry] = []
        /// One error for each entry that could not be read (its message names the file).
        package var problems: [KeyringError] = []
        /// The temporary files of interrupted writes that were found and removed.
        package var removedLeftovers: [String] = []

        package init() {}
    }

    /// Reads every entry of the folder, keeping the good ones and an error for each bad one,
    /// after removing what interrupted writes left. Throws only when the folder itself cannot be
    /// used (another user's, too open, not a folder, unreadable); a folder that does not exist
    /// holds no keys.
    package func scan() throws(KeyringError) -> Listing {
        var listing = Listing()
        do throws(PrivateFileError) {
            try PrivateFile.checkPrivateFolder(folder)
        } catch .missing {
            return listing
        } catch {
            throw .io(error.description)
        }
        listing.removedLeftovers = sweep()
        let names: [String]
        do throws(Errno) {
            names = try PrivateFile.entryNames(in: folder)
        } catch {
            if error == .noSuchFileOrDirectory { return listing }
            throw .io(PrivateFileError.system(path: folder, operation: "opendir", errno: error.rawValue).description)
        }
        // Canonical names only: another spelling of a kid (padded, standard base64) is not a key.
        let kids = names.compactMap { name -> KeyID? in
            guard name.hasSuffix(".json"), !name.hasPrefix(".") else { return nil }
            let stem = String(name.dropLast(5))
            guard let kid = KeyID(base64: stem), kid.base64URL == stem else { return nil }
            return kid
        }
        for kid in kids.sorted(by: { $0.base64URL < $1.base64URL }) {
            let loaded: (key: DeviceKey, object: JSONObject)
            do throws(KeyringError) {
                loaded = try load(kid)
            } catch .notFound {
                continue  // deleted by another process since the folder was read
            } catch {
                listing.problems.append(error)
                continue
            }
            let created = loaded.object["created"]?.numberValue?.integerValue(in: 0...Int64.max) ?? 0
            listing.entries.append(
                KeyringEntry(kid: kid, publicKey: loaded.key.publicKey, label: loaded.object["label"]?.stringValue ?? "", created: created))
        }
        listing.entries.sort()
        return listing
    }

    public func delete(_ kid: KeyID) throws(KeyringError) {
        let path = path(for: kid)
        do throws(PrivateFileError) {
            try PrivateFile.checkPrivateFolder(folder)
        } catch .missing {
            throw .notFound(kid)
        } catch {
            throw .io(error.description)
        }
        sweep()
        do throws(Errno) {
            try nothingOrErrno { unlink(path) }
        } catch {
            if error == .noSuchFileOrDirectory { throw .notFound(kid) }
            throw .io(PrivateFileError.system(path: path, operation: "unlink", errno: error.rawValue).description)
        }
        // Other spellings of the kid's file name go with it: nothing of the key is left behind.
        for alias in Self.aliasNames(of: kid.base64URL) { unlink("\(folder)/\(alias)") }
        PrivateFile.syncFolder(folder)
        SenderSecretCache.shared.evict(kid: kid)
    }

    /// The key folder's and the `senders` folder's identity, type, owner, permissions,
    /// modification time and names (see ``Keyring/changeToken()``). Keys and pins are only ever
    /// created and removed, never rewritten, and a file's name is its key's id, so the names tell
    /// every change that matters; the rest tells a folder replaced or loosened. `nil` when a
    /// folder cannot be read.
    public func changeToken() -> KeyringChangeToken? {
        var bytes: [UInt8] = []
        for path in [folder, sendersFolder] {
            var status = stat()
            do throws(Errno) {
                try nothingOrErrno { lstat(path, &status) }
            } catch {
                guard error == .noSuchFileOrDirectory else { return nil }
                bytes.append(0)
                continue
            }
            if status.st_mode & S_IFMT == S_IFLNK {
                guard let target = try? FileStatus.of(path) else { return nil }
                status = target
            }
            let words = [
                UInt64(status.st_dev), UInt64(status.st_ino), UInt64(status.st_mode), UInt64(status.st_uid),
                UInt64(bitPattern: Int64(status.st_mtim.tv_sec)), UInt64(bitPattern: Int64(status.st_mtim.tv_nsec)),
            ]
            for word in words { withUnsafeBytes(of: word) { bytes.append(contentsOf: $0) } }
            guard status.st_mode & S_IFMT == S_IFDIR else { continue }
            guard let names = try? PrivateFile.entryNames(in: path) else { return nil }
            for name in names.sorted() { bytes += Array(name.utf8) + [0] }
            bytes.append(1)
        }
        return KeyringChangeToken(bytes)
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

    /// Always the same: the one key was read when the keyring was made.
    public func changeToken() -> KeyringChangeToken? {
        KeyringChangeToken([])
    }
}

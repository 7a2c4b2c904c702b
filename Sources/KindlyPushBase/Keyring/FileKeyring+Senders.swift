internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Pinned sender keys in the file keyring: one file per key in the `senders` folder inside the
/// keyring's folder, `SID.json` (the sid in base64url) holding `{"sid", "public_key", "label",
/// "created"}`. The files and the folder have the device keys' permissions (0600 and 0700, looser
/// ones refused) and are written the same crash-safe way (``PrivateFile``): a pin appears whole
/// or not at all, and is never overwritten.
extension FileKeyring {
    /// The folder of the pinned sender keys.
    public var sendersFolder: String { folder + "/" + FileKeyring.sendersFolderName }

    /// The name of ``sendersFolder`` inside the key folder.
    package static let sendersFolderName = "senders"

    func senderPath(for sid: SenderID) -> String {
        "\(sendersFolder)/\(sid.base64URL).json"
    }

    /// Pins `key` with `label` (see ``Keyring/pinSender(_:label:)``).
    public func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        if let problem = KeyringLabel.problem(with: label) { throw .io("cannot pin the sender key: \(problem)") }
        do throws(PrivateFileError) {
            try PrivateFile.makePrivateFolder(folder)
            try PrivateFile.makePrivateFolder(sendersFolder)
            let object = JSONObject([
                .init(key: KindlyKey.senderID, value: .string(key.sid.base64URL)),
                .init(key: "public_key", value: .string(key.base64URL)),
                .init(key: "label", value: .string(label)),
                .init(key: "created", value: .number(JSONNumber(Int(unixTimeNow())))),
            ])
            let contents = JSONWriter.compactBytes(.object(object)) + [0x0A]
            try contents.withBytes { (bytes) throws(PrivateFileError) in try PrivateFile.write(bytes, to: senderPath(for: key.sid)) }
        } catch .exists {
            throw .senderAlreadyPinned(key.sid)
        } catch {
            throw .io(error.description)
        }
    }

    /// Every pinned sender key, oldest first (see ``Keyring/pinnedSenders()``).
    public func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        do throws(PrivateFileError) {
            try PrivateFile.checkPrivateFolder(sendersFolder)
        } catch .missing {
            return []
        } catch {
            throw .io(error.description)
        }
        guard let directory = opendir(sendersFolder) else {
            if errno == ENOENT { return [] }
            throw .io(PrivateFileError.system(path: sendersFolder, operation: "opendir", errno: errno).description)
        }
        defer { closedir(directory) }
        var sids: [SenderID] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasSuffix(".json"), !name.hasPrefix("."), let sid = SenderID(base64: String(name.dropLast(5))) else { continue }
            sids.append(sid)
        }
        var pinned: [PinnedSender] = []
        for sid in sids {
            let path = senderPath(for: sid)
            do throws(PrivateFileError) {
                let contents = try PrivateFile.read(path)
                pinned.append(
                    try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in try Self.parsePin(bytes, path: path, sid: sid) })
            } catch .missing {
                continue  // unpinned by another process since the folder was read
            } catch {
                // A pin that cannot be read is not skipped: that could leave pinned mode.
                throw .io(error.description)
            }
        }
        return pinned.sorted()
    }

    /// Removes the pinned sender key `sid` (see ``Keyring/unpinSender(_:)``).
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        let path = senderPath(for: sid)
        guard unlink(path) == 0 else {
            if errno == ENOENT { throw .senderNotFound(sid) }
            throw .io(PrivateFileError.system(path: path, operation: "unlink", errno: errno).description)
        }
        PrivateFile.syncFolder(sendersFolder)
        SenderSecretCache.shared.evict(sid: sid)
    }

    /// A pin file's object: its key, and a `sid` that is the key's and the file name's.
    static func parsePin(_ bytes: UnsafeRawBufferPointer, path: String, sid: SenderID) throws(PrivateFileError) -> PinnedSender {
        func malformed(_ reason: String) -> PrivateFileError { .malformed(path: path, reason: reason) }
        guard case .object(let object)? = try? JSONReader.parse(bytes) else { throw malformed("not a JSON object") }
        guard !object.hasDuplicateKeys else { throw malformed("a member occurs twice") }
        guard let publicText = object["public_key"]?.stringValue, let key = try? SenderPublicKey(base64: publicText) else {
            throw malformed("no \"public_key\" of 32 bytes of base64")
        }
        guard let sidText = object[KindlyKey.senderID]?.stringValue, SenderID(base64: sidText) == key.sid, key.sid == sid else {
            throw malformed("the sid is not the public key's")
        }
        let created = object["created"]?.numberValue?.integerValue(in: 0...Int64.max) ?? 0
        return PinnedSender(publicKey: key, label: object["label"]?.stringValue ?? "", created: created)
    }
}

internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Pinned sender keys in the file keyring: one file per key in the `senders` folder inside the
/// keyring's folder, `SID.json` (the sid in base64url) holding `{"sid", "public_key", "label",
/// "created"}`. The files and the folder have the device keys' permissions (0600 and 0700, looser
/// ones refused) and are written the same crash-safe way (``PrivateFile``): a pin appears whole
/// or not at all, and is never overwritten.
///
/// The first pin also writes the marker `senders.pinned` in the key folder, which the last
/// `unpinSender` removes: it records in the keyring itself that its reader is in pinned mode, so
/// that a `senders` folder that vanished reads as "the pins cannot be read" (the reader trusts
/// nothing: `untrusted_sender`), never as "no pins" (which would read version 1 again). The
/// marker alone decides: a `senders` folder that holds no canonically named pin (emptied, or
/// only a copy under another spelling) reads as "the pins cannot be read" too. A `senders`
/// folder that is a symbolic link is refused, as pin files that are links are. Only canonical names (`SID.json`, the sid in unpadded base64url) are pins:
/// another spelling of a sid (`TrkPvSnYcmY=.json`) is ignored by the reader, and removed by
/// ``unpinSender(_:)`` with the pin.
extension FileKeyring {
    /// The folder of the pinned sender keys.
    public var sendersFolder: String { folder + "/" + FileKeyring.sendersFolderName }

    /// The name of ``sendersFolder`` inside the key folder.
    package static let sendersFolderName = "senders"

    func senderPath(for sid: SenderID) -> String {
        "\(sendersFolder)/\(sid.base64URL).json"
    }

    /// The marker of pinned mode in the key folder (see above).
    package var pinnedModeMarker: String { folder + "/" + FileKeyring.pinnedModeMarkerName }

    /// The name of ``pinnedModeMarker`` in the key folder.
    package static let pinnedModeMarkerName = "senders.pinned"

    /// Writes the marker of pinned mode unless it is there.
    private func markPinned() throws(PrivateFileError) {
        let text = Array("the pinned sender keys of this keyring are in senders/\n".utf8)
        do throws(PrivateFileError) {
            try text.withBytes { (bytes) throws(PrivateFileError) in try PrivateFile.write(bytes, to: pinnedModeMarker) }
        } catch .exists {}
    }

    /// Whether the marker of pinned mode is there; throws when that cannot be told.
    private func isMarkedPinned() throws(KeyringError) -> Bool {
        var status = stat()
        do throws(Errno) {
            try nothingOrErrno { lstat(pinnedModeMarker, &status) }
            return true
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw .io(PrivateFileError.system(path: pinnedModeMarker, operation: "stat", errno: error.rawValue).description)
        }
    }

    /// Refuses a `senders` folder that is a symbolic link (or not a folder); `false` when missing.
    private func checkSendersFolderIsNoLink() throws(KeyringError) -> Bool {
        var status = stat()
        do throws(Errno) {
            try nothingOrErrno { lstat(sendersFolder, &status) }
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw .io(PrivateFileError.system(path: sendersFolder, operation: "stat", errno: error.rawValue).description)
        }
        switch status.st_mode & S_IFMT {
        case S_IFDIR: return true
        case S_IFLNK: throw .io("\(sendersFolder) is a symbolic link, which the keyring refuses: the pins cannot be read")
        default: throw .io("\(sendersFolder) is not a folder: the pins cannot be read")
        }
    }

    /// The sids of the canonically named pin files in `names`.
    package static func pinnedSIDs(in names: [String]) -> [SenderID] {
        names.compactMap { name in
            guard name.hasSuffix(".json"), !name.hasPrefix(".") else { return nil }
            let stem = String(name.dropLast(5))
            guard let sid = SenderID(base64: stem), sid.base64URL == stem else { return nil }
            return sid
        }
    }

    /// The other spellings of the file name of an id whose canonical spelling is `canonical`
    /// (padded base64url; standard base64, padded or not), without those a file cannot have.
    static func aliasNames(of canonical: String) -> [String] {
        let padding = String(repeating: "=", count: (4 - canonical.utf8.count % 4) % 4)
        let standard = String(canonical.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        return Set([canonical + padding, standard, standard + padding]).subtracting([canonical]).filter { !$0.contains("/") }.sorted()
            .map { $0 + ".json" }
    }

    /// Pins `key` with `label` (see ``Keyring/pinSender(_:label:)``).
    public func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        if let problem = key.unusableReason { throw .io("cannot pin the sender key: \(problem)") }
        if let problem = KeyringLabel.problem(with: label) { throw .io("cannot pin the sender key: \(problem)") }
        do throws(PrivateFileError) {
            try PrivateFile.makePrivateFolder(folder)
            do throws(KeyringError) {
                _ = try checkSendersFolderIsNoLink()
            } catch {
                throw PrivateFileError.malformed(path: sendersFolder, reason: "a symbolic link or not a folder; refused")
            }
            try PrivateFile.makePrivateFolder(sendersFolder)
            _ = PrivateFile.removeLeftovers(in: sendersFolder)
            // The marker before the pin: from then on a vanished senders folder is not "no pins".
            // (A run killed in between leaves the marker and no pin: no push is trusted until the
            // pin is added again, as the run meant to enter pinned mode.)
            try markPinned()
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
        let marked = try isMarkedPinned()
        guard try checkSendersFolderIsNoLink() else {
            if marked {
                throw .io(
                    "\(sendersFolder) is missing, but \(pinnedModeMarker) says this keyring pins sender keys: the pins cannot be read")
            }
            return []
        }
        do throws(PrivateFileError) {
            try PrivateFile.checkPrivateFolder(sendersFolder)
        } catch .missing {
            if marked {
                throw .io(
                    "\(sendersFolder) is missing, but \(pinnedModeMarker) says this keyring pins sender keys: the pins cannot be read")
            }
            return []
        } catch {
            throw .io(error.description)
        }
        // Both folders: the first pin writes its marker into the key folder, and a pin killed
        // there leaves its temporary file beside the keys, not among the pins. The key folder is
        // swept only when it is private, as every other sweep of it.
        if (try? PrivateFile.checkPrivateFolder(folder)) != nil { sweep() } else { _ = PrivateFile.removeLeftovers(in: sendersFolder) }
        let names: [String]
        do throws(Errno) {
            names = try PrivateFile.entryNames(in: sendersFolder)
        } catch {
            if error == .noSuchFileOrDirectory, !marked { return [] }
            throw .io(PrivateFileError.system(path: sendersFolder, operation: "opendir", errno: error.rawValue).description)
        }
        let sids = Self.pinnedSIDs(in: names)
        var pinned: [PinnedSender] = []
        for sid in sids {
            let path = senderPath(for: sid)
            do throws(PrivateFileError) {
                pinned.append(
                    try PrivateFile.read(path) { (bytes, path) throws(PrivateFileError) in try Self.parsePin(bytes, path: path, sid: sid) })
            } catch .missing {
                continue  // unpinned by another process since the folder was read
            } catch {
                // A pin that cannot be read is not skipped: that could leave pinned mode.
                throw .io(error.description)
            }
        }
        // The marker alone decides pinned mode: a folder emptied, or holding only copies under
        // other spellings (which are no pins), is "the pins cannot be read", never "no pins".
        if marked, pinned.isEmpty {
            throw .io(
                "\(sendersFolder) holds no pin (SID.json), but \(pinnedModeMarker) says this keyring pins sender keys: "
                    + "the pins cannot be read")
        }
        return pinned.sorted()
    }

    /// Removes the pinned sender key `sid` (see ``Keyring/unpinSender(_:)``).
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        _ = PrivateFile.removeLeftovers(in: sendersFolder)
        var removed = false
        for name in [sid.base64URL + ".json"] + Self.aliasNames(of: sid.base64URL) {
            let path = "\(sendersFolder)/\(name)"
            do throws(Errno) {
                try nothingOrErrno { unlink(path) }
                removed = true
            } catch  where error != .noSuchFileOrDirectory {
                throw .io(PrivateFileError.system(path: path, operation: "unlink", errno: error.rawValue).description)
            } catch {}
        }
        guard removed else { throw .senderNotFound(sid) }
        PrivateFile.syncFolder(sendersFolder)
        SenderSecretCache.shared.evict(sid: sid)
        // The last pin gone: the keyring leaves pinned mode.
        if let names = try? PrivateFile.entryNames(in: sendersFolder), Self.pinnedSIDs(in: names).isEmpty, unlink(pinnedModeMarker) == 0 {
            PrivateFile.syncFolder(folder)
        }
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

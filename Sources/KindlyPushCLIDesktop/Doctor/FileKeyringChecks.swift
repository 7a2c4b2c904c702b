internal import KindlyPush
internal import KindlyPushCLI
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The file keyring's folder and files: owner and mode of each, as the keyring itself demands
/// them (a folder only its owner can enter, files only their owner can read). Reads names and
/// `lstat` only, never a file's contents.
enum FileKeyringChecks {
    /// `file-keyring`, then one `key-file` line per file in the folder.
    static func folder(_ context: DoctorContext) -> [DoctorCheck] {
        let folder = context.fileFolder
        let inUse = context.keyringInUse == .file
        let pathDetail = JSONObject.Member(key: "path", value: .string(folder))
        // Followed when it is a link, as the keyring follows it.
        var status = stat()
        do throws(Errno) {
            try nothingOrErrno { stat(folder, &status) }
        } catch {
            if error == .noSuchFileOrDirectory {
                let note = inUse ? "keygen makes it (0700) with the first key" : "not used"
                return [DoctorCheck("file-keyring", .ok, "\(folder) does not exist (\(note))", details: [pathDetail])]
            }
            return [
                DoctorCheck(
                    "file-keyring", inUse ? .problem : .warning, "\(folder): \(error)",
                    action: "make the folder readable by its owner", details: [pathDetail])
            ]
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            return [
                DoctorCheck(
                    "file-keyring", inUse ? .problem : .warning, "\(folder) is not a folder",
                    action: "move it away; keygen makes the folder",
                    details: [pathDetail])
            ]
        }
        var lines = [ownershipCheck("file-keyring", path: folder, status: status, wantedMode: 0o700, kind: "folder")]

        let names: [String]
        do throws(Errno) {
            names = try PrivateFile.entryNames(in: folder)
        } catch {
            return lines + [
                DoctorCheck(
                    "file-keyring", .problem, "\(folder) cannot be read: \(error)",
                    action: "chmod 700 \(folder)", details: [pathDetail])
            ]
        }
        for name in names.sorted() {
            let path = folder + "/" + name
            var file = stat()
            guard lstat(path, &file) == 0 else { continue }  // removed meanwhile
            let pathDetail = JSONObject.Member(key: "path", value: .string(path))
            if name.hasPrefix(".kindly-push-") {
                lines.append(
                    DoctorCheck(
                        "key-file", .warning, "\(path): a temporary file an interrupted write left behind (it may hold a secret key)",
                        action: "rm \(path)", details: [pathDetail]))
                continue
            }
            // Version 2's pinned sender keys live in a folder of their own, 0700 as this one.
            if name == FileKeyring.sendersFolderName {
                if file.st_mode & S_IFMT == S_IFDIR {
                    lines.append(ownershipCheck("file-keyring", path: path, status: file, wantedMode: 0o700, kind: "folder"))
                    lines += pinFiles(in: path)
                } else {
                    let what = file.st_mode & S_IFMT == S_IFLNK ? "is a symbolic link" : "is not a folder"
                    lines.append(
                        DoctorCheck(
                            "file-keyring", .problem,
                            "\(path) \(what), which the keyring refuses: the pins cannot be read, so no push is trusted (untrusted_sender)",
                            action: "replace it with a folder (mkdir -m 700 \(path)) holding the pin files", details: [pathDetail]))
                }
                continue
            }
            if name == FileKeyring.pinnedModeMarkerName {
                lines.append(pinnedModeMarker(path, senders: folder + "/" + FileKeyring.sendersFolderName))
                continue
            }
            let stem = String(name.dropLast(5))
            if let alias = aliasCheck("key-file", path: path, name: name, id: "kid", canonical: { KeyID(base64: $0)?.base64URL }) {
                lines.append(alias)
                continue
            }
            guard name.hasSuffix(".json"), !name.hasPrefix("."), KeyID(base64: stem) != nil else {
                lines.append(
                    DoctorCheck(
                        "key-file", .warning, "\(path): not a key file name (KID.json); the keyring ignores it",
                        action: "move it elsewhere",
                        details: [pathDetail]))
                continue
            }
            switch file.st_mode & S_IFMT {
            case S_IFREG:
                lines.append(ownershipCheck("key-file", path: path, status: file, wantedMode: 0o600, kind: "file"))
            case S_IFLNK:
                lines.append(
                    DoctorCheck(
                        "key-file", .problem, "\(path) is a symbolic link, which the keyring refuses to read",
                        action: "replace it with the key file itself", details: [pathDetail]))
            default:
                lines.append(
                    DoctorCheck(
                        "key-file", .problem, "\(path) is not a regular file", action: "move it out of the key folder",
                        details: [pathDetail]))
            }
        }
        return lines
    }

    /// The marker of pinned mode (`senders.pinned`): it alone puts the reader in pinned mode, so
    /// with no canonically named pin beside it (an emptied `senders` folder, or one holding only
    /// a copy under another spelling) no push is trusted, which is a problem, said as the
    /// `pinned-senders` line says it.
    private static func pinnedModeMarker(_ path: String, senders: String) -> DoctorCheck {
        let pathDetail = JSONObject.Member(key: "path", value: .string(path))
        // A missing or unreadable senders folder has its own line (above, or as `file-keyring`).
        guard let names = try? PrivateFile.entryNames(in: senders), FileKeyring.pinnedSIDs(in: names).isEmpty else {
            return DoctorCheck(
                "file-keyring", .ok, "\(path): this keyring pins sender keys (kept until the last senders delete)", details: [pathDetail])
        }
        return DoctorCheck(
            "file-keyring", .problem,
            "\(path): this keyring pins sender keys, but \(senders) holds no pin (SID.json): no push is trusted (untrusted_sender)",
            action: "pin the sender keys again (kindly-push senders add --public-key KEY), or rm \(path) to read version 1 again",
            details: [pathDetail])
    }

    /// The `pin-file` lines of the `senders` folder: a file under another spelling of a sid
    /// than its canonical one, which the keyring ignores (as `key-file` lines flag one among the
    /// keys).
    private static func pinFiles(in senders: String) -> [DoctorCheck] {
        guard let names = try? PrivateFile.entryNames(in: senders) else { return [] }
        return names.sorted().compactMap { name in
            aliasCheck("pin-file", path: senders + "/" + name, name: name, id: "sid", canonical: { SenderID(base64: $0)?.base64URL })
        }
    }

    /// A warning for a file `name` (at `path`) named by an id of kind `id` (`kid`, `sid`) spelt
    /// otherwise than canonically (`TrkPvSnYcmY=.json`), which the keyring ignores; `nil` for
    /// any other name. `canonical` gives the canonical spelling of a stem that is an id.
    private static func aliasCheck(_ check: String, path: String, name: String, id: String, canonical: (String) -> String?)
        -> DoctorCheck?
    {
        let stem = String(name.dropLast(5))
        guard name.hasSuffix(".json"), !name.hasPrefix("."), let spelling = canonical(stem), spelling != stem else { return nil }
        return DoctorCheck(
            check, .warning, "\(path): not the canonical name of \(id) \(spelling) (\(spelling).json); the keyring ignores it",
            action: "remove it if \(spelling).json is there, else rename it to \(spelling).json",
            details: [.init(key: "path", value: .string(path))])
    }

    /// The owner and mode of a folder (`wantedMode` 0700) or key file (0600): a problem when
    /// another user owns it or group or others have any access.
    private static func ownershipCheck(_ name: String, path: String, status: stat, wantedMode: mode_t, kind: String) -> DoctorCheck {
        let mode = status.st_mode & 0o7777
        let modeText = "0" + String(mode, radix: 8)
        let details: [JSONObject.Member] = [
            .init(key: "path", value: .string(path)), .init(key: "owner_uid", value: .number(JSONNumber(Int(status.st_uid)))),
            .init(key: "mode", value: .string(modeText)),
        ]
        let me = geteuid()
        if status.st_uid != me {
            return DoctorCheck(
                name, .problem, "\(path): owned by uid \(status.st_uid), not by this user (uid \(me))",
                action: "chown \(me) \(path), or run as its owner", details: details)
        }
        if mode & 0o077 != 0 {
            let who = kind == "folder" ? "enter" : "read"
            return DoctorCheck(
                name, .problem, "\(path): mode \(modeText), group or others can \(who) it (the keyring refuses it)",
                action: "chmod \(String(wantedMode, radix: 8)) \(path)", details: details)
        }
        return DoctorCheck(name, .ok, "\(path): owner uid \(me) (this user), mode \(modeText)", details: details)
    }
}

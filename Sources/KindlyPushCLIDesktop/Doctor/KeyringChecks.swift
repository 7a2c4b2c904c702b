internal import KindlyPush
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushSecretService

#if canImport(Glibc)
    import Glibc
#endif

/// Where keys live: which keyring `auto` picks and why, the session bus, the Secret Service and
/// its collection, the device keys and their ages.
enum KeyringChecks {
    /// A key older than this gets a rotation warning.
    static let rotationAge: Int64 = 365 * 86_400

    /// `keyring`: the keyring commands use here, and why.
    static func choice(_ context: DoctorContext) -> [DoctorCheck] {
        let inUse = context.keyringInUse
        let location = inUse == .file ? " (\(context.fileFolder))" : " (\(context.collection))"
        let details: [JSONObject.Member] = [
            .init(key: "keyring", value: .string(inUse.rawValue)), .init(key: "asked", value: .string(context.choice.rawValue)),
        ]
        guard context.choice == .auto else {
            return [DoctorCheck("keyring", .ok, "the \(inUse.rawValue) keyring\(location), as --keyring says", details: details)]
        }
        let why: String
        switch context.bus {
        case .noAddress: why = "there is no session bus (DBUS_SESSION_BUS_ADDRESS is not set)"
        case .unreachable, .timedOut: why = "the session bus does not answer"
        case .noSecretService: why = "the session bus offers no Secret Service"
        case .available: why = "the session bus answers and offers the Secret Service"
        case .activatable: why = "the session bus answers and starts the Secret Service at the first call to it"
        }
        return [DoctorCheck("keyring", .ok, "auto uses the \(inUse.rawValue) keyring\(location): \(why)", details: details)]
    }

    /// `session-bus`: is there one, and does it answer?
    static func sessionBus(_ context: DoctorContext) -> [DoctorCheck] {
        let needed = context.keyringInUse == .secretService
        switch context.bus {
        case .noAddress:
            if needed {
                return [
                    DoctorCheck(
                        "session-bus", .problem, "no session bus: DBUS_SESSION_BUS_ADDRESS is not set, and the Secret Service needs one",
                        action: "run inside a desktop session (or dbus-run-session), or use --keyring file")
                ]
            }
            return [DoctorCheck("session-bus", .ok, "none (DBUS_SESSION_BUS_ADDRESS is not set): keys live in files here")]
        case .unreachable(let detail), .timedOut(let detail):
            return [
                DoctorCheck(
                    "session-bus", needed ? .problem : .warning, "DBUS_SESSION_BUS_ADDRESS is set but the bus does not answer (\(detail))",
                    action: "start the session bus, or unset DBUS_SESSION_BUS_ADDRESS where there is none")
            ]
        case .noSecretService, .available, .activatable:
            return [DoctorCheck("session-bus", .ok, "answers")]
        }
    }

    /// `secret-service` and `secret-service-collection`: reachable within the budget, and the
    /// collection locked or not. Not a problem where the file keyring is used.
    static func secretService(_ context: DoctorContext) -> [DoctorCheck] {
        let needed = context.keyringInUse == .secretService
        let failing: DoctorCheck.Status = needed ? .problem : .warning
        switch context.bus {
        case .noAddress, .unreachable, .timedOut:
            if needed {
                return [
                    DoctorCheck(
                        "secret-service", .problem, "cannot be reached: no session bus answers",
                        action: "see session-bus, or use --keyring file")
                ]
            }
            return [DoctorCheck("secret-service", .ok, "not used: no session bus")]
        case .noSecretService:
            if needed {
                return [
                    DoctorCheck(
                        "secret-service", .problem, "the session bus has no Secret Service (org.freedesktop.secrets) and cannot start one",
                        action: "install and start gnome-keyring (or KeePassXC's Secret Service), or use --keyring file")
                ]
            }
            return [DoctorCheck("secret-service", .ok, "not used: the session bus offers none")]
        case .activatable:
            // Listing the collection would start the daemon (D-Bus activation), locked, and
            // gnome-keyring-daemon --unlock then meets a daemon it did not start.
            return [
                DoctorCheck(
                    "secret-service", needed ? .warning : .ok,
                    "not running: the session bus starts it (org.freedesktop.secrets) at the first command that needs a key, "
                        + "and doctor does not",
                    action: needed
                        ? "log in to the desktop session, or start it unlocked before that command: gnome-keyring-daemon --unlock "
                            + "(the password on standard input)" : nil)
            ]
        case .available:
            break
        }
        guard let listing = context.secretServiceListing else { return [] }
        let took = "\(listing.took.components.seconds * 1000 + listing.took.components.attoseconds / 1_000_000_000_000_000) ms"
        switch listing.result {
        case .success(nil):
            // A missing collection is a problem: doctor once said "unlocked" here while keygen failed.
            return [
                DoctorCheck("secret-service", .ok, "answers (in \(took))"),
                DoctorCheck(
                    "secret-service-collection", failing, "\(context.collection) does not exist: keygen cannot store a key in it",
                    action: SecretServiceKeyring.missingCollectionAction),
            ]
        case .success(let entries?):
            return [
                DoctorCheck("secret-service", .ok, "answers (in \(took))"),
                DoctorCheck(
                    "secret-service-collection", .ok,
                    "\(context.collection) is unlocked (\(entries.count) device key\(entries.count == 1 ? "" : "s"))"),
            ]
        case .failure(.locked):
            return [
                DoctorCheck("secret-service", .ok, "answers (in \(took))"),
                DoctorCheck(
                    "secret-service-collection", failing, "\(context.collection) is locked: no push decrypts until it is unlocked",
                    action: "unlock it (log in to the desktop session, or unlock it in Seahorse); KindlyPush never prompts"),
            ]
        case .failure(.unreachable(let detail)):
            return [
                DoctorCheck(
                    "secret-service", failing, "does not answer: \(detail)",
                    action: "restart the keyring daemon (gnome-keyring-daemon), or use --keyring file")
            ]
        case .failure(let error):
            return [DoctorCheck("secret-service", failing, "answers but fails: \(error)", action: "see the keyring daemon's log")]
        }
    }

    /// `device-keys`: how many, their kids and ages, in the keyring in use.
    static func deviceKeys(_ context: DoctorContext) -> [DoctorCheck] {
        let result: Result<[KeyringEntry], KeyringError>
        switch context.keyringInUse {
        case .secretService:
            guard let listing = context.secretServiceListing else {
                let why = context.bus == .activatable ? "is not running (doctor does not start it)" : "cannot be reached"
                return [DoctorCheck("device-keys", .warning, "not listed: the Secret Service \(why) (see above)")]
            }
            if case .failure = listing.result {
                return [DoctorCheck("device-keys", .warning, "not listed: the Secret Service collection cannot be read (see above)")]
            }
            guard case .success(let listed?) = listing.result else {
                return [DoctorCheck("device-keys", .warning, "not listed: the Secret Service collection does not exist (see above)")]
            }
            result = .success(listed)
        case .file, .auto:
            let keyring = FileKeyring(folder: context.fileFolder)
            result = Result { () throws(KeyringError) in try keyring.list() }
        }
        let entries: [KeyringEntry]
        switch result {
        case .success(let listed): entries = listed
        case .failure(let error):
            return [DoctorCheck("device-keys", .problem, "cannot be listed: \(error)", action: "see the file-keyring and key-file lines")]
        }
        guard !entries.isEmpty else {
            return [
                DoctorCheck(
                    "device-keys", .warning, "none in the \(context.keyringInUse.rawValue) keyring: no push can be decrypted here",
                    action: "make one with kindly-push keygen (a backend that only seals needs none)",
                    details: [.init(key: "keys", value: [])])
            ]
        }
        var described: [String] = []
        var keys: [JSONValue] = []
        var oldest: Int64 = 0
        for entry in entries {
            var key: [JSONObject.Member] = [.init(key: "kid", value: .string(entry.kid.base64URL))]
            if entry.created > 0 {
                let days = max(0, context.now - entry.created) / 86_400
                oldest = max(oldest, context.now - entry.created)
                described.append("\(entry.kid) (\(days) day\(days == 1 ? "" : "s") old)")
                key.append(.init(key: "created", value: .number(JSONNumber(Int(entry.created)))))
                key.append(.init(key: "age_days", value: .number(JSONNumber(Int(days)))))
            } else {
                described.append("\(entry.kid) (age unknown)")
            }
            keys.append(.object(JSONObject(key)))
        }
        let message = "\(entries.count) in the \(context.keyringInUse.rawValue) keyring: " + described.joined(separator: ", ")
        let details: [JSONObject.Member] = [.init(key: "keys", value: .array(keys))]
        if oldest > rotationAge {
            return [
                DoctorCheck(
                    "device-keys", .warning, message + "; the oldest is over a year old",
                    action:
                        "rotate: kindly-push keygen, register the new key, then kindly-push keys delete KID once no push uses the old one",
                    details: details)
            ]
        }
        return [DoctorCheck("device-keys", .ok, message, details: details)]
    }
}

extension KeyringChecks {
    /// `pinned-senders`: the sender keys the reader pins (docs/spec/wire-format.md section 7.1). With one or
    /// more, version 1 pushes are refused (`untrusted_sender`): a device that still receives
    /// version 1 pushes and pins a sender decrypts nothing, which this line makes visible.
    static func pinnedSenders(_ context: DoctorContext) -> [DoctorCheck] {
        guard context.keyringInUse != .secretService else {
            return [
                DoctorCheck(
                    "pinned-senders", .ok, "in the Secret Service: kindly-push senders list --keyring secret-service lists them")
            ]
        }
        let keyring = FileKeyring(folder: context.fileFolder)
        let pinned: [PinnedSender]
        do throws(KeyringError) {
            pinned = try keyring.pinnedSenders()
        } catch {
            return [DoctorCheck("pinned-senders", .problem, "cannot be listed: \(error)", action: "see the file-keyring line")]
        }
        let sids = pinned.map { JSONValue.string($0.publicKey.sid.base64URL) }
        guard !pinned.isEmpty else {
            return [
                DoctorCheck(
                    "pinned-senders", .ok, "none: version 1 pushes are read, version 2 pushes are refused (untrusted_sender)",
                    details: [.init(key: "sids", value: [])])
            ]
        }
        return [
            DoctorCheck(
                "pinned-senders", .ok,
                "\(pinned.count) pinned (\(pinned.map { $0.publicKey.sid.base64URL }.joined(separator: ", ")));"
                    + " only version 2 and version 3 mode_auth pushes from them decrypt, version 1 and version 3 mode_base are refused",
                details: [.init(key: "sids", value: .array(sids))])
        ]
    }
}

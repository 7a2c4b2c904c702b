import Dispatch
internal import KindlyPush
internal import KindlyPushCore
internal import KindlyPushSecretService

#if canImport(Glibc)
    import Glibc
#endif

/// One line of `kindly-push doctor`: what was checked, how it stands, and what to do about it.
/// Nothing in it is ever a secret: checks read names, modes, owners, versions and public key
/// information only.
struct DoctorCheck: Sendable {
    enum Status: String, Sendable {
        /// Nothing to do.
        case ok
        /// Works, but may not be what was meant, or will need care (an old key, a bus that does
        /// not answer where `auto` falls back to files anyway).
        case warning
        /// Something that stops pushes from being decrypted here, or exposes a key.
        case problem
    }

    /// A short kebab-case name, fixed for scripts: `keyring`, `key-file`, `libsodium`, ...
    let name: String
    let status: Status
    /// What was found.
    let message: String
    /// What to do, for a warning or a problem.
    let action: String?
    /// More for `--json`: paths, modes, versions, kids.
    let details: [JSONObject.Member]

    init(_ name: String, _ status: Status, _ message: String, action: String? = nil, details: [JSONObject.Member] = []) {
        self.name = name
        self.status = status
        self.message = message
        self.action = action
        self.details = details
    }

    /// `STATUS   NAME: MESSAGE; to fix: ACTION`, for a person.
    var line: String {
        let label = status.rawValue + String(repeating: " ", count: max(1, 9 - status.rawValue.count))
        return label + name + ": " + message + (action.map { "; to fix: " + $0 } ?? "")
    }

    /// `{"check": NAME, "status": STATUS, "message": MESSAGE, "action": ACTION, ...details}`.
    var json: JSONValue {
        var members: [JSONObject.Member] = [
            .init(key: "check", value: .string(name)), .init(key: "status", value: .string(status.rawValue)),
            .init(key: "message", value: .string(message)),
        ]
        if let action { members.append(.init(key: "action", value: .string(action))) }
        return .object(JSONObject(members + details))
    }
}

/// What the checks share: the command's environment, the keyring it was asked about, and what
/// the session bus and the Secret Service said, asked once within the keyring's time budget.
final class DoctorContext {
    /// The budget of everything that talks to the bus: the keyring's own budget, so that doctor
    /// never waits longer than a command that reads keys would.
    static let busBudget: Duration = SecretServiceKeyring.defaultTimeout

    /// A listing of the Secret Service collection, and how long it took.
    typealias Listing = (result: Result<[KeyringEntry], KeyringError>, took: Duration)

    let environment: [String: String]
    /// `--keyring` (default `auto`).
    let choice: KeyringChoice

    init(environment: [String: String], choice: KeyringChoice) {
        self.environment = environment
        self.choice = choice
    }

    /// The session bus (probed as `auto` probes it, at most 500 ms) and, when it offers the
    /// Secret Service, the collection's keys (listed within what is left of the budget).
    private lazy var busFindings: (bus: SecretServiceKeyring.SessionBusProbe, listing: Listing?) = lookAtTheBus()

    /// The session bus, as `auto` sees it.
    var bus: SecretServiceKeyring.SessionBusProbe { busFindings.bus }

    /// The keyring that commands use with this `--keyring`: `auto` resolved as
    /// `KeyringChoice.resolve` resolves it (the Secret Service exactly when the probe finds it).
    var keyringInUse: KeyringChoice {
        switch choice {
        case .auto: return bus == .available ? .secretService : .file
        case .file, .secretService: return choice
        }
    }

    /// The Secret Service collection's keys; `nil` when the bus offers no Secret Service.
    var secretServiceListing: Listing? { busFindings.listing }

    var collection: SecretServiceKeyring.Collection { KeyringChoice.secretServiceCollection(environment: environment) }

    /// The file keyring's folder.
    var fileFolder: String { FileKeyring.defaultFolder(environment: environment) }

    /// Now, in Unix seconds.
    let now = unixTimeNow()

    /// Asks the bus on a thread of its own and waits at most the budget (and a little for the
    /// thread to hand the answers over): every call below has its own deadline, but GLib's
    /// connection set-up sends `Hello` without one, so a bus that authenticates and then never
    /// answers would hold the caller for GDBus's 25 s. The thread is left behind then; the
    /// process ends when doctor has printed.
    private func lookAtTheBus() -> (bus: SecretServiceKeyring.SessionBusProbe, listing: Listing?) {
        let budget = DoctorContext.busBudget
        let address = KeyringChoice.busAddress(environment)
        let collection = self.collection
        let probe = Locked<SecretServiceKeyring.SessionBusProbe?>(nil)
        let listing = Locked<Listing?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let clock = ContinuousClock()
            let start = clock.now
            let found = SecretServiceKeyring.probeSessionBus(busAddress: address, timeout: min(.milliseconds(500), budget))
            probe.withLock { $0 = found }
            if found == .available {
                let keyring = SecretServiceKeyring(
                    collection: collection, busAddress: address, timeout: max(.milliseconds(1), budget - (clock.now - start)))
                let listed = clock.now
                let result = Result { () throws(KeyringError) in try keyring.list() }
                listing.withLock { $0 = (result, clock.now - listed) }
            }
            done.signal()
        }
        let (seconds, attoseconds) = (budget + .milliseconds(250)).components
        _ = done.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)))
        let silence = "it did not answer within \(budget)"
        let bus = probe.withLock { $0 } ?? .unreachable(silence)
        guard bus == .available else { return (bus, nil) }
        return (bus, listing.withLock { $0 } ?? (.failure(.unreachable(silence)), budget))
    }
}

/// A group of checks: the lines it adds, in order. Checks that depend on other work (pinned
/// sender keys, the notification server) are one more function in ``DoctorCommand/checks``.
typealias DoctorChecks = @Sendable (DoctorContext) -> [DoctorCheck]

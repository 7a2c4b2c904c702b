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

/// What the checks share: the command's environment, the keyring it was asked about, the time
/// budget of everything that talks to the session bus, and what earlier checks found out.
final class DoctorContext {
    /// The budget of everything that talks to the bus: the keyring's own budget, so that doctor
    /// never waits longer than a command that reads keys would.
    static let busBudget: Duration = SecretServiceKeyring.defaultTimeout

    let environment: [String: String]
    /// `--keyring` (default `auto`).
    let choice: KeyringChoice
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant

    init(environment: [String: String], choice: KeyringChoice) {
        self.environment = environment
        self.choice = choice
        started = clock.now
    }

    /// What is left of ``busBudget`` (never below 1 ms), at most `limit`.
    func remainingBudget(atMost limit: Duration) -> Duration {
        let left = DoctorContext.busBudget - (clock.now - started)
        return max(.milliseconds(1), min(limit, left))
    }

    /// The session bus, probed once (at most 500 ms, as `auto` does).
    private(set) lazy var bus: SecretServiceKeyring.SessionBusProbe = SecretServiceKeyring.probeSessionBus(
        busAddress: KeyringChoice.busAddress(environment), timeout: remainingBudget(atMost: .milliseconds(500)))

    /// The keyring that commands use with this `--keyring`: `auto` resolved as
    /// `KeyringChoice.resolve` resolves it (the Secret Service exactly when the probe finds it).
    var keyringInUse: KeyringChoice {
        switch choice {
        case .auto: return bus == .available ? .secretService : .file
        case .file, .secretService: return choice
        }
    }

    /// The Secret Service collection's keys, listed once within what is left of the budget, and
    /// how long that took; `nil` when the bus offers no Secret Service.
    private(set) lazy var secretServiceListing: (result: Result<[KeyringEntry], KeyringError>, took: Duration)? = {
        guard bus == .available else { return nil }
        let keyring = SecretServiceKeyring(
            collection: collection, busAddress: KeyringChoice.busAddress(environment),
            timeout: remainingBudget(atMost: DoctorContext.busBudget))
        let start = clock.now
        let result = Result { () throws(KeyringError) in try keyring.list() }
        return (result, clock.now - start)
    }()

    var collection: SecretServiceKeyring.Collection { KeyringChoice.secretServiceCollection(environment: environment) }

    /// The file keyring's folder.
    var fileFolder: String { FileKeyring.defaultFolder(environment: environment) }

    /// Now, in Unix seconds.
    let now = unixTimeNow()
}

/// A group of checks: the lines it adds, in order. Checks that depend on other work (pinned
/// sender keys, the notification server) are one more function in ``DoctorCommand/checks``.
typealias DoctorChecks = @Sendable (DoctorContext) -> [DoctorCheck]

import Dispatch
internal import KindlyPush
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushDesktop
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
/// the session bus, the Secret Service and the notification server said.
///
/// Those three are asked at once when the context is made, each on a thread of its own, and
/// waited for until the probe's and then the keyring's budget, as `--keyring auto` spends them
/// (and a little for the threads to hand over), at most:
/// every call has its own deadline, but GLib's connection set-up sends `Hello` without one, so a
/// bus that authenticates and then never answers would hold the caller for GDBus's 25 s. A thread
/// still waiting then is left behind; the process ends when doctor has printed.
final class DoctorContext {
    /// The budget of everything that talks to the bus: the keyring's own budget, so that doctor
    /// never waits longer than a command that reads keys would.
    static let busBudget: Duration = SecretServiceKeyring.defaultTimeout

    /// A listing of the Secret Service collection, and how long it took.
    /// A listing of `nil`: the collection does not exist.
    typealias Listing = (result: Result<[KeyringEntry]?, KeyringError>, took: Duration)

    /// What the notification server said.
    enum NotificationServer: Sendable {
        /// No session bus to ask (neither `DBUS_SESSION_BUS_ADDRESS` nor `$XDG_RUNTIME_DIR/bus`).
        case noBus
        case found(DesktopNotifier.ServerInformation, capabilities: Set<String>)
        case failed(DesktopNotifierError)
    }

    let environment: CommandEnvironment
    /// `--keyring` (default `auto`).
    let choice: KeyringChoice

    private let probe = Locked<SecretServiceKeyring.SessionBusProbe?>(nil)
    private let listing = Locked<Listing?>(nil)
    private let notifications = Locked<NotificationServer?>(nil)
    private let busDone = DispatchSemaphore(value: 0)
    private let notificationsDone = DispatchSemaphore(value: 0)
    private let deadline: DispatchTime
    private var waited = false

    init(environment: CommandEnvironment, choice: KeyringChoice) {
        self.environment = environment
        self.choice = choice
        // Two calls to the notification server within its budget each, beside the bus's probe
        // and then the collection's budget.
        let longest = max(
            SecretServiceKeyring.defaultProbeTimeout + DoctorContext.busBudget, Self.notificationServerBudget(environment) * 2)
        let (seconds, attoseconds) = (longest + .milliseconds(250)).components
        deadline = .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        askTheBus()
        askTheNotificationServer()
    }

    private static var silence: String { "it did not answer within \(busBudget.messageText)" }

    /// Waits for the answers, until the deadline at most.
    private func waitForAnswers() {
        guard !waited else { return }
        waited = true
        _ = busDone.wait(timeout: deadline)
        _ = notificationsDone.wait(timeout: deadline)
    }

    /// The session bus, as `auto` sees it.
    var bus: SecretServiceKeyring.SessionBusProbe {
        waitForAnswers()
        return probe.withLock { $0 } ?? .unreachable(DoctorContext.silence)
    }

    /// The keyring that commands use with this `--keyring`: `auto` resolved as
    /// `KeyringChoice.resolve` resolves it (the Secret Service exactly when the probe finds it).
    var keyringInUse: KeyringChoice {
        switch choice {
        case .auto: return bus.offersSecretService ? .secretService : .file
        case .file, .secretService: return choice
        }
    }

    /// The Secret Service collection's keys; `nil` when no Secret Service runs on the bus (doctor
    /// does not start an activatable one: it would start locked, and stay).
    var secretServiceListing: Listing? {
        guard bus == .available else { return nil }
        let found: Listing? = listing.withLock { $0 }
        return found ?? (.failure(.unreachable(DoctorContext.silence)), DoctorContext.busBudget)
    }

    /// The notification server that `kindly-push notify` would use.
    var notificationServer: NotificationServer {
        waitForAnswers()
        return notifications.withLock { $0 } ?? .failed(.timedOut(DoctorContext.silence))
    }

    var collection: SecretServiceKeyring.Collection { DesktopServicesImplementation.collection(environment: environment) }

    /// The file keyring's folder (with no home folder at all, a note that names the way out).
    var fileFolder: String {
        (try? FileKeyring.defaultFolder { environment[$0] }) ?? "(no home folder: set KINDLY_PUSH_KEYRING_DIR)"
    }

    /// Now, in Unix seconds.
    let now = unixTimeNow()

    /// Probes the bus as `auto` does (at most 500 ms) and, when the Secret Service runs there,
    /// lists the collection within the whole budget: what a silence is reported against is the
    /// budget doctor names (1.5 s), not what a loaded machine left of it after the probe.
    private func askTheBus() {
        let budget = DoctorContext.busBudget
        let address = KeyringChoice.busAddress(environment)
        let collection = self.collection
        let (probe, listing, done) = (self.probe, self.listing, busDone)
        DispatchQueue.global().async {
            let clock = ContinuousClock()
            let found = SecretServiceKeyring.probeSessionBus(
                busAddress: address, timeout: min(SecretServiceKeyring.defaultProbeTimeout, budget))
            probe.withLock { $0 = found }
            if found == .available {
                let keyring = SecretServiceKeyring(collection: collection, busAddress: address, timeout: budget)
                let listed = clock.now
                let result = Result { () throws(KeyringError) in try keyring.listIfPresent() }
                listing.withLock { $0 = (result, clock.now - listed) }
            }
            done.signal()
        }
    }

    /// How long the notification server has for each of doctor's two calls: 0.7 s (the test
    /// hook of ``CommandEnvironment/notificationServerBudget(default:)`` sets another).
    static func notificationServerBudget(_ environment: CommandEnvironment) -> Duration {
        environment.notificationServerBudget(default: .milliseconds(700))
    }

    /// Asks the notification server for its capabilities and who it is, as `notify` finds it
    /// (two calls, each within ``notificationServerBudget(_:)``).
    private func askTheNotificationServer() {
        let budget = Self.notificationServerBudget(environment)
        let (notifications, done) = (self.notifications, notificationsDone)
        DispatchQueue.global().async {
            defer { done.signal() }
            guard let address = DesktopNotifier.sessionBusAddress() else {
                notifications.withLock { $0 = .noBus }
                return
            }
            do throws(DesktopNotifierError) {
                let notifier = try DesktopNotifier(busAddress: address, timeout: budget)
                let information = try notifier.serverInformation()
                notifications.withLock { $0 = .found(information, capabilities: notifier.capabilities) }
            } catch {
                notifications.withLock { $0 = .failed(error) }
            }
        }
    }
}

/// A group of checks: the lines it adds, in order. A new check (pinned sender keys, once version
/// 2 exists) is one more function in ``DoctorCommand/checks``.
typealias DoctorChecks = @Sendable (DoctorContext) -> [DoctorCheck]

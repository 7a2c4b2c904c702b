public import FoundationEssentials
public import KindlyPush
internal import KindlyPushCore

extension SecretServiceKeyring {
    /// Where keys live by default: the one rule of `kindly-push --keyring auto` (the command's
    /// default) and of a host's default keyring (``automatic(environment:timeout:)``).
    public enum AutomaticChoice: Sendable, Hashable {
        /// A session bus is named, answers, and offers the Secret Service: keys live there.
        case secretService
        /// No session bus is named, it cannot be reached, it has no Secret Service, or (for
        /// look-ups) it did not answer in time: keys live in the file keyring.
        case file
        /// Storing a new key, the bus is there but did not answer in time: the key is stored
        /// nowhere, for in the file keyring it would be out of sight of later look-ups through
        /// the Secret Service. The text says so, for the caller's error.
        case undecided(String)
    }

    /// The rule: asks the bus at `busAddress` (else `DBUS_SESSION_BUS_ADDRESS`), within
    /// `timeout`, whether it answers and offers the Secret Service (never prompting, never
    /// starting anything). `forStoring` is for a key about to be stored (see
    /// ``AutomaticChoice/undecided(_:)``).
    public static func automaticChoice(
        busAddress: String? = nil, forStoring: Bool = false, timeout: Duration = defaultProbeTimeout
    ) -> AutomaticChoice {
        switch probeSessionBus(busAddress: busAddress, timeout: timeout) {
        case .available, .activatable:
            return .secretService
        case .timedOut where forStoring:
            return .undecided(
                "the session bus did not answer within \(timeout.messageText): not storing the new key in the file keyring, where the "
                    + "Secret Service would not see it")
        case .noAddress, .unreachable, .noSecretService, .timedOut:
            return .file
        }
    }

    /// The collection `KINDLY_PUSH_SECRET_SERVICE_COLLECTION` names in `environment` (an object
    /// path when it begins with `/`, else an alias), or the default one: where the command and
    /// ``automatic(environment:timeout:)`` keep keys.
    public static func collection(environment: (String) -> String?) -> Collection {
        guard let name = environment("KINDLY_PUSH_SECRET_SERVICE_COLLECTION"), !name.isEmpty else { return .default }
        return name.hasPrefix("/") ? .objectPath(name) : .alias(name)
    }

    /// The keyring by the rule of ``automaticChoice(busAddress:forStoring:timeout:)``, decided
    /// now, for a host to make its default in one line at start:
    ///
    /// ```swift
    /// KindlyPushDecryption.defaultKeyring = SecretServiceKeyring.automatic()
    /// ```
    ///
    /// Then `KindlyPushDecryption.standard`, the static `decrypt(userInfo:)` and the
    /// notification service's `init()` find the key that a plain `kindly-push keygen` stored.
    /// The Secret Service keyring is in ``collection(environment:)``'s collection on the bus of
    /// `DBUS_SESSION_BUS_ADDRESS` in `environment` (none there: no bus); the file keyring in its
    /// default folder; with no home folder
    /// either, a keyring that holds no keys. Decided once: a Secret Service that starts later is
    /// not used until the host decides again.
    ///
    /// `timeout` is each Secret Service operation's budget (see ``timeout``); the probe that
    /// decides takes a third of it, and at least ``defaultProbeTimeout`` (the defaults' ratio). A host on a slow or loaded
    /// machine may give more than the desktop's 1.5 s.
    public static func automatic(
        environment: [String: String] = ProcessInfo.processInfo.environment, timeout: Duration = defaultTimeout
    ) -> any Keyring {
        // The bus of `environment` alone: without one there, no bus (not the process's).
        let busAddress = environment["DBUS_SESSION_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        let probeTimeout = max(timeout / 3, defaultProbeTimeout)
        switch busAddress.map({ automaticChoice(busAddress: $0, timeout: probeTimeout) }) ?? .file {
        case .secretService:
            return SecretServiceKeyring(collection: collection { environment[$0] }, busAddress: busAddress, timeout: timeout)
        case .file, .undecided:
            guard let folder = try? FileKeyring.defaultFolder(environment: environment) else { return InMemoryKeyring() }
            return FileKeyring(folder: folder)
        }
    }
}

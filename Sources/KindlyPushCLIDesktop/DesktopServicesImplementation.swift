internal import KindlyPush
package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushSecretService

extension CommandTable {
    /// `kindly-push-desktop`'s: `kindly-push`'s with the Secret Service keyring (libsecret) and
    /// the commands that need GIO and SQLite (`notify`, `unifiedpush`, `doctor`) declared and run
    /// here; `send` and `--redis` still run in their siblings (nghttp2, hiredis).
    package static let desktop = kindlyPush.linking(
        .desktop, services: Services(desktop: DesktopServicesImplementation()),
        running: [.runs(NotifyCommand.self), .runs(DoctorCommand.self), .runs(UnifiedPushCommand.self)],
        handOffs: [.redisWorker])
}

/// The services of `kindly-push-desktop`: the Secret Service keyring (libsecret).
package struct DesktopServicesImplementation: DesktopServices {
    package init() {}

    package func secretServiceKeyring(environment: CommandEnvironment, for purpose: KeyringChoice.Purpose) throws(CodedError) -> any Keyring
    {
        let collection = Self.collection(environment: environment)
        // An object path that is not one is a usage error, but for look-ups, where the keyring
        // then fails each of them at once (`key_unavailable`).
        if purpose != .lookUp, let problem = collection.objectPathProblem {
            throw CodedError(.usage, "KINDLY_PUSH_SECRET_SERVICE_COLLECTION: \(problem)")
        }
        return SecretServiceKeyring(
            collection: collection, busAddress: KeyringChoice.busAddress(environment), timeout: environment.secretServiceBudget)
    }

    package func autoKeyring(environment: CommandEnvironment, for purpose: KeyringChoice.Purpose) throws(CodedError) -> any Keyring {
        // The rule is the library's (`SecretServiceKeyring.automaticChoice`), so that a host's
        // `SecretServiceKeyring.automatic()` default finds what the command stored.
        switch SecretServiceKeyring.automaticChoice(busAddress: KeyringChoice.busAddress(environment), forStoring: purpose == .store) {
        case .secretService:
            return try secretServiceKeyring(environment: environment, for: purpose)
        case .undecided(let reason):
            throw CodedError(.io, "\(reason); try again, or choose with --keyring file or --keyring secret-service")
        case .file:
            return FileKeyring(folder: try KeyringChoice.fileFolder(environment))
        }
    }

    /// The collection `KINDLY_PUSH_SECRET_SERVICE_COLLECTION` names, else the default one.
    static func collection(environment: CommandEnvironment) -> SecretServiceKeyring.Collection {
        SecretServiceKeyring.collection { environment[$0] }
    }
}

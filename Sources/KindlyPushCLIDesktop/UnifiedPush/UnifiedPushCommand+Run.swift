package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushDesktop
internal import KindlyPushWebPush

/// `unifiedpush`'s run: the registration made from the connector's own bus name, which it
/// takes from the agent for as long as it runs.
extension UnifiedPushCommand {
    /// What the command line asked.
    enum Action {
        case register(distributor: String?, vapid: String?)
        case unregister
    }

    /// How long register waits for the distributor's `NewEndpoint`.
    static let endpointWait = Duration.seconds(10)

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        let words = arguments.positionals
        guard let word = words.first else { throw CodedError.usage("missing action: register or unregister", command: Self.name) }
        guard word == "register" || word == "unregister" else {
            throw CodedError.usage("unknown unifiedpush action '\(word)'; expected register or unregister", command: Self.name)
        }
        guard words.count == 1 else { throw CodedError.usage("\(word) takes no argument", command: Self.name) }
        if word == "unregister" {
            action = .unregister
        } else {
            let distributor = arguments[UnifiedPushCommand.distributor]
            if let distributor, !distributor.hasPrefix(UnifiedPushConnector.distributorPrefix) {
                throw CodedError.usage(
                    "--distributor takes a bus name that begins with \(UnifiedPushConnector.distributorPrefix)", command: Self.name)
            }
            let vapid = arguments[UnifiedPushCommand.vapid]
            if let vapid, !VAPID.isPublicKey(vapid) {
                throw CodedError.usage(
                    "--vapid takes the VAPID public key vapid-keygen prints: the base64url of an uncompressed P-256 point (87 characters)",
                    command: Self.name)
            }
            action = .register(distributor: distributor, vapid: vapid)
        }
        keyring = KeyringOptions(arguments)
        self.environment = environment
    }

    package func run() -> Int32 {
        do throws(CodedError) {
            switch action {
            case .register(let distributor, let vapid): return try register(distributor, vapid: vapid)
            case .unregister: return try unregister()
            }
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }

    private static func connector(takingName: Bool, environment: CommandEnvironment) throws(CodedError) -> UnifiedPushConnector {
        do throws(UnifiedPushConnector.Failure) {
            return try UnifiedPushConnector(busAddress: KeyringChoice.busAddress(environment), takingName: takingName)
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    private func register(_ named: String?, vapid: String?) throws(CodedError) -> Int32 {
        // The device key first: the registration carries its public half.
        let keyring = try KeyringChoice.resolve(self.keyring, environment: environment, for: .lookUp)
        let entries: [KeyringEntry]
        do throws(KeyringError) {
            entries = try keyring.list()
        } catch {
            throw CodedError(.io, "cannot read the \(keyring.name) keyring: \(error)")
        }
        guard let newest = entries.last else {
            throw CodedError(.io, "the \(keyring.name) keyring holds no device key: create one first (kindly-push keygen)")
        }
        let connector = try Self.connector(takingName: true, environment: environment)
        let distributor: String
        if let named {
            distributor = named
        } else {
            let found: [String]
            do throws(UnifiedPushConnector.Failure) {
                found = try connector.distributors()
            } catch {
                throw CodedError(.io, error.description)
            }
            guard let only = found.first else {
                throw CodedError(
                    .io,
                    "no UnifiedPush distributor on the session bus (no name begins with \(UnifiedPushConnector.distributorPrefix)): "
                        + "install and start one")
            }
            guard found.count == 1 else {
                throw CodedError.usage(
                    "several UnifiedPush distributors on the session bus (\(found.joined(separator: ", "))): choose one with --distributor",
                    command: Self.name)
            }
            distributor = only
        }
        let store = try UnifiedPushStore.beside(keyring, environment: environment)
        let existing = try store.read()
        let keys: UnifiedPushKeys
        if let existing {
            keys = UnifiedPushKeys(token: existing.token, distributor: distributor, privateKey: existing.privateKey, auth: existing.auth)
        } else {
            keys = try UnifiedPushKeys.generate(distributor: distributor)
        }
        // Written before Register: a message may reach the agent as soon as the endpoint exists.
        try store.write(keys)
        let refusal: String?
        do throws(UnifiedPushConnector.Failure) {
            refusal = try connector.register(with: distributor, token: keys.token, description: "Kindly", vapid: vapid)
        } catch {
            if existing == nil { Self.forgetNewKeys(store) }
            throw CodedError(.io, error.description)
        }
        if let refusal {
            if existing == nil { Self.forgetNewKeys(store) }
            throw CodedError(.io, "\(distributor) refused the registration: \(refusal)")
        }
        guard let endpoint = connector.endpoint(for: keys.token, from: distributor, within: Self.endpointWait) else {
            throw CodedError(.io, "\(distributor) sent no endpoint (NewEndpoint) within \(Self.endpointWait)")
        }
        let auth = keys.auth.withUnsafeBytes { Base64.urlEncoded($0) }
        let registration: JSONValue = [
            "platform": "webpush",
            "subscription": [
                "endpoint": .string(endpoint), "keys": ["p256dh": .string(Base64.urlEncoded(keys.p256dh)), "auth": .string(auth)],
            ],
            "push_mode": "alert",
            "public_key": .string(newest.publicKey.base64URL),
            "kid": .string(newest.kid.base64URL),
            "sdk_version": .string(Registration.sdkVersion),
        ]
        return Terminal.printLine(registration)
    }

    /// Forgets the keys a registration that failed had just written, so that none is left that
    /// no distributor knows; one warning when they cannot be (the registration's error follows).
    private static func forgetNewKeys(_ store: UnifiedPushStore) {
        do throws(CodedError) {
            try store.delete()
        } catch {
            Diagnostics.line("kindly-push: warning: \(error.message)")
        }
    }

    private func unregister() throws(CodedError) -> Int32 {
        let store = try UnifiedPushStore.beside(
            try KeyringChoice.resolve(keyring, environment: environment, for: .lookUp), environment: environment)
        guard let keys = try store.read() else {
            throw CodedError(.io, "no UnifiedPush registration here (none in \(store.place))")
        }
        let connector = try Self.connector(takingName: false, environment: environment)
        do throws(UnifiedPushConnector.Failure) {
            try connector.unregister(from: keys.distributor, token: keys.token)
        } catch {
            throw CodedError(.io, "\(error); the keys are kept")
        }
        try store.delete()
        return 0
    }
}

internal import KindlyPush
internal import KindlyPushCore
internal import KindlyPushSecretService

/// `--keyring auto|secret-service|file` and `--key-file`: where a command finds keys.
enum KeyringChoice: String, CaseIterable, Sendable {
    case auto
    case secretService = "secret-service"
    case file

    /// The keyring the options name. `auto` uses the Secret Service when a session bus
    /// answers and the file keyring otherwise; `--verbose` says which on standard error.
    static func resolve(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError) -> any Keyring {
        let choice = arguments.value("--keyring").flatMap(KeyringChoice.init(rawValue:)) ?? .auto
        let keyring: any Keyring
        switch choice {
        case .file:
            keyring = FileKeyring(folder: FileKeyring.defaultFolder(environment: environment))
        case .secretService:
            keyring = try secretService(environment: environment)
        case .auto:
            if SecretServiceKeyring.sessionBusAnswers(busAddress: busAddress(environment)) {
                keyring = try secretService(environment: environment)
            } else {
                keyring = FileKeyring(folder: FileKeyring.defaultFolder(environment: environment))
            }
        }
        if arguments.has("--verbose") {
            let location = (keyring as? FileKeyring).map { " (\($0.folder))" } ?? ""
            Diagnostics.line("kindly-push: using the \(keyring.name) keyring\(location)")
        }
        return keyring
    }

    /// The Secret Service keyring, in the default collection or the one that
    /// `KINDLY_PUSH_SECRET_SERVICE_COLLECTION` names (an alias such as `login`, or an object path).
    private static func secretService(environment: [String: String]) throws(CLIError) -> any Keyring {
        SecretServiceKeyring(collection: secretServiceCollection(environment: environment), busAddress: busAddress(environment))
    }

    /// The collection `KINDLY_PUSH_SECRET_SERVICE_COLLECTION` names, else the default one.
    static func secretServiceCollection(environment: [String: String]) -> SecretServiceKeyring.Collection {
        guard let name = environment["KINDLY_PUSH_SECRET_SERVICE_COLLECTION"], !name.isEmpty else { return .default }
        return name.hasPrefix("/") ? .objectPath(name) : .alias(name)
    }

    /// `DBUS_SESSION_BUS_ADDRESS` of the command's environment; unset or empty means no bus.
    static func busAddress(_ environment: [String: String]) -> String? {
        guard let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else { return nil }
        return address
    }

    /// The key-file keyring of `--key-file`, read up front: a missing, malformed or loose key
    /// file is an `io` error before any input is read.
    static func keyFile(_ path: String) throws(CLIError) -> KeyFileKeyring {
        do throws(PrivateFileError) {
            return try KeyFileKeyring(path: path)
        } catch {
            throw CLIError(.io, error.description)
        }
    }

    /// The reader of `decrypt` and `route`: the keyring of ``forDecryption(_:environment:)`` and
    /// the `--sender-key` keys, pinned besides the keyring's (with `--key-file`, the only ones).
    static func decryption(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError) -> KindlyPushDecryption {
        var pinned: [SenderPublicKey] = []
        for text in arguments.values("--sender-key") {
            do throws(KeyDecodingError) {
                pinned.append(try SenderPublicKey(base64: text))
            } catch {
                throw CLIError(.usage, "--sender-key: \(error)")
            }
        }
        return KindlyPushDecryption(keyring: try forDecryption(arguments, environment: environment), pinnedSenderKeys: pinned)
    }

    /// `--key-file` or `--keyring`; keys are loaded once per run per kid, pinned sender keys once.
    static func forDecryption(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError) -> any Keyring {
        if let path = arguments.value("--key-file") {
            guard arguments.value("--keyring") == nil else { throw CLIError(.usage, "give either --key-file or --keyring, not both") }
            return try KeyringChoice.keyFile(path)
        }
        return CachingKeyring(try KeyringChoice.resolve(arguments, environment: environment))
    }
}

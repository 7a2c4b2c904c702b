package import KindlyPushBase
internal import KindlyPushCore

/// `--keyring auto|secret-service|file` and `--key-file`: where a command finds keys.
package enum KeyringChoice: String, CaseIterable, Sendable {
    case auto
    case secretService = "secret-service"
    case file

    /// What the command wants the keyring for.
    package enum Purpose {
        /// Looking keys up (`decrypt`, `route`): a keyring that cannot be used fails each look-up
        /// (`key_unavailable`), as a locked one does.
        case lookUp
        /// Listing or deleting (`keys`): a collection path that is not one is a usage error.
        case manage
        /// Storing a new key or pin (`keygen`, `senders add`): besides, `auto` never falls back to the file keyring on a
        /// bus that is there but does not answer, where the key would be stored out of sight of
        /// later look-ups through the Secret Service.
        case store
    }

    /// The keyring the options name. `auto` uses the Secret Service when a session bus
    /// answers and the file keyring otherwise; `--verbose` says which on standard error.
    package static func resolve(_ arguments: ParsedArguments, environment: CommandEnvironment, for purpose: Purpose = .manage)
        throws(CLIError)
        -> any Keyring
    {
        let choice = arguments.value("--keyring").flatMap(KeyringChoice.init(rawValue:)) ?? .auto
        let keyring: any Keyring
        switch choice {
        case .file:
            keyring = FileKeyring(folder: try fileFolder(environment))
        case .secretService:
            keyring = try DesktopBinary.required().secretServiceKeyring(environment: environment, for: purpose)
        case .auto:
            // `kindly-push` runs `kindly-push-desktop` whenever a session bus is named (see
            // `KeyringChoice.needsSecretService`), so without services there is no bus to ask.
            if let services = DesktopBinary.installed {
                keyring = try services.autoKeyring(environment: environment, for: purpose)
            } else {
                keyring = FileKeyring(folder: try fileFolder(environment))
            }
        }
        if arguments.has("--verbose") {
            Diagnostics.line("kindly-push: using the \(description(of: keyring))")
        }
        return keyring
    }

    /// `the file keyring (FOLDER)`, `the secret-service keyring`: for notes on standard error.
    package static func description(of keyring: any Keyring) -> String {
        let location = (keyring as? FileKeyring).map { " (\($0.folder))" } ?? ""
        return "\(keyring.name) keyring\(location)"
    }

    /// The file keyring's folder; a `usage` error when the variable that places it is relative
    /// or holds a line break, an `io` error when there is no home folder to put it in.
    package static func fileFolder(_ environment: CommandEnvironment) throws(CLIError) -> String {
        // A relative or broken location is the caller's mistake: usage, not io.
        if let problem = FileKeyring.locationProblem(variable: { environment[$0] }) { throw CLIError(.usage, problem) }
        do throws(KeyringError) {
            return try FileKeyring.defaultFolder { environment[$0] }
        } catch {
            throw CLIError(.io, error.description)
        }
    }

    /// Whether the options need the Secret Service (and so `kindly-push-desktop`): `--keyring
    /// secret-service`, or `auto` (the default) with a session bus named; never with
    /// `--key-file`.
    package static func needsSecretService(_ arguments: ParsedArguments, environment: CommandEnvironment) -> Bool {
        guard arguments.value("--key-file") == nil else { return false }
        switch arguments.value("--keyring").flatMap(KeyringChoice.init(rawValue:)) ?? .auto {
        case .file: return false
        case .secretService: return true
        case .auto: return busAddress(environment) != nil
        }
    }

    /// `DBUS_SESSION_BUS_ADDRESS` of the command's environment; unset or empty means no bus.
    package static func busAddress(_ environment: CommandEnvironment) -> String? {
        guard let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else { return nil }
        return address
    }

    /// The key-file keyring of `--key-file`, read up front: a missing, malformed or loose key
    /// file is an `io` error before any input is read.
    package static func keyFile(_ path: String) throws(CLIError) -> KeyFileKeyring {
        do throws(PrivateFileError) {
            return try KeyFileKeyring(path: path)
        } catch {
            throw CLIError(.io, error.description)
        }
    }

    /// The reader of `decrypt` and `route`: the keyring of ``forDecryption(_:environment:)`` and
    /// the `--sender-key` keys, pinned besides the keyring's (with `--key-file`, the only ones).
    package static func decryption(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) -> KindlyPushDecryption {
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

    /// `--key-file` or `--keyring`; keys are loaded once per run per kid and pinned sender keys
    /// once, and changes made to the keyring by other processes are followed within 1 s.
    package static func forDecryption(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) -> any Keyring {
        if let path = arguments.value("--key-file") {
            guard arguments.value("--keyring") == nil else { throw CLIError(.usage, "give either --key-file or --keyring, not both") }
            return try KeyringChoice.keyFile(path)
        }
        return CachingKeyring(try KeyringChoice.resolve(arguments, environment: environment, for: .lookUp))
    }
}

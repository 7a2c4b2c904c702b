package import KindlyPushBase
internal import KindlyPushCore

/// The keyring options: `--key-file`, `--keyring`, `--sender-key` and `--verbose`, declared once;
/// a command lists the ones it takes (with its own help where it means something else by one).
/// ``KeyringChoice`` reads only these.
package struct KeyringOptions: Sendable {
    /// As decrypt, route and notify read it; keygen and seal give it their own help.
    package static let keyFile = Option<String>(
        "--key-file", "PATH", "Read the device's secret key from this key file (0600) instead of the keyring.")
    package static let keyring = Option<KeyringChoice>("--keyring", "KIND", "Where keys live: auto (default), secret-service or file.")
    package static let senderKey = RepeatableOption(
        "--sender-key", "B64",
        "Pin this sender public key for this run, besides the keyring's (repeatable); with --key-file, the only pinned keys.")
    package static let verbose = Flag("--verbose", "Say on standard error which keyring is used.")

    /// The command's arguments, of which the group reads its own options only.
    private let arguments: ParsedArguments

    package init(_ arguments: ParsedArguments) {
        self.arguments = arguments
    }

    /// `--key-file PATH`.
    package var keyFile: String? { arguments[Self.keyFile] }
    /// `--keyring KIND`; nil when not given (`auto`).
    package var keyring: KeyringChoice? { arguments[Self.keyring] }
    /// Every `--sender-key B64`, in order, as given.
    package var senderKeys: [String] { arguments[Self.senderKey] }
    /// `--verbose`.
    package var isVerbose: Bool { arguments[Self.verbose] }
}

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
    package static func resolve(_ options: KeyringOptions, environment: CommandEnvironment, for purpose: Purpose = .manage)
        throws(CodedError)
        -> any Keyring
    {
        let choice = options.keyring ?? .auto
        let keyring: any Keyring
        switch choice {
        case .file:
            keyring = FileKeyring(folder: try fileFolder(environment))
        case .secretService:
            guard let services = environment.table.services.desktop else {
                throw CodedError(.io, "this needs \(SiblingBinary.desktop.name), which was not run")
            }
            keyring = try services.secretServiceKeyring(environment: environment, for: purpose)
        case .auto:
            // `kindly-push` runs `kindly-push-desktop` whenever a session bus is named (see
            // `KeyringChoice.needsSecretService`), so without services there is no bus to ask.
            if let services = environment.table.services.desktop {
                keyring = try services.autoKeyring(environment: environment, for: purpose)
            } else {
                keyring = FileKeyring(folder: try fileFolder(environment))
            }
        }
        if options.isVerbose {
            Diagnostics.line("kindly-push: using the \(KeyringInventory.description(of: keyring))")
        }
        return keyring
    }

    /// The file keyring's folder; a `usage` error when the variable that places it is relative
    /// or holds a line break, an `io` error when there is no home folder to put it in.
    package static func fileFolder(_ environment: CommandEnvironment) throws(CodedError) -> String {
        // A relative or broken location is the caller's mistake: usage, not io.
        if let problem = FileKeyring.locationProblem(variable: { environment[$0] }) { throw CodedError(.usage, problem) }
        do throws(KeyringError) {
            return try FileKeyring.defaultFolder { environment[$0] }
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// Whether the options need the Secret Service (and so `kindly-push-desktop`): `--keyring
    /// secret-service`, or `auto` (the default) with a session bus named; never with
    /// `--key-file`.
    package static func needsSecretService(_ options: KeyringOptions, environment: CommandEnvironment) -> Bool {
        guard options.keyFile == nil else { return false }
        switch options.keyring ?? .auto {
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
    package static func keyFile(_ path: String) throws(CodedError) -> KeyFileKeyring {
        do throws(PrivateFileError) {
            return try KeyFileKeyring(path: path)
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// The reader of `decrypt` and `route`: the keyring of ``forDecryption(_:environment:)`` and
    /// the `--sender-key` keys, pinned besides the keyring's (with `--key-file`, the only ones).
    package static func decryption(_ options: KeyringOptions, environment: CommandEnvironment) throws(CodedError) -> KindlyPushDecryption {
        var pinned: [SenderPublicKey] = []
        for text in options.senderKeys {
            let key: SenderPublicKey
            do throws(KeyDecodingError) {
                key = try SenderPublicKey(base64: text)
            } catch {
                throw CodedError(.usage, "--sender-key: \(error)")
            }
            if let reason = key.unusableReason { throw CodedError(.usage, "--sender-key: \(reason): it is not pinned") }
            pinned.append(key)
        }
        return KindlyPushDecryption(keyring: try forDecryption(options, environment: environment), pinnedSenderKeys: pinned)
    }

    /// `--key-file` or `--keyring`; keys are loaded once per run per kid and pinned sender keys
    /// once, and changes made to the keyring by other processes are followed within 1 s.
    package static func forDecryption(_ options: KeyringOptions, environment: CommandEnvironment) throws(CodedError) -> any Keyring {
        if let path = options.keyFile {
            guard options.keyring == nil else { throw CodedError(.usage, "give either --key-file or --keyring, not both") }
            return try KeyringChoice.keyFile(path)
        }
        return CachingKeyring(try KeyringChoice.resolve(options, environment: environment, for: .lookUp))
    }
}

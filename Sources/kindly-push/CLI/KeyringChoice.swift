import KindlyPush

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
            if SecretServiceAvailability.sessionBusAnswers(environment: environment) {
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

    private static func secretService(environment: [String: String]) throws(CLIError) -> any Keyring {
        throw CLIError(.keyUnavailable, "the Secret Service keyring is not available in this build")
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
}

/// Stand-in until the Secret Service keyring lands: no session bus is ever used.
enum SecretServiceAvailability {
    static func sessionBusAnswers(environment: [String: String]) -> Bool { false }
}

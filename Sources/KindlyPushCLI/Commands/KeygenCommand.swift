package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// `kindly-push keygen`: creates a device key, stores it, prints the registration JSON.
package struct KeygenCommand: Command {
    package static let name = "keygen"
    package static let abstract = "Create a device key, store it, and print its registration JSON."
    package static let examples = [
        Example(
            "Create a device key in a key file and print its registration", "kindly-push keygen --key-file device.json --token 0123abcd"),
        Example("Register the stored key again, for a new token", "kindly-push keygen --reuse --token 4567ef01"),
    ]
    package static let discussion = """
        Generates an X25519 key pair, stores it in the keyring (or writes a 0600 key file with
        --key-file; an existing file is never replaced) and prints the registration object of
        wire-format section 6. The secret key is never printed.

        With --reuse, the newest stored key (or the existing --key-file) is registered again
        and a new key is created only when there is none, so registering a new token does not
        rotate the key. --push-mode automatic (the default, as in the SDK) is alert when a
        decrypting presenter shows the pushes, and silent otherwise. --presenter notify declares
        one (pushes are shown through `kindly-push notify`, which decrypts them first), --presenter
        none declares none; without --presenter it is detected: the desktop agent's D-Bus service
        file, ai.kindly.Push1.service, in a session service folder ($XDG_DATA_HOME/dbus-1/services,
        else ~/.local/share/dbus-1/services, and dbus-1/services in each folder of $XDG_DATA_DIRS,
        else /usr/local/share and /usr/share).
        """
    package static let options: [OptionSpec] = [
        SharedOptions.keyFile.help("Write the new key to this key file (mode 0600; never replaced) instead of the keyring."),
        SharedOptions.keyring,
        .value("--label", "TEXT", "A label for the key in the keyring (default: \"kindly-push\")."),
        .value("--token", "HEX", "The APNs device token (hex digits, even length); printed in lowercase."),
        .value(
            "--push-mode", "MODE", "automatic (default), alert or silent.", choices: KindlyNotificationMode.allCases.map(\.rawValue)),
        .value(
            "--presenter", "KIND",
            "notify: pushes are shown through `kindly-push notify`; none: no decrypting presenter (default: detected).",
            choices: ["notify", "none"]),
        .flag("--reuse", "Register the newest stored key (or the existing --key-file); create one only when there is none."),
        .value("--sdk-version", "V", "The sdk_version to register (default: \(Registration.sdkVersion))."),
        SharedOptions.verbose, SharedOptions.help,
    ]

    package let arguments: ParsedArguments
    package let environment: CommandEnvironment
    package let token: String?

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        if arguments.value("--key-file") != nil, arguments.value("--keyring") != nil {
            throw CLIError(.usage, "give either --key-file or --keyring, not both")
        }
        // Checked before anything is made or written: a label too long for a key file would make
        // the stored key unreadable.
        if let label = arguments.value("--label"), let problem = KeyringLabel.problem(with: label) {
            throw CLIError(.usage, "--label: \(problem)")
        }
        if let text = arguments.value("--token") {
            do throws(Registration.InvalidToken) {
                token = try Registration.tokenHex(validating: text)
            } catch {
                throw CLIError(.usage, "--token: \(error)")
            }
        } else {
            token = nil
        }
        self.arguments = arguments
        self.environment = environment
    }

    package func run() -> Int32 {
        var key = DeviceKey.generate()
        let reuse = arguments.has("--reuse")
        do throws(CLIError) {
            if let path = arguments.value("--key-file"), reuse, let existing = try KeygenCommand.existingKey(at: path) {
                key = existing
            } else if let path = arguments.value("--key-file") {
                do throws(PrivateFileError) {
                    try KeyFile.write(key, to: path)
                } catch {
                    throw CLIError(.io, error.description)
                }
            } else {
                let keyring = try KeyringChoice.resolve(arguments, environment: environment, for: .store)
                do throws(KeyringError) {
                    let label = arguments.value("--label") ?? "kindly-push"
                    if reuse {
                        key = try keyring.newestKeyOrNew(label: label).key
                    } else {
                        try keyring.store(key, label: label)
                    }
                } catch {
                    throw CLIError(.io, "cannot store the key in the \(keyring.name) keyring: \(error)")
                }
                // auto chose: say where the key went, so that a later look-up elsewhere is no mystery.
                if arguments.value("--keyring") == nil {
                    Diagnostics.line("kindly-push: stored the key in the \(KeyringChoice.description(of: keyring))")
                }
            }
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        let mode = arguments.value("--push-mode").flatMap(KindlyNotificationMode.init(rawValue:)) ?? .automatic
        let hasPresenter: Bool
        switch arguments.value("--presenter") {
        case "notify"?: hasPresenter = true
        case "none"?: hasPresenter = false
        default: hasPresenter = mode == .automatic && KeygenCommand.presenterInstalled(environment: environment)
        }
        let pushMode = mode.pushMode(hasDecryptingPresenter: hasPresenter)
        let registration = Registration(
            token: token, pushMode: pushMode, publicKey: key.publicKey,
            sdkVersion: arguments.value("--sdk-version") ?? Registration.sdkVersion)
        return Terminal.printLine(registration.json)
    }
}

extension KeygenCommand {
    /// The file name of the desktop agent's D-Bus service file (its bus name, as D-Bus names them).
    package static let presenterServiceFile = "ai.kindly.Push1.service"

    /// Whether a decrypting presenter is installed, as the SDK finds its extension in the app
    /// bundle: the desktop agent's D-Bus service file is in a session service folder (see the
    /// discussion). Only looked at in automatic mode without `--presenter`.
    package static func presenterInstalled(environment: CommandEnvironment) -> Bool {
        func absolute(_ value: String?) -> String? { value.flatMap { $0.utf8.first == UInt8(ascii: "/") ? $0 : nil } }
        var dataFolders: [String] = []
        if let dataHome = absolute(environment["XDG_DATA_HOME"]) {
            dataFolders.append(dataHome)
        } else if let home = absolute(environment["HOME"]) {
            dataFolders.append(home + "/.local/share")
        }
        let dataDirs = environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
        dataFolders += dataDirs.split(separator: ":").compactMap { absolute(String($0)) }
        return dataFolders.contains { folder in
            var status = stat()
            return stat(folder + "/dbus-1/services/" + presenterServiceFile, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
        }
    }

    /// The key in the key file at `path`, or `nil` when there is no file there.
    package static func existingKey(at path: String) throws(CLIError) -> DeviceKey? {
        do throws(PrivateFileError) {
            return try KeyFile.read(path)
        } catch {
            if case .missing = error { return nil }
            throw CLIError(.io, error.description)
        }
    }
}

/// `kindly-push keys list` / `kindly-push keys delete KID`.
package struct KeysCommand: Command {
    package static let name = "keys"
    package static let arguments = ["list", "delete <kid>"]
    package static let abstract = "List the stored keys, or delete one."
    package static let examples = [
        Example("List the stored keys", "kindly-push keys list"),
        Example("Delete the key with this kid", "kindly-push keys delete q1w2e3r4t5Y"),
    ]
    package static let discussion = """
        list prints one JSON object per key: {"kid", "public_key", "label", "created"} (never a
        secret). delete removes the key with that kid; exit 4 (key_unavailable) when there is none.
        Readers already running on this keyring (decrypt --jsonl, route --jsonl, notify) follow a
        delete within 1 s: the deleted key's pushes are then key_unavailable.
        A kid that begins with "--" goes after "--": kindly-push keys delete -- --AbCdEfGh.
        """
    package static let options: [OptionSpec] = [SharedOptions.keyring, SharedOptions.verbose, SharedOptions.help]

    package enum Action {
        case list
        case delete(KeyID)
    }

    package let action: Action
    package let arguments: ParsedArguments
    package let environment: CommandEnvironment

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) {
        switch arguments.positionals.first {
        case "list"?:
            guard arguments.positionals.count == 1 else { throw CLIError(.usage, "keys list takes no argument") }
            action = .list
        case "delete"?:
            guard arguments.positionals.count == 2 else { throw CLIError(.usage, "keys delete takes exactly one kid") }
            guard let kid = KeyID(base64: arguments.positionals[1]) else {
                throw CLIError(.usage, "'\(arguments.positionals[1])' is not a kid (8 bytes of base64url)")
            }
            action = .delete(kid)
        case let other?:
            throw CLIError(.usage, "unknown keys action '\(other)'; expected list or delete (see 'kindly-push keys --help')")
        case nil:
            throw CLIError(.usage, "missing action: list or delete (see 'kindly-push keys --help')")
        }
        self.arguments = arguments
        self.environment = environment
    }

    package func run() -> Int32 {
        do throws(CLIError) {
            let keyring = try KeyringChoice.resolve(arguments, environment: environment)
            switch action {
            case .list:
                // The file keyring lists the entries it can read and reports each one it cannot,
                // and what interrupted writes left behind (removed now).
                var listing = FileKeyring.Listing()
                do throws(KeyringError) {
                    if let files = keyring as? FileKeyring {
                        listing = try files.scan()
                    } else {
                        listing.entries = try keyring.list()
                    }
                } catch {
                    throw CLIError(.io, error.description)
                }
                for path in listing.removedLeftovers {
                    Diagnostics.line("kindly-push: removed \(path), the temporary file of an interrupted write")
                }
                let lines: [JSONValue] = listing.entries.map { entry in
                    [
                        "kid": .string(entry.kid.base64URL), "public_key": .string(entry.publicKey.base64URL),
                        "label": .string(entry.label), "created": .number(JSONNumber(Int(entry.created))),
                    ]
                }
                let status = Terminal.printLines(lines)
                for problem in listing.problems { Diagnostics.report(CLIError(.io, problem.description)) }
                return listing.problems.isEmpty ? status : ErrorCode.io.exitStatus
            case .delete(let kid):
                do throws(KeyringError) {
                    try keyring.delete(kid)
                } catch {
                    if case .notFound = error { throw CLIError(.keyUnavailable, error.description) }
                    throw CLIError(.io, error.description)
                }
                return 0
            }
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }
}

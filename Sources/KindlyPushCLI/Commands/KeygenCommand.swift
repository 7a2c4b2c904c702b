package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// `kindly-push keygen`: creates a device key, stores it, prints the registration JSON.
package struct KeygenCommand: RunnableCommand {
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
    package static let keyFile = KeyringOptions.keyFile.help(
        "Write the new key to this key file (mode 0600; never replaced) instead of the keyring.")
    package static let keyring = KeyringOptions.keyring.taken
    package static let label = Option<String>("--label", "TEXT", "A label for the key in the keyring (default: \"kindly-push\").")
    package static let token = Option<String>("--token", "HEX", "The APNs device token (hex digits, even length); printed in lowercase.")
    package static let pushMode = Option<KindlyNotificationMode>("--push-mode", "MODE", "automatic (default), alert or silent.")
    package static let presenter = Option<Presenter>(
        "--presenter", "KIND", "notify: pushes are shown through `kindly-push notify`; none: no decrypting presenter (default: detected).")
    package static let reuse = Flag(
        "--reuse", "Register the newest stored key (or the existing --key-file); create one only when there is none.")
    package static let sdkVersion = Option<String>(
        "--sdk-version", "V", "The sdk_version to register (default: \(Registration.sdkVersion)).")
    package static let verbose = KeyringOptions.verbose.taken
    package static let help = SharedOptions.help.taken

    /// `--presenter`: whether a decrypting presenter shows the pushes.
    package enum Presenter: String, CaseIterable, Sendable {
        /// Pushes are shown through `kindly-push notify`.
        case notifyCommand = "notify"
        /// No decrypting presenter.
        case noPresenter = "none"
    }

    package let keyring: KeyringOptions
    package let label: String?
    package let token: String?
    package let pushMode: KindlyNotificationMode
    package let presenter: Presenter?
    package let reuses: Bool
    package let sdkVersion: String
    package let environment: CommandEnvironment

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        keyring = KeyringOptions(arguments)
        if keyring.keyFile != nil, keyring.keyring != nil {
            throw CodedError(.usage, "give either --key-file or --keyring, not both")
        }
        // Checked before anything is made or written: a label too long for a key file would make
        // the stored key unreadable.
        label = arguments[Self.label]
        if let label, let problem = KeyringLabel.problem(with: label) {
            throw CodedError(.usage, "--label: \(problem)")
        }
        if let text = arguments[Self.token] {
            do throws(Registration.InvalidToken) {
                token = try Registration.tokenHex(validating: text)
            } catch {
                throw CodedError(.usage, "--token: \(error)")
            }
        } else {
            token = nil
        }
        pushMode = arguments[Self.pushMode] ?? .automatic
        presenter = arguments[Self.presenter]
        reuses = arguments[Self.reuse]
        sdkVersion = arguments[Self.sdkVersion] ?? Registration.sdkVersion
        self.environment = environment
    }

    package func run() -> Int32 {
        var key = DeviceKey.generate()
        do throws(CodedError) {
            if let path = keyring.keyFile, reuses, let existing = try KeygenCommand.existingKey(at: path) {
                key = existing
            } else if let path = keyring.keyFile {
                do throws(PrivateFileError) {
                    try KeyFile.write(key, to: path)
                } catch {
                    throw CodedError(.io, error.description)
                }
            } else {
                let keyring = try KeyringChoice.resolve(self.keyring, environment: environment, for: .store)
                do throws(KeyringError) {
                    let label = label ?? "kindly-push"
                    if reuses {
                        key = try keyring.newestKeyOrNew(label: label).key
                    } else {
                        try keyring.store(key, label: label)
                    }
                } catch {
                    throw CodedError(.io, "cannot store the key in the \(keyring.name) keyring: \(error)")
                }
                // auto chose: say where the key went, so that a later look-up elsewhere is no mystery.
                if self.keyring.keyring == nil {
                    Diagnostics.line("kindly-push: stored the key in the \(KeyringInventory.description(of: keyring))")
                }
            }
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        let hasPresenter: Bool
        switch presenter {
        case .notifyCommand?: hasPresenter = true
        case .noPresenter?: hasPresenter = false
        case nil: hasPresenter = pushMode == .automatic && KeygenCommand.presenterInstalled(environment: environment)
        }
        let registration = Registration(
            token: token, pushMode: pushMode.pushMode(hasDecryptingPresenter: hasPresenter), publicKey: key.publicKey,
            sdkVersion: sdkVersion)
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
            (try? FileStatus.of(folder + "/dbus-1/services/" + presenterServiceFile)).map { $0.st_mode & S_IFMT == S_IFREG } == true
        }
    }

    /// The key in the key file at `path`, or `nil` when there is no file there.
    package static func existingKey(at path: String) throws(CodedError) -> DeviceKey? {
        do throws(PrivateFileError) {
            return try KeyFile.read(path)
        } catch {
            if case .missing = error { return nil }
            throw CodedError(.io, error.description)
        }
    }
}

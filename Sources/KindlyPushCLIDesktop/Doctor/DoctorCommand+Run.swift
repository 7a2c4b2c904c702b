internal import KindlyPush
package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// `kindly-push doctor`: why nothing decrypts here. One line per check, ok / warning / problem
/// and what to do; exit 0 when there is no problem and 1 otherwise.
///
/// It never prints a secret (it reads names, modes, owners, versions and public key
/// information), never prompts, and spends at most the keyring's budget (1.5 s) on the bus.
extension DoctorCommand {
    /// The checks, in the order they print. Each is independent of the others' printing; they
    /// share what they find through the context (the bus is probed once).
    static let checks: [DoctorChecks] = [
        KeyringChecks.choice, KeyringChecks.sessionBus, KeyringChecks.secretService, FileKeyringChecks.folder,
        KeyringChecks.deviceKeys, KeyringChecks.pinnedSenders, NotificationChecks.server, LibraryChecks.libsodium,
        LibraryChecks.libsecret,
    ]

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        choice = KeyringOptions(arguments).keyring ?? .auto
        json = arguments[DoctorCommand.json]
        self.environment = environment
    }

    package func run() -> Int32 {
        let context = DoctorContext(environment: environment, choice: choice)
        let results = Self.checks.flatMap { $0(context) }
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        for check in results {
            if json {
                stdout.write(JSONWriter.compactBytes(check.json) + [0x0A])
            } else {
                stdout.write(check.line + "\n")
            }
        }
        let problems = results.filter { $0.status == .problem }.count
        if !json {
            let warnings = results.filter { $0.status == .warning }.count
            stdout.write("\(problems) problem\(problems == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")\n")
        }
        let status = Terminal.finish(&stdout)
        guard status == 0 else { return status }
        return problems == 0 ? 0 : 1
    }
}

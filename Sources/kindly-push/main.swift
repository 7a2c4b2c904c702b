import Foundation
internal import KindlyPush
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The commands, in the order help lists them.
nonisolated let commands: [any Command.Type] = [
    KeygenCommand.self, KeysCommand.self, SealCommand.self, CheckCommand.self, DecryptCommand.self, RouteCommand.self, NotifyCommand.self,
    VerifyCommand.self, DoctorCommand.self,
]

/// Parses the command line, runs one command and returns the exit status.
nonisolated func runKindlyPush(_ arguments: [String], environment: [String: String]) -> Int32 {
    guard let name = arguments.first else {
        Diagnostics.report(CLIError(.usage, "missing a subcommand (see 'kindly-push --help')"))
        return ErrorCode.usage.exitStatus
    }
    if name == "--help" || name == "-h" {
        return Terminal.printText(Help.root(commands))
    }
    // cli.md, "General conventions": `--version` and `kindly-push version`.
    if name == "--version" || name == "version" {
        return Terminal.printText("kindly-push \(KindlyPushRelease.version)\n")
    }
    if name == "help" {
        guard let topic = arguments.dropFirst().first else { return Terminal.printText(Help.root(commands)) }
        guard let command = commands.first(where: { $0.name == topic }) else {
            Diagnostics.report(CLIError(.usage, "unknown subcommand '\(topic)' (see 'kindly-push --help')"))
            return ErrorCode.usage.exitStatus
        }
        return Terminal.printText(Help.command(command))
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        Diagnostics.report(CLIError(.usage, "unknown subcommand '\(name)' (see 'kindly-push --help')"))
        return ErrorCode.usage.exitStatus
    }
    do throws(CLIError) {
        let parsed = try ParsedArguments.parse(Array(arguments.dropFirst()), specs: command.options, command: command.name)
        // Help only where the parser met it as an option: `--placeholder-title --help` is a title.
        if parsed.has("--help") { return Terminal.printText(Help.command(command)) }
        return try command.make(parsed, environment: environment).run()
    } catch {
        Diagnostics.report(error)
        return error.code.exitStatus
    }
}

// A closed pipe must give EPIPE (and exit 74), not kill the process silently.
signal(SIGPIPE, SIG_IGN)
exit(runKindlyPush(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))

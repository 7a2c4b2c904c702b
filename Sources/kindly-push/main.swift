internal import CProcessGuard
import Foundation
internal import KindlyPush
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

// First, before any file is opened or any key is read (see "Hardening (round 2)" in the README):
// closed standard streams are held on /dev/null, so no file takes their numbers; the process is
// not dumpable (no core file, no reading of its memory by other processes of the user); a crash
// prints one fixed line and exits 70, instead of the Swift runtime's report, which dumps memory
// around each register.
_ = kp_hold_standard_streams()
_ = kp_make_undumpable()
_ = kp_install_crash_handlers()

/// The commands, in the order help lists them.
nonisolated let commands: [any Command.Type] = [
    KeygenCommand.self, KeysCommand.self, SealCommand.self, CheckCommand.self, DecryptCommand.self, RouteCommand.self, VerifyCommand.self,
]

/// Parses the command line, runs one command and returns the exit status.
nonisolated func runKindlyPush(_ arguments: [String], environment: [String: String]) -> Int32 {
    // For tests: the named-temporary-file fallback of systems without O_TMPFILE.
    if environment["KINDLY_PUSH_TEST_NO_O_TMPFILE"] == "1" { PrivateFile.usesNamelessFiles = false }
    guard let name = arguments.first else {
        Diagnostics.report(CLIError(.usage, "missing a subcommand (see 'kindly-push --help')"))
        return ErrorCode.usage.exitStatus
    }
    if name == "--help" || name == "-h" {
        return Terminal.printText(Help.root(commands))
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
        return try command.init(parsed, environment: environment).run()
    } catch {
        Diagnostics.report(error)
        return error.code.exitStatus
    }
}

// A closed pipe must give EPIPE (and exit 74), not kill the process silently.
signal(SIGPIPE, SIG_IGN)
exit(runKindlyPush(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))

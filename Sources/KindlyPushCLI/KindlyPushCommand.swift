internal import CProcessGuard
internal import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

// The command line of `kindly-push` and its siblings: the same commands, parsed the same way;
// each binary's ``CommandTable`` says which it runs and what it links.

/// Reports an unknown subcommand, with a suggestion when it looks like a typo.
package nonisolated func unknownSubcommand(_ name: String, among commands: [String]) -> Int32 {
    let suggestion = Suggestion.phrase(for: name, among: commands + Help.builtins.map { $0.name })
    Diagnostics.report(CodedError(.usage, "unknown subcommand '\(name)'\(suggestion) (see 'kindly-push --help')"))
    return ErrorCode.usage.exitStatus
}

/// The `main` of `kindly-push`, `kindly-push-desktop`, `kindly-push-redis` and `kindly-push-send`. First, before any
/// file is opened or any key is read (docs/hardening.md): closed standard streams are held on
/// /dev/null, so that no file takes their numbers; the process is made not dumpable (no core
/// file, no reading of its memory by the user's other processes); a crash prints one fixed line
/// and exits 70 instead of the Swift runtime's report, which dumps memory around each register.
/// Then the binary's `table` goes into the environment of the commands; SIGPIPE is ignored (a closed pipe or
/// socket gives EPIPE: a quiet end, `io`, or a Redis reconnection); the command runs and the
/// process exits with its status.
package nonisolated func kindlyPushMain(_ table: CommandTable) -> Never {
    _ = kp_hold_standard_streams()
    _ = kp_make_undumpable()
    _ = kp_install_crash_handlers()
    // A --redis URL's password leaves the command line before anything else reads it.
    var arguments = Array(CommandLine.arguments.dropFirst())
    var environment = CommandEnvironment.ofProcess()
    RedisOptions.takePasswordOutOfArguments(&arguments, environment: &environment)
    environment.table = table
    signal(SIGPIPE, SIG_IGN)
    exit(runKindlyPush(arguments, environment: environment))
}

/// Parses the command line, runs one command and returns the exit status.
package nonisolated func runKindlyPush(_ arguments: [String], environment: CommandEnvironment) -> Int32 {
    // For tests: the named-temporary-file fallback of systems without O_TMPFILE.
    if environment["KINDLY_PUSH_TEST_NO_O_TMPFILE"] == "1" { PrivateFile.usesNamelessFiles = false }
    // The terminal's width only for help: a one-shot decrypt asks no terminal anything.
    var width: Int { Help.width(environment: environment) }
    let table = environment.table
    guard let name = arguments.first else {
        Diagnostics.report(CodedError(.usage, "missing a subcommand (see 'kindly-push --help')"))
        return ErrorCode.usage.exitStatus
    }
    /// Help of every command (the root help), with what the siblings declare.
    func rootHelp() -> Int32 {
        do throws(CodedError) {
            return Terminal.printText(Help.root(try table.declarations(environment: environment), width: width))
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }
    if SharedOptions.help.isNamed(by: name) { return rootHelp() }
    // docs/spec/streams.md, "Input and output": `--version` and `kindly-push version`.
    if SharedOptions.version.isNamed(by: name) || name == "version" {
        return Terminal.printText("kindly-push \(KindlyPushRelease.version)\n")
    }
    // A binary that asks this one for its declarations (SiblingBinary.declarations).
    if name == SiblingBinary.declarationsArgument, arguments.count == 1 {
        return Terminal.printText(table.ownDeclarations.map { String(decoding: $0.jsonLine + [0x0A], as: UTF8.self) }.joined())
    }
    if name == "help" {
        guard let topic = arguments.dropFirst().first else { return rootHelp() }
        if let builtin = Help.builtin(named: topic, width: width) { return Terminal.printText(builtin) }
        guard let entry = table.entry(named: topic) else { return unknownSubcommand(topic, among: table.names) }
        switch entry.runner {
        case .here(let command): return Terminal.printText(Help.command(command.declaration, width: width))
        // Its declaration is the sibling's: so is its help.
        case .sibling(let sibling): return sibling.exec(arguments, environment: environment)
        }
    }
    guard let entry = table.entry(named: name) else { return unknownSubcommand(name, among: table.names) }
    let command: any RunnableCommand.Type
    switch entry.runner {
    case .here(let declared): command = declared
    // A command declared by a sibling is parsed there too.
    case .sibling(let sibling): return sibling.exec(arguments, environment: environment)
    }
    do throws(CodedError) {
        let declaration = command.declaration
        let parsed = try ParsedArguments.parse(
            Array(arguments.dropFirst()), specs: declaration.options, command: command.name, forms: declaration.actionWords)
        // Help only where the parser met it as an option: `--placeholder-title --help` is a title.
        if parsed[SharedOptions.help] { return Terminal.printText(Help.command(declaration, width: width)) }
        // What this binary does not link runs in a sibling (see CommandTable).
        switch table.runner(for: command, parsed, environment: environment) {
        case .here(let implementation):
            return try implementation.make(parsed, environment: environment).run()
        case .sibling(let sibling):
            // A worker's SIGTERM is held from here (the mask survives exec) until its handler is
            // in place: a stop during start-up is a clean stop too.
            if sibling == .redis, command is any DocumentCommand.Type { StopSignals.hold() }
            return sibling.exec(arguments, environment: environment)
        }
    } catch {
        Diagnostics.report(error)
        return error.code.exitStatus
    }
}

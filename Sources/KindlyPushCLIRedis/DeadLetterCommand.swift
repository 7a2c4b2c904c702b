package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushRedis

/// `kindly-push dead-letter replay --redis URL --from DEAD --to INPUT (--id ID … | --code CODE |
/// --all)`: moves a workers' dead letters back to their input stream, each exactly once.
/// Declared and run in `kindly-push-redis` (hiredis); every other binary hands it there.
package struct DeadLetterCommand: RunnableCommand {
    package static let name = "dead-letter"
    package static let abstract = "Move a Redis Streams workers' dead letters back to their input stream, each exactly once."
    package static let examples = [
        Example(
            "Send the refused pushes back to the senders, once their cause is fixed",
            "kindly-push dead-letter replay --redis redis://db --from dead --to pushes --all")
    ]
    package static let arguments = ["replay"]
    package static let discussion = """
        Chooses entries of the dead-letter stream (--id, repeatable; --code, the entries of that
        error code; or --all) and moves each back to the input stream: one script per --batch
        entries adds the entry's original doc to the input stream (with "replayed_from", its
        dead-letter id) and deletes it from the dead letters, both or neither, so a replay killed
        at any point and run again moves every entry exactly once. Prints one line per entry
        moved (with --json, {"dead_letter_id", "id"}), then how many were moved; an id that is
        not in the dead letters is said and skipped. The password as for a worker.
        """
    package static let url = RedisServerOptions.url.taken
    package static let from = Option<String>("--from", "STREAM", "The dead-letter stream (the workers' --dead-letter).")
    package static let to = Option<String>("--to", "STREAM", "The input stream the entries go back to (the workers' --from).")
    package static let id = RepeatableOption("--id", "ID", "Move this dead letter (repeatable).")
    package static let code = Option<String>("--code", "CODE", "Move the dead letters of this error code (bad_input, io, …).")
    package static let all = Flag("--all", "Move every dead letter.")
    package static let batch = Option<Int>("--batch", "N", "Entries moved per script call, at once or not at all (default: 100).")
    package static let json = Flag("--json", "Print one JSON object per entry moved instead of the text lines.")
    package static let caFile = RedisOptions.caFile.taken
    package static let tlsCertificate = RedisOptions.tlsCertificate.taken
    package static let tlsKey = RedisOptions.tlsKey.taken
    package static let help = SharedOptions.help.taken

    package let request: DeadLetterReplayRequest

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        func usage(_ text: String) -> CodedError { CodedError.usage(text, command: Self.name) }
        guard arguments.positionals == ["replay"] else {
            throw usage(arguments.positionals.isEmpty ? "missing action: replay" : "unknown dead-letter action; expected replay")
        }
        func required(_ key: Option<String>) throws(CodedError) -> String { try arguments.required(key, command: Self.name) }
        let server = try RedisOptions.Server(try required(Self.url), arguments, shared: [], environment: environment, usage)
        let deadLetter = try required(Self.from)
        let input = try required(Self.to)
        if deadLetter == input { throw usage("'\(Self.from.name)' and '\(Self.to.name)' name the same stream") }
        let ids = arguments[Self.id]
        let code = arguments[Self.code]
        let choices = (ids.isEmpty ? 0 : 1) + (code == nil ? 0 : 1) + (arguments[Self.all] ? 1 : 0)
        guard choices == 1 else { throw usage("choose the entries with one of '--id', '--code' or '--all'") }
        if code?.isEmpty == true { throw usage("'\(Self.code.name)' takes an error code") }
        var batch = 100
        if arguments.isGiven(Self.batch) {
            guard let value = arguments[Self.batch], (1...10_000).contains(value) else {
                throw usage("'\(Self.batch.name)' takes a whole number from 1 to 10000")
            }
            batch = value
        }
        request = DeadLetterReplayRequest(
            server: server, deadLetter: deadLetter, input: input, ids: ids, code: code, batch: batch, json: arguments[Self.json])
    }

    package func run() -> Int32 {
        do throws(CodedError) {
            var status: Int32 = 0
            try DeadLetterReplay.run(
                request, print: { line in if status == 0 { status = Terminal.printText(line + "\n") } },
                note: { Diagnostics.line($0, level: .warning) })
            return status
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }
}

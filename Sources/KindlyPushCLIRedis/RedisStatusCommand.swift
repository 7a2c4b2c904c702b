package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushRedis

#if canImport(Glibc)
    import Glibc
#endif

/// `kindly-push redis-status --redis URL --from STREAM --group GROUP`: a consumer group's backlog
/// as an operator reads it: the stream's length, the group's lag and pending
/// entries, each consumer's pending entries and idle time, the dead-letter stream's length.
/// Declared and run in `kindly-push-redis` (hiredis); every other binary hands it there.
package struct RedisStatusCommand: RunnableCommand {
    package static let name = "redis-status"
    package static let abstract = "Show a Redis Streams worker group's backlog: lag, pending entries per consumer, dead letters."
    package static let examples = [
        Example(
            "The backlog of the sealers group, as JSON",
            "kindly-push redis-status --redis redis://redis.internal --from outbox --group sealers --dead-letter outbox:dead --json")
    ]
    package static let arguments = [""]
    package static let discussion = """
        Reads XLEN, XINFO GROUPS and XINFO CONSUMERS of the input stream (and XLEN of the
        dead-letter stream) and prints them as a table, or with --json as one object: {"stream",
        "length", "group", "lag", "pending", "last_delivered_id", "consumers": [{"name",
        "pending", "idle_ms"}], "dead_letter": {"stream", "length"}}. --prune-idle MS first removes
        the consumers idle longer than MS with nothing pending (in one script: a consumer that has
        entries is never removed), "pruned" listing them. --watch SECONDS prints again every
        SECONDS with the rates over the window ("rates": entries added, read by the group,
        acknowledged, dead letters, per second) until SIGINT or SIGTERM. The password comes from
        KINDLY_PUSH_REDIS_PASSWORD or the file KINDLY_PUSH_REDIS_PASSWORD_FILE names, as for a
        worker. A group that does not exist is an io error (74).
        """
    package static let url = RedisServerOptions.url.taken
    package static let from = Option<String>("--from", "STREAM", "The workers' input stream.")
    package static let group = Option<String>("--group", "GROUP", "The workers' consumer group.")
    package static let deadLetter = Option<String>("--dead-letter", "STREAM", "The workers' dead-letter stream, whose length is shown.")
    package static let json = Flag("--json", "Print one JSON object instead of the table.")
    package static let pruneIdle = Option<Int>(
        "--prune-idle", "MS",
        "First remove the group's consumers idle longer than MS with nothing pending (dead workers' names), and say which.")
    package static let watch = Option<Int>(
        "--watch", "SECONDS", "Read again every SECONDS, with the rates over each window, until interrupted.")
    package static let caFile = RedisOptions.caFile.taken
    package static let tlsCertificate = RedisOptions.tlsCertificate.taken
    package static let tlsKey = RedisOptions.tlsKey.taken
    package static let help = SharedOptions.help.taken

    package let request: RedisStatusRequest

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        func required(_ key: Option<String>) throws(CodedError) -> String { try arguments.required(key, command: Self.name) }
        let server = try RedisOptions.Server(try required(Self.url), arguments, shared: [], environment: environment) {
            CodedError.usage($0, command: Self.name)
        }
        let stream = try required(Self.from)
        let group = try required(Self.group)
        func number(_ key: Option<Int>, _ range: ClosedRange<Int>) throws(CodedError) -> Int? {
            guard arguments.isGiven(key) else { return nil }
            guard let value = arguments[key], range.contains(value) else {
                throw CodedError.usage(
                    "'\(key.name)' takes a whole number from \(range.lowerBound) to \(range.upperBound)", command: Self.name)
            }
            return value
        }
        request = RedisStatusRequest(
            server: server, stream: stream, group: group, deadLetter: arguments[Self.deadLetter], json: arguments[Self.json],
            pruneIdle: try number(Self.pruneIdle, 1...86_400_000 * 30), watch: try number(Self.watch, 1...86_400))
    }

    package func run() -> Int32 {
        do throws(CodedError) {
            guard let seconds = request.watch else { return Terminal.printText(try RedisStatus.read(request).text(json: request.json)) }
            // --watch: read again every SECONDS (idle consumers pruned the first time only),
            // with the rates over the window, until SIGINT or SIGTERM.
            StopSignals.install()
            var request = request
            var earlier: (status: RedisStatus, at: ContinuousClock.Instant)?
            while !StopSignals.requested {
                var status = try RedisStatus.read(request)
                let now = ContinuousClock.now
                if let earlier {
                    let window = now - earlier.at
                    status.measureRates(
                        since: earlier.status, seconds: Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18)
                }
                let printed = Terminal.printText(status.text(json: request.json) + (request.json ? "" : "\n"))
                guard printed == 0 else { return printed }
                earlier = (status, now)
                request.pruneIdle = nil
                let wake = now + .seconds(seconds)
                while !StopSignals.requested, ContinuousClock.now < wake {
                    try? nothingOrErrno(retryOnInterrupt: false) { usleep(50_000) }
                }
            }
            return 0
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }
}

package import KindlyPushBase

/// What only `kindly-push-redis` (and `kindly-push-send`) can do, because it links hiredis: run
/// a document command as a Redis Streams worker. `kindly-push` links no hiredis (its start-up is
/// measured by tools/bench-startup): given `--redis`, its ``CommandTable`` hands the run to
/// `kindly-push-redis` (``SiblingBinary/redis``), as it hands the Secret Service to
/// `kindly-push-desktop`.
package protocol RedisServices: Sendable {
    /// Runs `command` as a worker until `--exit-when-idle` or SIGTERM; the exit status.
    func runWorker<C: DocumentCommand>(_ command: C, options: RedisOptions) -> Int32
}

extension CommandTable.Services {
    /// Runs `command` as a worker here, or the `io` error of a binary without hiredis.
    package func runWorker<C: DocumentCommand>(_ command: C, options: RedisOptions) -> Int32 {
        guard let redis else {
            Diagnostics.report(CodedError(.io, "--redis needs \(SiblingBinary.redis.name), which was not run"))
            return ErrorCode.io.exitStatus
        }
        return redis.runWorker(command, options: options)
    }
}

package import KindlyPushCLI
internal import KindlyPushRedis

extension CommandTable {
    /// `kindly-push-redis`'s: `desktop` (`kindly-push-desktop`'s, so that a worker can use the
    /// Secret Service) with the Redis Streams workers run here, and `redis-status` and
    /// `dead-letter` declared and run here (hiredis); `send` still runs in `kindly-push-send`
    /// (nghttp2).
    package static func redis(over desktop: CommandTable) -> CommandTable {
        desktop.linking(
            .redis, services: Services(redis: RedisWorkerServices()),
            running: [.runs(RedisStatusCommand.self), .runs(DeadLetterCommand.self)],
            handOffs: [])
    }
}

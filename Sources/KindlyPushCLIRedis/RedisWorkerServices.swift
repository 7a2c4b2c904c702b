package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushRedis

#if canImport(Glibc)
    import Glibc
#endif

/// The services of `kindly-push-redis` and `kindly-push-send`: a document command as a Redis
/// Streams worker of the library's ``RedisWorker``.
package struct RedisWorkerServices: RedisServices {
    package init() {}

    package func runWorker<C: DocumentCommand>(_ command: C, options: RedisOptions) -> Int32 {
        // Held by kindly-push until now (StopSignals.hold): a pending one arrives here.
        StopSignals.install()
        return RedisWorker(command.processor, name: C.name, jobs: command.stream.jobs, options: options) { level, line in
            Diagnostics.line(line, level: level)
        }.run()
    }
}

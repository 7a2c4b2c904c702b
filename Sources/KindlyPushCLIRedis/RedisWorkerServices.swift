package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushRedis

/// The services of `kindly-push-redis`: a document command as a Redis Streams worker of the
/// library's ``RedisWorker``, and `redis-status`.
package struct RedisWorkerServices: RedisServices {
    package init() {}

    package func runWorker<C: DocumentCommand>(_ command: C, options: RedisOptions) -> Int32 {
        // Held by kindly-push until now (StopSignals.hold): a pending one arrives here.
        StopSignals.install()
        return RedisWorker(command.processor, name: C.name, jobs: command.stream.jobs, options: options) { level, line in
            Diagnostics.line(line, level: level)
        }.run()
    }

    package func status(_ request: RedisStatusRequest) -> Int32 {
        do throws(CodedError) {
            return Terminal.printText(try RedisStatus.read(request).text(json: request.json))
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }
}

package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushRedis

#if canImport(Glibc)
    import Glibc
#endif

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

    package func replay(_ request: DeadLetterReplayRequest) -> Int32 {
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

internal import KindlyPushBase
internal import KindlyPushCore

// A worker and what watches it: the service manager (`Type=notify`, its status line, its
// watchdog, docs/operating.md) and the group's figures for `--metrics`.
extension RedisWorker {
    /// What the worker does, for the service manager's `STATUS=` (`systemctl status`).
    var runningStatus: String {
        "reading '\(options.input)' on \(topology.currentPlace) (group '\(options.group)'), writing '\(options.output)'"
    }

    /// Asks the processor's ``DocumentProcessor/readinessProbe`` (send: a first connection to
    /// the push service) until it answers, with backoff (0.1 s doubling to 5 s), saying so once;
    /// false when a stop came first (nothing was read: the worker exits 0).
    func awaitProcessorReady() -> Bool {
        guard let probe = processor.readinessProbe else { return true }
        var delay = RedisTiming.firstRetryDelay
        var waiting = false
        while let reason = probe() {
            if !waiting {
                warn("\(reason): ready once it answers, asking again with backoff")
                tellService("STATUS=waiting for the push service: \(reason)")
                waiting = true
            }
            Self.sleep(milliseconds: delay / 2 + Int.random(in: 0...(delay / 2)))
            delay = min(delay * 2, RedisTiming.longestRetryDelay)
            if StopSignals.requested { return false }
        }
        if waiting { note("the push service answers") }
        return true
    }

    /// Tells the service manager `message`, when one listens (``ServiceNotifier``). A failure
    /// is noted once and never stops the worker.
    func tellService(_ message: String) {
        guard let service else { return }
        do throws(Errno) {
            try service.send(message)
        } catch {
            guard !serviceFailureNoted else { return }
            serviceFailureNoted = true
            log(
                .warning,
                "kindly-push: warning: cannot notify the service manager at NOTIFY_SOCKET=\(service.socketName): \(error); the worker goes on"
            )
        }
    }

    /// `STOPPING=1`, once, as soon as the worker sees SIGTERM or SIGINT.
    func tellStopping() {
        guard !toldStopping else { return }
        toldStopping = true
        tellService("STOPPING=1\nSTATUS=stopping (\(StopSignals.name)): committing the batch in hand")
    }

    /// Called where the loop passes while Redis answers (at least every few seconds: a read
    /// answers at once, a sleep lasts at most 5 s, a reply takes at most the block time plus
    /// ``RedisTiming/commandMargin``): feeds the service manager's watchdog, or says the worker
    /// is stopping. ``reconnect(after:)`` never calls it: a worker that cannot reach Redis for
    /// longer than `WatchdogSec=` is restarted by the service manager.
    func heartbeat() {
        if StopSignals.requested { tellStopping() } else { service?.feedWatchdog() }
    }

    /// The group's pending and lag figures, for `--metrics`, at most every second: `XINFO GROUPS`
    /// run on the server by ``RedisScripts/groupFigures``, which answers this group's two numbers only,
    /// so that a stream with hundreds of groups gives a reply of two numbers, not one over the
    /// reply bound (a reconnection every second, for ever).
    func readGroupFigures(on connection: RedisConnection) throws(RedisConnectionLost) {
        nextGroupFigures = Self.now() + 1000
        let command = [Array("EVAL".utf8), Array(RedisScripts.groupFigures.utf8), Array("1".utf8), input, group]
        let reply = try followingAsk(try connection.command(command), command)
        if let message = reply.errorMessage { try serverError(message) }
        let figures = reply.elements
        guard figures.count == 2 else { return }
        metrics?.update {
            $0.pending = figures[0].integer
            $0.lag = figures[1].integer.flatMap { $0 < 0 ? nil : $0 }
        }
    }
}

internal import KindlyPushBase
internal import KindlyPushCore

// A worker's held entries: those whose processing failed for a reason that may go away, kept
// pending and processed again in rounds with backoff (``RedisWorker/held``).
extension RedisWorker {
    /// The entries held for a transient failure, once their backoff (0.1 s doubling to 5 s) is
    /// over, as a round for the engine (``finishRetryRound()`` once it is committed). For an entry whose failure was its own (APNs's 429 or 5xx for that push) each round
    /// is a delivery; a failure of the worker's (an unreachable server, a locked keyring) is
    /// waited out without counting. An entry delivered more than --max-deliveries times is
    /// answered with that error (to the dead letters, with --dead-letter) and the last failure's
    /// reason; the others are kept this worker's with their new count (`XCLAIM ... RETRYCOUNT N
    /// JUSTID`, which also resets their idle time, so a worker that takes them over after this
    /// one died sees the count) and processed again. Those that now succeed or fail for good are
    /// committed; those that fail again are held again.
    func retryHeld(on connection: RedisConnection) throws(RedisConnectionLost) -> PendingCommit? {
        heldDelay = min(heldDelay * 2, RedisTiming.longestRetryDelay)
        guard !StopSignals.requested else { return nil }
        // An entry whose answer said retry-after waits for it (the others go on); it is claimed
        // again all the same, its count unchanged, so that its idle time never lets another
        // worker take it over meanwhile.
        let started = Self.now()
        let due = held.filter { $0.notBefore <= started }
        var ours = Set<[UInt8]>()
        let rounds = Dictionary(grouping: held) { $0.deliveries + ($0.roundsCount && $0.notBefore <= started ? 1 : 0) }
        for (deliveries, group) in rounds {
            let command =
                [Array("XCLAIM".utf8), input, self.group, consumer, Array("0".utf8)] + group.map(\.id)
                + [Array("RETRYCOUNT".utf8), Array(String(deliveries).utf8), Array("JUSTID".utf8)]
            let kept = try followingAsk(try connection.command(command), command)
            if let message = kept.errorMessage { try serverError(message) }
            // An entry another worker took over meanwhile, or deleted, is no longer this one's.
            for element in kept.elements { if case .string(let id) = element { ours.insert(id) } }
        }
        let entries = due.filter { ours.contains($0.id) }.map { entry in
            var entry = entry
            guard entry.roundsCount else { return entry }
            entry.deliveries += 1
            if entry.deliveries > options.maxDeliveries {
                entry.problem = CodedError(
                    .io,
                    "the entry was delivered \(entry.deliveries) times (more than --max-deliveries \(options.maxDeliveries)), "
                        + "each time failing for a reason that may go away (the last: \(entry.heldReason)): it is answered with this error "
                        + "and acknowledged, so that the group goes on")
            }
            return entry
        }
        held = held.filter { $0.notBefore > started && ours.contains($0.id) }
        if !entries.isEmpty { return PendingCommit(entries, retryRound: true) }
        finishRetryRound()
        return nil
    }

    /// Once a round of held entries is committed (or had none due): the next round scheduled,
    /// and the end of the holding noted when none is left.
    func finishRetryRound() {
        // The backoff counts from the round's end: a round (a push's own retries) may take longer.
        scheduleHeld()
        if held.isEmpty {
            let waited = heldSince.map { Self.now() - $0 } ?? 0
            note("the entries left pending were processed after \(waited / 1000) s")
            heldSince = nil
            heldDelay = RedisTiming.firstRetryDelay
        }
    }

    /// The next round of the held entries: after the backoff (an entry that waits for its
    /// `retry-after` is claimed again at each round, not processed).
    private func scheduleHeld() {
        heldRetryAt = Self.now() + heldDelay
    }

    /// Keeps `entries` (a transient failure) in hand; the first time, says so in one line.
    func hold(_ entries: [Entry], reason: String) {
        for entry in entries where !held.contains(where: { $0.id == entry.id }) { held.append(entry) }
        guard heldSince == nil else { return }
        heldSince = Self.now()
        scheduleHeld()
        warn(
            "\(held.count) entries left pending, not answered: \(reason); retrying with backoff up to "
                + "\(RedisTiming.longestRetryDelay / 1000) s, reading new entries meanwhile while fewer than --batch \(options.batch) are held"
        )
    }
}

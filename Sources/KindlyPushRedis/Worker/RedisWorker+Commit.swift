internal import KindlyPushBase
internal import KindlyPushCore

// A worker's commit: each batch's output lines gathered in entry order (``RedisCommit``), the
// commit script's arguments, its answer confirmed (`NOSCRIPT`, `ASK`, `--min-replicas`), and
// what a lost connection leaves to commit again.
extension RedisWorker {
    /// What became of one entry.
    enum Result {
        /// Its output line (`lines[range]`): a result, or an error object without --dead-letter
        /// (its code).
        case output(Range<Int>, ErrorCode?)
        /// Failed for good, with --dead-letter.
        case dead(ErrorCode, String)
        /// Failed for a reason that may go away: held, not committed; whether the failure is
        /// the entry's own (``CodedError/countsAsDelivery``), and the least wait before the
        /// next round (``CodedError/retryAfter``).
        case transient(String, countsAsDelivery: Bool, retryAfter: Int?)
    }

    /// Takes the output lines of one chunk of ``handed``'s batch (``RedisCommit``): each is its
    /// entry's answer, after those of the entries before it that were not processed; once the
    /// batch's last line is in, the batch goes to its commit (``complete(_:)``).
    func gather(_ chunk: borrowing LineEngine.Chunk) {
        guard let pending = handed else { return }
        for (range, outcome) in chunk.lines {
            gatherProblems(of: pending)
            nextEntry += 1
            linesLeft -= 1
            if outcome.isTransient {
                results.append(.transient(outcome.message, countsAsDelivery: outcome.countsAsDelivery, retryAfter: outcome.retryAfter))
                continue
            }
            let start = lines.count
            lines += chunk.bytes[range]
            answer(from: start, failure: outcome.error.map { ($0, outcome.message) })
        }
        if linesLeft == 0 { complete(pending) }
    }

    /// Answers the entries of `pending` from ``nextEntry`` on that are not processed (their
    /// problem is their answer), up to the next one that is.
    private func gatherProblems(of pending: PendingCommit) {
        let entries = pending.entries
        while nextEntry < entries.count, let problem = entries[nextEntry].problem {
            let start = lines.count
            problem.appendErrorObject(to: &lines)
            answer(from: start, failure: (problem.code, problem.message))
            nextEntry += 1
        }
    }

    /// The result of the entry whose output line ``lines`` holds from `start`: that line, or a
    /// dead letter for a failure with `--dead-letter` (the line dropped).
    private func answer(from start: Int, failure: (code: ErrorCode, message: String)?) {
        if let failure, options.deadLetter != nil {
            lines.removeSubrange(start...)
            results.append(.dead(failure.code, failure.message))
        } else {
            results.append(.output(start..<lines.count, failure?.code))
        }
    }

    /// `pending`, processed and gathered, goes to its commit: first the last commit's answer and
    /// the entries read ahead (both replies read before either is acted on: a `NOSCRIPT` answer
    /// sends commands), then its commit's arguments made and its commit sent; that answer is
    /// read with the next batch's, or before the worker does anything else
    /// (``nextBatch(into:)``). A lost connection is kept for ``nextBatch(into:)``, with the
    /// batches it leaves unconfirmed (their arguments made: nothing is processed twice).
    func complete(_ pending: PendingCommit) {
        gatherProblems(of: pending)
        handed = nil
        do throws(RedisConnectionLost) {
            guard lost == nil, let connection else { throw lost ?? RedisConnectionLost(reason: "not connected") }
            try receiveAhead(on: connection)
            pending.arguments = commitArguments(pending)
            try sendCommit(pending, on: connection)
            awaiting = pending
        } catch {
            if pending.arguments == nil { pending.arguments = commitArguments(pending) }
            lost = error
            keepUnconfirmed(pending)
        }
    }

    /// The last commit's answer and the entries read ahead, when they are awaited: both replies
    /// read before either is acted on (a `NOSCRIPT` answer sends commands). The engine has it
    /// done while a batch is processed (``RedisEntries/whileProcessing()``), so that with
    /// `--jobs N` the replies are parsed beside the threads; ``complete(_:)`` does it otherwise.
    /// A lost connection is kept for ``complete(_:)`` and ``nextBatch(into:)``.
    func receiveAhead() {
        guard lost == nil, let connection else { return }
        do throws(RedisConnectionLost) {
            try receiveAhead(on: connection)
        } catch {
            lost = error
        }
    }

    private func receiveAhead(on connection: RedisConnection) throws(RedisConnectionLost) {
        guard awaiting != nil || readingAhead else { return }
        let committed = awaiting == nil ? nil : try receiveCommit(on: connection)
        let next = readingAhead ? try readEntries(try connection.receive(), on: connection) : []
        readingAhead = false
        if let awaiting, let committed { try confirm(committed.reply, replicas: committed.replicas, of: awaiting, on: connection) }
        awaiting = nil
        if !next.isEmpty { readAhead = PendingCommit(next) }
    }

    /// After a lost connection: `pending` (processed) and the commit whose answer was awaited are
    /// committed again after reconnecting, in that order. A round of held entries is not: its
    /// entries stay pending, and are held or taken over again.
    func keepUnconfirmed(_ pending: PendingCommit? = nil) {
        let kept = [pending, awaiting].compactMap { $0 }.filter { !$0.retryRound }
        unconfirmed += kept
        if !kept.isEmpty, options.minReplicas > 0 { replicasToAwait = true }
        awaiting = nil
        readingAhead = false
    }

    /// The `EVALSHA` of the commit script for `pending`'s entries, gathered (``results``,
    /// ``lines``): group and consumer, then per entry id, kind, output line or code, message,
    /// deliveries. Entries that failed for a transient reason are held (``hold(_:reason:)``),
    /// not committed.
    private func commitArguments(_ pending: PendingCommit) -> [[UInt8]] {
        let started = pending.started ?? Self.nanoseconds()
        let entries = pending.entries
        var arguments: [[UInt8]] = [Array("EVALSHA".utf8), scriptHash, Array("3".utf8), input, output, deadLetter, group, consumer]
        arguments.reserveCapacity(8 + 5 * entries.count)
        var transient: [Entry] = []
        var reason = ""
        for (entry, result) in zip(entries, results) {
            switch result {
            case .output(let range, let code):
                arguments += [entry.id, Array("o".utf8), Array(lines[range]), [], []]
                metrics?.count(code?.rawValue ?? "result")
            case .dead(let code, let message):
                metrics?.count(code.rawValue)
                arguments += [
                    entry.id, Array("d".utf8), Array(code.rawValue.utf8), Array(message.utf8), Array(String(entry.deliveries).utf8),
                ]
            case .transient(let message, let counts, let retryAfter):
                var entry = entry
                entry.roundsCount = counts
                entry.heldReason = message
                entry.notBefore = retryAfter.map { Self.now() + $0 } ?? 0
                transient.append(entry)
                reason = message
            }
        }
        results.removeAll(keepingCapacity: true)
        if !transient.isEmpty { hold(transient, reason: reason) }
        metrics?.observe(seconds: Double(Self.nanoseconds() - started) / 1e9)
        // The lines are in the arguments now (``PendingCommit`` wipes them): none is left here.
        lines.wipeCapacity()
        return arguments
    }

    /// A batch on its way to the commit script: its entries and, once processed, the script's
    /// arguments with their output lines, kept until the server confirms the commit. A batch sent
    /// again (`NOSCRIPT`, a reconnection) is sent with the same lines: no entry is processed
    /// twice. A reference, so that the one copy of the lines is wiped, once confirmed or when the
    /// worker lets the batch go.
    final class PendingCommit {
        let entries: [Entry]
        /// A round of held entries (``RedisWorker/retryHeld(on:)``).
        let retryRound: Bool
        /// `nil` until processed; the first two are `EVALSHA` and the script's hash.
        var arguments: [[UInt8]]?
        /// When its processing started, for the metrics' batch time.
        var started: Int?

        init(_ entries: [Entry], retryRound: Bool = false) {
            self.entries = entries
            self.retryRound = retryRound
        }

        deinit { wipe() }

        /// Zeroes the output lines (and the rest after the script's keys), then lets them go.
        func wipe() {
            guard let count = arguments?.count else { return }
            // In place: a copy of the array would copy each line before zeroing it.
            for index in (0..<count).dropFirst(7) { arguments?[index].wipeCapacity() }
            arguments = nil
        }
    }

    /// The script call of `pending` (processed), with the script's current hash.
    private func arguments(of pending: PendingCommit) -> [[UInt8]] {
        precondition(pending.arguments != nil, "a batch is committed once processed")
        pending.arguments?[1] = scriptHash
        return pending.arguments ?? []
    }

    /// Commits `pending` (processed) with the script, waiting for the answer.
    func commit(_ pending: PendingCommit, on connection: RedisConnection) throws(RedisConnectionLost) {
        try sendCommit(pending, on: connection)
        let answer = try receiveCommit(on: connection)
        try confirm(answer.reply, replicas: answer.replicas, of: pending, on: connection)
    }

    /// Sends `pending`'s commit and, with `--min-replicas`, the `WAIT` for its replicas, without
    /// waiting for the answers (``receiveCommit(on:)``).
    private func sendCommit(_ pending: PendingCommit, on connection: RedisConnection) throws(RedisConnectionLost) {
        try connection.send(arguments(of: pending))
        if !waitCommand.isEmpty { try connection.send(waitCommand) }
    }

    /// The answers of ``sendCommit(_:on:)``: the script's, and the number of replicas that have
    /// it (`nil` without `--min-replicas`).
    func receiveCommit(on connection: RedisConnection) throws(RedisConnectionLost) -> (reply: RedisReply, replicas: RedisReply?) {
        let reply = try connection.receive()
        return (reply, waitCommand.isEmpty ? nil : try connection.receive())
    }

    /// The commit script's answer for `pending`, and with `--min-replicas` the `WAIT`'s.
    /// `NOSCRIPT` (the server's scripts were flushed: nothing ran) loads the scripts again and
    /// sends the same batch again; so does a commit that fewer replicas than `--min-replicas`
    /// have within `--replica-timeout` (entries it acknowledged are not written twice; the
    /// `WAIT` after it waits for this connection's writes, the first commit's among them). The
    /// lines are wiped once the script ran (and reached its replicas).
    func confirm(_ reply: RedisReply, replicas: RedisReply?, of pending: PendingCommit, on connection: RedisConnection)
        throws(RedisConnectionLost)
    {
        var (reply, replicas) = (reply, replicas)
        // What the first run of the script wrote (a run again writes nothing).
        var written: Int?
        while true {
            if let message = reply.errorMessage, message.hasPrefix("NOSCRIPT") {
                try reloadScripts(on: connection)
                try sendCommit(pending, on: connection)
                (reply, replicas) = try receiveCommit(on: connection)
                continue
            }
            if let message = reply.errorMessage, let (ask, node) = RedisTopology.redirection(message), ask {
                let replies = try asking(node, [arguments(of: pending)] + (waitCommand.isEmpty ? [] : [waitCommand]))
                (reply, replicas) = (replies[0], replies.count > 1 ? replies[1] : nil)
                continue
            }
            // Another error: the connection is given up and the batch, lines and all, sent again.
            if let message = reply.errorMessage { try serverError(message) }
            if written == nil { written = reply.integer }
            guard let waited = replicas else { break }
            if let message = waited.errorMessage { try serverError(message) }
            let count = waited.integer ?? 0
            if count >= options.minReplicas {
                if waitingForReplicas {
                    note("the commits reach \(count) replicas again")
                    waitingForReplicas = false
                }
                break
            }
            if !waitingForReplicas {
                warn(
                    "a commit reached \(count) of --min-replicas \(options.minReplicas) replicas within \(options.replicaTimeout) ms: "
                        + "committed again until they have it, nothing reported done meanwhile")
                waitingForReplicas = true
            }
            // SIGTERM while waiting: the batch is acknowledged on the primary, not known on its
            // replicas; the worker stops as with the connection lost.
            if StopSignals.requested { throw RedisConnectionLost(reason: "stopped while waiting for the replicas") }
            heartbeat()
            try sendCommit(pending, on: connection)
            (reply, replicas) = try receiveCommit(on: connection)
        }
        pending.wipe()
        // Entries another worker took over and committed first (this one stalled): not written.
        let entries = pending.entries
        let committed = entries.count - entries.filter { entry in held.contains { $0.id == entry.id } }.count
        if let written, written < committed {
            note(
                "\(committed - written) of \(committed) entries were already committed (by this worker's attempt before a lost connection, or by a worker that took them over): not written again"
            )
        }
    }
    /// After a reconnection with `--min-replicas`: waits until that many replicas have every
    /// write the server has made so far (`INFO replication`'s offsets), so that a commit whose
    /// `WAIT` answer went with the lost connection is on them before the worker goes on (sent
    /// again, such a commit writes nothing, and a `WAIT` waits for its own connection's writes only).
    func awaitReplicas(on connection: RedisConnection) throws(RedisConnectionLost) {
        let info = [Array("INFO".utf8), Array("replication".utf8)]
        func figures() throws(RedisConnectionLost) -> (offset: Int, replicas: [Int]) {
            let lines = (try connection.command(info).text ?? "").split(separator: "\r\n")
            let offset = lines.first { $0.hasPrefix("master_repl_offset:") }.flatMap { Int($0.dropFirst(19)) } ?? 0
            let replicas = lines.filter { $0.hasPrefix("slave") && $0.contains("state=online") }.compactMap { line in
                line.split(separator: ",").first { $0.hasPrefix("offset=") }.flatMap { Int($0.dropFirst(7)) }
            }
            return (offset, replicas)
        }
        let target = try figures().offset
        let started = Self.now()
        var noted = false
        while !StopSignals.requested {
            heartbeat()
            if try figures().replicas.filter({ $0 >= target }).count >= options.minReplicas {
                if noted { note("the replicas have every commit again after \(Self.now() - started) ms") }
                return
            }
            if !noted, Self.now() - started >= options.replicaTimeout {
                warn("after reconnecting: fewer than --min-replicas \(options.minReplicas) replicas have the commits yet: waiting")
                noted = true
            }
            Self.sleep(milliseconds: 20)
        }
    }
}

package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The worker's timings, in milliseconds (docs/running-at-scale.md states them; the
/// documented-figures test checks it).
package enum RedisTiming {
    /// Connecting: refused or silent servers are answered within this.
    static let connectTimeout = 3000
    /// A command's reply may take the read's block time plus this.
    static let commandMargin = 5000
    /// Reconnection backoff: the first delay, doubled up to the longest (with jitter).
    static let firstRetryDelay = 100
    static let longestRetryDelay = 5000
    /// A connection that lasted this long (milliseconds) starts the next reconnection's backoff
    /// anew; a shorter one goes on with it.
    static let settled = 10_000
    /// With nothing to read, the read is asked again after this, doubled up to the longest (a
    /// read that could block would bring entries of any size: reads go through ``RedisScripts/read``).
    static let firstIdlePoll = 5
    static let longestIdlePoll = 100
    /// A sentinel's connection and answer: one that takes longer is passed over for the next.
    static let sentinelTimeout = 1000
}

/// EX_CONFIG (sysexits.h): a worker whose keyring holds no device key refuses to start with it.
package let configExitStatus: Int32 = 78

/// One worker of a consumer group (docs/running-at-scale.md).
///
/// Its loop: take over entries pending longer than `--claim-idle` (`XAUTOCLAIM`), else read new
/// ones (`XREADGROUP ... >`, blocking up to a second), turn each entry's `doc` into the line
/// `--jsonl` prints for it (``LineEngine/appendOutputLine(for:at:processor:scratch:to:lines:)``, the
/// same code), and commit the batch with one script (``RedisScripts/commit``): per entry, `XACK` and,
/// only when that acknowledged it, `XADD` of the output. The script runs atomically, so a worker
/// killed at any point leaves its batch pending and unwritten, and a batch committed twice (by
/// a stalled worker and by the one that took it over, or after a reconnection) is written once.
///
/// This file holds the worker, its start and its loop (``LineEngine/drive(source:processing:sink:)``
/// over ``RedisEntries``, ``ThreadedLines`` and ``RedisCommit``); beside it, one file per job:
/// `+Reading` (new entries and those taken over), `+Commit` (the commit script and its answer),
/// `+Held` (entries kept after a failure that may pass), `+Connecting` (the handshake,
/// reconnection, sentinels and cluster redirections) and `+Service` (the service manager and
/// the metrics' group figures).
package final class RedisWorker<P: DocumentProcessor> {
    /// One input entry: its id, its `doc` (`nil` when it is not read: see ``problem``) and how
    /// many times it was delivered.
    struct Entry {
        var id: [UInt8]
        var document: [UInt8]?
        var deliveries: Int
        /// Why the entry is answered without its document: delivered too often, no `doc` or two,
        /// a `doc` over the limit (its size: ``oversized``).
        var problem: CodedError?
        var oversized = false
        /// Held after a failure of its own (``CodedError/countsAsDelivery``): each round of
        /// ``RedisWorker/retryHeld(on:)`` is a delivery.
        var roundsCount = false
        /// Why it was last held.
        var heldReason = ""
        /// Not processed again before this time (``RedisWorker/now()``): its answer's
        /// `retry-after`; 0 for none.
        var notBefore = 0
    }

    /// A failure that ends the worker (an `io` or `usage` error).
    struct Fatal: Error {
        let error: CodedError
    }

    let processor: P
    /// The command's name, for the start line and the metrics.
    let name: String
    /// Where the worker's notes, warnings and errors go, one line each, with its level
    /// (standard error, for the command: ``KindlyLogLevel`` is its journal priority there).
    let log: (KindlyLogLevel, String) -> Void
    let options: RedisOptions
    let consumer: [UInt8]
    let input: [UInt8]
    let output: [UInt8]
    let group: [UInt8]
    /// The dead-letter stream, else the output (the commit script's third key is then unused).
    let deadLetter: [UInt8]
    /// How long a command's reply may take beyond the margin: at most a second.
    let blockMilliseconds: Int
    var connection: RedisConnection?
    /// The server commands go to: the URL's, the primary its sentinels name, a cluster's node.
    let topology: RedisTopology
    /// The `WAIT` after each commit with `--min-replicas`; empty without.
    let waitCommand: [[UInt8]]
    /// Commits waiting for their replicas: noted once, and again once they have them.
    var waitingForReplicas = false {
        didSet { metrics?.update { [waitingForReplicas] in $0.waitingForReplicas = waitingForReplicas } }
    }
    /// The node the last `ASK` named: noted once per node.
    var askedNode: RedisOptions.Endpoint?
    var scriptHash: [UInt8] = []
    var readHash: [UInt8] = []
    /// `--jobs N`: the entries of a batch are processed on N threads (none for 1: this one), in
    /// chunks, and their lines handed to the commit (``RedisCommit``) in order; one batch in flight.
    let processing: ThreadedLines<P>
    /// The batch handed to the engine (``hand(_:into:on:)``) whose lines are being gathered for
    /// its commit (``gather(_:)``), and how many of its lines are still to come.
    var handed: PendingCommit?
    var linesLeft = 0
    /// The next of ``handed``'s entries to answer, what became of those answered, and their
    /// output lines (``Result/output(_:_:)``'s ranges are in it).
    var nextEntry = 0
    var results: [Result] = []
    var lines: [UInt8] = []
    /// The commit sent and not yet answered (the steady state: its answer is read after the next
    /// batch's processing, with the read sent ahead).
    var awaiting: PendingCommit?
    /// A read sent ahead of the batch being processed, its reply not yet received.
    var readingAhead = false
    /// The entries that read brought: the engine's next batch.
    var readAhead: PendingCommit?
    /// Batches read and not known to be committed (the connection broke): committed again after
    /// reconnecting, with the output lines they were given (``PendingCommit``); entries already
    /// acknowledged are not written twice.
    var unconfirmed: [PendingCommit] = []
    /// After commits sent again with `--min-replicas`: their replicas are waited for (``awaitReplicas(on:)``).
    var replicasToAwait = false
    /// The lost connection the commit met (``complete(_:)``): reconnected before the next batch.
    var lost: RedisConnectionLost?
    /// When the worker last had work, for `--exit-when-idle`, and the next wait when a read finds nothing.
    var idleSince = 0
    var idlePoll = RedisTiming.firstIdlePoll
    var claimCursor = Array("0-0".utf8)
    var nextClaim = 0
    /// Entries whose processing failed for a reason that may go away (a locked or unreachable
    /// keyring, APNs's 429 for a device that gets too many pushes): kept pending, in hand, and
    /// processed again after a backoff, each round counted as a delivery when the failure was
    /// the entry's own (so --max-deliveries ends it). While fewer than a batch are held the
    /// worker goes on reading new entries: one hot device does not stall the group; a failure
    /// that holds everything (the keyring, the server) fills a batch, and then the worker reads
    /// nothing new until a round succeeds.
    var held: [Entry] = []
    var heldSince: Int?
    var heldDelay = RedisTiming.firstRetryDelay
    /// When the held entries are processed again (``RedisWorker/now()``).
    var heldRetryAt = 0
    /// When the last reconnection succeeded, and the backoff it had reached (``reconnect(after:)``).
    var lastConnected = 0
    var reconnectDelay = RedisTiming.firstRetryDelay
    /// `--metrics`, and when the group's figures were last read for it (`XINFO GROUPS`).
    var metrics: RedisMetrics?
    var nextGroupFigures = 0
    /// The service manager (`Type=notify`, docs/operating.md), when one listens: told `READY=1`
    /// once Redis answers, the worker's state, and `STOPPING=1`; its watchdog fed while Redis
    /// answers (``heartbeat()``).
    let service = ServiceNotifier.process
    var serviceFailureNoted = false
    var toldStopping = false

    /// A worker that runs `processor` (the document command `name`) over the entries of the
    /// group `options` names, on `jobs` threads; `log` takes each note, warning and error line.
    package init(_ processor: P, name: String, jobs: Int, options: RedisOptions, log: @escaping (KindlyLogLevel, String) -> Void) {
        self.processor = processor
        self.name = name
        self.log = log
        self.options = options
        input = Array(options.input.utf8)
        output = Array(options.output.utf8)
        group = Array(options.group.utf8)
        deadLetter = Array((options.deadLetter ?? options.output).utf8)
        consumer = Array((options.consumer ?? Self.defaultConsumer()).utf8)
        topology = RedisTopology(options.server)
        waitCommand =
            options.minReplicas > 0
            ? [Array("WAIT".utf8), Array(String(options.minReplicas).utf8), Array(String(options.replicaTimeout).utf8)] : []
        blockMilliseconds = max(10, min(1000, options.claimIdle, options.exitWhenIdle ?? 1000))
        processing = ThreadedLines(
            LineEngine.Work(processor: processor, keepsLines: true), jobs: jobs == 1 ? 0 : jobs, batchesInFlight: 1,
            batchLines: options.batch, chunkLines: max(1, min(StreamBatching.chunkLines, (options.batch + jobs - 1) / jobs)),
            wipesEachBatch: true)
    }

    deinit {
        processing.finish()
        lines.wipeCapacity()
    }

    /// `HOST-PID`: unique among live workers, and a restarted one is a new consumer (its old
    /// pending entries are taken over after `--claim-idle`).
    static func defaultConsumer() -> String {
        var name = [UInt8](repeating: 0, count: 256)
        let host = gethostname(&name, name.count - 1) == 0 ? String(decoding: name.prefix { $0 != 0 }, as: UTF8.self) : "worker"
        return "\(host)-\(getpid())"
    }

    static func now() -> Int { MonotonicClock.milliseconds() }

    static func nanoseconds() -> Int { MonotonicClock.nanoseconds() }

    func note(_ text: String) { log(.info, "kindly-push: \(text)") }

    /// A note that needs a look (Redis lost, entries held, replicas behind): a warning.
    func warn(_ text: String) { log(.warning, "kindly-push: \(text)") }

    /// The largest reply the worker reads: a batch of documents of the limit, with room for
    /// the ids and the protocol.
    var replyLimits: RedisConnection.Limits {
        RedisConnection.Limits(bytes: options.batch * (processor.inputLimit + 1024) + (1 << 20), objects: options.batch * 8 + 1024)
    }

    /// Runs until `--exit-when-idle` or a stop request (``StopSignals/requested``: the caller
    /// installs the handler, ``StopSignals/install()``); the exit status.
    package func run() -> Int32 {
        guard let keys = checkKeyring() else { return configExitStatus }
        if let address = options.metrics {
            do throws(CodedError) {
                let made = try RedisMetrics(address, command: name, more: processor.metricsText)
                guard made.start() else { throw CodedError(.io, "--metrics: no thread to serve the metrics on") }
                metrics = made
            } catch {
                log(.error, error.reportLine)
                return error.code.exitStatus
            }
        }
        do throws(Fatal) {
            do throws(RedisConnectionLost) {
                try connect()
                lastConnected = Self.now()
            } catch {
                // Nothing answers: a clear error now rather than a worker that waits unseen. A
                // server that answers but is still loading its data is waited for.
                guard error.transient || Self.isTransient(error.reason) else { throw Fatal(error: CodedError(.io, error.reason)) }
                try reconnect(after: error)
            }
            note(startLine(keys: keys))
            guard awaitProcessorReady() else { return 0 }
            tellService("READY=1\nSTATUS=\(runningStatus)")
            service?.setHealthy(true)
            try loop()
            return 0
        } catch {
            log(.error, error.error.reportLine)
            return error.error.code.exitStatus
        }
    }

    /// What the start line says of the keys: `the file keyring (FOLDER) with 3 keys`; `nil` (and
    /// a `config` error, exit 78) when the command looks keys up and its keyring holds none, or
    /// cannot say for a reason that waiting does not mend. A locked or
    /// unreachable keyring is started with: its entries wait (``hold(_:)``).
    private func checkKeyring() -> String? {
        guard let keyring = processor.deviceKeyring else { return "no keyring (\(name) reads none)" }
        let name = KeyringInventory.description(of: keyring)
        let inventory = KeyringInventory(of: keyring)
        switch inventory {
        case .keys(0):
            log(
                .error,
                "kindly-push: config: the \(name) holds no device key: a worker would answer every entry key_unavailable; "
                    + "add the device's key (kindly-push keygen) or name the keyring that holds it (--keyring, --key-file)")
            return nil
        case .unreadable:
            log(.error, "kindly-push: config: the \(name) \(inventory.phrase)")
            return nil
        case .keys, .uncounted:
            return "the \(name) \(inventory.phrase)"
        }
    }

    /// One line at start: what the worker reads and writes, its group and consumer, its keys;
    /// never the password.
    private func startLine(keys: String) -> String {
        let letters = options.deadLetter.map { ", dead letters to '\($0)'" } ?? ""
        let connected =
            options.server.sentinel != nil || topology.current != options.server.endpoint ? " (now \(topology.currentPlace))" : ""
        return "\(name) worker: reads '\(options.input)' on \(options.server.place)\(connected) (group '\(options.group)', consumer '"
            + "\(String(decoding: consumer, as: UTF8.self))'), writes '\(options.output)'\(letters); \(keys)"
    }

    // MARK: The loop

    /// The engine's loop over the group's entries (``RedisEntries``), processed on
    /// ``processing``'s threads, each batch committed (``RedisCommit``).
    private func loop() throws(Fatal) {
        idleSince = Self.now()
        var source = RedisEntries(worker: self)
        var sink = RedisCommit(worker: self)
        if let error = LineEngine.drive(source: &source, processing: processing, sink: &sink) { throw Fatal(error: error) }
    }

    /// The engine's next batch (``RedisEntries``): the entries read ahead in the steady state;
    /// else, once the last commit is answered, the held entries due again, entries to take
    /// over or new ones, waiting while there are none. Before it, a lost connection is mended
    /// and the batches it left unconfirmed committed again. `false` (nothing pending in hand)
    /// on SIGTERM or `--exit-when-idle`; throws when the worker stops unable to reach Redis.
    func nextBatch(into batch: inout LineBatchReader.Batch) throws(Fatal) -> Bool {
        while true {
            do throws(RedisConnectionLost) {
                if let lost {
                    self.lost = nil
                    throw lost
                }
                guard let connection else { throw RedisConnectionLost(reason: "not connected") }
                heartbeat()
                while let pending = unconfirmed.first {
                    try commit(pending, on: connection)
                    unconfirmed.removeFirst()
                }
                if replicasToAwait {
                    try awaitReplicas(on: connection)
                    replicasToAwait = false
                }
                if let pending = readAhead {
                    readAhead = nil
                    if hand(pending, into: &batch, on: connection) { return true }
                    continue
                }
                if let pending = awaiting {
                    let answer = try receiveCommit(on: connection)
                    try confirm(answer.reply, replicas: answer.replicas, of: pending, on: connection)
                    awaiting = nil
                    idleSince = Self.now()
                    if pending.retryRound { finishRetryRound() }
                    continue
                }
                if StopSignals.requested {
                    tellStopping()
                    let left =
                        held.isEmpty
                        ? "nothing stays pending"
                        : "\(held.count) entries stay pending (held after a failure that may pass: another worker takes them over)"
                    note("stopping (\(StopSignals.name)): the batch in hand is committed, \(left)")
                    return false
                }
                if metrics != nil, Self.now() >= nextGroupFigures { try readGroupFigures(on: connection) }
                if !held.isEmpty, Self.now() >= heldRetryAt {
                    let round = try retryHeld(on: connection)
                    idleSince = Self.now()
                    if let round, hand(round, into: &batch, on: connection) { return true }
                    continue
                }
                if held.count >= options.batch {
                    Self.sleep(milliseconds: heldRetryAt - Self.now())
                    continue
                }
                var entries = try claim(on: connection)
                if entries.isEmpty { entries = try read(on: connection) }
                if entries.isEmpty {
                    if held.isEmpty, let limit = options.exitWhenIdle, Self.now() - idleSince >= limit, try nothingPending(on: connection) {
                        return false
                    }
                    Self.sleep(milliseconds: held.isEmpty ? idlePoll : min(idlePoll, max(0, heldRetryAt - Self.now())))
                    idlePoll = min(idlePoll * 2, RedisTiming.longestIdlePoll)
                    continue
                }
                idlePoll = RedisTiming.firstIdlePoll
                if hand(PendingCommit(entries), into: &batch, on: connection) { return true }
            } catch {
                keepUnconfirmed()
                try reconnect(after: error)
                idleSince = Self.now()
            }
        }
    }

    /// Hands `pending`'s documents to the engine as its next batch, and in the steady state
    /// sends the read of the batch after it: pipelined as hiredis allows, while the engine
    /// turns batch i into output lines (on ``processing``'s threads with `--jobs N`), the server
    /// reads batch i + 1 and runs the commit of batch i - 1 (sent after that batch). Nothing is
    /// read ahead when a take-over scan is due, when entries are held for a transient failure,
    /// for a round of held entries, or on SIGTERM. `false`: none of the entries is processed
    /// (each one's problem is its answer), and the batch went to its commit at once.
    func hand(_ pending: PendingCommit, into batch: inout LineBatchReader.Batch, on connection: RedisConnection) -> Bool {
        pending.started = Self.nanoseconds()
        handed = pending
        nextEntry = 0
        results.removeAll(keepingCapacity: true)
        lines.removeAll(keepingCapacity: true)
        batch.bytes.removeAll(keepingCapacity: true)
        batch.lines.removeAll(keepingCapacity: true)
        for entry in pending.entries where entry.problem == nil {
            if let document = entry.document, document.count <= processor.inputLimit {
                let start = batch.bytes.count
                batch.bytes += document
                batch.lines.append(.text(start..<batch.bytes.count))
            } else {
                batch.lines.append(.oversized)
            }
        }
        linesLeft = batch.lines.count
        if !pending.retryRound, !StopSignals.requested, Self.now() < nextClaim, held.isEmpty {
            do throws(RedisConnectionLost) {
                try connection.send(readCommand(claiming: false))
                readingAhead = true
            } catch {
                lost = error
            }
        }
        guard batch.lines.isEmpty else { return true }
        complete(pending)
        return false
    }
}

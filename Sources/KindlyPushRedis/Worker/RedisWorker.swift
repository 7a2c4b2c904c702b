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
    private var connection: RedisConnection?
    /// The server commands go to: the URL's, the primary its sentinels name, a cluster's node.
    private let topology: RedisTopology
    /// The `WAIT` after each commit with `--min-replicas`; empty without.
    private let waitCommand: [[UInt8]]
    /// Commits waiting for their replicas: noted once, and again once they have them.
    private var waitingForReplicas = false {
        didSet { metrics?.update { [waitingForReplicas] in $0.waitingForReplicas = waitingForReplicas } }
    }
    /// The node the last `ASK` named: noted once per node.
    private var askedNode: RedisOptions.Endpoint?
    private var scriptHash: [UInt8] = []
    private var readHash: [UInt8] = []
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
    private var claimCursor = Array("0-0".utf8)
    private var nextClaim = 0
    /// Entries whose processing failed for a reason that may go away (a locked or unreachable
    /// keyring, APNs's 429 for a device that gets too many pushes): kept pending, in hand, and
    /// processed again after a backoff, each round counted as a delivery when the failure was
    /// the entry's own (so --max-deliveries ends it). While fewer than a batch are held the
    /// worker goes on reading new entries: one hot device does not stall the group; a failure
    /// that holds everything (the keyring, the server) fills a batch, and then the worker reads
    /// nothing new until a round succeeds.
    private var held: [Entry] = []
    private var heldSince: Int?
    private var heldDelay = RedisTiming.firstRetryDelay
    /// When the held entries are processed again (``RedisWorker/now()``).
    private var heldRetryAt = 0
    /// When the last reconnection succeeded, and the backoff it had reached (``reconnect(after:)``).
    private var lastConnected = 0
    private var reconnectDelay = RedisTiming.firstRetryDelay
    /// `--metrics`, and when the group's figures were last read for it (`XINFO GROUPS`).
    private var metrics: RedisMetrics?
    private var nextGroupFigures = 0
    /// The service manager (`Type=notify`, docs/operating.md), when one listens: told `READY=1`
    /// once Redis answers, the worker's state, and `STOPPING=1`; its watchdog fed while Redis
    /// answers (``heartbeat()``).
    private let service = ServiceNotifier.process
    private var serviceFailureNoted = false
    private var toldStopping = false

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

    // MARK: The service manager

    /// What the worker does, for the service manager's `STATUS=` (`systemctl status`).
    private var runningStatus: String {
        "reading '\(options.input)' on \(topology.currentPlace) (group '\(options.group)'), writing '\(options.output)'"
    }

    /// Tells the service manager `message`, when one listens (``ServiceNotifier``). A failure
    /// is noted once and never stops the worker.
    /// Asks the processor's ``DocumentProcessor/readinessProbe`` (send: a first connection to
    /// the push service) until it answers, with backoff (0.1 s doubling to 5 s), saying so once;
    /// false when a stop came first (nothing was read: the worker exits 0).
    private func awaitProcessorReady() -> Bool {
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

    private func tellService(_ message: String) {
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
    private func tellStopping() {
        guard !toldStopping else { return }
        toldStopping = true
        tellService("STOPPING=1\nSTATUS=stopping (\(StopSignals.name)): committing the batch in hand")
    }

    /// Called where the loop passes while Redis answers (at least every few seconds: a read
    /// answers at once, a sleep lasts at most 5 s, a reply takes at most the block time plus
    /// ``RedisTiming/commandMargin``): feeds the service manager's watchdog, or says the worker
    /// is stopping. ``reconnect(after:)`` never calls it: a worker that cannot reach Redis for
    /// longer than `WatchdogSec=` is restarted by the service manager.
    private func heartbeat() {
        if StopSignals.requested { tellStopping() } else { service?.feedWatchdog() }
    }

    // MARK: Connecting

    /// Connects (to the primary the sentinels name, or the cluster node that holds the keys'
    /// slot), authenticates, selects the database, checks the role, the keys (types, cluster
    /// hash slots), creates the group when missing and loads the scripts. Server errors that a
    /// retry would not mend are ``Fatal``.
    private func connect() throws(RedisConnectionLost) {
        connection = nil
        let made: RedisConnection
        do throws(RedisConnectionLost) {
            made = try topology.connect(
                connectTimeout: RedisTiming.connectTimeout, commandTimeout: blockMilliseconds + RedisTiming.commandMargin,
                limits: replyLimits)
        } catch {
            // A node a redirection named that is gone: the URL's node is asked again next.
            topology.redirect = nil
            throw error
        }
        var first = options.server.sessionCommands
        let checks = first.count
        first.append([Array("INFO".utf8), Array("cluster".utf8)])
        let role = first.count
        if options.server.sentinel != nil { first.append([Array("ROLE".utf8)]) }
        let types = first.count
        let typeCommands = [[Array("TYPE".utf8), input], [Array("TYPE".utf8), output], [Array("TYPE".utf8), deadLetter]]
        var replies = try made.pipeline(first + typeCommands)
        // The keys' slot moving to another node (ASK): their types are read there.
        if let ask = replies[types...].lazy.compactMap({ $0.errorMessage.flatMap(RedisTopology.redirection) }).first(where: \.ask) {
            replies.replaceSubrange(types..., with: try asking(ask.node, typeCommands))
        }
        func refuse(_ index: Int) throws(RedisConnectionLost) {
            guard let message = replies[index].errorMessage else { return }
            // A server that is starting (loading its append-only file) is waited for.
            if Self.isTransient(message) { throw RedisConnectionLost(reason: message, transient: true) }
            try followRedirection(message)
            if index == 0, options.server.password != nil {
                fail(.io, "Redis refused the credentials (AUTH): \(message)")
            }
            if message.hasPrefix("NOAUTH") { fail(.io, RedisConnection.refusal(message)) }
            if index < checks { fail(.io, "Redis refused SELECT \(options.server.database): \(message)") }
            fail(.io, "Redis: \(message)")
        }
        // Credentials, database and INFO first; the hash-slot rule before anything touches the
        // keys (a cluster node answers commands on keys of other slots with errors).
        for index in 0...checks { try refuse(index) }
        if role < types {
            guard replies[role].elements.first?.text == "master" else {
                throw RedisConnectionLost(
                    reason: "the sentinels named \(topology.currentPlace), which is not a primary (ROLE): asking them again",
                    transient: true)
            }
        }
        if let info = replies[checks].text, info.contains("cluster_enabled:1") {
            let inputTag = RedisOptions.hashTag(options.input)
            if inputTag == nil || inputTag != RedisOptions.hashTag(options.output)
                || inputTag != RedisOptions.hashTag(options.deadLetter ?? options.output)
            {
                fail(
                    .usage,
                    "in a Redis Cluster the input, output and dead-letter streams must share a hash slot: give the names the same {tag}, "
                        + "as in '{pushes}:in' and '{pushes}:out' (see docs/running-at-scale.md)")
            }
            try findSlotOwner(on: made)
        }
        for index in types..<replies.count { try refuse(index) }
        for (name, reply) in zip([options.input, options.output, options.deadLetter ?? options.output], replies[types...]) {
            guard let type = reply.text, type != "stream", type != "none" else { continue }
            fail(.io, "the key '\(name)' holds a \(type), not a stream (WRONGTYPE): name another stream")
        }
        let create = [Array("XGROUP".utf8), Array("CREATE".utf8), input, group, Array("0".utf8), Array("MKSTREAM".utf8)]
        var setup = try made.pipeline([
            create, [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(RedisScripts.commit.utf8)],
            [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(RedisScripts.read.utf8)],
        ])
        setup[0] = try followingAsk(setup[0], create)
        if let message = setup[0].errorMessage, !message.hasPrefix("BUSYGROUP") {
            if Self.isTransient(message) { throw RedisConnectionLost(reason: message, transient: true) }
            try followRedirection(message)
            fail(.io, "Redis refused to create the group '\(options.group)' on '\(options.input)': \(message)")
        }
        guard case .string(let hash) = setup[1], case .string(let read) = setup[2] else {
            fail(.io, "Redis refused to load the worker's scripts: \(setup[1].errorMessage ?? setup[2].errorMessage ?? "no hash")")
        }
        scriptHash = hash
        readHash = read
        connection = made
        metrics?.update {
            $0.healthy = true
            $0.server = topology.currentPlace
        }
    }

    /// In a cluster: the slot map (`CLUSTER SHARDS`, Redis 7) read for the keys' slot; a node
    /// other than this one holds it: the connection goes there (a lost connection, followed at once).
    private func findSlotOwner(on connection: RedisConnection) throws(RedisConnectionLost) {
        let replies = try connection.pipeline([
            [Array("CLUSTER".utf8), Array("KEYSLOT".utf8), input], [Array("CLUSTER".utf8), Array("SHARDS".utf8)],
            [Array("CLUSTER".utf8), Array("MYID".utf8)],
        ])
        guard let slot = replies[0].integer, let owner = RedisTopology.owner(of: slot, in: replies[1], tls: options.server.tls != nil)
        else {
            throw RedisConnectionLost(
                reason: "the cluster's slot map names no primary for the keys' slot (\(replies[1].errorMessage ?? "CLUSTER SHARDS"))",
                transient: true)
        }
        // This node holds it (by its id: the address it announces may not be the one connected
        // to, a Unix socket or a name).
        guard owner.id != replies[2].text else { return }
        topology.redirect = owner.endpoint
        throw RedisConnectionLost(
            reason:
                "slot \(slot) of '\(options.input)' is held by \(RedisOptions.Server.hostPort(owner.endpoint)) (CLUSTER SHARDS): following it",
            transient: true)
    }

    /// A `MOVED` reply: the node it names is connected to next (a lost connection, followed at
    /// once); an `ASK` reply met where none is followed (a migration under way): waited out.
    private func followRedirection(_ message: String) throws(RedisConnectionLost) {
        guard let (ask, node) = RedisTopology.redirection(message) else { return }
        if !ask { topology.redirect = node }
        throw RedisConnectionLost(reason: "\(message): the keys' slot \(ask ? "is moving" : "moved"); following it", transient: true)
    }

    /// Loads both scripts again (the server's scripts were flushed: `NOSCRIPT`).
    private func reloadScripts(on connection: RedisConnection) throws(RedisConnectionLost) {
        let loaded = try connection.pipeline([
            [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(RedisScripts.commit.utf8)],
            [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(RedisScripts.read.utf8)],
        ])
        guard case .string(let hash) = loaded[0], case .string(let read) = loaded[1] else {
            throw RedisConnectionLost(reason: loaded[0].errorMessage ?? loaded[1].errorMessage ?? "SCRIPT LOAD failed")
        }
        scriptHash = hash
        readHash = read
    }

    /// An error reply that a server gives while it starts or fails over: waited out.
    static func isTransient(_ message: String) -> Bool {
        ["LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"].contains { message.hasPrefix($0) }
    }

    /// A failure no retry mends, found while connecting: reported, and the worker exits.
    private func fail(_ code: ErrorCode, _ message: String) -> Never {
        log(.error, CodedError(code, message).reportLine)
        exit(code.exitStatus)
    }

    /// Reconnects with backoff (0.1 s doubling to 5 s, with jitter) until it works or SIGTERM.
    private func reconnect(after lost: RedisConnectionLost) throws(Fatal) {
        connection = nil
        metrics?.update { $0.healthy = false }
        service?.setHealthy(false)
        // A redirection to another cluster node is the cluster's routine; a lost server is not.
        if topology.redirect == nil {
            warn("lost Redis (\(lost.reason)); reconnecting")
            tellService("STATUS=lost Redis (\(lost.reason)); reconnecting")
        } else {
            note(lost.reason)
            tellService("STATUS=\(lost.reason)")
        }
        // The backoff goes on from the last reconnection unless that connection lasted
        // (RedisTiming.settled): a server that breaks each connection right after the handshake
        // is not asked ten times a second.
        var delay = Self.now() - lastConnected >= RedisTiming.settled ? RedisTiming.firstRetryDelay : reconnectDelay
        let was = topology.currentPlace
        var redirections = 0
        while !StopSignals.requested {
            // A redirection to another cluster node is followed at once (a few times in a row at most).
            if topology.redirect != nil, redirections < 3 {
                redirections += 1
            } else {
                Self.sleep(milliseconds: delay / 2 + Int.random(in: 0...(delay / 2)))
                delay = min(delay * 2, RedisTiming.longestRetryDelay)
                reconnectDelay = delay
            }
            do throws(RedisConnectionLost) {
                try connect()
                lastConnected = Self.now()
                let now = topology.currentPlace
                note(now == was ? "reconnected to Redis (\(now))" : "reconnected to Redis at another server: \(now) (was \(was))")
                service?.setHealthy(true)
                tellService("STATUS=\(runningStatus)")
                return
            } catch {}
        }
        tellStopping()
        throw Fatal(error: CodedError(.io, "stopped while Redis was unreachable: the batch in hand stays pending for another worker"))
    }

    /// Sleeps, waking every 50 ms to see SIGTERM.
    static func sleep(milliseconds: Int) {
        var left = milliseconds
        while left > 0, !StopSignals.requested {
            let step = min(left, 50)
            usleep(UInt32(step * 1000))
            left -= step
        }
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

    /// After a reconnection with `--min-replicas`: waits until that many replicas have every
    /// write the server has made so far (`INFO replication`'s offsets), so that a commit whose
    /// `WAIT` answer went with the lost connection is on them before the worker goes on (sent
    /// again, such a commit writes nothing, and a `WAIT` waits for its own connection's writes only).
    private func awaitReplicas(on connection: RedisConnection) throws(RedisConnectionLost) {
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

    /// The group's pending and lag figures, for `--metrics`, at most every second: `XINFO GROUPS`
    /// run on the server by ``RedisScripts/groupFigures``, which answers this group's two numbers only,
    /// so that a stream with hundreds of groups gives a reply of two numbers, not one over the
    /// reply bound (a reconnection every second, for ever).
    private func readGroupFigures(on connection: RedisConnection) throws(RedisConnectionLost) {
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

    /// The entries held for a transient failure, once their backoff (0.1 s doubling to 5 s) is
    /// over, as a round for the engine (``finishRetryRound()`` once it is committed). For an entry whose failure was its own (APNs's 429 or 5xx for that push) each round
    /// is a delivery; a failure of the worker's (an unreachable server, a locked keyring) is
    /// waited out without counting. An entry delivered more than --max-deliveries times is
    /// answered with that error (to the dead letters, with --dead-letter) and the last failure's
    /// reason; the others are kept this worker's with their new count (`XCLAIM ... RETRYCOUNT N
    /// JUSTID`, which also resets their idle time, so a worker that takes them over after this
    /// one died sees the count) and processed again. Those that now succeed or fail for good are
    /// committed; those that fail again are held again.
    private func retryHeld(on connection: RedisConnection) throws(RedisConnectionLost) -> PendingCommit? {
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
    private func hold(_ entries: [Entry], reason: String) {
        for entry in entries where !held.contains(where: { $0.id == entry.id }) { held.append(entry) }
        guard heldSince == nil else { return }
        heldSince = Self.now()
        scheduleHeld()
        warn(
            "\(held.count) entries left pending, not answered: \(reason); retrying with backoff up to "
                + "\(RedisTiming.longestRetryDelay / 1000) s, reading new entries meanwhile while fewer than --batch \(options.batch) are held"
        )
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

    /// Entries of any consumer pending longer than `--claim-idle`, taken over by the read script
    /// (`XAUTOCLAIM`) with their delivery counts; at most every half `--claim-idle` once a scan
    /// of the pending list found none.
    private func claim(on connection: RedisConnection) throws(RedisConnectionLost) -> [Entry] {
        guard Self.now() >= nextClaim else { return [] }
        let reply = try followingAsk(try connection.command(readCommand(claiming: true)), readCommand(claiming: true))
        if let message = reply.errorMessage {
            if message.hasPrefix("NOSCRIPT") {
                try reloadScripts(on: connection)
                return []
            }
            if message.hasPrefix("NOGROUP") { throw RedisConnectionLost(reason: message) }
            try serverError(message)
        }
        let parts = reply.elements
        guard parts.count >= 2, case .string(let cursor) = parts[0] else { return [] }
        claimCursor = cursor
        // This worker's own held entries look idle between rounds: they are not taken twice.
        let entries = entries(parts[1].elements).filter { entry in !held.contains { $0.id == entry.id } }
        if entries.isEmpty, cursor == Array("0-0".utf8) { nextClaim = Self.now() + max(50, min(options.claimIdle / 2, 5000)) }
        return entries
    }

    /// New entries for this consumer, through the read script, answered at once.
    private func read(on connection: RedisConnection) throws(RedisConnectionLost) -> [Entry] {
        try readEntries(try connection.command(readCommand(claiming: false)), on: connection)
    }

    /// `reply`, or for an `ASK` redirection (the keys' slot is moving to another node, and the
    /// key is there already) the reply of the node it names to `commands` (``asking(_:_:)``).
    private func followingAsk(_ reply: RedisReply, _ command: [[UInt8]]) throws(RedisConnectionLost) -> RedisReply {
        guard let message = reply.errorMessage, let (ask, node) = RedisTopology.redirection(message), ask else { return reply }
        return try asking(node, [command])[0]
    }

    /// Runs `commands` on the node an `ASK` redirection named, once, each after `ASKING`, on a
    /// connection of its own that authenticates and loads the scripts first (the same text: the
    /// same hashes). The slot's migration ends with a `MOVED`, which the worker follows for good.
    private func asking(_ node: RedisOptions.Endpoint, _ commands: [[[UInt8]]]) throws(RedisConnectionLost) -> [RedisReply] {
        if askedNode != node {
            askedNode = node
            note("the keys' slot is moving to \(RedisOptions.Server.hostPort(node)) (ASK): each command the node answers so goes there")
        }
        let connection = try RedisConnection(
            node, tls: options.server.tls, connectTimeout: RedisTiming.connectTimeout,
            commandTimeout: blockMilliseconds + RedisTiming.commandMargin, limits: replyLimits)
        let session =
            options.server.sessionCommands + [
                [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(RedisScripts.commit.utf8)],
                [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(RedisScripts.read.utf8)],
            ]
        let replies = try connection.pipeline(session + commands.flatMap { [[Array("ASKING".utf8)], $0] })
        if let refusal = replies.prefix(session.count).lazy.compactMap(\.errorMessage).first {
            throw RedisConnectionLost(reason: "the node \(RedisOptions.Server.hostPort(node)) an ASK redirection named: \(refusal)")
        }
        return stride(from: session.count + 1, to: replies.count, by: 2).map { replies[$0] }
    }

    /// The read script for at most `--batch` new entries, or for idle ones to take over.
    private func readCommand(claiming: Bool) -> [[UInt8]] {
        [
            Array("EVALSHA".utf8), readHash, Array("1".utf8), input, group, consumer, Array(String(options.batch).utf8),
            Array(String(processor.inputLimit).utf8), Array(String(options.maxDeliveries).utf8),
            claiming ? Array(String(options.claimIdle).utf8) : [], claiming ? claimCursor : [],
        ]
    }

    /// The entries of the read script's answer for new entries.
    private func readEntries(_ reply: RedisReply, on connection: RedisConnection) throws(RedisConnectionLost) -> [Entry] {
        let reply = try followingAsk(reply, readCommand(claiming: false))
        if let message = reply.errorMessage {
            // The scripts were flushed: nothing ran; loaded again, read next time.
            if message.hasPrefix("NOSCRIPT") {
                try reloadScripts(on: connection)
                return []
            }
            // The group or the stream went away (a server restarted without persistence, a key
            // deleted): made again.
            if message.contains("NOGROUP") { throw RedisConnectionLost(reason: message) }
            try serverError(message)
        }
        let parts = reply.elements
        guard parts.count >= 2 else { return [] }
        return entries(parts[1].elements)
    }

    /// Whether the group has nothing pending (for `--exit-when-idle`).
    private func nothingPending(on connection: RedisConnection) throws(RedisConnectionLost) -> Bool {
        let command = [Array("XPENDING".utf8), input, group]
        let reply = try followingAsk(try connection.command(command), command)
        if let message = reply.errorMessage { try serverError(message) }
        guard case .integer(let count) = reply.elements.first else { return false }
        if count > 0 { nextClaim = 0 }
        return count == 0
    }

    /// An error reply where none is expected: WRONGTYPE (a key replaced under the worker) ends
    /// it; anything else (OOM, LOADING, a busy script) is waited out as a lost connection.
    private func serverError(_ message: String) throws(RedisConnectionLost) {
        if message.contains("WRONGTYPE") {
            fail(.io, "a key of the worker holds another type than a stream (\(message))")
        }
        if message.hasPrefix("NOPERM") || message.hasPrefix("NOAUTH") { fail(.io, "Redis refused a command: \(message)") }
        // A cluster's slot moved (followed at once), a primary turned replica (the sentinels asked again).
        try followRedirection(message)
        throw RedisConnectionLost(reason: message)
    }

    /// The entries of the read script's answer: `[[id, deliveries, doc fields, doc], ...]`.
    func entries(_ items: [RedisReply]) -> [Entry] {
        var entries: [Entry] = []
        entries.reserveCapacity(items.count)
        for item in items {
            let parts = item.elements
            guard parts.count >= 4, case .string(let id) = parts[0], case .integer(let deliveries) = parts[1],
                case .integer(let documents) = parts[2]
            else { continue }
            var entry = Entry(id: id, document: nil, deliveries: deliveries)
            if deliveries > options.maxDeliveries {
                entry.problem = CodedError(
                    .badInput,
                    "the entry was delivered \(deliveries) times (more than --max-deliveries \(options.maxDeliveries)): "
                        + "it is answered with this error and acknowledged, so that the group goes on")
            } else if documents < 1 {
                entry.problem = CodedError(.badInput, "the entry has no \"doc\" field (one JSON document)")
            } else if documents > 1 {
                entry.problem = CodedError(
                    .badInput, "the entry has \(documents) \"doc\" fields: it must have exactly one (readers disagree on which counts)")
            } else if case .string(let document) = parts[3] {
                entry.document = document
            } else {
                entry.oversized = true
            }
            entries.append(entry)
        }
        return entries
    }

    // MARK: Processing and committing

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
            JSONWriter.write(problem.jsonObject, to: &lines)
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

    /// `pending`, processed and gathered: its commit's arguments made, then (both replies read
    /// before either is acted on: a `NOSCRIPT` answer sends commands) the last commit's answer
    /// and the entries read ahead, and its commit sent; its answer is read with the next
    /// batch's, or before the worker does anything else (``nextBatch(into:)``). A lost
    /// connection is kept for ``nextBatch(into:)``, with the batches it leaves unconfirmed.
    func complete(_ pending: PendingCommit) {
        gatherProblems(of: pending)
        handed = nil
        do throws(RedisConnectionLost) {
            guard lost == nil, let connection else { throw lost ?? RedisConnectionLost(reason: "not connected") }
            let committed = awaiting == nil ? nil : try receiveCommit(on: connection)
            let next = readingAhead ? try readEntries(try connection.receive(), on: connection) : []
            readingAhead = false
            if let awaiting, let committed { try confirm(committed.reply, replicas: committed.replicas, of: awaiting, on: connection) }
            awaiting = nil
            if !next.isEmpty { readAhead = PendingCommit(next) }
            pending.arguments = commitArguments(pending)
            try sendCommit(pending, on: connection)
            awaiting = pending
        } catch {
            // Its lines are kept for the commit after reconnecting: nothing is processed twice.
            if pending.arguments == nil { pending.arguments = commitArguments(pending) }
            lost = error
            keepUnconfirmed(pending)
        }
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
    private func commit(_ pending: PendingCommit, on connection: RedisConnection) throws(RedisConnectionLost) {
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
    private func receiveCommit(on connection: RedisConnection) throws(RedisConnectionLost) -> (reply: RedisReply, replicas: RedisReply?) {
        let reply = try connection.receive()
        return (reply, waitCommand.isEmpty ? nil : try connection.receive())
    }

    /// The commit script's answer for `pending`, and with `--min-replicas` the `WAIT`'s.
    /// `NOSCRIPT` (the server's scripts were flushed: nothing ran) loads the scripts again and
    /// sends the same batch again; so does a commit that fewer replicas than `--min-replicas`
    /// have within `--replica-timeout` (entries it acknowledged are not written twice; the
    /// `WAIT` after it waits for this connection's writes, the first commit's among them). The
    /// lines are wiped once the script ran (and reached its replicas).
    private func confirm(_ reply: RedisReply, replicas: RedisReply?, of pending: PendingCommit, on connection: RedisConnection)
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
}

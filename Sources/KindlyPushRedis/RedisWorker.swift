internal import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The services of `kindly-push-redis`: a document command as a Redis Streams worker.
package struct RedisWorkerServices: RedisServices {
    /// The services; `kindly-push-redis` installs them at start.
    package init() {}

    package func runWorker<C: DocumentCommand>(_ command: C, options: RedisOptions) -> Int32 {
        RedisWorker(command, options: options).run()
    }
}

/// The worker's timings, in milliseconds (docs/running-at-scale.md states them; the
/// documented-figures test checks it).
enum RedisTiming {
    /// Connecting: refused or silent servers are answered within this.
    static let connectTimeout = 3000
    /// A command's reply may take the read's block time plus this.
    static let commandMargin = 5000
    /// Reconnection backoff: the first delay, doubled up to the longest (with jitter).
    static let firstRetryDelay = 100
    static let longestRetryDelay = 5000
}

/// SIGTERM or SIGINT arrived: finish the batch in hand, commit it, exit 0. Written only by the
/// handler, read by the worker's loop.
nonisolated(unsafe) private var stopRequested: sig_atomic_t = 0

/// One worker of a consumer group (issue 23, docs/running-at-scale.md).
///
/// Its loop: take over entries pending longer than `--claim-idle` (`XAUTOCLAIM`), else read new
/// ones (`XREADGROUP ... >`, blocking up to a second), turn each entry's `doc` into the line
/// `--jsonl` prints for it (``DocumentRunner/appendOutputLine(for:at:command:scratch:to:)``, the
/// same code), and commit the batch with one script (``commitScript``): per entry, `XACK` and,
/// only when that acknowledged it, `XADD` of the output. The script runs atomically, so a worker
/// killed at any point leaves its batch pending and unwritten, and a batch committed twice (by
/// a stalled worker and by the one that took it over, or after a reconnection) is written once.
final class RedisWorker<C: DocumentCommand> {
    /// Per entry: `XACK` it, and `XADD` its output only when the `XACK` acknowledged it (1).
    /// KEYS: input, output; ARGV: group, then id and output line of each entry.
    static var commitScript: String {
        """
        local written = 0
        for i = 2, #ARGV, 2 do
          if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
            redis.call('XADD', KEYS[2], '*', 'doc', ARGV[i + 1], 'in', ARGV[i])
            written = written + 1
          end
        end
        return written
        """
    }

    /// One input entry: its id, its `doc` (`nil` when it has none or was deleted) and how many
    /// times it was delivered.
    struct Entry {
        var id: [UInt8]
        var document: [UInt8]?
        var deliveries: Int
    }

    /// A failure that ends the worker (an `io` or `usage` error).
    struct Fatal: Error {
        let error: CLIError
    }

    let command: C
    let options: RedisOptions
    let consumer: [UInt8]
    let input: [UInt8]
    let output: [UInt8]
    let group: [UInt8]
    /// How long `XREADGROUP` blocks: at most a second, so that SIGTERM is seen within a second.
    let blockMilliseconds: Int
    private var connection: RedisConnection?
    private var scriptHash: [UInt8] = []
    private var scratch: C.Scratch
    private var batch = LineBatchReader.Batch()
    private var lines: [UInt8] = []
    private var claimCursor = Array("0-0".utf8)
    private var nextClaim = 0

    init(_ command: C, options: RedisOptions) {
        self.command = command
        self.options = options
        input = Array(options.input.utf8)
        output = Array(options.output.utf8)
        group = Array(options.group.utf8)
        consumer = Array((options.consumer ?? Self.defaultConsumer()).utf8)
        blockMilliseconds = max(10, min(1000, options.claimIdle, options.exitWhenIdle ?? 1000))
        scratch = command.makeScratch()
    }

    deinit {
        command.wipe(&scratch)
        batch.bytes.wipeCapacity()
        lines.wipeCapacity()
    }

    /// `HOST-PID`: unique among live workers, and a restarted one is a new consumer (its old
    /// pending entries are taken over after `--claim-idle`).
    static func defaultConsumer() -> String {
        var name = [UInt8](repeating: 0, count: 256)
        let host = gethostname(&name, name.count - 1) == 0 ? String(decoding: name.prefix { $0 != 0 }, as: UTF8.self) : "worker"
        return "\(host)-\(getpid())"
    }

    static func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1000 + time.tv_nsec / 1_000_000
    }

    static func note(_ text: String) { Diagnostics.line("kindly-push: \(text)") }

    func run() -> Int32 {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in stopRequested = 1 }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGTERM, &action, nil)
        sigaction(SIGINT, &action, nil)
        do throws(Fatal) {
            do throws(RedisConnectionLost) {
                try connect()
            } catch {
                // Nothing answers: a clear error now rather than a worker that waits unseen. A
                // server that answers but is still loading its data is waited for.
                guard Self.isTransient(error.reason) else { throw Fatal(error: CLIError(.io, error.reason)) }
                try reconnect(after: error)
            }
            try loop()
            return 0
        } catch {
            Diagnostics.report(error.error)
            return error.error.code.exitStatus
        }
    }

    // MARK: Connecting

    /// Connects, authenticates, selects the database, checks the keys (types, cluster hash
    /// slots), creates the group when missing and loads the script. Server errors that a retry
    /// would not mend are ``Fatal``.
    private func connect() throws(RedisConnectionLost) {
        connection = nil
        let made = try RedisConnection(
            options.endpoint, connectTimeout: RedisTiming.connectTimeout, commandTimeout: blockMilliseconds + RedisTiming.commandMargin)
        var first: [[[UInt8]]] = []
        if let password = options.password {
            first.append(["AUTH"].map { Array($0.utf8) } + (options.user.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)])
        }
        if options.database != 0 { first.append([Array("SELECT".utf8), Array(String(options.database).utf8)]) }
        let checks = first.count
        first += [
            [Array("INFO".utf8), Array("cluster".utf8)], [Array("TYPE".utf8), input], [Array("TYPE".utf8), output],
        ]
        let replies = try made.pipeline(first)
        func refuse(_ index: Int) throws(RedisConnectionLost) {
            guard let message = replies[index].errorMessage else { return }
            // A server that is starting (loading its append-only file) is waited for.
            if Self.isTransient(message) { throw RedisConnectionLost(reason: message) }
            if index == 0, options.password != nil {
                fail(.io, "Redis refused the credentials (AUTH): \(message)")
            }
            if message.hasPrefix("NOAUTH") {
                fail(.io, "Redis asks for a password (\(message)): give it in the URL or in KINDLY_PUSH_REDIS_PASSWORD")
            }
            if index < checks { fail(.io, "Redis refused SELECT \(options.database): \(message)") }
            fail(.io, "Redis: \(message)")
        }
        // Credentials, database and INFO first; the hash-slot rule before anything touches the
        // keys (a cluster node answers commands on keys of other slots with errors).
        for index in 0...checks { try refuse(index) }
        if let info = replies[checks].text, info.contains("cluster_enabled:1") {
            let inputTag = RedisOptions.hashTag(options.input)
            if inputTag == nil || inputTag != RedisOptions.hashTag(options.output) {
                fail(
                    .usage,
                    "in a Redis Cluster the input and output streams must share a hash slot: give both names the same {tag}, "
                        + "as in '{pushes}:in' and '{pushes}:out' (see docs/running-at-scale.md)")
            }
        }
        for index in (checks + 1)..<replies.count { try refuse(index) }
        for (name, reply) in [(options.input, replies[checks + 1]), (options.output, replies[checks + 2])] {
            guard let type = reply.text, type != "stream", type != "none" else { continue }
            fail(.io, "the key '\(name)' holds a \(type), not a stream (WRONGTYPE): name another stream")
        }
        let setup = try made.pipeline([
            [Array("XGROUP".utf8), Array("CREATE".utf8), input, group, Array("0".utf8), Array("MKSTREAM".utf8)],
            [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(Self.commitScript.utf8)],
        ])
        if let message = setup[0].errorMessage, !message.hasPrefix("BUSYGROUP") {
            fail(.io, "Redis refused to create the group '\(options.group)' on '\(options.input)': \(message)")
        }
        guard case .string(let hash) = setup[1] else {
            fail(.io, "Redis refused to load the commit script: \(setup[1].errorMessage ?? "no hash")")
        }
        scriptHash = hash
        connection = made
    }

    /// An error reply that a server gives while it starts or fails over: waited out.
    static func isTransient(_ message: String) -> Bool {
        ["LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"].contains { message.hasPrefix($0) }
    }

    /// A failure no retry mends, found while connecting: reported, and the worker exits.
    private func fail(_ code: ErrorCode, _ message: String) -> Never {
        Diagnostics.report(CLIError(code, message))
        exit(code.exitStatus)
    }

    /// Reconnects with backoff (0.1 s doubling to 5 s, with jitter) until it works or SIGTERM.
    private func reconnect(after lost: RedisConnectionLost) throws(Fatal) {
        connection = nil
        Self.note("lost Redis (\(lost.reason)); reconnecting")
        var delay = RedisTiming.firstRetryDelay
        while stopRequested == 0 {
            Self.sleep(milliseconds: delay / 2 + Int.random(in: 0...(delay / 2)))
            do throws(RedisConnectionLost) {
                try connect()
                Self.note("reconnected to Redis")
                return
            } catch {
                delay = min(delay * 2, RedisTiming.longestRetryDelay)
            }
        }
        throw Fatal(error: CLIError(.io, "stopped while Redis was unreachable: the batch in hand stays pending for another worker"))
    }

    /// Sleeps, waking every 50 ms to see SIGTERM.
    static func sleep(milliseconds: Int) {
        var left = milliseconds
        while left > 0, stopRequested == 0 {
            let step = min(left, 50)
            usleep(UInt32(step * 1000))
            left -= step
        }
    }

    // MARK: The loop

    private func loop() throws(Fatal) {
        var idleSince = Self.now()
        // Batches read and not known to be committed (the connection broke): committed again
        // after reconnecting; entries already acknowledged are not written twice.
        var unconfirmed: [[Entry]] = []
        while true {
            do throws(RedisConnectionLost) {
                guard let connection else { throw RedisConnectionLost(reason: "not connected") }
                for entries in unconfirmed { try commit(entries, on: connection) }
                unconfirmed = []
                if stopRequested != 0 { return }
                var entries = try claim(on: connection)
                if entries.isEmpty { entries = try read(on: connection) }
                if entries.isEmpty {
                    if let limit = options.exitWhenIdle, Self.now() - idleSince >= limit, try nothingPending(on: connection) { return }
                    continue
                }
                try stream(from: entries, on: connection, unconfirmed: &unconfirmed)
                idleSince = Self.now()
            } catch {
                try reconnect(after: error)
                idleSince = Self.now()
            }
        }
    }

    /// The steady state, pipelined as hiredis allows: while the worker turns batch i into
    /// output lines, the server reads batch i + 1 (`XREADGROUP` without `BLOCK`, sent before)
    /// and runs the commit of batch i - 1 (sent after the previous batch). Returns when a read
    /// finds nothing new, when a take-over scan is due, or on SIGTERM, with every batch committed.
    private func stream(from first: [Entry], on connection: RedisConnection, unconfirmed: inout [[Entry]]) throws(RedisConnectionLost) {
        var current = first
        var committing: [Entry]?
        while true {
            unconfirmed = [current] + (committing.map { [$0] } ?? [])
            let prefetches = stopRequested == 0 && Self.now() < nextClaim
            if prefetches { try connection.send(readCommand(blocking: false)) }
            var arguments = commitArguments(current)
            // Both replies are read before either is acted on: a NOSCRIPT answer sends commands.
            let committed = committing == nil ? nil : try connection.receive()
            let next = prefetches ? try readEntries(try connection.receive()) : []
            if let committing, let committed { try checkCommit(committed, of: committing, on: connection) }
            committing = nil
            unconfirmed = [current] + (next.isEmpty ? [] : [next])
            arguments[1] = scriptHash
            try connection.send(arguments)
            for index in arguments.indices.dropFirst(6) { arguments[index].wipeCapacity() }
            guard !next.isEmpty else {
                try checkCommit(try connection.receive(), of: current, on: connection)
                unconfirmed = []
                return
            }
            committing = current
            current = next
        }
    }

    /// Entries of any consumer pending longer than `--claim-idle`, taken over with
    /// `XAUTOCLAIM`, with their delivery counts; at most every half `--claim-idle` once a scan
    /// of the pending list found none.
    private func claim(on connection: RedisConnection) throws(RedisConnectionLost) -> [Entry] {
        guard Self.now() >= nextClaim else { return [] }
        let reply = try connection.command([
            Array("XAUTOCLAIM".utf8), input, group, consumer, Array(String(options.claimIdle).utf8), claimCursor,
            Array("COUNT".utf8), Array(String(options.batch).utf8),
        ])
        if let message = reply.errorMessage { try serverError(message) }
        let parts = reply.elements
        guard parts.count >= 2, case .string(let cursor) = parts[0] else { return [] }
        claimCursor = cursor
        var entries = Self.entries(parts[1].elements)
        if entries.isEmpty {
            if cursor == Array("0-0".utf8) { nextClaim = Self.now() + max(50, min(options.claimIdle / 2, 5000)) }
            return []
        }
        // The delivery counts, from the pending list (the claimed ids are in order).
        let pending = try connection.command([
            Array("XPENDING".utf8), input, group, entries[0].id, entries[entries.count - 1].id,
            Array(String(entries.count).utf8), consumer,
        ])
        var counts: [[UInt8]: Int] = [:]
        for item in pending.elements {
            let fields = item.elements
            if fields.count >= 4, case .string(let id) = fields[0], case .integer(let count) = fields[3] { counts[id] = count }
        }
        for index in entries.indices { entries[index].deliveries = counts[entries[index].id] ?? 1 }
        return entries
    }

    /// New entries for this consumer (`XREADGROUP ... >`), waiting up to ``blockMilliseconds``.
    private func read(on connection: RedisConnection) throws(RedisConnectionLost) -> [Entry] {
        try readEntries(try connection.command(readCommand(blocking: true)))
    }

    /// `XREADGROUP` of at most `--batch` new entries, waiting up to ``blockMilliseconds`` for
    /// one when `blocking`, else answered at once.
    private func readCommand(blocking: Bool) -> [[UInt8]] {
        [Array("XREADGROUP".utf8), Array("GROUP".utf8), group, consumer, Array("COUNT".utf8), Array(String(options.batch).utf8)]
            + (blocking ? [Array("BLOCK".utf8), Array(String(blockMilliseconds).utf8)] : [])
            + [Array("STREAMS".utf8), input, Array(">".utf8)]
    }

    /// The entries of an `XREADGROUP` reply.
    private func readEntries(_ reply: RedisReply) throws(RedisConnectionLost) -> [Entry] {
        if let message = reply.errorMessage {
            // The group or the stream went away (a server restarted without persistence, a key
            // deleted): made again.
            if message.hasPrefix("NOGROUP") { throw RedisConnectionLost(reason: message) }
            try serverError(message)
        }
        guard let stream = reply.elements.first, stream.elements.count >= 2 else { return [] }
        return Self.entries(stream.elements[1].elements)
    }

    /// Whether the group has nothing pending (for `--exit-when-idle`).
    private func nothingPending(on connection: RedisConnection) throws(RedisConnectionLost) -> Bool {
        let reply = try connection.command([Array("XPENDING".utf8), input, group])
        guard case .integer(let count) = reply.elements.first else { return false }
        if count > 0 { nextClaim = 0 }
        return count == 0
    }

    /// An error reply where none is expected: WRONGTYPE (a key replaced under the worker) ends
    /// it; anything else (OOM, LOADING, a busy script) is waited out as a lost connection.
    private func serverError(_ message: String) throws(RedisConnectionLost) {
        if message.hasPrefix("WRONGTYPE") {
            fail(.io, "a key of the worker holds another type than a stream (\(message))")
        }
        if message.hasPrefix("NOPERM") || message.hasPrefix("NOAUTH") { fail(.io, "Redis refused a command: \(message)") }
        throw RedisConnectionLost(reason: message)
    }

    /// The entries of a reply: `[[id, [field, value, ...]], ...]`; a deleted entry (null fields)
    /// has no document.
    static func entries(_ items: [RedisReply]) -> [Entry] {
        var entries: [Entry] = []
        entries.reserveCapacity(items.count)
        for item in items {
            let parts = item.elements
            guard parts.count >= 1, case .string(let id) = parts[0] else { continue }
            var document: [UInt8]?
            let fields = parts.count >= 2 ? parts[1].elements : []
            var index = 0
            while index + 1 < fields.count {
                if case .string(let name) = fields[index], name == Array("doc".utf8), case .string(let value) = fields[index + 1] {
                    document = value
                    break
                }
                index += 2
            }
            entries.append(Entry(id: id, document: document, deliveries: 1))
        }
        return entries
    }

    // MARK: Processing and committing

    /// The output lines of `entries`, each as `--jsonl` prints it (without its newline).
    private func process(_ entries: [Entry]) -> [Range<Int>] {
        batch.bytes.removeAll(keepingCapacity: true)
        batch.lines.removeAll(keepingCapacity: true)
        lines.removeAll(keepingCapacity: true)
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(entries.count)
        for entry in entries {
            let start = lines.count
            if entry.deliveries > options.maxDeliveries {
                let error = CLIError(
                    .badInput,
                    "the entry was delivered \(entry.deliveries) times (more than --max-deliveries \(options.maxDeliveries)): "
                        + "it is answered with this error and acknowledged, so that the group goes on")
                JSONWriter.write(error.jsonObject, to: &lines)
            } else if let document = entry.document {
                batch.bytes.removeAll(keepingCapacity: true)
                batch.lines.removeAll(keepingCapacity: true)
                if document.count > command.inputLimit {
                    batch.lines.append(.oversized)
                } else {
                    batch.bytes += document
                    batch.lines.append(.text(0..<document.count))
                }
                DocumentRunner.appendOutputLine(for: batch, at: 0, command: command, scratch: &scratch, to: &lines)
                lines.removeLast()
            } else {
                JSONWriter.write(CLIError(.badInput, "the entry has no \"doc\" field (one JSON document)").jsonObject, to: &lines)
            }
            ranges.append(start..<lines.count)
        }
        batch.bytes.wipeCapacity()
        return ranges
    }

    /// The `EVALSHA` of the commit script for `entries`, processed: group, then id and output
    /// line of each entry.
    private func commitArguments(_ entries: [Entry]) -> [[UInt8]] {
        let ranges = process(entries)
        var arguments: [[UInt8]] = [Array("EVALSHA".utf8), scriptHash, Array("2".utf8), input, output, group]
        arguments.reserveCapacity(6 + 2 * entries.count)
        for (entry, range) in zip(entries, ranges) {
            arguments.append(entry.id)
            arguments.append(Array(lines[range]))
        }
        return arguments
    }

    /// Processes `entries` and commits them with the script, waiting for the answer.
    private func commit(_ entries: [Entry], on connection: RedisConnection) throws(RedisConnectionLost) {
        var arguments = commitArguments(entries)
        let reply = try connection.command(arguments)
        for index in arguments.indices.dropFirst(6) { arguments[index].wipeCapacity() }
        try checkCommit(reply, of: entries, on: connection)
    }

    /// The commit script's answer for `entries`. `NOSCRIPT` (the server's scripts were flushed:
    /// nothing ran) loads the script again and commits the batch again.
    private func checkCommit(_ reply: RedisReply, of entries: [Entry], on connection: RedisConnection) throws(RedisConnectionLost) {
        if let message = reply.errorMessage, message.hasPrefix("NOSCRIPT") {
            let loaded = try connection.command([Array("SCRIPT".utf8), Array("LOAD".utf8), Array(Self.commitScript.utf8)])
            guard case .string(let hash) = loaded else { throw RedisConnectionLost(reason: loaded.errorMessage ?? "SCRIPT LOAD failed") }
            scriptHash = hash
            try commit(entries, on: connection)
            return
        }
        if let message = reply.errorMessage { try serverError(message) }
        // Entries another worker took over and committed first (this one stalled): not written.
        if case .integer(let written) = reply, written < entries.count {
            Self.note(
                "\(entries.count - written) of \(entries.count) entries were already committed (taken over by another worker): not written again"
            )
        }
    }
}

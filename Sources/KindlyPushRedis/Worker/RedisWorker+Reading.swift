internal import KindlyPushBase
internal import KindlyPushCore

// A worker's reading: new entries and idle ones taken over, through the read script
// (``RedisScripts/read``), and the entries of its answers.
extension RedisWorker {
    /// Entries of any consumer pending longer than `--claim-idle`, taken over by the read script
    /// (`XAUTOCLAIM`) with their delivery counts; at most every half `--claim-idle` once a scan
    /// of the pending list found none.
    func claim(on connection: RedisConnection) throws(RedisConnectionLost) -> [Entry] {
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
    func read(on connection: RedisConnection) throws(RedisConnectionLost) -> [Entry] {
        try readEntries(try connection.command(readCommand(claiming: false)), on: connection)
    }

    /// The read script for at most `--batch` new entries, or for idle ones to take over.
    func readCommand(claiming: Bool) -> [[UInt8]] {
        [
            Array("EVALSHA".utf8), readHash, Array("1".utf8), input, group, consumer, Array(String(options.batch).utf8),
            Array(String(processor.inputLimit).utf8), Array(String(options.maxDeliveries).utf8),
            claiming ? Array(String(options.claimIdle).utf8) : [], claiming ? claimCursor : [],
        ]
    }

    /// The entries of the read script's answer for new entries.
    func readEntries(_ reply: RedisReply, on connection: RedisConnection) throws(RedisConnectionLost) -> [Entry] {
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
    func nothingPending(on connection: RedisConnection) throws(RedisConnectionLost) -> Bool {
        let command = [Array("XPENDING".utf8), input, group]
        let reply = try followingAsk(try connection.command(command), command)
        if let message = reply.errorMessage { try serverError(message) }
        guard case .integer(let count) = reply.elements.first else { return false }
        if count > 0 { nextClaim = 0 }
        return count == 0
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
}

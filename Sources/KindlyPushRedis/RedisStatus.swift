package import KindlyPushBase
internal import KindlyPushCore

/// What `redis-status` shows: read with one pipeline after authenticating.
package struct RedisStatus {
    struct Consumer {
        var name: String
        var pending: Int
        var idle: Int
    }

    var stream: String
    var length: Int
    var group: String
    var lag: Int?
    var pending: Int
    var lastDelivered: String
    var consumers: [Consumer]
    var deadLetter: (stream: String, length: Int)?
    /// The group's entries read so far (`entries-read`, Redis 7), for the rates of `--watch`.
    var entriesRead: Int?
    /// The consumers `--prune-idle` removed; `nil` without it.
    var pruned: [String]?
    /// `--watch`'s rates over the window since the last reading.
    var rates: Rates?

    /// Per second over `seconds`: entries added to the stream, read by the group, acknowledged
    /// (read, less what became pending), dead letters added.
    struct Rates {
        var seconds: Double
        var added: Double
        var read: Double?
        var acknowledged: Double?
        var deadLetters: Double?
    }

    /// Shows the rates since `earlier`, read `seconds` before this.
    package mutating func measureRates(since earlier: RedisStatus, seconds: Double) { rates = rates(since: earlier, seconds: seconds) }

    /// The rates since `earlier`, read `seconds` before this.
    func rates(since earlier: RedisStatus, seconds: Double) -> Rates {
        let read = entriesRead.flatMap { now in earlier.entriesRead.map { Double(now - $0) / seconds } }
        return Rates(
            seconds: seconds, added: Double(length - earlier.length) / seconds, read: read,
            acknowledged: read.map { $0 - Double(pending - earlier.pending) / seconds },
            deadLetters: deadLetter.flatMap { now in earlier.deadLetter.map { Double(now.length - $0.length) / seconds } })
    }

    package static func read(_ request: RedisStatusRequest) throws(CodedError) -> RedisStatus {
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        var commands = request.server.sessionCommands
        if let idle = request.pruneIdle {
            commands.append([
                bytes("EVAL"), bytes(RedisScripts.prune), bytes("1"), bytes(request.stream), bytes(request.group), bytes(String(idle)),
            ])
        }
        let setup = commands.count
        commands += [
            [bytes("XLEN"), bytes(request.stream)], [bytes("XINFO"), bytes("GROUPS"), bytes(request.stream)],
            [bytes("XINFO"), bytes("CONSUMERS"), bytes(request.stream), bytes(request.group)],
        ]
        if let deadLetter = request.deadLetter { commands.append([bytes("XLEN"), bytes(deadLetter)]) }
        let replies: [RedisReply]
        do throws(RedisConnectionLost) {
            // Through sentinels: the primary they name (a replica's figures may lag).
            let connection = try RedisTopology(request.server).connect(
                connectTimeout: RedisTiming.connectTimeout, commandTimeout: RedisTiming.commandMargin,
                limits: RedisConnection.Limits(bytes: 64 << 20, objects: 1 << 20))
            replies = try connection.pipeline(commands)
        } catch {
            throw CodedError(.io, error.reason)
        }
        let session = request.server.sessionCommands.count
        for reply in replies.prefix(session) {
            if let message = reply.errorMessage { throw CodedError(.io, "Redis refused the credentials or the database: \(message)") }
        }
        var pruned: [String]?
        if request.pruneIdle != nil {
            let reply = replies[session]
            // No group (or stream) yet: the group's own check below says so.
            if let message = reply.errorMessage, !message.contains("NOGROUP"), !message.contains("no such key") {
                throw CodedError(.io, "Redis refused to prune the idle consumers: \(message)")
            }
            pruned = reply.elements.compactMap(\.text)
        }
        if let message = replies[setup].errorMessage ?? replies[setup + 1].errorMessage {
            throw CodedError(.io, RedisConnection.refusal(message))
        }
        guard case .integer(let length) = replies[setup] else { throw CodedError(.io, "Redis: XLEN gave no number") }
        var found: [String: RedisReply]?
        for item in replies[setup + 1].elements {
            let fields = item.fieldMap
            if fields["name"]?.text == request.group { found = fields }
        }
        guard let group = found else {
            throw CodedError(.io, "the stream '\(request.stream)' has no consumer group '\(request.group)'")
        }
        var status = RedisStatus(
            stream: request.stream, length: length, group: request.group, lag: group["lag"]?.integer,
            pending: group["pending"]?.integer ?? 0, lastDelivered: group["last-delivered-id"]?.text ?? "", consumers: [],
            deadLetter: nil, entriesRead: group["entries-read"]?.integer, pruned: pruned)
        for item in replies[setup + 2].elements {
            let fields = item.fieldMap
            status.consumers.append(
                Consumer(name: fields["name"]?.text ?? "", pending: fields["pending"]?.integer ?? 0, idle: fields["idle"]?.integer ?? 0))
        }
        if let deadLetter = request.deadLetter {
            if let message = replies[setup + 3].errorMessage { throw CodedError(.io, "Redis: \(message)") }
            status.deadLetter = (deadLetter, replies[setup + 3].integer ?? 0)
        }
        return status
    }

    /// `value` with one decimal: `12.3`, `-0.5`.
    static func tenths(_ value: Double) -> String {
        let scaled = Int((value * 10).rounded())
        return "\(scaled < 0 ? "-" : "")\(abs(scaled) / 10).\(abs(scaled) % 10)"
    }

    /// The table, or with `json` one JSON object, each ending in a line break.
    package func text(json: Bool) -> String {
        if json {
            var object: JSONObject = [
                "stream": .string(stream), "length": .number(JSONNumber(length)), "group": .string(group),
                "lag": lag.map { .number(JSONNumber($0)) } ?? .null, "pending": .number(JSONNumber(pending)),
                "last_delivered_id": .string(lastDelivered),
                "consumers": .array(
                    consumers.map {
                        ["name": .string($0.name), "pending": .number(JSONNumber($0.pending)), "idle_ms": .number(JSONNumber($0.idle))]
                    }),
            ]
            object["dead_letter"] =
                deadLetter.map { ["stream": .string($0.stream), "length": .number(JSONNumber($0.length))] } ?? .null
            if let pruned { object["pruned"] = .array(pruned.map { .string($0) }) }
            if let rates {
                func rate(_ value: Double?) -> JSONValue {
                    value.flatMap { JSONNumber(literal: Self.tenths($0)) }.map { .number($0) } ?? .null
                }
                object["rates"] = [
                    "window_s": rate(rates.seconds), "added_per_s": rate(rates.added), "read_per_s": rate(rates.read),
                    "acknowledged_per_s": rate(rates.acknowledged), "dead_letters_per_s": rate(rates.deadLetters),
                ]
            }
            var output: [UInt8] = []
            JSONWriter.write(.object(object), to: &output)
            return String(decoding: output, as: UTF8.self) + "\n"
        }
        // Names come from any client of the server: escaped, so that none drives the terminal
        // (an escape sequence, a carriage return, a bidirectional override). --json escapes too.
        let shown = { (text: String) in Printable.escaped(text) }
        var text = "stream '\(shown(stream))': \(length) entries\n"
        text +=
            "group '\(shown(group))': lag \(lag.map(String.init) ?? "unknown"), pending \(pending), last delivered \(shown(lastDelivered))\n"
        let consumers = self.consumers.map { Consumer(name: shown($0.name), pending: $0.pending, idle: $0.idle) }
        let width = max(8, consumers.map(\.name.count).max() ?? 0)
        func padded(_ value: String, _ count: Int) -> String { value + String(repeating: " ", count: max(0, count - value.count)) }
        func right(_ value: String, _ count: Int) -> String { String(repeating: " ", count: max(0, count - value.count)) + value }
        text += padded("consumer", width) + "  " + right("pending", 9) + "  " + right("idle", 10) + "\n"
        for consumer in consumers.sorted(by: { $0.name < $1.name }) {
            let idle = consumer.idle >= 1000 ? "\(consumer.idle / 1000).\(consumer.idle % 1000 / 100) s" : "\(consumer.idle) ms"
            text += padded(consumer.name, width) + "  " + right(String(consumer.pending), 9) + "  " + right(idle, 10) + "\n"
        }
        if let deadLetter { text += "dead letters '\(shown(deadLetter.stream))': \(deadLetter.length) entries\n" }
        if let pruned {
            text +=
                "pruned \(pruned.count) idle consumers with nothing pending" + (pruned.isEmpty ? "" : ": ")
                + pruned.map(shown).sorted().joined(separator: ", ") + "\n"
        }
        if let rates {
            func rate(_ value: Double?) -> String { value.map { Self.tenths($0) + "/s" } ?? "unknown" }
            let dead = deadLetter == nil ? "" : ", \(rate(rates.deadLetters)) dead letters"
            text += "rates over \(Self.tenths(rates.seconds)) s: \(rate(rates.added)) added, \(rate(rates.read)) read, "
            text += "\(rate(rates.acknowledged)) acknowledged\(dead)\n"
        }
        return text
    }
}

extension RedisReply {
    var integer: Int? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The `name value name value ...` list of an `XINFO` item, by name.
    var fieldMap: [String: RedisReply] {
        let fields = elements
        var map: [String: RedisReply] = [:]
        var index = 0
        while index + 1 < fields.count {
            if let name = fields[index].text { map[name] = fields[index + 1] }
            index += 2
        }
        return map
    }
}

/// `dead-letter replay`: the chosen dead letters moved back to the input stream by
/// ``RedisScripts/replay``, `--batch` at a time, each line printed once its batch is moved.
package enum DeadLetterReplay {
    /// Moves the entries `request` chooses, each line of what was moved to `print` once its batch is
    /// moved, ids that are no dead letters to `note`; an `io` error for a server that fails.
    package static func run(_ request: DeadLetterReplayRequest, print: (String) -> Void, note: (String) -> Void) throws(CodedError) {
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        let connection: RedisConnection
        let session: [RedisReply]
        do throws(RedisConnectionLost) {
            connection = try RedisTopology(request.server).connect(
                connectTimeout: RedisTiming.connectTimeout, commandTimeout: RedisTiming.commandMargin,
                limits: RedisConnection.Limits(bytes: 64 << 20, objects: 1 << 20))
            session = try connection.pipeline(request.server.sessionCommands)
        } catch {
            throw CodedError(.io, error.reason)
        }
        if let message = session.lazy.compactMap(\.errorMessage).first {
            throw CodedError(.io, "Redis refused the credentials or the database: \(message)")
        }
        func command(_ arguments: [[UInt8]]) throws(CodedError) -> RedisReply {
            let reply: RedisReply
            do throws(RedisConnectionLost) {
                reply = try connection.command(arguments)
            } catch {
                throw CodedError(.io, error.reason)
            }
            if let message = reply.errorMessage { throw CodedError(.io, RedisConnection.refusal(message)) }
            return reply
        }
        // The ids chosen: as given, or read page by page (those of --code, or all).
        var ids = request.ids
        if ids.isEmpty {
            var cursor = "-"
            while true {
                let page = try command([
                    bytes("XRANGE"), bytes(request.deadLetter), bytes(cursor), bytes("+"), bytes("COUNT"), bytes("1000"),
                ])
                guard let last = page.elements.last?.elements.first?.text else { break }
                for entry in page.elements {
                    let parts = entry.elements
                    guard parts.count == 2, let id = parts[0].text else { continue }
                    if let code = request.code, parts[1].fieldMap["code"]?.text != code { continue }
                    ids.append(id)
                }
                cursor = "(" + last
            }
        }
        let script = try command([bytes("SCRIPT"), bytes("LOAD"), bytes(RedisScripts.replay)])
        guard let hash = script.text else { throw CodedError(.io, "Redis did not load the replay script") }
        var moved = 0
        var start = 0
        while start < ids.count {
            let chosen = ids[start..<min(start + request.batch, ids.count)]
            start += chosen.count
            let reply = try command(
                [bytes("EVALSHA"), bytes(hash), bytes("2"), bytes(request.deadLetter), bytes(request.input)] + chosen.map(bytes))
            var done = Set<String>()
            for pair in reply.elements {
                guard pair.elements.count == 2, let from = pair.elements[0].text, let id = pair.elements[1].text else { continue }
                done.insert(from)
                moved += 1
                if request.json {
                    var output: [UInt8] = []
                    JSONWriter.write(.object(["dead_letter_id": .string(from), "id": .string(id)]), to: &output)
                    print(String(decoding: output, as: UTF8.self))
                } else {
                    print("moved \(from) to '\(Printable.escaped(request.input))' as \(id)")
                }
            }
            for id in chosen where !done.contains(id) {
                note("kindly-push: '\(Printable.escaped(id))' is not a dead letter of '\(Printable.escaped(request.deadLetter))': skipped")
            }
        }
        if !request.json {
            print(
                "moved \(moved) of \(ids.count) entries from '\(Printable.escaped(request.deadLetter))' to '\(Printable.escaped(request.input))'"
            )
        }
    }
}

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

    package static func read(_ request: RedisStatusRequest) throws(CodedError) -> RedisStatus {
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        var commands = request.server.sessionCommands
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
        for reply in replies.prefix(setup) {
            if let message = reply.errorMessage { throw CodedError(.io, "Redis refused the credentials or the database: \(message)") }
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
            deadLetter: nil)
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

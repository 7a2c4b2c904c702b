internal import KindlyPushBase
internal import KindlyPushCore

/// Where a worker's commands go, as the topology decides (docs/running-at-scale.md): the URL's
/// server; the primary that a `redis+sentinel://` URL's sentinels name, asked again at each
/// connection; in a Redis Cluster, the node that a `MOVED` redirection or the slot map
/// (`CLUSTER SHARDS`) names for the worker's hash slot.
final class RedisTopology {
    let server: RedisOptions.Server
    /// The sentinel that answered last: asked first next time.
    private var preferredSentinel = 0
    /// The node a cluster redirection named, connected to next instead of the URL's.
    var redirect: RedisOptions.Endpoint?
    /// Where the last connection went: a primary's `HOST:PORT`, for the notes and `/healthz`.
    private(set) var current: RedisOptions.Endpoint?

    init(_ server: RedisOptions.Server) { self.server = server }

    /// Connects to the server commands go to now (the primary the sentinels name, a cluster
    /// node a redirection named, else the URL's) within `connectTimeout` ms.
    func connect(connectTimeout: Int, commandTimeout: Int, limits: RedisConnection.Limits) throws(RedisConnectionLost) -> RedisConnection {
        var endpoint = redirect ?? server.endpoint
        if redirect == nil, let sentinel = server.sentinel { endpoint = try primary(of: sentinel) }
        let connection = try RedisConnection(
            endpoint, tls: server.tls, connectTimeout: connectTimeout, commandTimeout: commandTimeout, limits: limits)
        current = endpoint
        return connection
    }

    /// How the notes name the server connected to: `HOST:PORT`, and for a sentinel URL the
    /// service it is the primary of.
    var currentPlace: String {
        guard let current else { return "none" }
        let place = RedisOptions.Server.hostPort(current)
        return server.sentinel.map { "\(place), the primary of '\($0.service)'" } ?? place
    }

    /// The primary of `sentinel`'s service: each sentinel asked in turn (`SENTINEL
    /// get-master-addr-by-name`), the last that answered first; the first answer is taken (the
    /// caller checks it with `ROLE`). A sentinel that cannot be reached, refuses the password or
    /// knows no such service is passed over; none answering is a lost connection.
    func primary(of sentinel: RedisOptions.Sentinel) throws(RedisConnectionLost) -> RedisOptions.Endpoint {
        var reasons: [String] = []
        for step in 0..<sentinel.nodes.count {
            let index = (preferredSentinel + step) % sentinel.nodes.count
            let node = sentinel.nodes[index]
            let place = RedisOptions.Server.hostPort(node)
            do throws(RedisConnectionLost) {
                let connection = try RedisConnection(
                    node, connectTimeout: RedisTiming.sentinelTimeout, commandTimeout: RedisTiming.sentinelTimeout,
                    limits: RedisConnection.Limits(bytes: 1 << 16, objects: 64))
                var commands: [[[UInt8]]] = []
                if let password = sentinel.password { commands.append([Array("AUTH".utf8), Array(password.utf8)]) }
                commands.append([Array("SENTINEL".utf8), Array("get-master-addr-by-name".utf8), Array(sentinel.service.utf8)])
                let replies = try connection.pipeline(commands)
                if let refusal = replies.lazy.compactMap(\.errorMessage).first {
                    reasons.append(
                        "\(place): \(refusal.hasPrefix("NOAUTH") ? refusal + " (give it in \(RedisOptions.Sentinel.passwordVariable))" : refusal)"
                    )
                    continue
                }
                let address = replies[replies.count - 1].elements
                guard address.count == 2, let host = address[0].text, let portText = address[1].text, let port = Int32(portText) else {
                    reasons.append("\(place) knows no service '\(sentinel.service)'")
                    continue
                }
                preferredSentinel = index
                return .tcp(host: host, port: port)
            } catch {
                reasons.append(error.reason)
            }
        }
        throw RedisConnectionLost(reason: "no sentinel named the primary of '\(sentinel.service)': " + reasons.joined(separator: "; "))
    }

    /// The node of a `MOVED SLOT HOST:PORT` or `ASK SLOT HOST:PORT` error reply, `nil` for
    /// another reply.
    static func redirection(_ message: String) -> (ask: Bool, node: RedisOptions.Endpoint)? {
        let words = message.split(separator: " ")
        guard words.count == 3, words[0] == "MOVED" || words[0] == "ASK", let colon = words[2].lastIndex(of: ":"),
            let port = Int32(words[2][words[2].index(after: colon)...])
        else { return nil }
        var host = String(words[2][..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (words[0] == "ASK", .tcp(host: host, port: port))
    }

    /// The primary that a Redis 7 cluster's slot map (`CLUSTER SHARDS`) names for `slot`: its
    /// node id and address; `nil` when the map has none.
    static func owner(of slot: Int, in shards: RedisReply, tls: Bool) -> (id: String, endpoint: RedisOptions.Endpoint)? {
        for shard in shards.elements {
            let fields = shard.fieldMap
            let ranges = fields["slots"]?.elements.compactMap(\.integer) ?? []
            guard stride(from: 0, to: ranges.count - 1, by: 2).contains(where: { ranges[$0] <= slot && slot <= ranges[$0 + 1] }) else {
                continue
            }
            for node in fields["nodes"]?.elements ?? [] {
                let node = node.fieldMap
                guard node["role"]?.text == "master", let id = node["id"]?.text, let port = node[tls ? "tls-port" : "port"]?.integer,
                    let host = node["ip"]?.text ?? node["endpoint"]?.text
                else { continue }
                return (id, .tcp(host: host, port: Int32(port)))
            }
        }
        return nil
    }
}

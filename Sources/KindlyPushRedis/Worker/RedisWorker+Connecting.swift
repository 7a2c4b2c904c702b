internal import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

// A worker's connection: the handshake and its checks, reconnection with backoff, and the
// topology followed (the primary the sentinels name, a cluster's MOVED and ASK redirections).
extension RedisWorker {
    /// Connects (to the primary the sentinels name, or the cluster node that holds the keys'
    /// slot), authenticates, selects the database, checks the role, the keys (types, cluster
    /// hash slots), creates the group when missing and loads the scripts. Server errors that a
    /// retry would not mend are ``Fatal``.
    func connect() throws(RedisConnectionLost) {
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
    func reloadScripts(on connection: RedisConnection) throws(RedisConnectionLost) {
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
    func reconnect(after lost: RedisConnectionLost) throws(Fatal) {
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
            // A signal ends the step early; the loop looks at the stop flag again.
            try? nothingOrErrno(retryOnInterrupt: false) { usleep(UInt32(step * 1000)) }
            left -= step
        }
    }

    /// `reply`, or for an `ASK` redirection (the keys' slot is moving to another node, and the
    /// key is there already) the reply of the node it names to `commands` (``asking(_:_:)``).
    func followingAsk(_ reply: RedisReply, _ command: [[UInt8]]) throws(RedisConnectionLost) -> RedisReply {
        guard let message = reply.errorMessage, let (ask, node) = RedisTopology.redirection(message), ask else { return reply }
        return try asking(node, [command])[0]
    }

    /// Runs `commands` on the node an `ASK` redirection named, once, each after `ASKING`, on a
    /// connection of its own that authenticates and loads the scripts first (the same text: the
    /// same hashes). The slot's migration ends with a `MOVED`, which the worker follows for good.
    func asking(_ node: RedisOptions.Endpoint, _ commands: [[[UInt8]]]) throws(RedisConnectionLost) -> [RedisReply] {
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

    /// An error reply where none is expected: WRONGTYPE (a key replaced under the worker) ends
    /// it; anything else (OOM, LOADING, a busy script) is waited out as a lost connection.
    func serverError(_ message: String) throws(RedisConnectionLost) {
        if message.contains("WRONGTYPE") {
            fail(.io, "a key of the worker holds another type than a stream (\(message))")
        }
        if message.hasPrefix("NOPERM") || message.hasPrefix("NOAUTH") { fail(.io, "Redis refused a command: \(message)") }
        // A cluster's slot moved (followed at once), a primary turned replica (the sentinels asked again).
        try followRedirection(message)
        throw RedisConnectionLost(reason: message)
    }
}

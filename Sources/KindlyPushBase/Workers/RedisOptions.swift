/// `--redis URL --from STREAM --group GROUP --to STREAM` and the rest: a document command as a
/// worker of a Redis Streams consumer group (docs/running-at-scale.md). Each input
/// entry's `doc` field is one document, as one `--jsonl` line; each output entry has `doc`, the
/// line `--jsonl` prints for it, and `in`, the input entry's id.
package struct RedisOptions: Sendable, Equatable {
    /// `--metrics HOST:PORT`: where a worker serves its metrics.
    package struct MetricsAddress: Sendable, Equatable {
        package var host: String
        package var port: Int32

        package init(host: String, port: Int32) {
            self.host = host
            self.port = port
        }
    }

    /// `rediss://`: TLS with the server's certificate verified (against `--ca-file`, else the
    /// system's authorities) and its name or address checked; a client certificate with
    /// `--tls-cert` and `--tls-key`.
    package struct TLS: Sendable, Equatable {
        package var caFile: String?
        package var certificateFile: String?
        package var keyFile: String?

        package init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// Where the server listens.
    package enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int32)
        case unix(path: String)
    }

    /// `redis+sentinel://HOST:PORT[,HOST:PORT…]/SERVICE`: the sentinels that name the primary
    /// of `service` (`SENTINEL get-master-addr-by-name`), asked in turn at each connection.
    package struct Sentinel: Sendable, Equatable {
        /// The sentinels, in the URL's order (TCP: sentinels listen on no Unix socket of the URL's).
        package var nodes: [Endpoint]
        package var service: String
        /// The sentinels' own password (`KINDLY_PUSH_SENTINEL_PASSWORD`, else the file
        /// `KINDLY_PUSH_SENTINEL_PASSWORD_FILE` names); `nil` for sentinels that ask none.
        package var password: String?

        package init(nodes: [Endpoint], service: String, password: String? = nil) {
            self.nodes = nodes
            self.service = service
            self.password = password
        }

        /// The variables a worker reads for the sentinels' password.
        package static let passwordVariable = "KINDLY_PUSH_SENTINEL_PASSWORD"
        package static let passwordFileVariable = "KINDLY_PUSH_SENTINEL_PASSWORD_FILE"
    }

    /// The server of `--redis URL` and how to log in to it: what a worker and `redis-status`
    /// alike connect to.
    package struct Server: Sendable, Equatable {
        /// Where the server listens; for `redis+sentinel://`, the first sentinel (the primary is
        /// asked of ``sentinel`` at each connection).
        package var endpoint: Endpoint
        /// The sentinels of a `redis+sentinel://` URL; `nil` for a server named directly.
        package var sentinel: Sentinel?
        /// TLS, for a `rediss://` URL; `nil` for `redis://` and `unix://`.
        package var tls: TLS?
        /// The ACL user (`AUTH user password`), when the URL names one.
        package var user: String?
        /// The password of `KINDLY_PUSH_REDIS_PASSWORD` (where the command puts a URL's, taken
        /// out of its arguments), else of the file `KINDLY_PUSH_REDIS_PASSWORD_FILE` names; `nil`
        /// for none.
        package var password: String?
        /// The database of `/db` (0 by default).
        package var database: Int

        package init(
            endpoint: Endpoint, sentinel: Sentinel? = nil, tls: TLS? = nil, user: String? = nil, password: String? = nil, database: Int = 0
        ) {
            self.endpoint = endpoint
            self.sentinel = sentinel
            self.tls = tls
            self.user = user
            self.password = password
            self.database = database
        }

        /// The commands that open a session, first in every connection's pipeline: `AUTH`
        /// (with a password) and `SELECT` (a database other than 0), in that order.
        package var sessionCommands: [[[UInt8]]] {
            var commands: [[[UInt8]]] = []
            if let password {
                commands.append([Array("AUTH".utf8)] + (user.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)])
            }
            if database != 0 { commands.append([Array("SELECT".utf8), Array(String(database).utf8)]) }
            return commands
        }

        /// The server as messages name it, and its user; never the password.
        package var place: String {
            let user = user.map { " as \($0)" } ?? ""
            if let sentinel {
                let nodes = sentinel.nodes.map(Self.hostPort).joined(separator: ",")
                return "\(tls == nil ? "redis" : "rediss")+sentinel://\(nodes)/\(sentinel.service)/\(database)\(user)"
            }
            switch endpoint {
            case .tcp:
                return "\(tls == nil ? "redis" : "rediss")://\(Self.hostPort(endpoint))/\(database)\(user)"
            case .unix(let path): return "unix://\(path)\(user)"
            }
        }

        /// `HOST:PORT` (`[IPV6]:PORT`), or a socket's path.
        package static func hostPort(_ endpoint: Endpoint) -> String {
            switch endpoint {
            case .tcp(let host, let port): return "\(host.contains(":") ? "[\(host)]" : host):\(port)"
            case .unix(let path): return path
            }
        }
    }

    package var server: Server
    package var input: String
    package var group: String
    package var output: String
    /// `--consumer NAME`; by default the host name and the process id.
    package var consumer: String?
    /// `--claim-idle MS`: pending entries idle longer than this are taken over.
    package var claimIdle: Int
    /// `--batch N`: entries read, processed and committed at a time.
    package var batch: Int
    /// `--exit-when-idle MS`: exit 0 after MS with nothing to read and nothing pending.
    package var exitWhenIdle: Int?
    /// `--max-deliveries N`: an entry delivered more often gets an error object and is acknowledged.
    package var maxDeliveries: Int
    /// `--dead-letter STREAM`: where entries that failed for good go, with their original `doc`.
    package var deadLetter: String?
    /// `--metrics HOST:PORT`: Prometheus metrics and a health check, off by default.
    package var metrics: MetricsAddress?
    /// `--min-replicas N`: each commit waits (`WAIT N`) until N replicas have it; 0 for none.
    package var minReplicas: Int
    /// `--replica-timeout MS`: how long one `WAIT` may take before the batch is committed again.
    package var replicaTimeout: Int

    package static let defaultClaimIdle = 30_000
    package static let defaultBatch = 100
    package static let defaultMaxDeliveries = 5
    package static let defaultReplicaTimeout = 1000

    /// The variables a worker reads for the password (the help and the man page list them).
    package static let passwordVariable = "KINDLY_PUSH_REDIS_PASSWORD"
    package static let passwordFileVariable = "KINDLY_PUSH_REDIS_PASSWORD_FILE"

    package init(
        server: Server, input: String, group: String, output: String, consumer: String? = nil, claimIdle: Int = defaultClaimIdle,
        batch: Int = defaultBatch, exitWhenIdle: Int? = nil, maxDeliveries: Int = defaultMaxDeliveries, deadLetter: String? = nil,
        metrics: MetricsAddress? = nil, minReplicas: Int = 0, replicaTimeout: Int = defaultReplicaTimeout
    ) {
        self.server = server
        self.input = input
        self.group = group
        self.output = output
        self.consumer = consumer
        self.claimIdle = claimIdle
        self.batch = batch
        self.exitWhenIdle = exitWhenIdle
        self.maxDeliveries = maxDeliveries
        self.deadLetter = deadLetter
        self.metrics = metrics
        self.minReplicas = minReplicas
        self.replicaTimeout = replicaTimeout
    }

    /// The `{tag}` of a key as Redis Cluster hashes it: the text between the first `{` and the
    /// next `}`, when not empty; `nil` when the whole key is hashed.
    package static func hashTag(_ key: String) -> Substring? {
        guard let open = key.utf8.firstIndex(of: UInt8(ascii: "{")) else { return nil }
        let after = key.utf8.index(after: open)
        guard let close = key.utf8[after...].firstIndex(of: UInt8(ascii: "}")), close > after else { return nil }
        return key[after..<close]
    }
}

/// What `redis-status` reads: a consumer group of a stream on a server.
package struct RedisStatusRequest: Sendable {
    package var server: RedisOptions.Server
    package var stream: String
    package var group: String
    package var deadLetter: String?
    /// Printed as one JSON object instead of the table.
    package var json: Bool
    /// `--prune-idle MS`: consumers idle longer than this with nothing pending are removed first.
    package var pruneIdle: Int?
    /// `--watch SECONDS`: read again every SECONDS, with rates over the window, until a stop signal.
    package var watch: Int?

    package init(
        server: RedisOptions.Server, stream: String, group: String, deadLetter: String?, json: Bool, pruneIdle: Int? = nil,
        watch: Int? = nil
    ) {
        self.server = server
        self.stream = stream
        self.group = group
        self.deadLetter = deadLetter
        self.json = json
        self.pruneIdle = pruneIdle
        self.watch = watch
    }
}

/// What `dead-letter replay` moves: entries of a dead-letter stream back to a workers' input
/// stream, each exactly once.
package struct DeadLetterReplayRequest: Sendable {
    package var server: RedisOptions.Server
    /// The dead-letter stream.
    package var deadLetter: String
    /// The input stream the entries go back to.
    package var input: String
    /// The entries chosen: these ids, or those of `code`, or all of them (`ids` empty, `code` nil).
    package var ids: [String]
    package var code: String?
    /// Entries moved per script call (each call moves its entries at once, or none of them).
    package var batch: Int
    /// One JSON object per moved entry instead of the text lines.
    package var json: Bool

    package init(server: RedisOptions.Server, deadLetter: String, input: String, ids: [String], code: String?, batch: Int, json: Bool) {
        self.server = server
        self.deadLetter = deadLetter
        self.input = input
        self.ids = ids
        self.code = code
        self.batch = batch
        self.json = json
    }
}

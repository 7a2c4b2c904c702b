package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

extension RedisOptions {
    package static let url = Option<String>("--redis", "URL", urlHelp + "with --jobs N, N entries of a batch at once (default: 1).")
    /// `--redis`'s help up to what `--jobs` does, which only the commands that take `--jobs` add.
    package static let urlHelp =
        "Run as a Redis Streams worker on URL: redis://[USER@]HOST[:PORT][/DB], rediss://… (TLS), unix://[USER@]/PATH or "
        + "redis+sentinel://SENTINELS/SERVICE (SENTINELS: [USER@]HOST:PORT, comma-separated; the primary they name; "
        + "rediss+sentinel://: TLS to it); the password from "
        + "\(passwordVariable) or the file \(passwordFileVariable) names (one in the URL is taken out of the command line, with a warning); "
    package static let from = Option<String>(worker: "--from", "STREAM", "the input stream: each entry's \"doc\" field is one document.")
    package static let groupName = Option<String>(
        worker: "--group", "GROUP", "the consumer group (created at the start of the input stream when missing).")
    package static let to = Option<String>(worker: "--to", "STREAM", "the output stream: entries {\"doc\": output line, \"in\": input id}.")
    package static let consumerName = Option<String>(
        worker: "--consumer", "NAME", "this worker's name in the group (default: host name and process id).")
    package static let claimIdleTime = Option<Int>(
        worker: "--claim-idle", "MS", "take over entries pending longer than MS (default: \(defaultClaimIdle)).")
    package static let batchSize = Option<Int>(worker: "--batch", "N", "entries read and committed at a time (default: \(defaultBatch)).")
    package static let exitWhenIdleTime = Option<Int>(
        worker: "--exit-when-idle", "MS", "exit 0 after MS with nothing to read and nothing pending.")
    package static let maxDeliveryCount = Option<Int>(
        worker: "--max-deliveries", "N", "answer an entry delivered more than N times with an error (default: \(defaultMaxDeliveries)).")
    package static let deadLetterStream = Option<String>(
        worker: "--dead-letter", "STREAM",
        "put each entry that failed for good (its original doc, the code, message, delivery count and consumer) on STREAM "
            + "instead of an error object on the output stream.")

    package static let metricsAddress = Option<String>(
        worker: "--metrics", "HOST:PORT",
        "serve Prometheus metrics at http://HOST:PORT/metrics and a health check at /healthz (off by default; PORT alone is 127.0.0.1:PORT)."
    )

    package static let minReplicaCount = Option<Int>(
        worker: "--min-replicas", "N",
        "commit each batch only once N replicas have it (WAIT): an output acknowledged survives a failover (default: 0).")
    package static let replicaTimeoutTime = Option<Int>(
        worker: "--replica-timeout", "MS",
        "with --min-replicas, wait MS for the replicas, then commit the batch again (default: \(defaultReplicaTimeout)).")

    package static let caFile = Option<String>(
        worker: "--ca-file", "PATH", "rediss:// only: verify the server's certificate against the authorities in PATH (PEM).")
    package static let tlsCertificate = Option<String>(
        worker: "--tls-cert", "PATH", "rediss:// only: present this client certificate (PEM) to the server.")
    package static let tlsKey = Option<String>(
        worker: "--tls-key", "PATH", "rediss:// only: the client certificate's private key (PEM).")

    /// The options that go with `--redis` (all but `--redis` itself), in the order help lists them.
    package static var workerKeys: [any OptionKey] { declaredKeys.filter { $0.name != url.name } }

    /// The worker options of `arguments`, `nil` without `--redis`; a usage error for a bad URL,
    /// a missing stream or group, a bad number, or worker options without `--redis`. `shared`:
    /// worker options that the command takes without `--redis` too, with a meaning of its own
    /// there (send's `--ca-file`, for APNs); `caFile`: the option that names a `rediss://`
    /// server's authorities (`--ca-file`; send's is `--redis-ca-file`, so that the two trusts
    /// stay apart).
    package init?(
        _ arguments: ParsedArguments, command: String, environment: CommandEnvironment, shared: [any OptionKey] = [],
        caFile: Option<String> = RedisOptions.caFile
    ) throws(CodedError) {
        func usage(_ text: String) -> CodedError { .usage(text, command: command) }
        let sharedNames = Set(shared.map(\.name))
        guard let url = arguments[Self.url] else {
            let alone = (RedisOptions.workerKeys + [caFile]).filter { !sharedNames.contains($0.name) }
            if let other = alone.first(where: { arguments.isGiven($0) }) {
                throw usage("'\(other.name)' goes with --redis")
            }
            return nil
        }
        func required(_ key: Option<String>) throws(CodedError) -> String {
            guard let value = arguments[key], !value.isEmpty else { throw usage("--redis needs '\(key.name)'") }
            return value
        }
        func number(_ key: Option<Int>, default value: Int?, range: ClosedRange<Int>) throws(CodedError) -> Int? {
            guard arguments.isGiven(key) else { return value }
            guard let number = arguments[key], range.contains(number) else {
                throw usage("'\(key.name)' takes a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        let server = try Server(url, arguments, shared: sharedNames, caFile: caFile, environment: environment, usage)
        let input = try required(Self.from)
        let group = try required(Self.groupName)
        let output = try required(Self.to)
        if input == output { throw usage("'\(Self.from.name)' and '\(Self.to.name)' name the same stream") }
        let consumer = arguments[Self.consumerName]
        if consumer?.isEmpty == true { throw usage("'\(Self.consumerName.name)' takes a name") }
        let claimIdle = try number(Self.claimIdleTime, default: RedisOptions.defaultClaimIdle, range: 1...86_400_000)!
        let batch = try number(Self.batchSize, default: RedisOptions.defaultBatch, range: 1...10_000)!
        let exitWhenIdle = try number(Self.exitWhenIdleTime, default: nil, range: 0...86_400_000)
        let maxDeliveries = try number(Self.maxDeliveryCount, default: RedisOptions.defaultMaxDeliveries, range: 1...1_000_000)!
        let deadLetter = arguments[Self.deadLetterStream]
        let minReplicas = try number(Self.minReplicaCount, default: 0, range: 0...100)!
        let replicaTimeout = try number(Self.replicaTimeoutTime, default: RedisOptions.defaultReplicaTimeout, range: 1...600_000)!
        if arguments.isGiven(Self.replicaTimeoutTime), minReplicas == 0 {
            throw usage("'\(Self.replicaTimeoutTime.name)' goes with '\(Self.minReplicaCount.name)'")
        }
        let metrics = try arguments[Self.metricsAddress].map { (text) throws(CodedError) in try Self.parseMetrics(text, usage) }
        if let deadLetter {
            if deadLetter.isEmpty { throw usage("'\(Self.deadLetterStream.name)' takes a stream name") }
            if deadLetter == input || deadLetter == output {
                throw usage("'\(Self.deadLetterStream.name)' names the input or the output stream: give it a stream of its own")
            }
        }
        self.init(
            server: server, input: input, group: group, output: output, consumer: consumer, claimIdle: claimIdle, batch: batch,
            exitWhenIdle: exitWhenIdle, maxDeliveries: maxDeliveries,
            deadLetter: deadLetter, metrics: metrics, minReplicas: minReplicas, replicaTimeout: replicaTimeout)
    }

    /// `url` with `rediss://` spelt `redis://` and `rediss+sentinel://` spelt
    /// `redis+sentinel://` (the rest is read the same way).
    package static func plainScheme(_ url: String) -> String {
        if url.hasPrefix("rediss://") { return "redis://" + url.dropFirst(9) }
        if url.hasPrefix("rediss+sentinel://") { return "redis+sentinel://" + url.dropFirst(18) }
        return url
    }

    /// Whether `url` asks for TLS to the data nodes (`rediss://`, `rediss+sentinel://`).
    package static func usesTLS(_ url: String) -> Bool {
        url.hasPrefix("rediss://") || url.hasPrefix("rediss+sentinel://")
    }

    /// The parts of `redis+sentinel://[user:password@]host:port[,host:port…]/service[/db]`: the
    /// sentinels, the service, the data nodes' user and password (percent-decoded), the database.
    package static func parseSentinelURL(_ url: String) throws(CodedError) -> (
        sentinels: [Endpoint], service: String, user: String?, password: String?, database: Int
    ) {
        func bad(_ why: String) -> CodedError {
            CodedError(.usage, "--redis: \(why); expected redis+sentinel://[user@]host:port[,host:port…]/service[/db]")
        }
        let scheme = "redis+sentinel://"
        guard url.hasPrefix(scheme) else { throw bad("the URL is not redis+sentinel://") }
        let rest = url.dropFirst(scheme.count)
        guard let slash = rest.firstIndex(of: "/") else { throw bad("the URL names no service") }
        let nodesText = rest[..<slash]
        let path = rest[rest.index(after: slash)...].split(separator: "/", omittingEmptySubsequences: false)
        guard let service = path.first, !service.isEmpty else { throw bad("the URL names no service") }
        guard path.count <= 2 else { throw bad("unexpected text after the database") }
        // One URL per sentinel, read as a redis:// URL: host, port, credentials (the first's).
        var sentinels: [Endpoint] = []
        var user: String?
        var password: String?
        var authority = Substring(nodesText)
        if let at = authority.lastIndex(of: "@") {
            let (_, named, given, _) = try parseURL("redis://" + authority[...at] + "placeholder")
            user = named
            password = given
            authority = authority[authority.index(after: at)...]
        }
        for node in authority.split(separator: ",", omittingEmptySubsequences: false) {
            guard !node.isEmpty, node.contains(":") else { throw bad("each sentinel is HOST:PORT ('\(node)' is not)") }
            let (endpoint, _, _, _) = try parseURL("redis://" + node)
            sentinels.append(endpoint)
        }
        var database = 0
        if path.count == 2, !path[1].isEmpty {
            guard let number = Int(path[1]), (0...1_000_000).contains(number) else {
                throw bad("the database '\(path[1])' is not a number")
            }
            database = number
        }
        return (sentinels, String(service), user, password, database)
    }

    /// The password of `KINDLY_PUSH_REDIS_PASSWORD`, else of the file
    /// `KINDLY_PUSH_REDIS_PASSWORD_FILE` names; `nil` for neither.
    package static func password(_ environment: CommandEnvironment) throws(CodedError) -> String? {
        if let password = environment[passwordVariable], !password.isEmpty { return password }
        if let path = environment[passwordFileVariable], !path.isEmpty { return try readPassword(path) }
        return nil
    }

    /// `PORT`, `HOST:PORT` or `[IPV6]:PORT` (the host an address, or `localhost`).
    package static func parseMetrics(_ text: String, _ usage: (String) -> CodedError) throws(CodedError) -> MetricsAddress {
        var host = "127.0.0.1"
        var portText = Substring(text)
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(after: close)...]
            guard portText.hasPrefix(":") else { throw usage("'\(metricsAddress.name)' takes HOST:PORT or PORT") }
            portText = portText.dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int32(portText), (1...65535).contains(port) else {
            throw usage("'\(metricsAddress.name)' takes HOST:PORT or PORT (a port from 1 to 65535)")
        }
        return MetricsAddress(host: host, port: port)
    }

    /// The password in the file `path` (mode 0600 or stricter, owned by this user, as key files
    /// are; a credential of systemd's `LoadCredential=`): its text without the final line break.
    static func readPassword(_ path: String, variable: String = passwordFileVariable) throws(CodedError) -> String {
        var text: String
        do throws(PrivateFileError) {
            text = try PrivateFile.readText(path)
        } catch {
            throw CodedError(.io, "\(variable): \(error.described(as: "password file"))")
        }
        while text.last?.isNewline == true { text.removeLast() }
        guard !text.isEmpty else { throw CodedError(.usage, "\(variable): the file '\(path)' is empty") }
        return text
    }

    /// The sentinels' password, of `KINDLY_PUSH_SENTINEL_PASSWORD`, else of the file
    /// `KINDLY_PUSH_SENTINEL_PASSWORD_FILE` names; `nil` for neither.
    package static func sentinelPassword(_ environment: CommandEnvironment) throws(CodedError) -> String? {
        if let password = environment[Sentinel.passwordVariable], !password.isEmpty { return password }
        if let path = environment[Sentinel.passwordFileVariable], !path.isEmpty {
            return try readPassword(path, variable: Sentinel.passwordFileVariable)
        }
        return nil
    }

    /// Takes the password of a `--redis` URL out of the command's arguments before anything else
    /// runs: the URL keeps its user, host, port and database; the password
    /// goes to `KINDLY_PUSH_REDIS_PASSWORD` in the environment the command runs with (and passes
    /// on to `kindly-push-redis`, whose argument list never holds it); the text of the process's
    /// own arguments (what `/proc/PID/cmdline` shows every local user) is overwritten in place.
    /// A URL that carries a password is warned about on standard error, once.
    package static func takePasswordOutOfArguments(_ arguments: inout [String], environment: inout CommandEnvironment) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            var prefix = ""
            var value: String?
            if argument == Self.url.name, index + 1 < arguments.count {
                index += 1
                value = arguments[index]
            } else if argument.hasPrefix(Self.url.name + "=") {
                prefix = Self.url.name + "="
                value = String(argument.dropFirst(prefix.count))
            }
            if let value, let (stripped, password) = withoutPassword(value) {
                arguments[index] = prefix + stripped
                environment[passwordVariable] = password
                overwriteProcessArgument(matching: prefix + value, with: prefix + stripped)
                Diagnostics.line(
                    "kindly-push: warning: the --redis URL carries a password, which every local user can read in the command line: "
                        + "it was taken out; give it in \(passwordVariable) or \(passwordFileVariable) instead")
            }
            index += 1
        }
    }

    /// `url` without its password, and the password (percent-decoded); `nil` when it has none
    /// (or is not a URL this option takes: the option's own check reports that).
    package static func withoutPassword(_ url: String) -> (String, String)? {
        let plain = plainScheme(url)
        let given = plain.hasPrefix("redis+sentinel://") ? (try? parseSentinelURL(plain))?.password : (try? parseURL(plain))?.2
        guard let password = given ?? nil else { return nil }
        let bytes = Array(url.utf8)
        let schemeEnd = (bytes.firstIndex(of: UInt8(ascii: ":")) ?? 0) + 3
        let rest = bytes[schemeEnd...]
        let authorityEnd = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) else { return nil }
        let credentials = rest[..<at]
        let user = credentials.firstIndex(of: UInt8(ascii: ":")).map { credentials[..<$0] } ?? []
        let kept = Array(bytes[..<schemeEnd]) + (user.isEmpty ? [] : Array(user) + [UInt8(ascii: "@")]) + Array(bytes[(at + 1)...])
        return (String(decoding: kept, as: UTF8.self), password)
    }

    /// Rewrites the argument of this process that reads `old` to `new` (not longer), in the
    /// memory the kernel shows as `/proc/PID/cmdline`; the bytes left over become NULs.
    private static func overwriteProcessArgument(matching old: String, with new: String) {
        let oldBytes = Array(old.utf8)
        let newBytes = Array(new.utf8)
        guard newBytes.count <= oldBytes.count else { return }
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index], strlen(pointer) == oldBytes.count,
                memcmp(pointer, oldBytes, oldBytes.count) == 0
            else { continue }
            let raw = UnsafeMutableRawPointer(pointer)
            raw.initializeMemory(as: UInt8.self, repeating: 0, count: oldBytes.count)
            newBytes.withUnsafeBytes { raw.copyMemory(from: $0.baseAddress!, byteCount: newBytes.count) }
        }
    }

    /// The parts of `redis://[user:password@]host[:port][/db]` or
    /// `unix://[user:password@]/path`; user and password are percent-decoded.
    package static func parseURL(_ url: String) throws(CodedError) -> (Endpoint, String?, String?, Int) {
        func bad(_ why: String) -> CodedError {
            CodedError(.usage, "--redis: \(why); expected redis://[user:password@]host[:port][/db] or unix:///path/to/socket")
        }
        let bytes = Array(url.utf8)
        let isUnix: Bool
        var rest: ArraySlice<UInt8>
        if bytes.starts(with: "redis://".utf8) {
            isUnix = false
            rest = bytes.dropFirst(8)
        } else if bytes.starts(with: "unix://".utf8) {
            isUnix = true
            rest = bytes.dropFirst(7)
        } else {
            throw bad("the URL is neither redis:// nor unix://")
        }
        var user: String?
        var password: String?
        // The credentials end at the last "@" before the path (a password may hold "@" escaped).
        let authorityEnd = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        if let at = rest[..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) {
            let credentials = rest[..<at]
            rest = rest[(at + 1)...]
            if let colon = credentials.firstIndex(of: UInt8(ascii: ":")) {
                let name = try percentDecoded(credentials[..<colon], bad)
                user = name.isEmpty ? nil : name
                password = try percentDecoded(credentials[(colon + 1)...], bad)
            } else {
                // `redis://secret@host`: one word is the password, as redis-cli takes it.
                password = try percentDecoded(credentials, bad)
            }
            if password?.isEmpty == true { password = nil }
        }
        if isUnix {
            guard rest.first == UInt8(ascii: "/"), rest.count > 1 else { throw bad("a unix:// URL names the socket's absolute path") }
            return (.unix(path: String(decoding: rest, as: UTF8.self)), user, password, 0)
        }
        let slash = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        var hostPort = rest[..<slash]
        var database = 0
        if slash < rest.endIndex {
            let text = String(decoding: rest[(slash + 1)...], as: UTF8.self)
            if !text.isEmpty {
                guard let number = Int(text), (0...1_000_000).contains(number) else { throw bad("the database '\(text)' is not a number") }
                database = number
            }
        }
        var host: String
        if hostPort.first == UInt8(ascii: "[") {
            guard let close = hostPort.firstIndex(of: UInt8(ascii: "]")) else { throw bad("an IPv6 address has no closing ']'") }
            host = String(decoding: hostPort[(hostPort.startIndex + 1)..<close], as: UTF8.self)
            hostPort = hostPort[(close + 1)...]
            guard hostPort.isEmpty || hostPort.first == UInt8(ascii: ":") else { throw bad("unexpected text after the IPv6 address") }
        } else {
            let colon = hostPort.firstIndex(of: UInt8(ascii: ":")) ?? hostPort.endIndex
            host = String(decoding: hostPort[..<colon], as: UTF8.self)
            hostPort = hostPort[colon...]
        }
        guard !host.isEmpty else { throw bad("the URL names no host") }
        var port: Int32 = 6379
        if !hostPort.isEmpty {
            let text = String(decoding: hostPort.dropFirst(), as: UTF8.self)
            guard let number = Int32(text), (1...65535).contains(number) else {
                throw bad("the port '\(text)' is not a number from 1 to 65535")
            }
            port = number
        }
        return (.tcp(host: host, port: port), user, password, database)
    }

    private static func percentDecoded(_ bytes: ArraySlice<UInt8>, _ bad: (String) -> CodedError) throws(CodedError) -> String {
        var decoded: [UInt8] = []
        var index = bytes.startIndex
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) else {
                    throw bad("a '%' in the credentials is not followed by two hex digits")
                }
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: decoded, as: UTF8.self)
    }
}

extension RedisOptions.Server {
    /// The server of `--redis URL`, for a worker and `redis-status` alike: its endpoint, user and
    /// database; TLS for `rediss://` with `--ca-file`, `--tls-cert`, `--tls-key` (which go with
    /// `rediss://` only, and the last two together; `shared` names those the command also takes
    /// without one); the URL's password, else the environment's
    /// (``RedisOptions/password(_:)``).
    package init(
        _ url: String, _ arguments: ParsedArguments, shared: Set<String>, caFile: Option<String> = RedisOptions.caFile,
        environment: CommandEnvironment, _ usage: (String) -> CodedError
    ) throws(CodedError) {
        let plain = RedisOptions.plainScheme(url)
        var sentinel: RedisOptions.Sentinel?
        let (endpoint, user, urlPassword, database): (RedisOptions.Endpoint, String?, String?, Int)
        if plain.hasPrefix("redis+sentinel://") {
            let parsed = try RedisOptions.parseSentinelURL(plain)
            sentinel = RedisOptions.Sentinel(
                nodes: parsed.sentinels, service: parsed.service, password: try RedisOptions.sentinelPassword(environment))
            (endpoint, user, urlPassword, database) = (parsed.sentinels[0], parsed.user, parsed.password, parsed.database)
        } else {
            (endpoint, user, urlPassword, database) = try RedisOptions.parseURL(plain)
        }
        var tls: RedisOptions.TLS?
        if RedisOptions.usesTLS(url) {
            let given = RedisOptions.TLS(
                caFile: arguments[caFile], certificateFile: arguments[RedisOptions.tlsCertificate],
                keyFile: arguments[RedisOptions.tlsKey])
            if (given.certificateFile == nil) != (given.keyFile == nil) {
                throw usage("'\(RedisOptions.tlsCertificate.name)' and '\(RedisOptions.tlsKey.name)' go together")
            }
            // The client key is a key file: this user's, readable by nobody else, in a folder
            // nobody else can write (as --auth-key-file and the device keys).
            if let key = given.keyFile {
                do throws(PrivateFileError) {
                    // Read to check it; its buffer is wiped when dropped.
                    _ = try PrivateFile.read(key)
                } catch {
                    throw CodedError(.io, "\(RedisOptions.tlsKey.name): \(error)")
                }
            }
            tls = given
        } else {
            let tlsKeys = [caFile, RedisOptions.tlsCertificate, RedisOptions.tlsKey].filter { !shared.contains($0.name) }
            if let given = tlsKeys.first(where: { arguments.isGiven($0) }) {
                throw usage("'\(given.name)' goes with a rediss:// URL")
            }
        }
        var password = urlPassword
        if password == nil { password = try RedisOptions.password(environment) }
        self.init(endpoint: endpoint, sentinel: sentinel, tls: tls, user: user, password: password, database: database)
    }
}

extension Option where Value == String {
    /// An option that goes with `--redis`: its help says so first.
    fileprivate init(worker name: String, _ placeholder: String, _ help: String) {
        self.init(name, placeholder, "With --redis, " + help)
    }
}

extension Option where Value == Int {
    /// A number that goes with `--redis`: its help says so first.
    fileprivate init(worker name: String, _ placeholder: String, _ help: String) {
        self.init(name, placeholder, "With --redis, " + help)
    }
}

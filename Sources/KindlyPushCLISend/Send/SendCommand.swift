package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore

/// `kindly-push send`: the backend's last hop. Reads `{"token", "push"}` documents and POSTs
/// each push to APNs over HTTP/2 (one connection, or a pool of `--connections`), with
/// provider-token authentication
/// (docs/running-at-scale.md, "Sending to APNs").
///
/// Declared and run in `kindly-push-send`, the only binary that links nghttp2 and libcrypto
/// (``SiblingBinary/send``); every other binary hands it there. Its run is in
/// SendCommand+Run.swift.
package struct SendCommand: RunnableCommand {
    package static let name = "send"
    package static let arguments = ["[<file> ...]"]
    package static let abstract = "Send sealed pushes to APNs, FCM or Web Push over HTTP/2 and print each answer."
    package static let examples = [
        Example(
            "Send one push with the team's APNs auth key",
            "kindly-push send --auth-key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --topic com.example.app < send.json"
        ),
        Example(
            "Send a stream of pushes to the development server",
            "kindly-push send --jsonl --sandbox --auth-key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --topic com.example.app < pushes.jsonl > results.jsonl"
        ),
    ]
    package static let discussion = """
        Reads {"token": HEX, "push": {APNs document}} (optionally "id", which the result
        repeats, and "app", "collapse_id", "expiration" and "priority", as seal
        --recipients-inline carries them) on standard input (with --jsonl, one per line) and
        POSTs each push to /3/device/TOKEN of api.push.apple.com (or of the server of its app
        in --config's file) over one HTTP/2 connection (--connections N: up to N, each push to
        the least busy one with room), as many at once as the server allows on each (its
        SETTINGS_MAX_CONCURRENT_STREAMS; the first request of a connection goes alone). Each input gives
        one result, in input order: {"token", "status", "apns_id"}, with "reason" (APNs's own
        word) when APNs refused the push and "unregistered_at" (milliseconds) for 410: drop that
        device. A line that is not such a document, or whose push is over 4096 bytes, is that
        line's error object and is not sent.

        The provider token (ES256, signed with the .p8 key, which stays in wiped memory) is
        made at the start and renewed after 50 minutes, and once more when APNs answers 403
        ExpiredProviderToken (that request is sent again). A silent push (aps has
        content-available and no alert) goes as apns-push-type background with priority 5,
        every other as alert with priority 10. 429, 500 and 503 are retried with exponential
        backoff and jitter (5 attempts), never sooner than the answer's retry-after (one over
        60 s ends the push at once, its result with "retry_after"); a server whose TLS handshake
        chooses no h2 is refused; a GOAWAY or a dropped connection reconnects and sends
        again what was in flight, so a push can reach APNs twice (at least once, never lost).
        SIGTERM or SIGINT stop the reading; what was read is sent and answered, then send exits.
        The exit status is 0 whenever a result was printed, whatever APNs answered.

        With --config, a line may instead name a Web Push subscription: {"subscription":
        {"endpoint": URL, "keys": {"p256dh", "auth"}}, "push": {...}}, for an app with a webpush
        section. Its push (at most 3993 bytes) is encrypted for those keys (RFC 8291,
        aes128gcm), signed with the app's VAPID key and POSTed to the endpoint with TTL,
        Urgency and Topic; the result is {"platform": "webpush", "endpoint", "status",
        "location"}, with "gone": true for 404 and 410: drop that subscription. A line
        {"fcm_token": T, "push": {...}}, for an app with an fcm section, goes to FCM's HTTP v1
        API as a data-only message (data.kindly_push: the push, at most 3989 bytes) with the
        access token of the app's service account (fetched with an RS256 assertion, reused
        until 5 minutes before it runs out, fetched again once on a 401); the result is
        {"platform": "fcm", "fcm_token", "status", "name"}, with "gone": true for 404
        (UNREGISTERED). Every result names its "platform" (apns, fcm or webpush).

        With --redis, send is a worker of a Redis Streams consumer group: each entry's "doc" is
        one such document and its result goes to the output stream once (docs/running-at-scale.md);
        an entry taken over from a worker that died is sent again.
        """

    package static let config = Option<String>(
        "--config", "PATH",
        "Send for the apps of this YAML file (each its APNs team, key, topic and server, its FCM service account, its Web Push VAPID key; "
            + "a line's \"app\" picks one) "
            + "instead of the one app of the options below.")
    package static let check = Flag("--check", "With --config: check the file and its key files, print what it found and exit.")
    package static let authKeyFile = Option<String>(
        "--auth-key-file", "PATH", "The APNs auth key (AuthKey_KEYID.p8, PKCS#8 PEM, mode 0600) that signs the provider token.")
    package static let keyID = Option<String>("--key-id", "KID", "The auth key's 10-character Key ID (the token's kid).")
    package static let teamID = Option<String>("--team-id", "TEAM", "The 10-character Team ID of the key (the token's iss).")
    package static let topic = Option<String>("--topic", "BUNDLE_ID", "The app's bundle ID (apns-topic).")
    package static let sandbox = Flag("--sandbox", "Send to the development server, api.sandbox.push.apple.com.")
    package static let apnsURL = Option<String>(
        "--apns-url", "URL", "Send to this server instead of APNs: https://HOST[:PORT] (a test server).")
    /// One `--ca-file` for every TLS server send talks to: APNs (or `--apns-url`) and a
    /// `rediss://` Redis.
    /// APNs's authorities: `--ca-file`, which the workers' option group names for a `rediss://`
    /// server (send's is ``redisCAFile``: a private Redis CA must not be trusted for APNs).
    package static let caFile = RedisOptions.caFile.help(
        "Trust only the certificate authorities of this PEM file, not the system's, for APNs (--apns-url: a test server)."
    )
    package static let redisCAFile = Option<String>(
        "--redis-ca-file", "PATH", "rediss:// only: verify the Redis server's certificate against the authorities in PATH (PEM).")
    package static let expiration = Option<Int>(
        "--expiration", "SECONDS",
        "How long APNs keeps a push for an offline device: apns-expiration is now plus SECONDS (0: deliver once or drop).")
    package static let connections = Option<Int>(
        "--connections", "N",
        "Open up to N HTTP/2 connections to APNs (1 to \(SendOptions.mostConnections), default 1); each push goes to the least busy one with room."
    )
    package static let jsonl = StreamOptions.jsonl.help("Read one document per line and write one result per line, in input order.")

    package static let output = StreamOptions.output.help(
        "Write the results to this file (mode 0600) as they are known, as PATH.partial renamed to PATH at the end: a send killed outright leaves them in PATH.partial."
    )
    /// `--metrics`, which send takes with `--jsonl` too: its answers by status.
    package static let metrics = RedisOptions.metricsAddress.help(
        "Serve Prometheus metrics of the sending (answers by status and reason, latency, retries, reconnections: docs/operating.md) "
            + "at http://HOST:PORT/metrics and a health check at /healthz, with --jsonl or --redis (PORT alone is 127.0.0.1:PORT).")
    /// `--redis` without the `--jobs` that send does not take.
    package static let redisURL = RedisOptions.url.help(
        RedisOptions.urlHelp + "a batch's pushes are sent at once, as many as the server allows, and committed once all are answered.")
    /// The worker's other options but `--ca-file`, which is send's own (for APNs).
    package static let redis = OptionGroup(RedisOptions.options, except: [caFile, redisURL, metrics])
    package static let help = SharedOptions.help.taken

    /// The production server and the development one.
    package static let productionURL = "https://api.push.apple.com"
    package static let sandboxURL = "https://api.sandbox.push.apple.com"
    /// The longest `--expiration`: 30 days (APNs keeps a push no longer).
    package static let longestExpiration = 30 * 86_400

    package let options: SendOptions
    /// The services of this binary: the worker of `send --redis` (``CommandTable/Services/redis``).
    let services: CommandTable.Services

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        func usage(_ text: String) -> CodedError { .usage(text, command: Self.name) }
        func required(_ key: Option<String>) throws(CodedError) -> String { try arguments.required(key, command: Self.name) }
        func identifier(_ key: Option<String>) throws(CodedError) -> String {
            let value = try required(key)
            guard Self.isAppleID(value) else { throw usage("'\(key.name)' takes Apple's 10-character ID (capital letters and digits)") }
            return value
        }
        let stream = try StreamOptions(
            arguments, command: Self.name, environment: environment, shared: [Self.caFile, Self.metrics], redisCAFile: Self.redisCAFile)
        let configPath = arguments[Self.config]
        if let configPath {
            if configPath.isEmpty { throw usage("'\(Self.config.name)' takes a path") }
            // Each app's own options are in the file: one place for them, never two that disagree.
            let oneApp: [any OptionKey] = [
                Self.authKeyFile, Self.keyID, Self.teamID, Self.topic, Self.sandbox, Self.apnsURL, Self.caFile, Self.connections,
            ]
            if let given = oneApp.first(where: { arguments.isGiven($0) }) {
                throw usage("give either --config or '\(given.name)': the file names each app's key, topic and server")
            }
        } else if arguments[Self.check] {
            throw usage("'\(Self.check.name)' checks the file of --config")
        }
        var options = SendOptions(
            keyFile: configPath == nil ? try required(Self.authKeyFile) : "", keyID: configPath == nil ? try identifier(Self.keyID) : "",
            teamID: configPath == nil ? try identifier(Self.teamID) : "", topic: configPath == nil ? try required(Self.topic) : "",
            serverURL: arguments[Self.sandbox] ? Self.sandboxURL : Self.productionURL, caFile: arguments[Self.caFile], expiration: nil,
            isLineMode: stream.isLineMode, inputs: stream.inputs, outputPath: stream.outputPath,
            clockFile: environment[SendOptions.testClockVariable], redis: stream.redis)
        options.configPath = configPath
        options.isCheck = arguments[Self.check]
        if configPath == nil, !Self.isTopic(options.topic) { throw usage("'\(Self.topic.name)' takes a bundle ID") }
        if let url = arguments[Self.apnsURL] {
            if arguments[Self.sandbox] { throw usage("give either --sandbox or --apns-url, not both") }
            // The URL is not quoted: a user and password in it must not reach standard error.
            guard let text = Self.serverURL(url) else {
                throw usage("'\(Self.apnsURL.name)' takes https://HOST[:PORT]: no user or password, path, query or fragment")
            }
            options.serverURL = text
        }
        if options.caFile?.isEmpty == true { throw usage("'\(Self.caFile.name)' takes a path") }
        if options.redis == nil, let address = arguments[Self.metrics] {
            guard stream.isLineMode else { throw usage("'\(Self.metrics.name)' goes with --jsonl or --redis") }
            options.metrics = try RedisOptions.parseMetrics(address, usage)
        }
        if arguments.isGiven(Self.connections) {
            guard let count = arguments[Self.connections], (1...SendOptions.mostConnections).contains(count) else {
                throw usage("'\(Self.connections.name)' takes a whole number from 1 to \(SendOptions.mostConnections)")
            }
            options.connections = count
        }
        if arguments.isGiven(Self.expiration) {
            guard let seconds = arguments[Self.expiration], (0...Self.longestExpiration).contains(seconds) else {
                throw usage("'\(Self.expiration.name)' takes a whole number of seconds from 0 to \(Self.longestExpiration)")
            }
            options.expiration = seconds
        }
        self.options = options
        services = stream.services
    }

    /// Whether `text` is one of Apple's 10-character IDs (a Team ID, a Key ID): capital letters
    /// and digits.
    package static func isAppleID(_ text: String) -> Bool {
        text.utf8.count == 10 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }

    /// Whether `text` may be an `apns-topic`: not empty, no space or control character.
    package static func isTopic(_ text: String) -> Bool {
        !text.isEmpty && !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
    }

    /// A push server's URL as sent to: `https://HOST[:PORT]` without its final `/`s; `nil` for
    /// anything else (a user or password, a path, a query or a fragment).
    package static func serverURL(_ url: String) -> String? {
        var text = url
        while text.utf8.last == UInt8(ascii: "/") { text = String(text.utf8.dropLast())! }
        guard text.utf8.starts(with: "https://".utf8), isHostAndPort(text.utf8.dropFirst(8)) else { return nil }
        return text
    }

    /// `HOST[:PORT]`: a name or IPv4 address of letters, digits, dots and hyphens, or an IPv6
    /// address in brackets, then at most a port of up to five digits; nothing else (no `user@`,
    /// no path, query or fragment).
    package static func isHostAndPort(_ text: Substring.UTF8View) -> Bool {
        var host = text[...]
        var port: Substring.UTF8View.SubSequence?
        if host.first == UInt8(ascii: "[") {
            guard let close = host.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let inside = host[host.index(after: host.startIndex)..<close]
            guard !inside.isEmpty, inside.allSatisfy({ $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") || isHexDigit($0) }) else {
                return false
            }
            let rest = host[host.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == UInt8(ascii: ":") else { return false }
                port = rest.dropFirst()
            }
            host = inside
        } else {
            if let colon = host.firstIndex(of: UInt8(ascii: ":")) {
                port = host[host.index(after: colon)...]
                host = host[..<colon]
            }
            guard !host.isEmpty, host.allSatisfy({ isHostCharacter($0) }) else { return false }
        }
        if let port {
            guard (1...5).contains(port.count), port.allSatisfy({ (0x30...0x39).contains($0) }) else { return false }
        }
        return true
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    private static func isHostCharacter(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "-")
    }
}

/// What `kindly-push send` was asked to do, checked; its run does it.
package struct SendOptions: Sendable {
    /// The environment variable of the test clock: a file holding the Unix time in seconds,
    /// read instead of the system's clock for the provider token's `iat` and age, and for
    /// `--expiration`. For tests only (the test server reads the same file).
    package static let testClockVariable = "KINDLY_PUSH_TEST_CLOCK_FILE"

    package var keyFile: String
    package var keyID: String
    package var teamID: String
    package var topic: String
    /// `https://HOST[:PORT]`, without a final `/`.
    package var serverURL: String
    package var caFile: String?
    /// `--expiration SECONDS`.
    package var expiration: Int?
    package var isLineMode: Bool
    /// The files to read, in order; empty: standard input.
    package var inputs: [String]
    package var outputPath: String?
    /// ``testClockVariable``'s file.
    package var clockFile: String?
    /// `--redis` and its options: send runs as a Redis Streams worker.
    package var redis: RedisOptions?
    /// `--metrics` of a `--jsonl` run (a worker's is its ``RedisOptions/metrics``).
    package var metrics: RedisOptions.MetricsAddress?
    /// `--config PATH`: the apps are this file's (the one-app options above are then empty).
    package var configPath: String?
    /// `--check`: the configuration is checked and described, and nothing is sent.
    package var isCheck = false
    /// `--connections N`: HTTP/2 connections to APNs at most.
    package var connections = 1
    /// The largest `--connections`.
    package static let mostConnections = 64
}

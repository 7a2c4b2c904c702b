import Foundation
import KindlyPush
import KindlyPushCLI
import KindlyPushCLIRedis
import KindlyPushCore
import Testing

@Suite("seal --recipients-inline: a line's \"id\" is copied to its output", .offThePool)
struct CorrelationIDTests {
    static let plaintext = #"{"chat_id":"c","title":"t","body":"b"}"#

    @Test("every kind of id, on the fast path and the strict one, copied unchanged; the push inside decrypts", arguments: [1, 2])
    func ids(_ jobs: Int) throws {
        let key = DeviceKey.generate()
        let ids = [#""row-1""#, "42", "-1.5e3", "true", "null", #"{"table":"outbox","row":[7,"x"]}"#, #"["a",1]"#, #""\u00e9\n""#]
        var input = ""
        for id in ids {
            // Compact (the fast path) and with spaces (the strict path).
            input += #"{"id":\#(id),"public_key":"\#(key.publicKey.base64URL)","plaintext":\#(Self.plaintext)}"# + "\n"
            input += #"{"public_key": "\#(key.publicKey.base64URL)", "plaintext": \#(Self.plaintext), "id": \#(id)}"# + "\n"
        }
        let output = try CLI.run(["seal", "--jsonl", "--recipients-inline", "--jobs", "\(jobs)"], stdin: Array(input.utf8))
        #expect(output.status == 0)
        let lines = output.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 2 * ids.count)
        var pushes: [(key: DeviceKey, push: String)] = []
        for (index, line) in lines.enumerated() {
            let id = ids[index / 2]
            let prefix = #"{"id":"# + String(decoding: JSONWriter.compactBytes(try JSONValue(parsing: id)), as: UTF8.self) + #","push":"#
            #expect(line.hasPrefix(prefix), "line \(index + 1): \(line.prefix(80))")
            #expect(line.hasSuffix("}}}"))
            let push = try JSONValue(parsing: line)["push"]
            pushes.append((key, String(decoding: JSONWriter.compactBytes(try #require(push)), as: UTF8.self)))
        }
        for result in try ReferenceDecryption.decrypt(pushes) {
            #expect((try? result.get()) == (try JSONValue(parsing: Self.plaintext)))
        }
    }

    @Test("a failing line with an id gives the error object with the id after \"error\"; --summary still counts it")
    func errorsWithID() throws {
        let key = DeviceKey.generate()
        let input =
            [
                #"{"id":7,"public_key":"not-a-key","plaintext":\#(Self.plaintext)}"#,
                #"{"id":{"k":[1]},"public_key":"\#(key.publicKey.base64URL)","plaintext":{"chat_id":""}}"#,
                #"{"id":1,"id":2,"public_key":"\#(key.publicKey.base64URL)","plaintext":\#(Self.plaintext)}"#,
                #"{"id":3"#,
                // Compact lines, whose plaintext the sealer reads: a rule broken, another spelling,
                // a low-order key, a member after the plaintext (the strict reader says which).
                #"{"id":8,"public_key":"\#(key.publicKey.base64URL)","plaintext":{"chat_id":"","title":"t","body":"b"}}"#,
                #"{"id":9,"public_key":"\#(key.publicKey.base64URL)","plaintext":{"chat_id": "c", "title": "Caf\u00e9", "body": "b"}}"#,
                #"{"id":10,"public_key":"\#(Base64.urlEncoded([UInt8](repeating: 0, count: 32)))","plaintext":\#(Self.plaintext)}"#,
                #"{"id":11,"public_key":"\#(key.publicKey.base64URL)","plaintext":\#(Self.plaintext),"x":1}"#,
            ].joined(separator: "\n") + "\n"
        let output = try CLI.run(["seal", "--jsonl", "--recipients-inline", "--summary"], stdin: Array(input.utf8))
        #expect(output.status == 0)
        let lines = output.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 8)
        #expect(lines[0].hasPrefix(#"{"error":{"code":"bad_input","message":"\"public_key\": "#))
        #expect(lines[0].hasSuffix(#"},"id":7}"#))
        #expect(lines[1].hasPrefix(#"{"error":{"code":"bad_input","#))
        #expect(lines[1].hasSuffix(#"},"id":{"k":[1]}}"#))
        // A member twice (the id too) and a line that is not JSON have no id to copy.
        #expect(lines[2] == #"{"error":{"code":"bad_input","message":"a member name occurs twice"}}"#)
        #expect(!lines[3].contains(#""id""#))
        #expect(
            lines[4] == #"{"error":{"code":"bad_input","message":"the plaintext is not a Kindly message: \"chat_id\" is empty"},"id":8}"#)
        #expect(lines[5].hasPrefix(#"{"id":9,"push":{"aps":"#))
        let push = try #require(try JSONValue(parsing: lines[5])["push"])
        let payload = try KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])).decryptResult(userInfo: push).get()
        #expect(payload.title == "Café")
        #expect(lines[6] == #"{"error":{"code":"bad_input","message":"the device public key gives an all-zero shared secret"},"id":10}"#)
        #expect(lines[7].hasPrefix(#"{"error":{"code":"bad_input","message":"unknown member \"x\"; "#))
        #expect(lines[7].hasSuffix(#"},"id":11}"#))
        #expect(output.stderr.contains("8 lines: 1 ok, 7 bad_input"), "\(output.stderr)")
    }

    @Test("without an id the output is the push alone, as before; one document (no --jsonl) with an id is {\"id\", \"push\"}")
    func withoutID() throws {
        let key = DeviceKey.generate()
        let line = #"{"public_key":"\#(key.publicKey.base64URL)","plaintext":\#(Self.plaintext)}"#
        let plain = try CLI.run(["seal", "--jsonl", "--recipients-inline"], stdin: Array((line + "\n").utf8))
        #expect(plain.stdout.hasPrefix(#"{"aps":"#))
        let single = try CLI.run(
            ["seal", "--recipients-inline"],
            stdin: Array(#"{"id":"x","public_key":"\#(key.publicKey.base64URL)","plaintext":\#(Self.plaintext)}"#.utf8))
        #expect(single.status == 0)
        #expect(single.stdout.hasPrefix(#"{"id":"x","push":{"aps":"#))
        let failing = try CLI.run(["seal", "--recipients-inline"], stdin: Array(#"{"id":"x","public_key":"no","plaintext":{}}"#.utf8))
        #expect(failing.status == 65)
        #expect(failing.stdout == "")
    }
}

@Suite("--redis: the URL and the worker options", .offThePool)
struct RedisOptionsTests {
    func options(_ arguments: [String], environment: CommandEnvironment = [:]) throws(CodedError) -> RedisOptions? {
        let parsed = try ParsedArguments.parse(arguments, specs: RedisOptions.options + StreamOptions.options, command: "seal")
        return try RedisOptions(parsed, command: "seal", environment: environment)
    }

    @Test("URLs: host, port, database, user and percent-encoded password, IPv6, a Unix socket")
    func urls() throws {
        #expect(try RedisOptions.parseURL("redis://localhost") == (.tcp(host: "localhost", port: 6379), nil, nil, 0))
        let full = try RedisOptions.parseURL("redis://alice:p%40ss%3Aw@10.0.0.5:6380/3")
        #expect(full == (.tcp(host: "10.0.0.5", port: 6380), "alice", "p@ss:w", 3))
        #expect(try RedisOptions.parseURL("redis://:secret@[::1]:7000/") == (.tcp(host: "::1", port: 7000), nil, "secret", 0))
        #expect(try RedisOptions.parseURL("unix:///run/redis.sock") == (.unix(path: "/run/redis.sock"), nil, nil, 0))
        #expect(try RedisOptions.parseURL("unix://:pw@/run/redis.sock") == (.unix(path: "/run/redis.sock"), nil, "pw", 0))
        for bad in [
            "http://x", "redis://", "redis://h:0", "redis://h:99999", "redis://h:x", "redis://h/db", "unix://relative", "redis://:%4@h",
        ] {
            #expect(throws: CodedError.self, "\(bad)") { try RedisOptions.parseURL(bad) }
        }
    }

    @Test("sentinel URLs: the sentinels in order, the service, the database, the data nodes' credentials; each part checked")
    func sentinelURLs() throws {
        let parsed = try RedisOptions.parseSentinelURL("redis+sentinel://alice:p%40ss@10.0.0.5:26379,[::1]:26380,s3:5000/chat/2")
        #expect(parsed.sentinels == [.tcp(host: "10.0.0.5", port: 26379), .tcp(host: "::1", port: 26380), .tcp(host: "s3", port: 5000)])
        #expect(parsed.service == "chat" && parsed.user == "alice" && parsed.password == "p@ss" && parsed.database == 2)
        let bare = try RedisOptions.parseSentinelURL("redis+sentinel://h:26379/mymaster")
        #expect(bare.sentinels == [.tcp(host: "h", port: 26379)] && bare.service == "mymaster" && bare.user == nil && bare.database == 0)
        for bad in [
            "redis+sentinel://h:26379", "redis+sentinel://h:26379/", "redis+sentinel://h/svc", "redis+sentinel://h:1,/svc",
            "redis+sentinel://h:0/svc", "redis+sentinel://h:1/svc/x", "redis+sentinel://h:1/svc/1/2", "redis://h:1/svc",
        ] {
            #expect(throws: CodedError.self, "\(bad)") { try RedisOptions.parseSentinelURL(bad) }
        }
        // The password leaves the command line as a redis:// URL's does; the sentinels' own comes from the environment.
        #expect(RedisOptions.withoutPassword("rediss+sentinel://u:pw@h:1,g:2/svc")! == ("rediss+sentinel://u@h:1,g:2/svc", "pw"))
        let worker = try #require(
            try options(
                ["--redis", "rediss+sentinel://h:1,g:2/svc/3", "--from", "in", "--group", "g", "--to", "out", "--min-replicas", "1"],
                environment: ["KINDLY_PUSH_REDIS_PASSWORD": "data", "KINDLY_PUSH_SENTINEL_PASSWORD": "watch"]))
        #expect(
            worker.server
                == RedisOptions.Server(
                    endpoint: .tcp(host: "h", port: 1),
                    sentinel: RedisOptions.Sentinel(
                        nodes: [.tcp(host: "h", port: 1), .tcp(host: "g", port: 2)], service: "svc", password: "watch"),
                    tls: RedisOptions.TLS(), password: "data", database: 3))
        #expect(worker.server.place == "rediss+sentinel://h:1,g:2/svc/3")
        #expect(worker.minReplicas == 1 && worker.replicaTimeout == RedisOptions.defaultReplicaTimeout)
    }

    @Test("--min-replicas and --replica-timeout: numbers in range, the timeout only with a count")
    func replicaOptions() throws {
        let base = ["--redis", "redis://h", "--from", "in", "--group", "g", "--to", "out"]
        #expect(try options(base)?.minReplicas == 0)
        let waiting = try #require(try options(base + ["--min-replicas", "2", "--replica-timeout", "250"]))
        #expect(waiting.minReplicas == 2 && waiting.replicaTimeout == 250)
        for bad in [
            ["--min-replicas", "-1"], ["--min-replicas", "101"], ["--replica-timeout", "500"],
            ["--min-replicas", "1", "--replica-timeout", "0"],
        ] {
            #expect(throws: CodedError.self, "\(bad)") { try options(base + bad) }
        }
        #expect(throws: CodedError.self) { try options(["--min-replicas", "1"]) }
    }

    @Test(
        "a worker and redis-status read one server from a URL: endpoint, TLS, user, password, database; AUTH and SELECT open its sessions")
    func oneServer() throws {
        let url = "rediss://alice:s3cret@10.0.0.5:6380/3"
        let worker = try #require(try options(["--redis", url, "--from", "in", "--group", "g", "--to", "out", "--ca-file", "/etc/ca.pem"]))
        let expected = RedisOptions.Server(
            endpoint: .tcp(host: "10.0.0.5", port: 6380), tls: RedisOptions.TLS(caFile: "/etc/ca.pem"), user: "alice", password: "s3cret",
            database: 3)
        #expect(worker.server == expected)
        let arguments = ["--redis", url, "--from", "in", "--group", "g", "--ca-file", "/etc/ca.pem"]
        let status = try RedisStatusCommand(
            try ParsedArguments.parse(arguments, specs: RedisStatusCommand.options, command: RedisStatusCommand.name), environment: [:])
        #expect(status.request.server == expected)
        #expect(expected.sessionCommands == [["AUTH", "alice", "s3cret"], ["SELECT", "3"]].map { $0.map { Array($0.utf8) } })
        #expect(expected.place == "rediss://10.0.0.5:6380/3 as alice")
        // No password in the URL: the environment's; no user: AUTH with the password alone.
        let fromEnvironment = try RedisStatusCommand(
            try ParsedArguments.parse(
                ["--redis", "unix:///run/r.sock", "--from", "in", "--group", "g"], specs: RedisStatusCommand.options,
                command: RedisStatusCommand.name), environment: ["KINDLY_PUSH_REDIS_PASSWORD": "pw"])
        #expect(fromEnvironment.request.server == RedisOptions.Server(endpoint: .unix(path: "/run/r.sock"), password: "pw"))
        #expect(fromEnvironment.request.server.sessionCommands == [["AUTH", "pw"].map { Array($0.utf8) }])
        #expect(fromEnvironment.request.server.place == "unix:///run/r.sock")
        #expect(RedisOptions.Server(endpoint: .unix(path: "/run/r.sock")).sessionCommands.isEmpty)
        // The TLS options go with rediss:// only, for both.
        #expect(throws: CodedError.self) {
            try RedisStatusCommand(
                try ParsedArguments.parse(
                    ["--redis", "redis://h", "--from", "in", "--group", "g", "--ca-file", "/etc/ca.pem"], specs: RedisStatusCommand.options,
                    command: RedisStatusCommand.name), environment: [:])
        }
        #expect(throws: CodedError.self) {
            try options(["--redis", "redis://h", "--from", "in", "--group", "g", "--to", "out", "--ca-file", "/x"])
        }
    }

    @Test("the streams and group are required, numbers checked, worker options need --redis; the password may come from the environment")
    func rules() throws {
        let base = ["--redis", "redis://h", "--from", "in", "--group", "g", "--to", "out"]
        let parsed = try #require(try options(base, environment: ["KINDLY_PUSH_REDIS_PASSWORD": "pw"]))
        #expect(parsed.server.password == "pw")
        #expect(parsed.batch == RedisOptions.defaultBatch && parsed.maxDeliveries == 5 && parsed.exitWhenIdle == nil)
        #expect(try options([]) == nil)
        for arguments in [
            Array(base.prefix(6)), base + ["--batch", "0"], base + ["--claim-idle", "x"], ["--from", "in"],
            ["--redis", "redis://h", "--from", "s", "--group", "g", "--to", "s"],
            base + ["--dead-letter", "in"], base + ["--dead-letter", "out"], base + ["--dead-letter", ""],
        ] {
            #expect(throws: CodedError.self, "\(arguments)") { try options(arguments) }
        }
    }

    @Test("a URL's password leaves the arguments for KINDLY_PUSH_REDIS_PASSWORD; the user, host and database stay")
    func passwordOutOfArguments() {
        var arguments = [
            "seal", "--redis", "redis://alice:p%40ss@10.0.0.5:6380/3", "--from", "in", "--redis=unix://:pw@/run/r.sock", "--to",
            "redis://:not-an-option-value@h",
        ]
        var environment: CommandEnvironment = ["HOME": "/h"]
        RedisOptions.takePasswordOutOfArguments(&arguments, environment: &environment)
        #expect(
            arguments == [
                "seal", "--redis", "redis://alice@10.0.0.5:6380/3", "--from", "in", "--redis=unix:///run/r.sock", "--to",
                "redis://:not-an-option-value@h",
            ])
        // The password of the last URL that carries one is the one kept.
        #expect(environment["KINDLY_PUSH_REDIS_PASSWORD"] == "pw")
        var plain = ["decrypt", "--redis", "redis://h:1/2"]
        var untouched: CommandEnvironment = [:]
        RedisOptions.takePasswordOutOfArguments(&plain, environment: &untouched)
        #expect(plain == ["decrypt", "--redis", "redis://h:1/2"] && untouched["KINDLY_PUSH_REDIS_PASSWORD"] == nil)
        #expect(RedisOptions.withoutPassword("redis://secret@h")?.0 == "redis://h")
        #expect(RedisOptions.withoutPassword("redis://u:s%3Ar@h/1")! == ("redis://u@h/1", "s:r"))
    }

    @Test("--metrics: PORT alone is loopback, HOST:PORT and [IPV6]:PORT as given; anything else is a usage error")
    func metricsAddresses() throws {
        func usage(_ text: String) -> CodedError { CodedError(.usage, text) }
        #expect(try RedisOptions.parseMetrics("9464", usage) == .init(host: "127.0.0.1", port: 9464))
        #expect(try RedisOptions.parseMetrics("0.0.0.0:80", usage) == .init(host: "0.0.0.0", port: 80))
        #expect(try RedisOptions.parseMetrics("[::1]:9000", usage) == .init(host: "::1", port: 9000))
        for bad in ["", "x", ":80", "h:0", "h:70000", "[::1]", "[::1]x9"] {
            #expect(throws: CodedError.self, "\(bad)") { try RedisOptions.parseMetrics(bad, usage) }
        }
    }

    @Test("cluster hash tags: the text between the first { and the next }, when not empty")
    func hashTags() {
        #expect(RedisOptions.hashTag("{pushes}:in") == "pushes")
        #expect(RedisOptions.hashTag("a{b}{c}") == "b")
        #expect(RedisOptions.hashTag("{}x") == nil)
        #expect(RedisOptions.hashTag("plain") == nil)
        #expect(RedisOptions.hashTag("{open") == nil)
    }
}

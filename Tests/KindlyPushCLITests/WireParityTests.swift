import Foundation
import KindlyPush
import Testing

/// The parity matrix: every front end of the command, for every wire version and mode,
/// gives version 1's outcome for the same case, the pins a version needs given. What is compared
/// is what does not depend on the version by design: the exit status, standard output (with
/// `kindly` envelopes, which are the version's own, taken out of `--apply`'s documents) and the
/// reason code on standard error; never the envelope or a message's version-specific detail.
@Suite("Wire parity: every front end, every version and mode, as version 1", .offThePool)
struct WireParityTests {
    enum Sealing: String, CaseIterable, CustomTestStringConvertible {
        case one = "v1"
        case two = "v2"
        case threeBase = "v3 mode_base"
        case threeAuth = "v3 mode_auth"
        var testDescription: String { rawValue }
        var wire: WireVersion { self == .one ? .one : self == .two ? .two : .three }
        var needsSender: Bool { self == .two || self == .threeAuth }
    }

    /// The cases of one matrix row: the name and the input line.
    static let cases = ["message_id", "no message_id", "other device", "tampered", "not Kindly", "bad line"]

    let keys: KeyFolder
    let sender = SenderKey.generate()

    init() throws {
        keys = try KeyFolder()
    }

    /// The input of `name` sealed as `sealing` (one line, no newline).
    func input(_ name: String, _ sealing: Sealing) throws -> String {
        switch name {
        case "not Kindly": return #"{"aps":{"alert":{"title":"Hi","body":"there"}}}"#
        case "bad line": return #"{"aps":"#
        default: break
        }
        let payload = try DecryptedPayload(
            chatId: "c-1", title: "Anna", body: "Lunch?", messageId: name == "no message_id" ? nil : "m-1", sentAt: 1_764_460_800)
        let recipient = name == "other device" ? DeviceKey.generate().publicKey : keys.key.publicKey
        var sealed = try KindlyPushSealer.seal(
            payload, for: recipient, wire: sealing.wire, from: sealing.needsSender ? sender : nil,
            // The reader's own placeholder: a pinned reader (v2, mode_auth) shows its own text, by design.
            placeholder: .default)
        if name == "tampered" {
            // A byte of the ciphertext, well inside its base64 text.
            let text = String(decoding: sealed, as: UTF8.self)
            let ct = try #require(text.range(of: #""ct":""#))
            let at = text.utf8.distance(from: text.startIndex, to: ct.upperBound) + 8
            sealed[at] = sealed[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        }
        return String(decoding: sealed, as: UTF8.self)
    }

    /// The reader's arguments: the key file, and the sender's key where the version proves one.
    func reader(_ sealing: Sealing) -> [String] {
        ["--key-file", keys.keyFile] + (sealing.needsSender ? ["--sender-key", sender.publicKey.base64URL] : [])
    }

    /// What is compared of a run: status, output without envelopes, and the error's code.
    func outcome(_ output: CLI.Output) throws -> String {
        var lines: [String] = []
        for line in output.stdout.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            guard var object = (try? JSONValue(parsing: String(line)))?.objectValue else {
                lines.append(String(line))
                continue
            }
            if object["kindly"]?.objectValue != nil { object["kindly"] = "envelope" }
            if var error = object["error"]?.objectValue {
                error["message"] = nil  // the text may name version-specific fields; the code may not differ
                object["error"] = .object(error)
            }
            lines.append(JSONValue.object(object).compactText)
        }
        let code = output.stderr.split(separator: ":").dropFirst().first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return "exit \(output.status) | \(lines.joined(separator: " / ")) | \(code)"
    }

    /// Every one-document front end of the command, by name, with its arguments.
    static let frontEnds: [(String, [String])] = [
        ("check", ["check"]),
        ("decrypt", ["decrypt"]),
        ("decrypt --apply", ["decrypt", "--apply"]),
        ("route killed", ["route", "--app-state", "killed"]),
        ("route background, extension", ["route", "--app-state", "background", "--extension"]),
        ("route foreground, other screen", ["route", "--app-state", "foreground", "--screen", "other"]),
        ("route foreground, the chat", ["route", "--app-state", "foreground", "--screen", "chat", "--chat-id", "c-1"]),
        ("route foreground, another chat", ["route", "--app-state", "foreground", "--screen", "chat", "--chat-id", "c-2"]),
    ]

    @Test("one document: check, decrypt, --apply and route in each app state and screen", arguments: cases)
    func oneDocument(_ name: String) throws {
        for (frontEnd, arguments) in Self.frontEnds {
            let command = arguments + (frontEnd == "check" ? [] : reader(.one))
            let reference = try outcome(try CLI.run(command, stdin: try input(name, .one)))
            for sealing in Sealing.allCases.dropFirst() {
                let command = arguments + (frontEnd == "check" ? [] : reader(sealing))
                let got = try outcome(try CLI.run(command, stdin: try input(name, sealing)))
                #expect(got == reference, "\(frontEnd), \(name), \(sealing.rawValue)")
            }
        }
    }

    /// Each stream runs with `--jobs 1` (one worker thread, reading and writing beside it) and
    /// `--jobs 2`: both as version 1's `--jobs 1`.
    @Test("--jsonl: check, decrypt, --apply and route over a stream of every case, with --jobs 1 and 2")
    func jsonLines() throws {
        let streams: [(String, [String])] = [
            ("check --jsonl", ["check", "--jsonl"]),
            ("decrypt --jsonl", ["decrypt", "--jsonl"]),
            ("decrypt --jsonl --apply", ["decrypt", "--jsonl", "--apply"]),
            ("route --jsonl", ["route", "--jsonl", "--app-state", "foreground", "--screen", "chat", "--chat-id", "c-1"]),
        ]
        for (frontEnd, arguments) in streams {
            func run(_ sealing: Sealing, jobs: String) throws -> String {
                let stream = try Self.cases.map { try input($0, sealing) }.joined(separator: "\n") + "\n"
                let command = arguments + (frontEnd.hasPrefix("check") ? [] : reader(sealing))
                return try outcome(try CLI.run(command + ["--jobs", jobs], stdin: stream))
            }
            let reference = try run(.one, jobs: "1")
            #expect(reference.hasPrefix("exit 0 |"), "\(frontEnd): \(reference)")
            for sealing in Sealing.allCases {
                for jobs in ["1", "2"] where (sealing, jobs) != (.one, "1") {
                    #expect(try run(sealing, jobs: jobs) == reference, "\(frontEnd), \(sealing.rawValue), --jobs \(jobs)")
                }
            }
        }
    }

    /// What `notify` did, as compared across versions: each run's exit status, its standard error
    /// (notification ids and the store's path, which is the run's own, taken out), and what the
    /// server showed, oldest first.
    static func notifyOutcome(_ runs: [CLI.Output], shown: [DesktopSession.Shown], store: String = "") -> String {
        let errors = runs.flatMap { $0.stderr.split(separator: "\n") }.map { line in
            let line = line.replacing(/notification \d+/, with: "notification N")
            return store.isEmpty ? String(line) : line.replacingOccurrences(of: store, with: "STORE")
        }
        return "exit \(runs.map(\.status)) | \(errors.joined(separator: " / ")) | "
            + shown.map { "\($0.summary) / \($0.body) (\($0.category))" }.joined(separator: ", ")
    }

    /// The real redis-server of `tools/with-redis` (tools/test runs this test beside it; without
    /// one it is skipped).
    static let redis: (port: String, password: String)? = {
        let environment = ProcessInfo.processInfo.environment
        guard let port = environment["KINDLY_PUSH_TEST_REDIS_PORT"], let password = environment["KINDLY_PUSH_TEST_REDIS_PASSWORD"] else {
            return nil
        }
        return (port, password)
    }()

    /// `redis-cli` against that server; its standard output (`--raw`).
    func redisCLI(_ arguments: [String]) throws -> String {
        let redis = try #require(Self.redis)
        let output = try CLI.run(
            ["-h", "127.0.0.1", "-p", redis.port, "--raw"] + arguments, environment: ["REDISCLI_AUTH": redis.password],
            executable: URL(fileURLWithPath: "/usr/bin/redis-cli"))
        #expect(output.status == 0, "redis-cli \(arguments): \(output.stderr)")
        return output.stdout
    }

    /// tools/test runs the suite beside a redis-server and says so: there the Redis row must run.
    @Test(
        "where the test command starts a redis-server, the Redis row runs rather than being skipped",
        .enabled(if: ProcessInfo.processInfo.environment["KINDLY_PUSH_TEST_REDIS_REQUIRED"] == "1"))
    func redisRowRuns() {
        #expect(Self.redis != nil, "KINDLY_PUSH_TEST_REDIS_REQUIRED=1 but no redis-server: run the suite under tools/with-redis")
    }

    /// Version 1's worker processes one entry at a time, the others two at once (`--jobs 2`):
    /// the same outputs in the same order.
    @Test(
        "Redis workers: every case through decrypt, --apply and route --redis, as version 1 (check has no --redis)",
        .enabled(if: redis != nil, "needs tools/with-redis"))
    func redisWorkers() throws {
        let redis = try #require(Self.redis)
        let workers: [(String, [String])] = [
            ("decrypt", ["decrypt"]),
            ("decrypt --apply", ["decrypt", "--apply"]),
            ("route", ["route", "--app-state", "foreground", "--screen", "chat", "--chat-id", "c-1"]),
        ]
        let run = UUID().uuidString.prefix(8)
        for (frontEnd, arguments) in workers {
            func outputs(_ sealing: Sealing) throws -> String {
                let name =
                    "parity:\(run):\(frontEnd.replacingOccurrences(of: " ", with: "")):\(sealing.rawValue.replacingOccurrences(of: " ", with: ""))"
                for line in try Self.cases.map({ try input($0, sealing) }) {
                    _ = try redisCLI(["XADD", name + ":in", "*", "doc", line])
                }
                let command =
                    arguments + reader(sealing) + [
                        "--redis", "redis://127.0.0.1:\(redis.port)", "--from", name + ":in", "--group", "g", "--to", name + ":out",
                        "--exit-when-idle", "300",
                    ] + (sealing == .one ? [] : ["--jobs", "2"])
                let worker = try CLI.run(command, stdin: "", environment: ["KINDLY_PUSH_REDIS_PASSWORD": redis.password])
                #expect(worker.status == 0, "\(frontEnd), \(sealing.rawValue): \(worker.stderr)")
                // `--raw` prints each entry as its id, then field and value lines: "doc", the
                // output line, "in", the input id.
                let lines = try redisCLI(["XRANGE", name + ":out", "-", "+"]).split(separator: "\n").map(String.init)
                let docs = lines.indices.filter { lines[$0] == "doc" && $0 + 1 < lines.count }.map { lines[$0 + 1] }
                #expect(docs.count == Self.cases.count, "\(frontEnd), \(sealing.rawValue): \(lines)")
                let result = try outcome(
                    CLI.Output(status: 0, stdout: docs.joined(separator: "\n"), stderr: "", stdoutBytes: [], timedOut: false))
                return result
            }
            let reference = try outputs(.one)
            for sealing in Sealing.allCases.dropFirst() {
                #expect(try outputs(sealing) == reference, "\(frontEnd) --redis, \(sealing.rawValue)")
            }
        }
    }
}

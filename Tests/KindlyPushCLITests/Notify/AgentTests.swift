import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// A program that runs beside the test (gdbus monitor), its output in a file.
final class Background {
    let process = Process()
    let outURL: URL

    init(_ arguments: [String], environment: [String: String]) throws {
        outURL = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-bg-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: outURL.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    var output: String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }

    deinit {
        // SIGKILL: a test runner may leave SIGTERM blocked in its children.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: outURL)
    }
}

/// The desktop agent (`notify --follow`) against dunst, driven over D-Bus as a host app drives it.
@Suite(
    "the desktop agent (notify --follow)",
    .serialized, .enabled(if: DesktopSession.isRunning, "no notification server: run under tools/with-desktop"), .offThePool)
struct AgentTests {
    let keys: KeyFolder
    let stranger = DeviceKey.generate()
    let marker = "A\(UInt32.random(in: 0...UInt32.max))"
    var state: String { keys.url.appendingPathComponent("state/state.sqlite3").path }
    var record: String { keys.url.appendingPathComponent("opened").path }

    init() throws {
        keys = try KeyFolder()
    }

    /// What the user must see for one push of the stream.
    enum Expected: Equatable {
        case banner, placeholder, nothing
    }

    /// One push of the stream: its line, and what display-rules.md says for the state it meets.
    struct Item {
        let index: Int
        let line: String
        let expected: Expected
    }

    /// A push titled `T<marker>-i` (its placeholder `P<marker>-i`) for `chat`, sealed for this
    /// device or, when it must not decrypt, for another one.
    func push(_ index: Int, chat: String, silent: Bool = false, decrypts: Bool = true) throws -> String {
        let payload = try DecryptedPayload(chatId: chat, title: "T\(marker)-\(index)", body: "b", messageId: "m-\(index)")
        let sealed = try KindlyPushSealer.seal(
            payload, for: (decrypts ? keys.key : stranger).publicKey, mode: silent ? .silent : .visible,
            placeholder: .init(title: "P\(marker)-\(index)", body: "Open the app"))
        return String(decoding: sealed, as: UTF8.self)
    }

    /// The agent on standard input (or `file`), with --verbose and an --on-open that records
    /// KINDLY_CHAT_ID (or "unset"); `serverBudget` replaces the session's budget for each call
    /// to the notification server.
    func agent(file: String? = nil, extra: [String] = [], serverBudget: Duration? = nil) throws -> RunningCLI {
        var environment = DesktopSession.environment
        environment["RECORD"] = record
        if let serverBudget {
            environment["KINDLY_PUSH_TEST_NOTIFICATION_BUDGET_MS"] = "\(serverBudget.components.seconds * 1000)"
        }
        let run = try RunningCLI(
            [
                "notify", "--follow", file ?? "-", "--key-file", keys.keyFile, "--state", state, "--verbose", "--on-open",
                #"printf '[%s]' "${KINDLY_CHAT_ID-unset}" >> "$RECORD""#,
            ] + extra, environment: environment)
        #expect(run.waitUntil { (try? Self.gdbus(["wait", "--session", "--timeout", "1", "ai.kindly.Push1"]).status) == 0 })
        return run
    }

    static func gdbus(_ arguments: [String]) throws -> CLI.Output {
        try CLI.run(["gdbus"] + arguments, environment: DesktopSession.environment, executable: URL(fileURLWithPath: "/usr/bin/env"))
    }

    /// `gdbus call` on the agent's object.
    static func call(_ method: String, _ arguments: [String] = []) throws -> CLI.Output {
        try gdbus(
            [
                "call", "--session", "--dest", "ai.kindly.Push1", "--object-path", "/ai/kindly/Push1", "--method",
                "ai.kindly.Push1.\(method)",
            ]
                + arguments)
    }

    /// How many lines the agent has decided (one --verbose or error line each).
    static func decided(_ run: RunningCLI) -> Int {
        run.stderr.split(separator: "\n").filter { line in
            ["banner shown", "placeholder shown", "already shown", "nothing to show"].contains { line.contains($0) }
                || line.contains(": line ")
        }.count
    }

    /// What the agent said besides its per-push lines (a failure's context).
    static func unusual(_ run: RunningCLI) -> String {
        run.stderr.split(separator: "\n").filter { line in
            !["banner shown", "placeholder shown", "already shown", "nothing to show"].contains { line.contains($0) }
        }.joined(separator: " / ")
    }

    /// Waits until the agent decided `count` lines: a cap that only a hang reaches (the
    /// sanitized agent showing a hundred pushes on a loaded machine took over a minute).
    static func waitForDecided(_ run: RunningCLI, _ count: Int) -> Bool {
        run.waitUntil(seconds: 300) { decided(run) >= count }
    }

    /// The stream of the must-show test: 200 pushes, visible and silent, some that do not
    /// decrypt, some sent twice, over three app states (killed until SetAppState, then
    /// background, then foreground on chat c-1).
    func stream() throws -> [(phase: Int, item: Item)] {
        var items: [(Int, Item)] = []
        for index in 0..<200 {
            let phase = index < 70 ? 0 : index < 140 ? 1 : 2
            let silent = index % 3 == 2
            let decrypts = index % 7 != 3
            let chat = phase == 2 ? (index % 4 == 0 ? "c-1" : index == 141 ? "c-2" : "x-\(index)") : "x-\(index)"
            // display-rules.md, written out per state (the agent is the extension and the app).
            let expected: Expected
            switch phase {
            case 0: expected = silent ? .nothing : decrypts ? .banner : .placeholder  // killed
            case 1: expected = silent ? (decrypts ? .banner : .nothing) : decrypts ? .banner : .placeholder  // background
            default: expected = decrypts && chat != "c-1" ? .banner : .nothing  // foreground, chat c-1 on screen
            }
            items.append(
                (phase, Item(index: index, line: try push(index, chat: chat, silent: silent, decrypts: decrypts), expected: expected)))
        }
        return items
    }

    /// Checks dunst's history against the stream: every banner and placeholder once, nothing else.
    /// Every expected notification shown once, nothing else.
    /// `unusual`: what the agent said besides its per-push lines, for a failure's message.
    func checkShown(_ items: [Item], unusual: String = "") throws {
        // desktop-control closes what is on screen and what waits (each closed one goes to
        // the history) before it reads the history.
        let shown = try DesktopSession.shown(marker).map(\.summary)
        let expected = items.compactMap { item -> String? in
            switch item.expected {
            case .banner: return "T\(marker)-\(item.index)"
            case .placeholder: return "P\(marker)-\(item.index)"
            case .nothing: return nil
            }
        }
        let missing = Set(expected).subtracting(shown).sorted()
        let extra = Set(shown).subtracting(expected).sorted()
        #expect(missing.isEmpty && extra.isEmpty, "missing \(missing), extra \(extra); the agent said: \(unusual)")
        #expect(
            shown.count == Set(shown).count,
            "shown twice: \(Dictionary(grouping: shown) { $0 }.filter { $0.value.count > 1 }.keys); the agent said: \(unusual)")
    }

    @Test("200 live pushes, SetAppState mid-stream: banner, placeholder or nothing as display-rules.md says; duplicates once; taps open")
    func liveStream() async throws {
        try await DesktopSession.exclusive {
            let run = try agent()
            let monitor = try Background(
                ["gdbus", "monitor", "--session", "--dest", "ai.kindly.Push1"], environment: DesktopSession.environment)
            var sent = 0
            var lastPhase = 0
            for (phase, item) in try stream() {
                if phase != lastPhase {
                    // The state applies from the next push on: wait until every earlier push was decided.
                    try #require(Self.waitForDecided(run, sent), "\(run.stderr)")
                    let call =
                        phase == 1
                        ? try Self.call("SetAppState", ["background", ""]) : try Self.call("SetAppState", ["foreground", "c-1"])
                    #expect(call.status == 0, "\(call.stderr)")
                    lastPhase = phase
                }
                run.write(item.line + "\n")
                sent += 1
                if item.index % 10 == 5 {
                    run.write(item.line + "\n")  // delivered twice
                    sent += 1
                }
                if item.index % 25 == 0 {
                    run.write("{not json\n")  // one bad line: reported, the agent goes on
                    sent += 1
                }
            }
            try #require(Self.waitForDecided(run, sent), "\(run.stderr)")
            #expect(run.stderr.contains("kindly-push: bad_input: line 2: "), "\(run.stderr)")
            try checkShown(try stream().map(\.item), unusual: Self.unusual(run))

            // A tap on a banner (the app not started): --on-open with the chat id, and Opened.
            run.write(try push(900, chat: "tap-b") + "\n")
            try #require(try DesktopSession.waitUntilDisplayed(1), "\(run.stderr)")
            try DesktopSession.click()
            #expect(run.waitUntil { (try? String(contentsOfFile: record, encoding: .utf8)) == "[tap-b]" })
            #expect(run.waitUntil { monitor.output.contains("ai.kindly.Push1.Opened ('tap-b',)") }, "\(monitor.output)")
            // The host starts within 60 s: the remembered tap is replayed (Opened again).
            #expect(try Self.call("Started").status == 0)
            #expect(run.waitUntil { monitor.output.components(separatedBy: "Opened ('tap-b',)").count == 3 }, "\(monitor.output)")

            // A tap on a placeholder opens the app with no chat id.
            #expect(try Self.call("SetAppState", ["background", ""]).status == 0)
            _ = try DesktopSession.shown("\u{1}none")
            run.write(try push(901, chat: "tap-p", decrypts: false) + "\n")
            try #require(try DesktopSession.waitUntilDisplayed(1), "\(run.stderr)")
            try DesktopSession.click()
            #expect(run.waitUntil { (try? String(contentsOfFile: record, encoding: .utf8)) == "[tap-b][unset]" })
            #expect(run.waitUntil { monitor.output.contains("ai.kindly.Push1.Opened ('',)") }, "\(monitor.output)")

            // SIGTERM: the agent ends cleanly.
            kill(run.process.processIdentifier, SIGTERM)
            #expect(run.finish() == 0, "\(run.stderr)")
        }
    }

    /// `count` visible pushes, each for a chat of its own (`PREFIX-i`); every ninth from the
    /// fifth on does not decrypt (a placeholder).
    func pushes(_ count: Int, chatPrefix: String) throws -> [Item] {
        try (0..<count).map { index in
            Item(
                index: index, line: try push(index, chat: "\(chatPrefix)\(index)", decrypts: index % 9 != 4),
                expected: index % 9 != 4 ? .banner : .placeholder)
        }
    }

    @Test("SIGKILLed in the middle of a followed FILE and restarted on it: no banner twice, none missing")
    func killedAndRestarted() async throws {
        try await DesktopSession.exclusive {
            let file = keys.url.appendingPathComponent("stream.jsonl").path
            let items = try pushes(80, chatPrefix: "k-")
            _ = FileManager.default.createFile(atPath: file, contents: Data(items[0..<40].map { $0.line + "\n" }.joined().utf8))
            let first = try agent(file: file)
            // Killed at some moment of the first half.
            let moment = Int.random(in: 5...35)
            try #require(Self.waitForDecided(first, moment), "\(first.stderr)")
            kill(first.process.processIdentifier, SIGKILL)
            _ = first.finish()
            // Restarted on the same FILE, which goes on growing (and is rotated halfway).
            let second = try agent(file: file)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            handle.seekToEndOfFile()
            handle.write(Data(items[40..<60].map { $0.line + "\n" }.joined().utf8))
            try handle.close()
            try #require(Self.waitForDecided(second, 60), "\(second.stderr)")
            try FileManager.default.moveItem(atPath: file, toPath: file + ".1")
            _ = FileManager.default.createFile(atPath: file, contents: Data(items[60..<80].map { $0.line + "\n" }.joined().utf8))
            try #require(Self.waitForDecided(second, 80), "\(second.stderr)")
            try checkShown(items, unusual: Self.unusual(first) + " | " + Self.unusual(second))
            kill(second.process.processIdentifier, SIGINT)
            #expect(second.finish() == 0, "\(second.stderr)")
        }
    }

    @Test(
        "SIGKILLed right after a claim's commit, or right after the server answered its Notify: restarted, every push shown once",
        arguments: ["after-claim:8", "after-post:5"])
    func killedInsideAPost(point: String) async throws {
        try await DesktopSession.exclusive {
            let file = keys.url.appendingPathComponent("stream.jsonl").path
            // Item 4 (claim 5) is a placeholder, item 7 (claim 8) a banner.
            let items = try pushes(12, chatPrefix: "w-")
            #expect(FileManager.default.createFile(atPath: file, contents: Data(items.map { $0.line + "\n" }.joined().utf8)))
            var environment = DesktopSession.environment
            environment["KINDLY_PUSH_TEST_KILL"] = point
            let first = try RunningCLI(
                ["notify", "--follow", file, "--key-file", keys.keyFile, "--state", state, "--verbose"], environment: environment)
            #expect(first.finish() == SIGKILL && first.process.terminationReason == .uncaughtSignal, "\(first.stderr)")
            #expect(Self.decided(first) < 12, "\(first.stderr)")
            let second = try agent(file: file)
            try #require(Self.waitForDecided(second, 12), "\(second.stderr)")
            try checkShown(items, unusual: Self.unusual(first) + " | " + Self.unusual(second))
            kill(second.process.processIdentifier, SIGTERM)
            #expect(second.finish() == 0, "\(second.stderr)")
        }
    }

    @Test(
        "agent.env's KINDLY_PUSH_ON_OPEN is the --on-open command, arguments and all; words of a split option list are refused as more FILEs, with the way out"
    )
    func onOpenFromTheEnvironment() async throws {
        try await DesktopSession.exclusive {
            var environment = DesktopSession.environment
            environment["RECORD"] = record
            // As agent.env gives it: one value, with spaces and quotes, for sh -c.
            environment["KINDLY_PUSH_ON_OPEN"] = #"printf '[%s %s]' "from env" "${KINDLY_CHAT_ID-unset}" >> "$RECORD""#
            let run = try RunningCLI(
                ["notify", "--follow", "-", "--key-file", keys.keyFile, "--state", state, "--verbose"], environment: environment)
            #expect(run.waitUntil { (try? Self.gdbus(["wait", "--session", "--timeout", "1", "ai.kindly.Push1"]).status) == 0 })
            run.write(try push(901, chat: "tap-e") + "\n")
            try #require(try DesktopSession.waitUntilDisplayed(1), "\(run.stderr)")
            try DesktopSession.click()
            #expect(
                run.waitUntil { (try? String(contentsOfFile: record, encoding: .utf8)) == "[from env tap-e]" },
                "\((try? String(contentsOfFile: record, encoding: .utf8)) ?? "no record") \(run.stderr)")
            kill(run.process.processIdentifier, SIGTERM)
            #expect(run.finish() == 0, "\(run.stderr)")
            _ = try DesktopSession.shown("\u{1}none")

            // KINDLY_PUSH_AGENT_OPTIONS=--on-open my-app --open, split at spaces by the unit.
            let split = try CLI.run(
                ["notify", "--follow", "/run/inbox", "--on-open", "my-app", "--", "--open"], environment: DesktopSession.environment)
            #expect(split.status == 64)
            #expect(
                split.stderr
                    == "kindly-push: usage: '--follow' reads one FILE, or - for standard input, and '--open' would be more; in agent.env, KINDLY_PUSH_AGENT_OPTIONS is split at spaces: give --on-open's command with its arguments in KINDLY_PUSH_ON_OPEN (see 'kindly-push notify --help')\n"
            )
        }
    }

    @Test("a second agent on the bus says the name is taken and exits 74; the interface is the committed XML")
    func secondAgent() async throws {
        try await DesktopSession.exclusive {
            let run = try agent()
            let other = try CLI.run(
                ["notify", "--follow", "-", "--key-file", keys.keyFile, "--state", state], environment: DesktopSession.environment,
                timeLimit: 20)
            #expect(other.status == 74)
            #expect(other.stderr == "kindly-push: io: ai.kindly.Push1 is taken on the session bus: another agent runs already\n")
            let introspected = try Self.gdbus([
                "introspect", "--xml", "--session", "--dest", "ai.kindly.Push1", "--object-path", "/ai/kindly/Push1",
            ])
            let committed = try String(contentsOf: CLI.packageRoot.appendingPathComponent("data/dbus/ai.kindly.Push1.xml"), encoding: .utf8)
            // Every method, argument and signal of the committed interface is exported, and no other.
            func members(_ xml: String) -> [String] {
                guard let start = xml.range(of: "<interface name=\"ai.kindly.Push1\">"),
                    let end = xml.range(of: "</interface>", range: start.upperBound..<xml.endIndex)
                else { return [] }
                let attribute = try! NSRegularExpression(pattern: #"(\w+)="([^"]*)""#)
                return xml[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line -> String? in
                    let text = line.trimmingCharacters(in: .whitespaces)
                    guard let tag = ["<method", "<arg", "<signal"].first(where: { text.hasPrefix($0) }) else { return nil }
                    let range = NSRange(text.startIndex..., in: text)
                    let pairs = attribute.matches(in: text, range: range).map { match in
                        (Range(match.range(at: 1), in: text).map { String(text[$0]) } ?? "") + "="
                            + (Range(match.range(at: 2), in: text).map { String(text[$0]) } ?? "")
                    }
                    return tag + " " + pairs.sorted().joined(separator: " ")
                }
            }
            #expect(!members(committed).isEmpty)
            #expect(members(introspected.stdout) == members(committed), "\(introspected.stdout)")
            #expect(try Self.call("SetAppState", ["asleep", ""]).status != 0)
            run.closeInput()
            #expect(run.finish() == 0, "\(run.stderr)")
        }
    }

    /// `kindly-push` against a file keyring of its own (`KINDLY_PUSH_KEYRING_DIR`), on the test's bus.
    struct KeyringCommands {
        let environment: [String: String]

        init(folder: String) {
            var environment = DesktopSession.environment
            environment["KINDLY_PUSH_KEYRING_DIR"] = folder
            self.environment = environment
        }

        /// Runs `arguments`, expecting status 0.
        @discardableResult
        func run(_ arguments: [String], _ stdin: String = "") throws -> CLI.Output {
            let output = try CLI.run(arguments, stdin: stdin, environment: environment)
            #expect(output.status == 0, "\(arguments): \(output.stderr)")
            return output
        }

        /// A new device key in the keyring; its public key.
        func deviceKey() throws -> String {
            try #require(try JSONValue(parsing: try run(["keygen", "--keyring", "file"]).stdout)["public_key"]?.stringValue)
        }
    }

    /// A running agent follows a change to `commands`' keyring: push 1 shows a banner;
    /// after `change` and 2.1 s, push 2 shows none (`refused` says what was expected).
    func checkAgentFollows(
        _ commands: KeyringCommands, sealed: (Int) throws -> String, change: () throws -> Void, refused: String
    ) throws {
        let agent = try RunningCLI(
            ["notify", "--follow", "-", "--keyring", "file", "--state", state, "--verbose"], environment: commands.environment)
        #expect(agent.waitUntil { (try? Self.gdbus(["wait", "--session", "--timeout", "1", "ai.kindly.Push1"]).status) == 0 })
        agent.write(try sealed(1) + "\n")
        try #require(Self.waitForDecided(agent, 1), "\(agent.stderr)")
        #expect(agent.stderr.contains("banner shown"), "push 1, before the change: \(agent.stderr)")
        try change()
        usleep(2_100_000)
        agent.write(try sealed(2) + "\n")
        try #require(Self.waitForDecided(agent, 2), "\(agent.stderr)")
        let last = agent.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(!last.contains("banner shown"), "\(refused): \(agent.stderr)")
        agent.closeInput()
        _ = agent.finish()
    }

    @Test(
        "a running agent refuses a revoked sender's push within 2 s of senders delete (needs CachingKeyring to follow revocations)"
    )
    func revokedSender() async throws {
        try await DesktopSession.exclusive {
            let commands = KeyringCommands(folder: keys.url.appendingPathComponent("keyring").path)
            let device = try commands.deviceKey()
            let senderFile = keys.url.appendingPathComponent("sender.json").path
            let sender = try JSONValue(parsing: try commands.run(["sender-keygen", "--key-file", senderFile]).stdout)
            let sid = try #require(sender["sid"]?.stringValue)
            try commands.run(["senders", "add", "--public-key", try #require(sender["public_key"]?.stringValue), "--keyring", "file"])
            try checkAgentFollows(
                commands,
                sealed: { index in
                    let plain = #"{"chat_id":"r-\#(index)","title":"R\#(marker)-\#(index)","body":"b","message_id":"r-\#(index)"}"#
                    return try commands.run(["seal", "--public-key", device, "--sender-key-file", senderFile], plain).stdout
                        .trimmingCharacters(in: .whitespacesAndNewlines)
                },
                change: { try commands.run(["senders", "delete", sid, "--keyring", "file"]) },
                refused: "the revoked sender's push still showed a banner")
        }
    }

    @Test("a running agent refuses a version 1 push within 2 s of the first senders add")
    func firstPin() async throws {
        try await DesktopSession.exclusive {
            let commands = KeyringCommands(folder: keys.url.appendingPathComponent("keyring-first-pin").path)
            let device = try commands.deviceKey()
            let sender = try JSONValue(
                parsing: try commands.run(["sender-keygen", "--key-file", keys.url.appendingPathComponent("first-pin-sender.json").path])
                    .stdout)
            try checkAgentFollows(
                commands,
                sealed: { index in
                    let plain = #"{"chat_id":"f-\#(index)","title":"F\#(marker)-\#(index)","body":"b","message_id":"f-\#(index)"}"#
                    return try commands.run(["seal", "--public-key", device], plain).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                },
                change: {
                    try commands.run([
                        "senders", "add", "--public-key", try #require(sender["public_key"]?.stringValue), "--keyring", "file",
                    ])
                },
                refused: "a version 1 push still showed a banner after the first pin")
        }
    }

    @Test(
        "--follow refuses a device or a link to one (64), and a FILE, FIFO or folder on the way that another user owns or can write (74); a group-writable file of the owner's private group is followed"
    )
    func followRefusesUnsafeInputs() async throws {
        try await DesktopSession.exclusive {
            let folder = keys.url.path
            let manager = FileManager.default
            func follow(_ path: String) throws -> CLI.Output {
                try CLI.run(
                    ["notify", "--follow", path, "--key-file", keys.keyFile, "--state", state], environment: DesktopSession.environment,
                    timeLimit: 20)
            }
            try manager.createSymbolicLink(atPath: "\(folder)/zero", withDestinationPath: "/dev/zero")
            for device in ["/dev/zero", "\(folder)/zero"] {
                let run = try follow(device)
                #expect(run.status == 64, "\(device): \(run.stderr)")
                #expect(
                    run.stderr
                        == "kindly-push: usage: \(device) is neither a regular file nor a FIFO: --follow reads only those (or - for standard input)\n"
                )
            }
            let shared = "\(folder)/shared.jsonl"
            #expect(manager.createFile(atPath: shared, contents: nil, attributes: [.posixPermissions: 0o666]))
            #expect(mkfifo("\(folder)/shared.fifo", 0o600) == 0 && chmod("\(folder)/shared.fifo", 0o622) == 0)
            for path in [shared, "\(folder)/shared.fifo"] {
                let run = try follow(path)
                let mode = path == shared ? "666" : "622"
                #expect(run.status == 74, "\(path): \(run.stderr)")
                #expect(run.stderr == "kindly-push: io: \(path) can be written by other users (mode \(mode)): it is not followed\n")
            }
            try manager.createDirectory(
                atPath: "\(folder)/open", withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
            #expect(manager.createFile(atPath: "\(folder)/open/own.jsonl", contents: nil, attributes: [.posixPermissions: 0o600]))
            let inOpen = try follow("\(folder)/open/own.jsonl")
            #expect(inOpen.status == 74)
            #expect(
                inOpen.stderr
                    == "kindly-push: io: the folder \(folder)/open on the way to \(folder)/open/own.jsonl can be changed by other users: it is not followed\n"
            )
            if geteuid() == 0 {
                // Root can give a file away: one of nobody's (65534) is refused.
                #expect(manager.createFile(atPath: "\(folder)/theirs.jsonl", contents: nil, attributes: [.posixPermissions: 0o644]))
                #expect(chown("\(folder)/theirs.jsonl", 65534, 65534) == 0)
                let theirs = try follow("\(folder)/theirs.jsonl")
                #expect(theirs.status == 74)
                #expect(theirs.stderr == "kindly-push: io: \(folder)/theirs.jsonl belongs to another user: it is not followed\n")
                // A link on the way that another user owns may be pointed elsewhere at any time.
                #expect(manager.createFile(atPath: "\(folder)/mine.jsonl", contents: nil, attributes: [.posixPermissions: 0o600]))
                try manager.createSymbolicLink(atPath: "\(folder)/feed", withDestinationPath: "\(folder)/mine.jsonl")
                #expect(lchown("\(folder)/feed", 65534, 65534) == 0)
                let linked = try follow("\(folder)/feed")
                #expect(linked.status == 74)
                #expect(
                    linked.stderr
                        == "kindly-push: io: the link \(folder)/feed on the way to \(folder)/feed belongs to another user: it is not followed\n"
                )
            }
            // The owner's own file, group-writable for a group whose one member is the owner, is followed.
            let own = "\(folder)/own.jsonl"
            #expect(manager.createFile(atPath: own, contents: nil, attributes: [.posixPermissions: 0o600]))
            if let user = getpwuid(geteuid()), let group = getgrgid(user.pointee.pw_gid), group.pointee.gr_mem.pointee == nil {
                #expect(chown(own, geteuid(), user.pointee.pw_gid) == 0 && chmod(own, 0o660) == 0)
            }
            let agent = try agent(file: own)
            kill(agent.process.processIdentifier, SIGTERM)
            #expect(agent.finish() == 0, "\(agent.stderr)")
        }
    }

    @Test(
        "a followed FILE rotated to one another user owns is not read: the first open's rule holds at every rotation",
        .enabled(if: geteuid() == 0, "only root can give a file to another user"))
    func followRotatedToOthersFile() async throws {
        try await DesktopSession.exclusive {
            let file = keys.url.appendingPathComponent("stream.jsonl").path
            let items = try pushes(6, chatPrefix: "o-")
            #expect(FileManager.default.createFile(atPath: file, contents: Data(items[0..<3].map { $0.line + "\n" }.joined().utf8)))
            let run = try agent(file: file)
            try #require(Self.waitForDecided(run, 3), "\(run.stderr)")
            // Another user's file in its place, with two more pushes: not read.
            try FileManager.default.moveItem(atPath: file, toPath: file + ".1")
            let theirs = file + ".theirs"
            #expect(FileManager.default.createFile(atPath: theirs, contents: Data(items[3..<5].map { $0.line + "\n" }.joined().utf8)))
            #expect(chown(theirs, 65534, 65534) == 0 && chmod(theirs, 0o644) == 0)
            try FileManager.default.moveItem(atPath: theirs, toPath: file)
            try await Task.sleep(for: .seconds(1))
            // Then a file of ours again, with one push: read (the event this test waits for), and
            // the other user's two were never shown.
            try FileManager.default.moveItem(atPath: file, toPath: file + ".2")
            #expect(FileManager.default.createFile(atPath: file, contents: Data((items[5].line + "\n").utf8)))
            #expect(Self.waitForDecided(run, 4), "\(run.stderr)")
            try await Task.sleep(for: .milliseconds(300))
            kill(run.process.processIdentifier, SIGTERM)
            #expect(run.finish() == 0, "\(run.stderr)")
            #expect(Self.decided(run) == 4, "\(run.stderr)")
        }
    }

    @Test("a followed FILE replaced by a link to /dev/zero is not read; SIGTERM ends the agent at once, status 0")
    func followRotatedToDevice() async throws {
        try await DesktopSession.exclusive {
            let file = keys.url.appendingPathComponent("stream.jsonl").path
            let items = try pushes(3, chatPrefix: "z-")
            #expect(FileManager.default.createFile(atPath: file, contents: Data(items.map { $0.line + "\n" }.joined().utf8)))
            let run = try agent(file: file)
            try #require(Self.waitForDecided(run, 3), "\(run.stderr)")
            try FileManager.default.moveItem(atPath: file, toPath: file + ".1")
            try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: "/dev/zero")
            try await Task.sleep(for: .milliseconds(500))
            kill(run.process.processIdentifier, SIGTERM)
            #expect(run.finish() == 0, "\(run.stderr)")
            #expect(Self.decided(run) == 3, "\(run.stderr)")
        }
    }

    @Test(
        "the agent's start line names what it follows, its bus name, its keyring and key count and its store; a keyring with no key gets one warning"
    )
    func startLine() async throws {
        try await DesktopSession.exclusive {
            func startLines(_ run: RunningCLI) -> [String] {
                _ = run.waitUntil { run.stderr.contains("notify agent:") }
                return run.stderr.split(separator: "\n").map(String.init).filter { $0.contains("notify agent:") || $0.contains("warning:") }
            }
            let run = try agent()
            #expect(
                startLines(run) == [
                    "kindly-push: notify agent: follows standard input, owns ai.kindly.Push1 on the session bus; the key-file keyring (\(keys.keyFile)) with 1 key; state \(state)"
                ], "\(run.stderr)")
            kill(run.process.processIdentifier, SIGTERM)
            #expect(run.finish() == 0)
            let empty = keys.url.appendingPathComponent("empty-keyring").path
            try FileManager.default.createDirectory(
                atPath: empty, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            var environment = DesktopSession.environment
            environment["KINDLY_PUSH_KEYRING_DIR"] = empty
            let bare = try RunningCLI(["notify", "--follow", "-", "--keyring", "file", "--state", state], environment: environment)
            #expect(
                startLines(bare) == [
                    "kindly-push: notify agent: follows standard input, owns ai.kindly.Push1 on the session bus; the file keyring (\(empty)) with 0 keys; state \(state)",
                    "kindly-push: warning: the file keyring (\(empty)) holds no device key: every push will show its placeholder; create the key there (kindly-push keygen) or name the keyring that holds it (--keyring, --key-file)",
                ], "\(bare.stderr)")
            kill(bare.process.processIdentifier, SIGTERM)
            #expect(bare.finish() == 0)
        }
    }

    @Test(
        "restarted on a followed FILE after its pushes left the store (--dedup-ttl), the agent goes on where it stopped: nothing shown twice; a new file under the path is read from its start"
    )
    func followPositionKept() async throws {
        try await DesktopSession.exclusive {
            let file = keys.url.appendingPathComponent("stream.jsonl").path
            let items = try pushes(12, chatPrefix: "k-")
            func append(_ range: Range<Int>) throws {
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
                handle.seekToEndOfFile()
                handle.write(Data(items[range].map { $0.line + "\n" }.joined().utf8))
                try handle.close()
            }
            #expect(FileManager.default.createFile(atPath: file, contents: Data(items[0..<5].map { $0.line + "\n" }.joined().utf8)))
            let first = try agent(file: file, extra: ["--dedup-ttl", "0s"])
            try #require(Self.waitForDecided(first, 5), "\(first.stderr)")
            kill(first.process.processIdentifier, SIGTERM)
            #expect(first.finish() == 0, "\(first.stderr)")
            // Older than --dedup-ttl 0s: the store forgets them at the next start.
            try await Task.sleep(for: .seconds(2))
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
            let second = try agent(file: file, extra: ["--dedup-ttl", "0s"])
            #expect(second.waitUntil { second.stderr.contains("from byte \(size), where the last run stopped") }, "\(second.stderr)")
            try append(5..<8)
            try #require(Self.waitForDecided(second, 3), "\(second.stderr)")
            try await Task.sleep(for: .milliseconds(300))
            #expect(Self.decided(second) == 3, "\(second.stderr)")
            kill(second.process.processIdentifier, SIGTERM)
            #expect(second.finish() == 0, "\(second.stderr)")
            // Another file in its place (another inode): read from its start.
            try FileManager.default.removeItem(atPath: file)
            #expect(FileManager.default.createFile(atPath: file, contents: Data(items[8..<12].map { $0.line + "\n" }.joined().utf8)))
            let third = try agent(file: file, extra: ["--dedup-ttl", "0s"])
            try #require(Self.waitForDecided(third, 4), "\(third.stderr)")
            #expect(!third.stderr.contains("where the last run stopped"), "\(third.stderr)")
            kill(third.process.processIdentifier, SIGTERM)
            #expect(third.finish() == 0, "\(third.stderr)")
            try checkShown(items)
        }
    }

    @Test(
        "pushes that arrive while the notification server hangs are kept and shown once it answers again, each once"
    )
    func keptWhileServerHangs() async throws {
        try await DesktopSession.exclusive {
            let owner = try Self.gdbus([
                "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus", "--method",
                "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.freedesktop.Notifications",
            ])
            let digits = owner.stdout.split(whereSeparator: { !$0.isNumber }).last.map(String.init) ?? ""
            let dunst = try #require(pid_t(digits), "\(owner.stdout) \(owner.stderr)")
            let file = keys.url.appendingPathComponent("stream.jsonl").path
            #expect(FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o600]))
            // The budget of a desktop: a stopped server costs 2 s, then the pushes wait.
            let run = try agent(file: file, serverBudget: .seconds(2))
            let items = try (0..<3).map { index in
                Item(index: index, line: try push(index, chat: "h-\(index)"), expected: .banner)
            }
            #expect(kill(dunst, SIGSTOP) == 0)
            var stopped = true
            defer { if stopped { kill(dunst, SIGCONT) } }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            handle.write(Data(items.map { $0.line + "\n" }.joined().utf8))
            try handle.close()
            #expect(run.waitUntil(seconds: 20) { run.stderr.contains("(3 waiting)") }, "\(run.stderr)")
            kill(dunst, SIGCONT)
            stopped = false
            #expect(
                run.waitUntil(seconds: 20) {
                    run.stderr.contains("the notification server answers again: 3 kept pushes presented, newest first")
                },
                "\(run.stderr)")
            kill(run.process.processIdentifier, SIGTERM)
            #expect(run.finish() == 0, "\(run.stderr)")
            try checkShown(items)
        }
    }

    /// How often the thread `tid` of `pid` gave up the CPU so far (its voluntary and involuntary
    /// context switches): a thread that sleeps in poll with no deadline adds none.
    static func contextSwitches(_ pid: pid_t, thread tid: pid_t) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/task/\(tid)/status", encoding: .utf8)
        return status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
            .compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
    }

    @Test(
        "an idle agent sleeps: with nothing to read, nothing kept and the bus quiet, its main thread does not wake",
        arguments: ["-", "FILE"])
    func idleAgentSleeps(_ input: String) async throws {
        // Alone on the bus: every agent owns the same names.
        try await DesktopSession.exclusive {
            let file = keys.url.appendingPathComponent("idle.jsonl").path
            if input == "FILE" {
                #expect(FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o600]))
            }
            let run = try agent(file: input == "FILE" ? file : nil)
            let pid = run.process.processIdentifier
            // Its start line is the last thing it says before its loop; then its start-up's last
            // calls (the bus names) settle: the count stays put for half a second, however long
            // a busy machine takes to get there (20 s at most).
            #expect(run.waitUntil { run.stderr.contains("notify agent: follows") }, "\(run.stderr)")
            var before = try Self.contextSwitches(pid, thread: pid)
            for _ in 0..<40 {
                try await Task.sleep(for: .milliseconds(500))
                let now = try Self.contextSwitches(pid, thread: pid)
                if now == before { break }
                before = now
            }
            // A loop that woke every 200 ms, as a capped wait would, switches 10 times here.
            try await Task.sleep(for: .seconds(2))
            let woke = try Self.contextSwitches(pid, thread: pid) - before
            #expect(woke <= 2, "the main thread switched \(woke) times in 2 s: \(Self.unusual(run))")
            kill(pid, SIGTERM)
            #expect(run.finish() == 0, "\(run.stderr)")
        }
    }
}

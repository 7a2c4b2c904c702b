import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `kindly-push notify` against a real notification server: dunst on Xvfb, on the private bus of
/// tools/with-desktop. What a test checks is what dunst received (its history). Skipped, by name,
/// where no desktop was started (the CI guard below fails in CI then).
@Suite(
    "kindly-push notify on a real desktop",
    .serialized, .enabled(if: DesktopSession.isRunning, "no notification server: run under tools/with-desktop"), .offThePool)
struct NotifyDesktopTests {
    let keys: KeyFolder
    let marker = "M\(UInt32.random(in: 0...UInt32.max))"
    var state: String { keys.url.appendingPathComponent("state/state.sqlite3").path }

    init() throws {
        keys = try KeyFolder()
    }

    func push(chat: String, title: String, body: String, messageID: String? = nil, for key: DeviceKey? = nil) throws -> String {
        let payload = try DecryptedPayload(chatId: chat, title: title, body: body, messageId: messageID)
        return String(decoding: try KindlyPushSealer.seal(payload, for: (key ?? keys.key).publicKey), as: UTF8.self)
    }

    func notify(_ push: String, _ extra: [String] = []) throws -> CLI.Output {
        try CLI.run(
            ["notify", "--key-file", keys.keyFile, "--state", state] + extra, stdin: push, environment: DesktopSession.environment,
            timeLimit: 20)
    }

    @Test("a sealed push shows a banner with the decrypted title and body, app name Kindly and category im.received")
    func banner() async throws {
        try await DesktopSession.exclusive {
            let body = #"Hi! <a href="x">link</a> & <b>bold</b>"#
            let output = try notify(try push(chat: "c-\(marker)", title: "Anna \(marker)", body: body))
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stdout == "")
            #expect(output.stderr == "")
            let shown = try DesktopSession.shown(marker)
            try #require(shown.count == 1, "\(shown)")
            #expect(shown[0].app == "Kindly")
            #expect(shown[0].summary == "Anna \(marker)")
            #expect(shown[0].category == "im.received")
            // dunst reads markup in the body: the link and the tags reach it as text.
            #expect(shown[0].body == "Hi! &lt;a href=\"x\"&gt;link&lt;/a&gt; &amp; &lt;b&gt;bold&lt;/b&gt;")
            #expect(shown[0].message == "<small>Kindly</small>\n<b>Anna \(marker)</b>\n\(shown[0].body)")
        }
    }

    @Test("--app-name and --desktop-entry reach the server")
    func appNameAndDesktopEntry() async throws {
        try await DesktopSession.exclusive {
            let output = try notify(
                try push(chat: "c", title: "T", body: "B"), ["--app-name", "Kindly \(marker)", "--desktop-entry", "kindly-push-test"])
            #expect(output.status == 0, "\(output.stderr)")
            let shown = try DesktopSession.shown(marker)
            try #require(shown.count == 1, "\(shown)")
            #expect(shown[0].app == "Kindly \(marker)")
            // tools/lib/dunstrc's probe: dunst matched the desktop-entry hint.
            #expect(shown[0].category == "desktop-entry:kindly-push-test")
        }
    }

    @Test("a push that does not decrypt shows its placeholder alert, never the text or the reason; one without alert text the defaults")
    func placeholder() async throws {
        try await DesktopSession.exclusive {
            let other = DeviceKey.generate()
            let payload = try DecryptedPayload(chatId: "c", title: "Secret title", body: "Secret body")
            let sealed = String(
                decoding: try KindlyPushSealer.seal(
                    payload, for: other.publicKey,
                    placeholder: .init(title: "Placeholder \(marker)", body: "Open Kindly to read it")),
                as: UTF8.self)
            let output = try notify(sealed, ["--verbose"])
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stderr.contains("placeholder shown as notification"))
            #expect(output.stderr.contains("(key_unavailable)"))
            let shown = try DesktopSession.shown(marker)
            try #require(shown.count == 1, "\(shown)")
            #expect(shown[0].summary == "Placeholder \(marker)")
            #expect(shown[0].body == "Open Kindly to read it")
            #expect(!shown[0].message.contains("Secret"))

            // A Kindly push whose alert carries no text: the defaults.
            let another = try KindlyPushSealer.seal(payload, for: other.publicKey)
            var document = try JSONValue(parsing: String(decoding: another, as: UTF8.self)).objectValue!
            document["aps"] = ["alert": [:], "mutable-content": 1]
            let bare = try notify(JSONValue.object(document).compactText, ["--app-name", "Bare \(marker)"])
            #expect(bare.status == 0, "\(bare.stderr)")
            // Without --verbose too, a push that could not be shown as itself gets its line.
            let line =
                #"^kindly-push: notify: placeholder shown as notification [0-9]+ \(key_unavailable\): "#
                + #"the push could not be decrypted\n$"#
            #expect(bare.stderr.range(of: line, options: .regularExpression) != nil, "\(bare.stderr)")
            let defaults = try DesktopSession.shown("Bare \(marker)")
            try #require(defaults.count == 1, "\(defaults)")
            #expect(defaults[0].summary == "New message")
            #expect(defaults[0].body == "Open the app to read it")
        }
    }

    @Test("in pinned mode a push that does not decrypt shows the reader's own placeholder, never the alert it carries")
    func pinnedModePlaceholder() async throws {
        try await DesktopSession.exclusive {
            let pinned = SenderKey.generate()
            let payload = try DecryptedPayload(chatId: "c", title: "Secret title", body: "Secret body")
            // A version 1 push, whose alert anybody could have written: untrusted in pinned mode.
            let sealed = String(
                decoding: try KindlyPushSealer.seal(
                    payload, for: keys.key.publicKey, placeholder: .init(title: "Your bank \(marker)", body: "Log in at evil.example")),
                as: UTF8.self)
            let output = try notify(sealed, ["--verbose", "--app-name", "Pinned \(marker)", "--sender-key=" + pinned.publicKey.base64URL])
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stderr.contains("(untrusted_sender)"))
            let shown = try DesktopSession.shown("Pinned \(marker)")
            try #require(shown.count == 1, "\(shown)")
            #expect(shown[0].summary == "New message")
            #expect(shown[0].body == "Open the app to read it")
            #expect(!shown[0].message.contains("bank"))
            #expect(!shown[0].message.contains("Secret"))
        }
    }

    @Test("a new message of a chat replaces the chat's banner (replaces_id, across runs); another chat gets its own")
    func oneBannerPerChat() async throws {
        try await DesktopSession.exclusive {
            for (chat, body) in [("a", "first"), ("a", "second"), ("b", "other chat"), ("a", "third")] {
                let output = try notify(try push(chat: "chat-\(chat)-\(marker)", title: "T \(marker)", body: body))
                #expect(output.status == 0, "\(output.stderr)")
            }
            let shown = try DesktopSession.shown(marker)
            #expect(shown.map(\.body).sorted() == ["other chat", "third"], "\(shown)")
        }
    }

    @Test("the same push twice shows one banner; --no-dedup shows it again; --dedup-ttl forgets it")
    func samePushTwice() async throws {
        try await DesktopSession.exclusive {
            let sealed = try push(chat: "c", title: "Twice \(marker)", body: "B", messageID: "m-1")
            let first = try notify(sealed)
            let second = try notify(sealed, ["--verbose"])
            #expect(first.status == 0 && second.status == 0, "\(first.stderr)\(second.stderr)")
            #expect(second.stderr == "kindly-push: notify: already shown; not shown again\n")
            #expect(try DesktopSession.shown(marker).count == 1)

            // The same message sealed again (a new envelope, the same message id) is the same push.
            let resealed = try push(chat: "c", title: "Twice \(marker)", body: "B", messageID: "m-1")
            #expect(try notify(resealed).status == 0)
            #expect(try DesktopSession.shown(marker).count == 1)

            #expect(try notify(sealed, ["--no-dedup"]).status == 0)
            #expect(try DesktopSession.shown(marker).count == 2)

            try await Task.sleep(for: .seconds(2))
            #expect(try notify(sealed, ["--dedup-ttl", "1s"]).status == 0)
            #expect(try DesktopSession.shown(marker).count == 3)
        }
    }

    @Test("the same push twice is shown once in every wire version and mode, banner or placeholder, as in version 1")
    func samePushTwiceEveryVersion() async throws {
        let sender = SenderKey.generate()
        let sealings: [(name: String, wire: WireVersion, sender: SenderKey?)] = [
            ("v1", .one, nil), ("v2", .two, sender), ("v3-base", .three, nil), ("v3-auth", .three, sender),
        ]
        try await DesktopSession.exclusive {
            for sealing in sealings {
                let pins = sealing.sender.map { ["--sender-key", $0.publicKey.base64URL] } ?? []
                for delivery in ["message-id", "no-message-id", "other-device", "tampered"] {
                    // Each case its own message id and chat; the app name carries the marker (a pinned
                    // reader shows its own placeholder text).
                    let title = "Parity \(sealing.name) \(delivery) \(marker)"
                    let payload = try DecryptedPayload(
                        chatId: "c-\(sealing.name)-\(delivery)", title: title, body: "B",
                        messageId: delivery == "no-message-id" ? nil : "m-\(sealing.name)-\(delivery)")
                    let recipient = delivery == "other-device" ? DeviceKey.generate() : keys.key
                    var sealed = try KindlyPushSealer.seal(
                        payload, for: recipient.publicKey, wire: sealing.wire, from: sealing.sender,
                        placeholder: .init(title: title, body: "placeholder"))
                    if delivery == "tampered", let at = sealed.indices.dropLast(40).last {
                        sealed[at] = sealed[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                    }
                    let push = String(decoding: sealed, as: UTF8.self)
                    var said = ""
                    for _ in 0..<2 {
                        let output = try notify(push, pins + ["--app-name", title, "--verbose"])
                        #expect(output.status == 0, "\(title): \(output.stderr)")
                        said += output.stderr
                    }
                    let shown = try DesktopSession.shown(title)
                    #expect(shown.count == 1, "\(title): \(shown) \(said)")
                }
            }
        }
    }

    @Test(
        "the parity matrix's notify row: one-shot, --jsonl, --follow on standard input and on a FIFO, each case delivered twice, every version and mode as version 1"
    )
    func parityMatrix() async throws {
        let matrix = try WireParityTests()
        try await DesktopSession.exclusive {
            var reference: [String: String] = [:]
            for sealing in WireParityTests.Sealing.allCases {
                // One-shot: each case on a store of its own, delivered twice (the second is a
                // duplicate, or again not Kindly's, or again a bad line).
                for name in WireParityTests.cases {
                    let app = "Parity one-shot \(sealing.rawValue) \(name) \(marker)"
                    let store = keys.url.appendingPathComponent("parity/\(sealing.rawValue)/\(name).sqlite3").path
                    let line = try matrix.input(name, sealing)
                    var runs: [CLI.Output] = []
                    for _ in 0..<2 {
                        runs.append(
                            try CLI.run(
                                ["notify", "--state", store, "--app-name", app, "--verbose"] + matrix.reader(sealing), stdin: line,
                                environment: DesktopSession.environment, timeLimit: 20))
                    }
                    let got = WireParityTests.notifyOutcome(runs, shown: try DesktopSession.shown(app))
                    if sealing == .one {
                        reference[name] = got
                    } else {
                        #expect(got == reference[name], "notify, \(name), \(sealing.rawValue)")
                    }
                }
                // The agent: every case twice in one stream, on one store.
                let app = "Parity follow \(sealing.rawValue) \(marker)"
                let store = keys.url.appendingPathComponent("parity/\(sealing.rawValue)/follow.sqlite3").path
                let stream = try WireParityTests.cases.flatMap { name in Array(repeating: try matrix.input(name, sealing), count: 2) }
                    .joined(separator: "\n")
                let run = try CLI.run(
                    ["notify", "--follow", "-", "--state", store, "--app-name", app, "--verbose"] + matrix.reader(sealing),
                    stdin: stream + "\n", environment: DesktopSession.environment, timeLimit: 30)
                // The start line names the store, which is the version's own.
                let got = WireParityTests.notifyOutcome([run], shown: try DesktopSession.shown(app), store: store)
                if sealing == .one {
                    #expect(run.status == 0, "\(run.stderr)")
                    // A line that opens a document its newline cuts short: the engine's advice, as --jsonl gives it.
                    #expect(got.contains("kindly-push: bad_input: line 11: \(PushStreamResult.spreadDocumentAdvice)"), "\(got)")
                    reference["follow"] = got
                } else {
                    #expect(got == reference["follow"], "notify --follow, \(sealing.rawValue)")
                }
                // --jsonl: the same stream, one process (no agent).
                let jsonlApp = "Parity jsonl \(sealing.rawValue) \(marker)"
                let jsonlStore = keys.url.appendingPathComponent("parity/\(sealing.rawValue)/jsonl.sqlite3").path
                let jsonlRun = try CLI.run(
                    ["notify", "--jsonl", "--state", jsonlStore, "--app-name", jsonlApp, "--verbose"] + matrix.reader(sealing),
                    stdin: stream + "\n", environment: DesktopSession.environment, timeLimit: 30)
                let jsonlGot = WireParityTests.notifyOutcome([jsonlRun], shown: try DesktopSession.shown(jsonlApp), store: jsonlStore)
                if sealing == .one {
                    // Exit 0 whatever the lines' results (docs/spec/streams.md, --jsonl), and the agent's banners.
                    #expect(jsonlRun.status == 0, "\(jsonlRun.stderr)")
                    #expect(jsonlGot.split(separator: " | ").last == got.split(separator: " | ").last, "\(jsonlGot)")
                    reference["jsonl"] = jsonlGot
                } else {
                    #expect(jsonlGot == reference["jsonl"], "notify --jsonl, \(sealing.rawValue)")
                }
                // The agent on a FIFO, the same stream from two writers one after the other
                // (writers come and go): the same banners as from standard input.
                let fifoApp = "Parity FIFO \(sealing.rawValue) \(marker)"
                let fifoStore = keys.url.appendingPathComponent("parity/\(sealing.rawValue)/fifo.sqlite3").path
                let fifo = keys.url.appendingPathComponent("parity/\(sealing.rawValue)/inbox").path
                try #require(mkfifo(fifo, 0o600) == 0)
                let agent = try RunningCLI(
                    ["notify", "--follow", fifo, "--state", fifoStore, "--app-name", fifoApp, "--verbose"] + matrix.reader(sealing),
                    environment: DesktopSession.environment)
                let lines = stream.split(separator: "\n", omittingEmptySubsequences: false)
                for half in [lines.prefix(lines.count / 2), lines.dropFirst(lines.count / 2)] {
                    try Self.writeToFIFO(fifo, half.joined(separator: "\n") + "\n", while: agent)
                    // The agent has read this writer's lines (and seen it go) before the next comes.
                    #expect(agent.waitUntil(seconds: 30) { AgentTests.decided(agent) >= half.endIndex }, "\(agent.stderr)")
                }
                kill(agent.process.processIdentifier, SIGTERM)
                let status = agent.finish() ?? -1
                let fifoGot = WireParityTests.notifyOutcome(
                    [CLI.Output(status: status, stdout: agent.stdout, stderr: agent.stderr, stdoutBytes: [], timedOut: false)],
                    shown: try DesktopSession.shown(fifoApp),
                    store: fifoStore
                ).replacingOccurrences(of: fifo, with: "FIFO")
                if sealing == .one {
                    #expect(status == 0, "\(agent.stderr)")
                    // The source changes where lines come from, not what is shown.
                    #expect(fifoGot.split(separator: " | ").last == got.split(separator: " | ").last, "\(fifoGot)")
                    #expect(fifoGot.contains("follows the FIFO FIFO"), "\(fifoGot)")
                    reference["fifo"] = fifoGot
                } else {
                    #expect(fifoGot == reference["fifo"], "notify --follow FIFO, \(sealing.rawValue)")
                }
            }
            print("notify parity reference:", reference)
        }
    }

    /// Writes `text` into the FIFO as one writer: opened once the agent reads it (waiting up to
    /// 20 s while `agent` runs), written, and closed.
    static func writeToFIFO(_ fifo: String, _ text: String, while agent: RunningCLI) throws {
        var descriptor: Int32 = -1
        // Non-blocking until a reader has it open (ENXIO before), so a dead agent fails the test.
        try #require(
            agent.waitUntil(seconds: 20) {
                descriptor = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                return descriptor >= 0
            }, "\(agent.stderr)")
        defer { close(descriptor) }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBytes { try FileDescriptor(rawValue: descriptor).writeAll($0) }
    }

    @Test("eight concurrent notify runs of one push show exactly one banner")
    func eightConcurrentRuns() async throws {
        try await DesktopSession.exclusive {
            let sealed = try push(chat: "c", title: "Eight \(marker)", body: "B")
            let runs = try (0..<8).map { _ in
                try RunningCLI(["notify", "--key-file", keys.keyFile, "--state", state], environment: DesktopSession.environment)
            }
            for run in runs {
                run.write(sealed)
                run.closeInput()
            }
            for run in runs {
                #expect(run.finish() == 0, "\(run.stderr)")
                #expect(run.stderr == "")
            }
            #expect(try DesktopSession.shown(marker).count == 1)
        }
    }

    /// Starts notify with `--on-open command` (and `RECORD=record` in its environment), shows one
    /// push titled `title` and clicks its banner.
    func clickWithOnOpen(_ command: String, record: String, title: String) throws -> RunningCLI {
        var environment = DesktopSession.environment
        environment["RECORD"] = record
        let run = try RunningCLI(
            ["notify", "--key-file", keys.keyFile, "--state", state, "--wait", "30", "--on-open", command], environment: environment)
        run.write(try push(chat: "chat-\(marker)", title: "\(title) \(marker)", body: "B"))
        run.closeInput()
        try #require(try DesktopSession.waitUntilDisplayed(1), "\(run.stderr)")
        try DesktopSession.click()
        return run
    }

    @Test("a click runs --on-open with the chat id in KINDLY_CHAT_ID, not in any argument")
    func tapRunsOnOpen() async throws {
        try await DesktopSession.exclusive {
            let record = keys.url.appendingPathComponent("opened").path
            let command = #"{ printf '%s\n' "$KINDLY_CHAT_ID"; tr '\0' ' ' </proc/$$/cmdline; } > "$RECORD""#
            let run = try clickWithOnOpen(command, record: record, title: "Tap")
            #expect(run.finish() == 0, "\(run.stderr)")
            let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n")
            #expect(lines.first == "chat-\(marker)")
            #expect(lines.count == 2 && !lines[1].contains(marker), "\(lines)")
            #expect(run.stdout == "")
            #expect(run.stderr == "")
        }
    }

    @Test("an --on-open command that runs on neither keeps notify alive nor writes to its standard output")
    func longLivedOnOpen() async throws {
        try await DesktopSession.exclusive {
            let record = keys.url.appendingPathComponent("long-lived").path
            // Writes to its standard output, records its pid, then stays (as an app it started would).
            let command = #"exec 2>/dev/null; echo child-output; echo $$ > "$RECORD"; exec sleep 60"#
            let run = try clickWithOnOpen(command, record: record, title: "Run on")
            let status = run.finish(seconds: 20)
            func recordedPid() -> Int32? {
                (try? String(contentsOfFile: record, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            }
            let child = try #require(run.waitUntil { recordedPid() != nil } ? recordedPid() : nil)
            defer { kill(child, SIGKILL) }
            // The grace period is 2 s; the command sleeps 60: notify ended long before it (`finish`
            // gives nil past its cap of 20 s, reached only by waiting for the command).
            #expect(status == 0, "\(run.stderr)")
            #expect(kill(child, 0) == 0, "the --on-open command should still be running")
            #expect(run.stdout == "")
        }
    }

    @Test("without --on-open a click prints the opened event; a forged ActionInvoked is ignored")
    func tapPrintsEvent() async throws {
        try await DesktopSession.exclusive {
            let run = try RunningCLI(
                ["notify", "--key-file", keys.keyFile, "--state", state, "--wait", "30", "--verbose"],
                environment: DesktopSession.environment)
            run.write(try push(chat: "chat-\(marker)", title: "Tap \(marker)", body: "B"))
            run.closeInput()
            #expect(run.waitUntil { run.stderr.contains("shown as notification") })
            let id = try #require(run.stderr.split(separator: " ").last.flatMap { UInt32($0.trimmingCharacters(in: .newlines)) })
            // Another client on the bus sends the server's signal for this banner, to every
            // connection (notify's among them) and to all: not a click.
            for destination in try DesktopSession.connections() + [nil] {
                let forged = try CLI.run(
                    ["gdbus", "emit", "--session", "--object-path", "/org/freedesktop/Notifications"]
                        + (destination.map { ["--dest", $0] } ?? [])
                        + ["--signal", "org.freedesktop.Notifications.ActionInvoked", "uint32 \(id)", "'default'"],
                    environment: DesktopSession.environment, executable: URL(fileURLWithPath: "/usr/bin/env"))
                #expect(forged.status == 0, "\(forged.stderr)")
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(run.stdout == "")
            #expect(run.process.isRunning)

            try DesktopSession.click()
            #expect(run.finish() == 0, "\(run.stderr)")
            #expect(run.stdout == #"{"event":"opened","chat_id":"chat-\#(marker)"}"# + "\n")
        }
    }

    @Test("a banner closed while notify waits ends the wait, with no output")
    func closedEndsWait() async throws {
        try await DesktopSession.exclusive {
            let run = try RunningCLI(
                ["notify", "--key-file", keys.keyFile, "--state", state, "--wait", "60"], environment: DesktopSession.environment)
            run.write(try push(chat: "c", title: "Close \(marker)", body: "B"))
            run.closeInput()
            try #require(try DesktopSession.waitUntilDisplayed(1))
            _ = try DesktopSession.shown(marker)  // closes it
            #expect(run.finish(seconds: 10) == 0, "\(run.stderr)")
            #expect(run.stdout == "")
            #expect(run.stderr == "")
        }
    }

    @Test("a corrupt state file is reported once on stderr and every push is still shown")
    func corruptState() async throws {
        try await DesktopSession.exclusive {
            try FileManager.default.createDirectory(
                atPath: (state as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            try garbage.write(to: URL(fileURLWithPath: state))
            chmod(state, 0o600)
            let sealed = try push(chat: "c", title: "Corrupt \(marker)", body: "B")
            for _ in 0..<2 {
                let output = try notify(sealed)
                #expect(output.status == 0)
                #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
                #expect(output.stderr.hasPrefix("kindly-push: warning: \(state): "))
                #expect(output.stderr.contains("file is not a database"))
            }
            #expect(try DesktopSession.shown(marker).count == 2)
            #expect(try Data(contentsOf: URL(fileURLWithPath: state)) == garbage)

            // A state file that others can read is refused the same way.
            try FileManager.default.removeItem(atPath: state)
            #expect(FileManager.default.createFile(atPath: state, contents: nil))
            chmod(state, 0o644)
            let loose = try notify(sealed)
            #expect(loose.status == 0)
            #expect(loose.stderr.contains("permissions 644 are too open"), "\(loose.stderr)")
            #expect(try DesktopSession.shown(marker).count == 3)
        }
    }

    @Test("the state store is created 0600 in a 0700 folder and holds no chat or message id in clear")
    func stateFile() async throws {
        try await DesktopSession.exclusive {
            let output = try notify(try push(chat: "chat-\(marker)", title: "State \(marker)", body: "B", messageID: "msg-\(marker)"))
            #expect(output.status == 0, "\(output.stderr)")
            var status = stat()
            #expect(stat(state, &status) == 0 && status.st_mode & 0o777 == 0o600)
            #expect(stat((state as NSString).deletingLastPathComponent, &status) == 0 && status.st_mode & 0o777 == 0o700)
            for file in try FileManager.default.contentsOfDirectory(atPath: (state as NSString).deletingLastPathComponent) {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: (state as NSString).deletingLastPathComponent + "/" + file))
                #expect(bytes.range(of: Data(marker.utf8)) == nil, "\(file)")
            }
            _ = try DesktopSession.shown(marker)
        }
    }

    @Test("--jsonl shows each push as its line arrives and handles a click while the input is open")
    func liveStream() async throws {
        try await DesktopSession.exclusive {
            let run = try RunningCLI(
                ["notify", "--jsonl", "--key-file", keys.keyFile, "--state", state], environment: DesktopSession.environment)
            run.write(try push(chat: "one-\(marker)", title: "Live \(marker)", body: "first") + "\n")
            try #require(try DesktopSession.waitUntilDisplayed(1), "\(run.stderr)")
            try DesktopSession.click()
            #expect(run.waitUntil { run.stdout.hasSuffix("\n") })
            #expect(run.stdout == #"{"event":"opened","chat_id":"one-\#(marker)"}"# + "\n")
            // Bad lines are reported on stderr and the stream goes on.
            run.write("not json\n{}\n")
            run.write(try push(chat: "two-\(marker)", title: "Live \(marker)", body: "second") + "\n")
            #expect(try DesktopSession.waitUntilDisplayed(2), "\(run.stderr)")
            #expect(run.process.isRunning)
            run.closeInput()
            #expect(run.finish() == 0)
            #expect(
                run.stderr == """
                    kindly-push: bad_input: line 2: the input is not JSON: unexpected byte at offset 1
                    kindly-push: not_kindly: line 3: the push is not Kindly's; the host shows it (or use --passthrough)

                    """)
            #expect(try DesktopSession.shown(marker).map(\.body) == ["first", "second"])
        }
    }

    @Test("a push that is not Kindly's exits 1, or with --passthrough is shown as its own alert")
    func notKindly() async throws {
        try await DesktopSession.exclusive {
            let other = #"{"aps":{"alert":{"title":"Other \#(marker)","body":"<i>plain</i>"}}}"#
            let refused = try notify(other)
            #expect(refused.status == 1)
            #expect(refused.stdout == "")
            #expect(refused.stderr == "kindly-push: not_kindly: the push is not Kindly's; the host shows it (or use --passthrough)\n")
            #expect(try DesktopSession.shown(marker).isEmpty)
            let passed = try notify(other, ["--passthrough"])
            #expect(passed.status == 0, "\(passed.stderr)")
            let shown = try DesktopSession.shown(marker)
            try #require(shown.count == 1)
            #expect(shown[0].summary == "Other \(marker)")
            #expect(shown[0].body == "&lt;i&gt;plain&lt;/i&gt;")
            #expect(shown[0].category == "")
        }
    }

    @Test("a notification server that never answers costs 2 s and exit 74; the push is shown by a later run")
    func hungServer() async throws {
        try await DesktopSession.exclusive {
            // A private bus of its own, where a client owns the name and never answers.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-run-session")
            process.arguments = ["--", DesktopSession.control, "hang"]
            let output = Pipe()
            let input = Pipe()
            process.standardOutput = output
            process.standardInput = input
            process.standardError = FileHandle.nullDevice
            try process.run()
            // It ends when its standard input closes; Foundation reaps it (nothing waits here).
            defer { try? input.fileHandleForWriting.close() }
            let line = String(decoding: output.fileHandleForReading.availableLine(), as: UTF8.self)
            try #require(line.hasPrefix("unix:"), "\(line)")

            let sealed = try push(chat: "c", title: "Hung \(marker)", body: "B")
            let started = Date()
            let hung = try CLI.run(
                ["notify", "--key-file", keys.keyFile, "--state", state], stdin: sealed, environment: ["DBUS_SESSION_BUS_ADDRESS": line],
                timeLimit: 20)
            // Its budget (2 s), not D-Bus's 25 s: the cap of 20 s is reached only without it.
            let seconds = Date().timeIntervalSince(started)
            #expect(!hung.timedOut)
            #expect(hung.status == 74)
            #expect(hung.stderr.hasPrefix("kindly-push: io: the notification server did not answer within 2"), "\(hung.stderr)")
            #expect(seconds >= 2, "took \(seconds) s: it did not wait for the server")

            // The failed run did not count the push as shown.
            #expect(try notify(sealed).status == 0)
            #expect(try DesktopSession.shown(marker).count == 1)
        }
    }
}

/// Without a desktop: what does not need a notification server.
@Suite("kindly-push notify without a desktop", .offThePool)
struct NotifyTests {
    @Test("no session bus: exit 74 at once with one line; nothing to show needs no bus")
    func noBus() throws {
        let keys = try KeyFolder()
        let payload = try DecryptedPayload(chatId: "c", title: "T", body: "B")
        let sealed = String(decoding: try KindlyPushSealer.seal(payload, for: keys.key.publicKey), as: UTF8.self)
        let state = keys.url.appendingPathComponent("state/state.sqlite3").path
        let output = try CLI.run(
            ["notify", "--key-file", keys.keyFile, "--state", state], stdin: sealed,
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"], timeLimit: 10)
        #expect(!output.timedOut)
        #expect(output.status == 74)
        #expect(output.stdout == "")
        #expect(output.stderr.hasPrefix("kindly-push: io: could not connect to the session bus: "), "\(output.stderr)")
        #expect(output.stderr.split(separator: "\n").count == 1)

        // In the foreground, on the chat's screen, nothing is shown: no bus is needed.
        let none = try CLI.run(
            ["notify", "--key-file", keys.keyFile, "--state", state, "--app-state", "foreground", "--screen", "chat"], stdin: sealed,
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"], timeLimit: 10)
        #expect(none.status == 0, "\(none.stderr)")
        #expect(none.stderr == "")
        // Not Kindly's: exit 1, as check.
        let other = try CLI.run(["notify", "--key-file", keys.keyFile, "--state", state], stdin: #"{"aps":{"alert":"x"}}"#)
        #expect(other.status == 1)
    }

    @Test(
        "bad options are usage errors",
        arguments: [
            (
                ["--wait", "soon"],
                "kindly-push: usage: '--wait' takes a number of seconds from 0 to 86400 (see 'kindly-push notify --help')"
            ),
            (
                ["--dedup-ttl", "3w"],
                "kindly-push: usage: '--dedup-ttl' takes a whole number with an optional unit s, m, h or d, such as 7d (see 'kindly-push notify --help')"
            ),
            (["--app-name", ""], "kindly-push: usage: '--app-name' takes a non-empty value (see 'kindly-push notify --help')"),
            (["--jobs", "2"], "kindly-push: usage: unknown option '--jobs' (see 'kindly-push notify --help')"),
            (["--extension"], "kindly-push: usage: unknown option '--extension' (see 'kindly-push notify --help')"),
        ])
    func usage(_ arguments: [String], _ message: String) throws {
        let output = try CLI.run(["notify"] + arguments, stdin: "{}")
        #expect(output.status == 64)
        #expect(output.stdout == "")
        #expect(output.stderr == message + "\n")
    }

    @Test("in CI, a desktop was started for the tests", .enabled(if: DesktopSession.isRequired))
    func startedInCI() {
        #expect(DesktopSession.isRunning, "CI=true but no desktop: run the tests under tools/with-desktop")
    }
}

extension FileHandle {
    /// Reads up to the first newline (blocking), without it.
    fileprivate func availableLine() -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            let byte = readData(ofLength: 1)
            guard let first = byte.first, first != 0x0A else { return bytes }
            bytes.append(first)
        }
    }
}

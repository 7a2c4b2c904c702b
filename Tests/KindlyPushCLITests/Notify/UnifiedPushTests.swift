import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushWebPush
import Testing

/// The device side of UnifiedPush (wire-format section 9.4) through the real binary, against the
/// distributor stand-in of tools/with-unifiedpush-distributor (tools/unifiedpush/distributor.py,
/// on a private session bus, with the Web Push service stand-in it subscribes on): `unifiedpush
/// register` and `unregister`, and the agent turning each `Message` into a banner under dunst.
@Suite(
    "UnifiedPush: register, unregister, and the agent showing each Message",
    .serialized,
    .enabled(if: UnifiedPushSession.distributor != nil, "no distributor: run under tools/with-unifiedpush-distributor"), .offThePool)
struct UnifiedPushTests {
    static var variables: [String: String] { UnifiedPushSession.variables }
    static var distributor: String? { UnifiedPushSession.distributor }

    let keys: KeyFolder
    let sender = SenderKey.generate()
    let marker = "U\(UInt32.random(in: 0...UInt32.max))"
    var keyring: String { keys.url.appendingPathComponent("keyring").path }
    var registrationFile: String { keyring + "/unifiedpush/registration.json" }

    init() throws {
        keys = try KeyFolder()
        try FileKeyring(folder: keyring).store(keys.key, label: "device")
    }

    /// The bus (and display) of the run, and this test's file keyring.
    var environment: [String: String] {
        var environment = DesktopSession.environment
        environment["KINDLY_PUSH_KEYRING_DIR"] = keyring
        return environment
    }

    /// Every call the distributor recorded, in and out.
    static func calls() throws -> [[String: Any]] {
        let path = (variables["KINDLY_PUSH_TEST_UNIFIEDPUSH_DIR"] ?? "/nonexistent") + "/calls.jsonl"
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
    }

    /// The calls of `method` whose arguments carry `token`.
    static func calls(_ method: String, token: String) throws -> [[String: Any]] {
        try calls().filter { $0["method"] as? String == method && ($0["args"] as? [String: Any])?["token"] as? String == token }
    }

    /// The registration file's token.
    func token() throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: registrationFile))) as? [String: Any]
        return try #require(object?["token"] as? String)
    }

    /// `unifiedpush register`: its registration, parsed.
    func register(_ extra: [String] = []) throws -> [String: Any] {
        let output = try CLI.run(["unifiedpush", "register", "--keyring", "file"] + extra, environment: environment)
        try #require(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.isEmpty, "\(output.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
    }

    static func subscription(_ registration: [String: Any]) throws -> (endpoint: String, p256dh: String, auth: String) {
        let subscription = try #require(registration["subscription"] as? [String: Any])
        let keys = try #require(subscription["keys"] as? [String: Any])
        return (
            try #require(subscription["endpoint"] as? String), try #require(keys["p256dh"] as? String),
            try #require(keys["auth"] as? String)
        )
    }

    @Test(
        "register prints the webpush registration once NewEndpoint came (service ai.kindly.Push), keeps its keys when run again, and unregister ends it and forgets them"
    )
    func registerAndUnregister() throws {
        let registration = try register()
        #expect(registration["platform"] as? String == "webpush")
        #expect(registration["push_mode"] as? String == "alert")
        #expect(registration["public_key"] as? String == keys.key.publicKey.base64URL)
        #expect(registration["kid"] as? String == keys.key.kid.base64URL)
        let subscription = try Self.subscription(registration)
        let service = try #require(Self.variables["KINDLY_PUSH_TEST_WEBPUSH_URL"])
        #expect(subscription.endpoint.hasPrefix(service + "/push/"), "\(subscription.endpoint)")
        let point = try Base64.decode(subscription.p256dh)
        #expect(point.count == 65 && point.first == 4)
        #expect(try Base64.decode(subscription.auth).count == 16)
        // The keys are the registration file's (0600), and its private half is printed nowhere.
        var status = stat()
        #expect(stat(registrationFile, &status) == 0 && status.st_mode & 0o777 == 0o600)
        let file = try String(contentsOfFile: registrationFile, encoding: .utf8)
        let secret = try #require(
            (try JSONSerialization.jsonObject(with: Data(file.utf8)) as? [String: Any])?["secret_key"] as? String)
        #expect(!String(describing: registration).contains(secret))
        // What the distributor saw: Register from the owner of ai.kindly.Push, then NewEndpoint to it.
        let token = try token()
        let registers = try Self.calls("Register", token: token)
        try #require(registers.count == 1)
        #expect((registers[0]["args"] as? [String: Any])?["service"] as? String == "ai.kindly.Push")
        #expect((registers[0]["answer"] as? [String: Any])?["success"] as? String == "REGISTRATION_SUCCEEDED")
        #expect(try Self.calls("NewEndpoint", token: token).first?["peer"] as? String == "ai.kindly.Push")
        // Again: the same keys, token and endpoint.
        let again = try Self.subscription(try register())
        #expect(again == subscription)
        #expect(try self.token() == token)
        // Unregister: the distributor hears it, the keys are gone, a new registration has new keys.
        let output = try CLI.run(["unifiedpush", "unregister", "--keyring", "file"], environment: environment)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(try Self.calls("Unregister", token: token).count == 1)
        #expect(!FileManager.default.fileExists(atPath: registrationFile))
        let second = try CLI.run(["unifiedpush", "unregister", "--keyring", "file"], environment: environment)
        #expect(second.status == 74 && second.stderr.hasPrefix("kindly-push: io: no UnifiedPush registration here"), "\(second.stderr)")
        let fresh = try Self.subscription(try register())
        #expect(fresh.p256dh != subscription.p256dh && fresh.auth != subscription.auth)
        #expect(try self.token() != token)
    }

    @Test(
        "with the device key in the Secret Service, register keeps the Web Push keys there and writes no file; the agent on that keyring opens a Message with them; unregister deletes them",
        .enabled(if: SecretServiceSession.isRunning, "no Secret Service: run under tools/with-secret-service"),
        .enabled(if: DesktopSession.isRunning, "no notification server: run under tools/with-desktop")
    )
    func secretServiceKeyring() async throws {
        var environment = self.environment
        environment["KINDLY_PUSH_SECRET_SERVICE_COLLECTION"] = try SecretServiceSession.createCollection()
        let keygen = try CLI.run(["keygen", "--keyring", "secret-service"], environment: environment)
        try #require(keygen.status == 0, "\(keygen.stderr)")
        let publicKey = try DevicePublicKey(base64: try #require(try JSONValue(parsing: keygen.stdout)["public_key"]?.stringValue))
        func register() throws -> (endpoint: String, p256dh: String, auth: String) {
            let output = try CLI.run(["unifiedpush", "register", "--keyring", "secret-service"], environment: environment)
            try #require(output.status == 0, "\(output.stderr)")
            return try Self.subscription(try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]))
        }
        let subscription = try register()
        #expect(!FileManager.default.fileExists(atPath: registrationFile))
        // Kept: registering again gives the same keys.
        #expect(try register() == subscription)
        // The token the distributor was given (this suite runs one test at a time).
        let registers = try Self.calls().filter { $0["method"] as? String == "Register" }
        let token = try #require((registers.last?["args"] as? [String: Any])?["token"] as? String)
        let app = "UnifiedPush Secret Service \(marker)"
        let store = keys.url.appendingPathComponent("secret-service.sqlite3").path
        try await DesktopSession.exclusive {
            let agent = try RunningCLI(
                ["notify", "--follow", "-", "--keyring", "secret-service", "--state", store, "--app-name", app, "--verbose"],
                environment: environment)
            #expect(agent.waitUntil { (try? AgentTests.gdbus(["wait", "--session", "--timeout", "1", "ai.kindly.Push"]).status) == 0 })
            let payload = try DecryptedPayload(
                chatId: "c-1", title: "Kept \(marker)", body: "in the Secret Service", messageId: "m-\(marker)")
            let push = try KindlyPushSealer.seal(payload, for: publicKey)
            let subscriber = try WebPushSubscriptionKeys(p256dh: subscription.p256dh, auth: subscription.auth)
            let message = try push.withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscriber) }
            let call = try Self.deliver(message, token: token, id: "ss-1")
            #expect(call.status == 0, "\(call.stderr)")
            #expect(agent.waitUntil(seconds: 30) { Self.handled(agent) >= 1 }, "\(agent.stderr)")
            kill(agent.process.processIdentifier, SIGTERM)
            _ = agent.finish()
            #expect(agent.stderr.contains("banner shown"), "\(agent.stderr)")
            #expect(try DesktopSession.shown(app).map(\.summary) == ["Kept \(marker)"], "\(agent.stderr)")
        }
        let unregister = try CLI.run(["unifiedpush", "unregister", "--keyring", "secret-service"], environment: environment)
        #expect(unregister.status == 0, "\(unregister.stderr)")
        let second = try CLI.run(["unifiedpush", "unregister", "--keyring", "secret-service"], environment: environment)
        #expect(second.status == 74 && second.stderr.contains("none in the Secret Service"), "\(second.stderr)")
    }

    /// Calls the distributor stand-in's test control `method` with `arguments` (GVariant text).
    static func control(_ method: String, _ arguments: String...) throws -> CLI.Output {
        try AgentTests.gdbus(
            [
                "call", "--session", "--dest", distributor ?? "", "--object-path", "/org/unifiedpush/Distributor", "--method",
                "org.kindlytest.Control." + method,
            ] + arguments)
    }

    @Test("register takes its endpoint only from its distributor: another peer's NewEndpoint, made first, is not believed")
    func strangersEndpoint() throws {
        let service = try #require(Self.variables["KINDLY_PUSH_TEST_WEBPUSH_URL"])
        let before = try Self.calls().count
        #expect(try Self.control("HoldEndpoints", "true").status == 0)
        defer { _ = try? Self.control("HoldEndpoints", "false") }
        let run = try RunningCLI(["unifiedpush", "register", "--keyring", "file"], environment: environment)
        // The token of its Register, once the distributor has it (and holds its NewEndpoint).
        var token: String?
        #expect(
            run.waitUntil {
                let register = try? Self.calls().dropFirst(before).first { $0["method"] as? String == "Register" }
                token = (register?["args"] as? [String: Any])?["token"] as? String
                return token != nil
            })
        let forged = try AgentTests.gdbus(
            [
                "call", "--session", "--dest", "ai.kindly.Push", "--object-path", "/org/unifiedpush/Connector", "--method",
                "org.unifiedpush.Connector2.NewEndpoint",
                "{'token': <'\(try #require(token))'>, 'endpoint': <'https://forged.example/push/1'>}",
            ])
        #expect(forged.status == 0, "\(forged.stderr)")
        #expect(try Self.control("HoldEndpoints", "false").status == 0)
        #expect(run.finish() == 0, "\(run.stderr)")
        let registration = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let endpoint = try Self.subscription(registration).endpoint
        #expect(endpoint.hasPrefix(service + "/push/"), "\(endpoint)")
    }

    @Test("register without a device key, with a distributor that is not there, or with a bad --distributor fails with its code")
    func registerFailures() throws {
        let missing = try CLI.run(
            ["unifiedpush", "register", "--keyring", "file", "--distributor", "org.unifiedpush.Distributor.absent"],
            environment: environment)
        #expect(
            missing.status == 74 && missing.stderr.hasPrefix("kindly-push: io: org.unifiedpush.Distributor.absent"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: registrationFile))
        let bad = try CLI.run(["unifiedpush", "register", "--distributor", "org.example.Push"], environment: environment)
        #expect(bad.status == 64 && bad.stderr.hasPrefix("kindly-push: usage: --distributor"), "\(bad.stderr)")
        var empty = environment
        empty["KINDLY_PUSH_KEYRING_DIR"] = keys.url.appendingPathComponent("empty").path
        let noKey = try CLI.run(["unifiedpush", "register", "--keyring", "file"], environment: empty)
        #expect(noKey.status == 74 && noKey.stderr.contains("holds no device key"), "\(noKey.stderr)")
        let action = try CLI.run(["unifiedpush", "list"], environment: environment)
        #expect(action.status == 64, "\(action.stderr)")
    }

    @Test("two distributors on the bus: register asks for --distributor (usage), and takes the one it names")
    func severalDistributors() throws {
        let name = "org.unifiedpush.Distributor.second\(UInt32.random(in: 0...UInt32.max))"
        let owner = try Background(
            [
                "/usr/bin/python3", "-c",
                "import sys, time, dbus, dbus.service\nbus = dbus.SessionBus()\nname = dbus.service.BusName(sys.argv[1], bus)\nprint('ok', flush=True)\ntime.sleep(60)",
                name,
            ], environment: environment)
        let deadline = Date().addingTimeInterval(15)
        while !owner.output.contains("ok"), Date() < deadline { usleep(20_000) }
        try #require(owner.output.contains("ok"), "the second name was not taken")
        let output = try CLI.run(["unifiedpush", "register", "--keyring", "file"], environment: environment)
        #expect(output.status == 64, "\(output.stderr)")
        #expect(output.stderr.contains("several UnifiedPush distributors") && output.stderr.contains(name), "\(output.stderr)")
        let chosen = try register(["--distributor", try #require(Self.distributor)])
        #expect(chosen["platform"] as? String == "webpush")
    }

    /// The agent on standard input (kept open), with the test's keyring and, where the version
    /// proves its sender (2, 3 auth), the sender's key pinned.
    func agent(state: String, _ sealing: WireParityTests.Sealing) throws -> RunningCLI {
        let pin = sealing.needsSender ? ["--sender-key", sender.publicKey.base64URL] : []
        let run = try RunningCLI(
            ["notify", "--follow", "-", "--keyring", "file", "--state", state, "--verbose"] + pin, environment: environment)
        for name in ["ai.kindly.Push1", "ai.kindly.Push"] {
            #expect(run.waitUntil { (try? AgentTests.gdbus(["wait", "--session", "--timeout", "1", name]).status) == 0 }, "\(name)")
        }
        return run
    }

    @Test(
        "register --vapid: the distributor is given the backend's VAPID key, and its push service then takes only pushes that key signs; a key that is not one is a usage error and nothing is registered"
    )
    func registerWithVAPID() throws {
        let folder = keys.url.appendingPathComponent("vapid")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let vapid = try SendWebPushTests.vapidKey(in: folder)
        func registers() throws -> Int { try Self.calls().filter { $0["method"] as? String == "Register" }.count }
        let before = try registers()
        // A character of the point changed: the base64url of 65 bytes, not a point on the curve.
        var characters = Array(vapid.publicKey)
        characters[40] = characters[40] == "A" ? "B" : "A"
        for bad in ["abc", String(characters)] {
            let output = try CLI.run(["unifiedpush", "register", "--keyring", "file", "--vapid", bad], environment: environment)
            #expect(output.status == 64, "\(output.stderr)")
            #expect(output.stderr.contains("--vapid takes the VAPID public key vapid-keygen prints"), "\(output.stderr)")
        }
        #expect(try registers() == before)
        let registration = try register(["--vapid", vapid.publicKey])
        let given = try Self.calls("Register", token: try token()).last?["args"] as? [String: Any]
        #expect(given?["vapid"] as? String == vapid.publicKey, "\(given ?? [:])")
        // Its push service takes what that key signs, and refuses another key's.
        let ca = try #require(Self.variables["KINDLY_PUSH_TEST_WEBPUSH_CA"])
        let subscription = String(
            decoding: try JSONSerialization.data(withJSONObject: try #require(registration["subscription"])), as: UTF8.self)
        let line = #"{"subscription":\#(subscription),"push":{"aps":{"alert":{"title":"New message"}},"kindly":{"v":1}}}"# + "\n"
        let other = folder.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        var statuses: [Int?] = []
        for key in [vapid, try SendWebPushTests.vapidKey(in: other)] {
            let config = try SendWebPushTests.configuration(
                folder,
                "    webpush: {vapid_key_file: \(key.path), subject: \"mailto:ops@example.com\", ca_file: \(ca), "
                    + "allow_private_addresses: true}")
            let output = try CLI.run(["send", "--jsonl", "--config", config], stdin: line)
            statuses.append(SendTests.lines(output).first?["status"] as? Int)
        }
        #expect(statuses == [201, 403])
    }

    /// A push of `sealing` titled `title` for this device.
    func push(_ sealing: WireParityTests.Sealing, title: String, message: String) throws -> String {
        let payload = try DecryptedPayload(chatId: "c-\(message)", title: title, body: "Lunch?", messageId: message)
        let sealed = try KindlyPushSealer.seal(
            payload, for: keys.key.publicKey, wire: sealing.wire, from: sealing.needsSender ? sender : nil,
            placeholder: .init(title: "P\(marker)", body: "Open the app"))
        return String(decoding: sealed, as: UTF8.self)
    }

    /// `send --config` of `pushes` to the subscription: one 201 each.
    func send(_ pushes: [String], to registration: [String: Any], vapid: (path: String, publicKey: String), config: String) throws {
        let subscription = try JSONSerialization.data(withJSONObject: try #require(registration["subscription"]))
        let lines = pushes.map { #"{"subscription":\#(String(decoding: subscription, as: UTF8.self)),"push":\#($0)}"# + "\n" }
        let output = try CLI.run(["send", "--jsonl", "--config", config], stdin: lines.joined())
        #expect(output.status == 0, "\(output.stderr)")
        let results = SendTests.lines(output)
        #expect(results.count == pushes.count && results.allSatisfy { $0["status"] as? Int == 201 }, "\(output.stdout)")
    }

    @Test(
        "end to end, each wire version (1, 2, 3 base, 3 auth): register while the agent runs (it has ai.kindly.Push back after), send as Web Push, the distributor calls Message, dunst shows the decrypted banners; a push sent twice shows once; a tampered message is dropped with one line, a Message or Unregistered from a peer that is not the distributor is not believed, and the agent goes on",
        .enabled(if: DesktopSession.isRunning, "no notification server: run under tools/with-desktop"),
        arguments: WireParityTests.Sealing.allCases
    )
    func endToEnd(_ sealing: WireParityTests.Sealing) async throws {
        try await DesktopSession.exclusive {
            // The agent first: register takes ai.kindly.Push from it while it registers, and the
            // agent has it back once register ended.
            let agent = try agent(state: keys.url.appendingPathComponent("state.sqlite3").path, sealing)
            let registration = try register()
            func owner() -> String {
                let call = try? AgentTests.gdbus(
                    [
                        "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus", "--method",
                        "org.freedesktop.DBus.GetConnectionUnixProcessID", "ai.kindly.Push",
                    ])
                return call?.stdout ?? ""
            }
            #expect(agent.waitUntil { owner() == "(uint32 \(agent.process.processIdentifier),)\n" }, "\(owner())")
            let folder = keys.url.appendingPathComponent("send")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let vapid = try SendWebPushTests.vapidKey(in: folder)
            let ca = try #require(Self.variables["KINDLY_PUSH_TEST_WEBPUSH_CA"])
            let config = try SendWebPushTests.configuration(
                folder,
                "    webpush: {vapid_key_file: \(vapid.path), subject: \"mailto:ops@example.com\", ca_file: \(ca), "
                    + "allow_private_addresses: true}")
            let pushes = try (0..<4).map { try push(sealing, title: "T\(marker)-\($0)", message: "m-\($0)") }
            try send(pushes, to: registration, vapid: vapid, config: config)
            let token = try token()
            let delivered = agent.waitUntil(seconds: 30) {
                (try? Self.calls("Message", token: token).filter { $0["reply"] != nil }.count) ?? 0 >= 4
            }
            #expect(delivered, "\((try? Self.calls("Message", token: token)) ?? [])")
            #expect(agent.waitUntil(seconds: 30) { AgentTests.decided(agent) >= 4 }, "\(agent.stderr)")
            let shown = try DesktopSession.shown(marker)
            #expect(Set(shown.map(\.summary)) == Set((0..<4).map { "T\(marker)-\($0)" }), "\(shown) / \(agent.stderr)")
            #expect(shown.allSatisfy { $0.body == "Lunch?" }, "\(shown)")
            // Every Message was answered {"id": its id}.
            for call in try Self.calls("Message", token: token) { #expect(call["refused"] == nil && call["error"] == nil, "\(call)") }
            // The first push again: already shown, not shown again.
            try send([pushes[0]], to: registration, vapid: vapid, config: config)
            #expect(agent.waitUntil(seconds: 30) { agent.stderr.contains("already shown") }, "\(agent.stderr)")
            // A delivered message with one byte changed, delivered by the distributor.
            let body = try #require(
                ((try Self.calls("Message", token: token).first?["args"] as? [String: Any])?["message"] as? [String: Any])?["base64"]
                    as? String)
            let original = [UInt8](try #require(Data(base64Encoded: body)))
            var bytes = original
            bytes[bytes.count - 5] ^= 0x01
            let call = try Self.deliver(bytes, token: token, id: "tampered-1")
            #expect(call.status == 0, "\(call.stderr)")
            #expect(
                agent.waitUntil(seconds: 15) {
                    agent.stderr.contains("kindly-push: authentication_failed: UnifiedPush message tampered-1 dropped")
                }, "\(agent.stderr)")
            // The same message for this registration, called on the connector by another program of
            // the session: not the distributor's, dropped before it is decrypted; its Unregistered
            // is ignored, and the registration's keys stay.
            let forged = try Self.deliverAsStranger(original, token: token, id: "forged-1")
            #expect(forged.status == 0 && forged.stdout.contains("forged-1"), "\(forged.stderr)")
            #expect(
                agent.waitUntil(seconds: 15) {
                    agent.stderr.contains(
                        "kindly-push: untrusted_sender: UnifiedPush message forged-1 dropped: it came from :")
                        && agent.stderr.contains(", not from the registration's distributor \(Self.distributor ?? "")\n")
                }, "\(agent.stderr)")
            let unregistered = try AgentTests.gdbus(
                [
                    "call", "--session", "--dest", "ai.kindly.Push", "--object-path", "/org/unifiedpush/Connector", "--method",
                    "org.unifiedpush.Connector2.Unregistered", "{'token': <'\(token)'>}",
                ])
            #expect(unregistered.status == 0, "\(unregistered.stderr)")
            #expect(
                agent.waitUntil(seconds: 15) {
                    agent.stderr.contains("kindly-push: notify: a UnifiedPush Unregistered from :")
                        && agent.stderr.contains(", not from \(Self.distributor ?? ""), is ignored\n")
                }, "\(agent.stderr)")
            // Another registration's token: dropped; an empty or oversized message: refused by the call.
            let stranger = try Self.deliverAsStranger(bytes, token: "not-this-device", id: "stranger-1")
            #expect(stranger.status == 0, "\(stranger.stderr)")
            #expect(
                agent.waitUntil(seconds: 15) {
                    agent.stderr.contains("kindly-push: key_unavailable: UnifiedPush message stranger-1 dropped")
                }, "\(agent.stderr)")
            for size in [0, 4097] {
                let refused = try Self.deliverAsStranger([UInt8](repeating: 7, count: size), token: token, id: "size-\(size)")
                #expect(refused.status != 0 && refused.stderr.contains("InvalidArgs"), "\(size): \(refused.stderr)")
            }
            // The agent goes on: the next push shows.
            try send([try push(sealing, title: "T\(marker)-after", message: "m-after")], to: registration, vapid: vapid, config: config)
            #expect(
                agent.waitUntil(seconds: 30) { (try? DesktopSession.shown("T\(marker)-after").count) == 1 }, "\(agent.stderr)")
            #expect(agent.process.isRunning)
            kill(agent.process.processIdentifier, SIGTERM)
            #expect(agent.finish() == 0, "\(agent.stderr)")
        }
    }

    /// Has the distributor call the agent's `Message` with `message` for the registration
    /// `token` (its test control, `Deliver`), as for a message its push service accepted; the
    /// output of the call to the distributor.
    static func deliver(_ message: [UInt8], token: String, id: String) throws -> CLI.Output {
        let list = message.map { String(format: "0x%02x", $0) }.joined(separator: ", ")
        return try AgentTests.gdbus(
            [
                "call", "--session", "--dest", distributor ?? "", "--object-path", "/org/unifiedpush/Distributor", "--method",
                // GVariant text: a token may begin with '-', which gdbus would take for an option.
                "org.kindlytest.Control.Deliver", "'\(token)'", "@ay [\(list)]", "'\(id)'",
            ])
    }

    /// Calls the agent's `Message` from this test, a peer that is not the distributor; the
    /// call's output.
    static func deliverAsStranger(_ message: [UInt8], token: String, id: String) throws -> CLI.Output {
        let list = message.map { String(format: "0x%02x", $0) }.joined(separator: ", ")
        return try AgentTests.gdbus(
            [
                "call", "--session", "--dest", "ai.kindly.Push", "--object-path", "/org/unifiedpush/Connector", "--method",
                "org.unifiedpush.Connector2.Message", "{'token': <'\(token)'>, 'message': <@ay [\(list)]>, 'id': <'\(id)'>}",
            ])
    }

    @Test(
        "the parity matrix's UnifiedPush row: every case, each delivered twice as an RFC 8291 Message to the agent, every version and mode as version 1",
        .enabled(if: DesktopSession.isRunning, "no notification server: run under tools/with-desktop")
    )
    func parityMatrix() async throws {
        let matrix = try WireParityTests()
        try FileKeyring(folder: keyring).store(matrix.keys.key, label: "parity")
        try await DesktopSession.exclusive {
            let registration = try Self.subscription(try register())
            let subscriber = try WebPushSubscriptionKeys(p256dh: registration.p256dh, auth: registration.auth)
            let token = try token()
            var reference = ""
            for sealing in WireParityTests.Sealing.allCases {
                let app = "Parity UnifiedPush \(sealing.rawValue) \(marker)"
                let store = keys.url.appendingPathComponent("parity-\(sealing.rawValue).sqlite3").path
                let agent = try RunningCLI(
                    ["notify", "--follow", "-", "--state", store, "--app-name", app, "--verbose"] + matrix.reader(sealing),
                    environment: environment)
                #expect(
                    agent.waitUntil { (try? AgentTests.gdbus(["wait", "--session", "--timeout", "1", "ai.kindly.Push"]).status) == 0 })
                var delivered = 0
                for (index, name) in WireParityTests.cases.enumerated() {
                    let plaintext = Array(try matrix.input(name, sealing).utf8)
                    for round in 0..<2 {
                        let message = try plaintext.withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscriber) }
                        let call = try Self.deliver(message, token: token, id: "p-\(index)-\(round)")
                        #expect(call.status == 0, "\(call.stderr)")
                        delivered += 1
                        // One at a time: the outcome's lines come in the order delivered.
                        #expect(agent.waitUntil(seconds: 30) { Self.handled(agent) >= delivered }, "\(name): \(agent.stderr)")
                    }
                }
                kill(agent.process.processIdentifier, SIGTERM)
                let status = agent.finish() ?? -1
                let got = WireParityTests.notifyOutcome(
                    [CLI.Output(status: status, stdout: agent.stdout, stderr: agent.stderr, stdoutBytes: [], timedOut: false)],
                    shown: try DesktopSession.shown(app), store: store)
                if sealing == .one {
                    #expect(status == 0, "\(agent.stderr)")
                    #expect(got.contains("kindly-push: bad_input: UnifiedPush message p-5-0: "), "\(got)")
                    reference = got
                } else {
                    #expect(got == reference, "UnifiedPush, \(sealing.rawValue)")
                }
            }
            print("UnifiedPush parity reference:", reference)
        }
    }

    /// How many pushes the agent has handled: shown, a duplicate, nothing to show, or an error line.
    static func handled(_ agent: RunningCLI) -> Int {
        agent.stderr.split(separator: "\n").filter { line in
            ["banner shown", "placeholder shown", "already shown", "nothing to show", ": UnifiedPush message "].contains {
                line.contains($0)
            }
        }.count
    }
}

/// The agent's D-Bus activation files as tools/install ships them (data/dbus/, `@BINDIR@` the
/// built binary's folder), on a bus of the test's own: dbus-daemon reads only what its format says.
@Suite("The agent's D-Bus activation files, as shipped", .offThePool)
struct BusActivationTests {
    @Test(
        "each shipped service file (ai.kindly.Push for UnifiedPush's distributor, ai.kindly.Push1 for hosts) starts the agent at the first call to its name, which then owns both names",
        arguments: ["ai.kindly.Push", "ai.kindly.Push1"])
    func activates(_ name: String) throws {
        let shipped = try String(contentsOf: CLI.packageRoot.appendingPathComponent("data/dbus/\(name).service"), encoding: .utf8)
        let folder = CLI.binary.deletingLastPathComponent().path
        let bus = try TestBus(serviceFiles: [name: shipped.replacingOccurrences(of: "@BINDIR@", with: folder)])
        #expect(try !bus.hasOwner(name))
        let started = try bus.callBus("StartServiceByName", name, "0")
        #expect(started.hasPrefix("(uint32 1,)"), "\(started)")
        #expect(try bus.hasOwner(name))
        #expect(try bus.ownersAppear(["ai.kindly.Push", "ai.kindly.Push1"]))
        // The agent follows its FIFO until a signal: it is stopped here, not left to the bus's end.
        // Its answer is `(uint32 PID,)`.
        let answer = try bus.callBus("GetConnectionUnixProcessID", name)
        if let pid = answer.split(separator: " ").dropFirst().first.flatMap({ Int32($0.prefix(while: \.isNumber)) }) {
            kill(pid, SIGTERM)
        }
    }
}

/// tools/test runs the suite beside a distributor and says so: there the UnifiedPush tests must
/// run, not be skipped.
@Suite("UnifiedPush tests where the test command starts a distributor", .offThePool)
struct UnifiedPushRequiredTests {
    @Test(
        "where the test command starts a UnifiedPush distributor, the UnifiedPush tests run rather than being skipped",
        .enabled(if: UnifiedPushSession.variables["KINDLY_PUSH_TEST_UNIFIEDPUSH_REQUIRED"] == "1"))
    func distributorIsThere() {
        #expect(
            UnifiedPushSession.distributor != nil,
            "KINDLY_PUSH_TEST_UNIFIEDPUSH_REQUIRED=1 but no distributor: run the suite under tools/with-unifiedpush-distributor")
    }
}

/// The run of tools/with-unifiedpush-distributor: its distributor's bus name, its folder.
enum UnifiedPushSession {
    static let variables = ProcessInfo.processInfo.environment
    /// Set when the distributor stand-in owns its name on the bus.
    static var distributor: String? { variables["KINDLY_PUSH_TEST_UNIFIEDPUSH_DISTRIBUTOR"] }
}

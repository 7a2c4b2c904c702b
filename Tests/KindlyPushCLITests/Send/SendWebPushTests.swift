import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushSend
import Testing

/// `send` to Web Push (wire-format section 9.4) through the real binary and a Web Push service
/// stand-in (tools/webpush/push_service.py, which checks VAPID): the document encrypted for the
/// subscription (RFC 8291) opens to itself with the subscription's keys, here and in PyPI's
/// http_ece; the headers of section 9.4; the answers; a stream of APNs, FCM and Web Push lines.
@Suite("kindly-push send to Web Push (RFC 8291, VAPID)", .offThePool)
struct SendWebPushTests {
    static let plaintext = "Lunch?"

    /// A VAPID key file made by `vapid-keygen` in `folder`: its path and public key.
    static func vapidKey(in folder: URL) throws -> (path: String, publicKey: String) {
        let path = folder.appendingPathComponent("vapid.json").path
        let output = try CLI.run(["vapid-keygen", "--key-file", path])
        try #require(output.status == 0, "\(output.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        return (path, try #require(object?["public_key"] as? String))
    }

    /// A `send --config` file whose app `chat` has `sections` (YAML lines under it); its path.
    static func configuration(_ folder: URL, _ sections: String, name: String = "send.yaml") throws -> String {
        let path = folder.appendingPathComponent(name).path
        try "default_app: chat\napps:\n  chat:\n\(sections)\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The `webpush` section for `service` with the VAPID key file `key`.
    static func webPushSection(_ service: WebPushTestService, key: String) -> String {
        "    webpush: {vapid_key_file: \(key), subject: \"mailto:ops@example.com\", ca_file: \(service.certificate), allow_private_addresses: true}"
    }

    /// The result lines of a run, each a JSON object.
    static func results(_ output: CLI.Output) -> [[String: Any]] { SendTests.lines(output) }

    /// Opens `message` (a file the service kept) with PyPI's http_ece and the subscriber's
    /// private scalar and auth secret: what it decrypts to.
    static func openWithHTTPECE(_ path: String, _ subscriber: WebPushTestService.Subscriber) throws -> [UInt8] {
        let scalar = try subscriber.key.scalar().withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
        let script = """
            import sys, http_ece
            from cryptography.hazmat.primitives.asymmetric import ec
            key = ec.derive_private_key(int(sys.argv[2], 16), ec.SECP256R1())
            body = open(sys.argv[1], "rb").read()
            sys.stdout.buffer.write(http_ece.decrypt(body, private_key=key, auth_secret=bytes.fromhex(sys.argv[3]), version="aes128gcm"))
            """
        let process = Process()
        let python = APNsTestServer.python
        process.executableURL = URL(fileURLWithPath: python[0])
        process.arguments =
            Array(python.dropFirst()) + ["-c", script, path, scalar, subscriber.auth.map { String(format: "%02x", $0) }.joined()]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "http_ece did not open the message")
        return Array(data)
    }

    @Test(
        "each wire version (1, 2, 3 base and auth) sent through --config reaches its subscription; the kept message opens to exactly the push, with our decryption and http_ece's, and that push decrypts"
    )
    func everyWireVersion() throws {
        let service = try WebPushTestService()
        let vapid = try Self.vapidKey(in: service.folder)
        let path = try Self.configuration(service.folder, Self.webPushSection(service, key: vapid.path))
        let keys = try KeyFolder()
        let sender = SenderKey.generate()
        let payload = try DecryptedPayload(chatId: "c-1", title: "Anna", body: Self.plaintext, messageId: "m-1", sentAt: 1_764_460_800)
        var subscribers: [WebPushTestService.Subscriber] = []
        var pushes: [String] = []
        var lines: [String] = []
        for sealing in WireParityTests.Sealing.allCases {
            let sealed = try KindlyPushSealer.seal(
                payload, for: keys.key.publicKey, wire: sealing.wire, from: sealing.needsSender ? sender : nil, placeholder: .default)
            let push = String(decoding: sealed, as: UTF8.self)
            let subscriber = try service.subscribe("sub-\(subscribers.count)", vapid: vapid.publicKey)
            subscribers.append(subscriber)
            pushes.append(push)
            lines.append(subscriber.line(push, extra: #","id":"\#(sealing.rawValue)""#))
        }
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        let results = Self.results(output)
        try #require(results.count == 4, "\(output.stdout)")
        for (index, sealing) in WireParityTests.Sealing.allCases.enumerated() {
            let result = results[index]
            #expect(result["id"] as? String == sealing.rawValue)
            #expect(result["platform"] as? String == "webpush")
            #expect(result["status"] as? Int == 201, "\(result)")
            #expect(result["endpoint"] as? String == subscribers[index].endpoint)
            #expect((result["location"] as? String ?? "").hasPrefix("\(service.url)/message/"), "\(result)")
            let messages = service.messages(subscribers[index].id)
            try #require(messages.count == 1, "\(sealing)")
            let opened = try subscribers[index].open(messages[0])
            #expect(String(decoding: opened, as: UTF8.self) == pushes[index], "\(sealing)")
            // The push is Kindly's, and opens on the device to the message.
            let reader = ["--key-file", keys.keyFile] + (sealing.needsSender ? ["--sender-key", sender.publicKey.base64URL] : [])
            let decrypted = try CLI.run(["decrypt"] + reader, stdin: opened)
            #expect(decrypted.status == 0, "\(sealing): \(decrypted.stderr)")
            #expect(decrypted.stdout.contains(Self.plaintext), "\(sealing)")
        }
        // An independent implementation (PyPI's http_ece) opens what send encrypted.
        for index in [0, 3] {
            let opened = try Self.openWithHTTPECE(service.messagePath(subscribers[index].id, 1), subscribers[index])
            #expect(String(decoding: opened, as: UTF8.self) == pushes[index])
        }
        // What the service saw: VAPID with the app's key for the endpoint's origin, one aes128gcm record.
        let records = try service.records().filter { $0["verdict"] as? String == "accepted" }
        #expect(records.count == 4)
        for record in records {
            let vapidClaims = (record["vapid"] as? [String: Any])?["claims"] as? [String: Any]
            #expect(vapidClaims?["aud"] as? String == service.url)
            #expect(vapidClaims?["sub"] as? String == "mailto:ops@example.com")
            #expect((record["vapid"] as? [String: Any])?["k"] as? String == vapid.publicKey)
            let ece = record["ece"] as? [String: Any]
            #expect(ece?["rs"] as? Int == 4096)
            #expect(ece?["keyid_is_p256_point"] as? Bool == true)
        }
    }

    @Test("TTL, Urgency and Topic from the line's expiration, priority and collapse id (wire-format section 9.4), else the defaults")
    func headers() throws {
        let service = try WebPushTestService()
        let vapid = try Self.vapidKey(in: service.folder)
        let path = try Self.configuration(service.folder, Self.webPushSection(service, key: vapid.path))
        let visible = #"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"kindly":{"v":1}}"#
        let silent = #"{"aps":{"content-available":1},"kindly":{"v":1}}"#
        let long = String(repeating: "chat.", count: 10)
        var subscribers: [WebPushTestService.Subscriber] = []
        for index in 0..<4 { subscribers.append(try service.subscribe("h-\(index)", vapid: vapid.publicKey)) }
        let expiration = Int(Date().timeIntervalSince1970) + 600
        let lines = [
            subscribers[0].line(visible, extra: #","collapse_id":"chat-1","expiration":\#(expiration),"priority":5"#),
            subscribers[1].line(visible),
            subscribers[2].line(silent, extra: #","collapse_id":"\#(long)","expiration":1"#),
            subscribers[3].line(silent, extra: #","priority":10"#),
        ]
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        #expect(Self.results(output).map { $0["status"] as? Int } == [201, 201, 201, 201], "\(output.stdout)")
        func headers(_ index: Int) -> [String: String] {
            (try? service.pushes("h-\(index)"))?.first?["headers"] as? [String: String] ?? [:]
        }
        let ttl = Int(headers(0)["ttl"] ?? "") ?? -1
        #expect((590...600).contains(ttl), "\(headers(0))")
        #expect(headers(0)["urgency"] == "normal")
        #expect(headers(0)["topic"] == "chat-1")
        #expect(headers(0)["content-encoding"] == "aes128gcm")
        #expect(headers(1)["ttl"] == "2419200")
        #expect(headers(1)["urgency"] == "high")
        #expect(headers(1)["topic"] == nil)
        // An expiration past: TTL 0. A collapse id that is no topic: its SHA-256, 32 characters.
        #expect(headers(2)["ttl"] == "0")
        #expect(headers(2)["urgency"] == "normal")
        let digest = Array(long.utf8).withUnsafeBytes { SHA256Digest.digest($0) }
        #expect(headers(2)["topic"] == String(Base64.urlEncoded(digest).prefix(32)))
        #expect(headers(3)["urgency"] == "high")
    }

    @Test("404 and 410 say the subscription is gone; 413 and 400 are that push's refusals; nothing is retried")
    func answers() throws {
        let script: [String: Any] = [
            "answers": [
                "gone": [["status": 410]], "unknown": [["status": 404]], "big": [["status": 413]], "bad": [["status": 400]],
            ]
        ]
        let service = try WebPushTestService(script: script)
        let vapid = try Self.vapidKey(in: service.folder)
        let path = try Self.configuration(service.folder, Self.webPushSection(service, key: vapid.path))
        let push = #"{"aps":{"alert":{"title":"New message"}},"kindly":{"v":1}}"#
        var lines: [String] = []
        for id in ["gone", "unknown", "big", "bad"] { lines.append(try service.subscribe(id, vapid: vapid.publicKey).line(push)) }
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        let results = Self.results(output)
        try #require(results.count == 4, "\(output.stdout)")
        #expect(results.map { $0["status"] as? Int } == [410, 404, 413, 400])
        #expect(results.map { $0["gone"] as? Bool } == [true, true, nil, nil])
        #expect(results[0]["reason"] as? String == "Gone")
        #expect(results.allSatisfy { $0["platform"] as? String == "webpush" })
        // Each asked once.
        #expect(try service.records().filter { $0["verdict"] as? String == "scripted" }.count == 4)
    }

    @Test("429 with Retry-After: sent again no sooner than it says, then accepted")
    func retryAfter() throws {
        let service = try WebPushTestService(script: ["answers": ["busy": [["status": 429, "retry_after": 1], ["status": 503]]]])
        let vapid = try Self.vapidKey(in: service.folder)
        let path = try Self.configuration(service.folder, Self.webPushSection(service, key: vapid.path))
        let subscriber = try service.subscribe("busy", vapid: vapid.publicKey)
        let started = Date()
        let output = try CLI.run(
            ["send", "--jsonl", "--config", path], stdin: subscriber.line(#"{"aps":{"alert":{"title":"Hi"}},"kindly":{"v":1}}"#) + "\n")
        // The backoff alone would be a few hundred milliseconds: Retry-After's second was waited.
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed >= 1, "the run took \(elapsed) s with a Retry-After: 1")
        #expect(output.status == 0, "\(output.stderr)")
        let results = Self.results(output)
        #expect(results.first?["status"] as? Int == 201, "\(output.stdout)")
        let records = try service.pushes("busy")
        #expect(records.map { $0["status"] as? Int } == [429, 503, 201])
        #expect(service.messages("busy").count == 1)
    }

    @Test(
        "one stream of APNs, FCM and Web Push lines: results in input order with their platform; a line for a platform its app lacks is its usage error"
    )
    func mixedPlatforms() throws {
        let apns = try APNsTestServer(script: ["initial_streams": 100])
        // Web Push answers slowly: the others' answers come first, and wait for their turn.
        let service = try WebPushTestService(script: ["delay_ms": 150])
        let fcm = try SendFCMTests.server()
        let vapid = try Self.vapidKey(in: service.folder)
        let apnsSection = """
                apns: {team_id: \(APNsTestServer.teamID), key_id: \(APNsTestServer.keyID), key_file: \(apns.keyFile),
                       topic: \(APNsTestServer.topic), url: "\(apns.url)", ca_file: \(apns.certificate)}
            """
        let account = fcm.folder.appendingPathComponent("service-account.json").path
        let fcmSection = "    fcm: {service_account_file: \(account), url: \"\(fcm.url)\", ca_file: \(fcm.certificate)}"
        let path = try Self.configuration(
            service.folder, [apnsSection, fcmSection, Self.webPushSection(service, key: vapid.path)].joined(separator: "\n"))
        let onlyAPNs = service.folder.appendingPathComponent("apns-only.yaml").path
        try "apps:\n  chat:\n\(apnsSection)\n".write(toFile: onlyAPNs, atomically: true, encoding: .utf8)
        let subscriber = try service.subscribe("mixed", vapid: vapid.publicKey)
        let platforms = (0..<45).map { ["apns", "webpush", "fcm"][$0 % 3] }
        var lines: [String] = []
        for (index, platform) in platforms.enumerated() {
            let push = #"{"aps":{"alert":{"title":"n\#(index)"}},"kindly":{"v":1}}"#
            switch platform {
            case "apns": lines.append(APNsTestServer.line(APNsTestServer.token(index), push: push, extra: #","id":\#(index)"#))
            case "webpush": lines.append(subscriber.line(push, extra: #","id":\#(index)"#))
            default: lines.append(#"{"id":\#(index),"fcm_token":"device-\#(index)","push":\#(push)}"#)
            }
        }
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        let results = Self.results(output)
        try #require(results.count == 45, "\(output.stdout)")
        #expect(results.map { $0["id"] as? Int } == Array(0..<45))
        #expect(results.map { $0["platform"] as? String } == platforms)
        #expect(results.map { $0["status"] as? Int } == platforms.map { $0 == "webpush" ? 201 : 200 }, "\(output.stdout)")
        #expect(results[0]["token"] as? String == APNsTestServer.token(0))
        #expect(results[1]["endpoint"] as? String == subscriber.endpoint)
        #expect(results[2]["fcm_token"] as? String == "device-2")
        // Every push reached its service: 15 each.
        #expect(service.messages("mixed").count == 15)
        #expect(try apns.records().filter { $0["status"] as? Int == 200 }.count == 15)
        #expect(try SendFCMTests.sends(fcm).filter { $0["status"] as? Int == 200 }.count == 15)

        // An app with no webpush section: that line's usage error; the APNs line is sent.
        let refused = try CLI.run(["send", "--jsonl", "--config", onlyAPNs], stdin: lines[0] + "\n" + lines[1] + "\n")
        #expect(refused.status == 0, "\(refused.stderr)")
        let refusedResults = Self.results(refused)
        try #require(refusedResults.count == 2, "\(refused.stdout)")
        #expect(refusedResults[0]["status"] as? Int == 200)
        let error = refusedResults[1]["error"] as? [String: Any]
        #expect(error?["code"] as? String == "usage")
        #expect((error?["message"] as? String ?? "").contains("app 'chat' of \(onlyAPNs) has no 'webpush' section"))
        // Without --config, the one app of the options is APNs's: a subscription is refused the same way.
        let oneApp = try apns.send(["--jsonl"], stdin: lines[1] + "\n")
        #expect(oneApp.status == 0, "\(oneApp.stderr)")
        let oneAppError = Self.results(oneApp).first?["error"] as? [String: Any]
        #expect(oneAppError?["code"] as? String == "usage", "\(oneApp.stdout)")
        #expect((oneAppError?["message"] as? String ?? "").contains("a webpush line needs send --config"))
    }

    @Test(
        "--check describes the webpush section without its secret; its unknown keys, a bad subject, origin or limit are refused with their place"
    )
    func check() throws {
        let service = try WebPushTestService()
        let vapid = try Self.vapidKey(in: service.folder)
        let path = try Self.configuration(service.folder, Self.webPushSection(service, key: vapid.path))
        let output = try CLI.run(["send", "--config", path, "--check"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("app 'chat': webpush, subject mailto:ops@example.com, VAPID key \(vapid.path)"))
        #expect(output.stdout.contains("1 connection per push service, trusting only \(service.certificate)"))
        let file = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: vapid.path))) as? [String: Any]
        let secret = try #require(file?["secret_key"] as? String)
        #expect(!output.stdout.contains(secret) && !output.stderr.contains(secret))

        let misspelt = try Self.configuration(
            service.folder, "    webpush: {vapid_key_file: \(vapid.path), subject: \"mailto:a@b.c\", conections: 2}", name: "misspelt.yaml")
        let unknown = try CLI.run(["send", "--config", misspelt, "--check"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("misspelt.yaml:4:"), "\(unknown.stderr)")
        #expect(unknown.stderr.contains("apps.chat.webpush.conections: unknown key"), "\(unknown.stderr)")
        let subject = try Self.configuration(
            service.folder, "    webpush: {vapid_key_file: \(vapid.path), subject: ops@example.com}", name: "subject.yaml")
        let badSubject = try CLI.run(["send", "--config", subject, "--check"])
        #expect(badSubject.status == 64)
        #expect(badSubject.stderr.contains("apps.chat.webpush.subject: takes a mailto: or https: URL"), "\(badSubject.stderr)")
        for (member, words) in [
            ("allowed_origins: [\"https://push.example.net/push\"]", "allowed_origins: takes a list of origins"),
            ("allowed_origins: []", "allowed_origins: takes a list of origins"),
            ("max_push_services: 0", "max_push_services: takes a whole number from 1 to 1024"),
        ] {
            let file = try Self.configuration(
                service.folder, "    webpush: {vapid_key_file: \(vapid.path), subject: \"mailto:a@b.c\", \(member)}", name: "limits.yaml")
            let refused = try CLI.run(["send", "--config", file, "--check"])
            #expect(refused.status == 64 && refused.stderr.contains("limits.yaml:4:"), "\(member): \(refused.stderr)")
            #expect(refused.stderr.contains("apps.chat.webpush.\(words)"), "\(refused.stderr)")
        }
        chmod(vapid.path, 0o644)
        let open = try CLI.run(["send", "--config", path, "--check"])
        #expect(open.status != 0)
        #expect(open.stderr.contains("app 'chat': vapid_key_file:"), "\(open.stderr)")
    }

    /// Two push services, a VAPID key in the first one's folder, and one CA file there that
    /// trusts both.
    static func twoServices() throws -> (WebPushTestService, WebPushTestService, vapid: (path: String, publicKey: String), ca: String) {
        let services = (try WebPushTestService(), try WebPushTestService())
        let path = services.0.folder.appendingPathComponent("authorities.pem").path
        let bundle = try [services.0, services.1].map { try String(contentsOfFile: $0.certificate, encoding: .utf8) }.joined()
        try bundle.write(toFile: path, atomically: true, encoding: .utf8)
        return (services.0, services.1, try vapidKey(in: services.0.folder), path)
    }

    /// A push with no alert of its own to encrypt.
    static let push = #"{"aps":{"alert":{"title":"New message"}},"kindly":{"v":1}}"#

    @Test(
        "allowed origin patterns: exact origins normalized as VAPID's aud, wildcards for the hosts under a domain on its port; anything else refused"
    )
    func originPatterns() throws {
        let origins = try #require(WebPushOrigins(["https://*.push.example.net", "https://Push.Example.org:443/"]))
        #expect(origins.patterns == ["https://*.push.example.net", "https://push.example.org"])
        let allowed = ["https://a.push.example.net", "https://a.b.push.example.net", "https://push.example.org"]
        let refused = [
            "https://push.example.net", "https://a.push.example.net:8443", "https://evilpush.example.net", "https://push.example.org:8443",
            "https://example.org", "https://a.push.example.org",
        ]
        #expect(allowed.allSatisfy(origins.allows))
        #expect(!refused.contains(where: origins.allows))
        for pattern in [
            "http://push.example.net", "https://push.example.net/push", "https://a*.example.net", "https://*", "https://*.",
            "https://u@x.net",
        ] {
            #expect(WebPushOrigins([pattern]) == nil, "\(pattern)")
        }
    }

    @Test(
        "webpush.allowed_origins: a subscription at a push service not allowed is that line's bad_input and nothing reaches the service; an allowed one is sent"
    )
    func allowedOrigins() throws {
        let (allowed, other, vapid, ca) = try Self.twoServices()
        let section = """
                webpush: {vapid_key_file: \(vapid.path), subject: "mailto:ops@example.com", ca_file: \(ca),
                          allowed_origins: ["https://*.push.example.net", "\(allowed.url)/"], allow_private_addresses: true}
            """
        let path = try Self.configuration(allowed.folder, section)
        let push = Self.push
        let lines = [
            try other.subscribe("elsewhere", vapid: vapid.publicKey).line(push, extra: #","id":"r-1""#),
            try allowed.subscribe("here", vapid: vapid.publicKey).line(push, extra: #","id":"r-2""#),
        ]
        let check = try CLI.run(["send", "--config", path, "--check"])
        #expect(
            check.stdout.contains(
                "at most 64 push services at once, only https://*.push.example.net, \(allowed.url), private addresses too\n"),
            "\(check.stdout)")
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        let results = Self.results(output)
        try #require(results.count == 2, "\(output.stdout) \(output.stderr)")
        let error = results[0]["error"] as? [String: Any]
        #expect(error?["code"] as? String == "bad_input", "\(results[0])")
        #expect(
            error?["message"] as? String
                == "the subscription's push service \(other.url) is not among app 'chat's webpush.allowed_origins: not sent")
        #expect(results[1]["status"] as? Int == 201, "\(results[1])")
        #expect(try other.pushes("elsewhere").isEmpty)
        #expect(try allowed.pushes("here").count == 1)
    }

    @Test(
        "a push service that resolves only to a loopback address, by its address or its name, is that line's bad_input and nothing reaches it, unless the app allows private addresses"
    )
    func privateAddresses() throws {
        let service = try WebPushTestService()
        let vapid = try Self.vapidKey(in: service.folder)
        let section = "    webpush: {vapid_key_file: \(vapid.path), subject: \"mailto:ops@example.com\", ca_file: \(service.certificate)}"
        let path = try Self.configuration(service.folder, section)
        let byAddress = try service.subscribe("by-address", vapid: vapid.publicKey).line(Self.push, extra: #","id":"a""#)
        let byName = try service.subscribe("by-name", vapid: vapid.publicKey).line(Self.push, extra: #","id":"n""#)
            .replacingOccurrences(of: "https://127.0.0.1:", with: "https://localhost:")
        let check = try CLI.run(["send", "--config", path, "--check"])
        #expect(check.stdout.contains("at most 64 push services at once, any origin, global addresses only\n"), "\(check.stdout)")
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: byAddress + "\n" + byName + "\n")
        let results = Self.results(output)
        try #require(results.count == 2, "\(output.stdout) \(output.stderr)")
        for (result, host) in zip(results, ["127.0.0.1", "localhost"]) {
            let error = result["error"] as? [String: Any]
            #expect(error?["code"] as? String == "bad_input", "\(result)")
            let message = error?["message"] as? String ?? ""
            #expect(message.hasPrefix("\(host) resolves to "), "\(message)")
            #expect(
                message.hasSuffix(
                    ", a loopback, private, link-local or reserved address: not sent (webpush.allow_private_addresses allows one)"),
                "\(message)")
        }
        #expect(output.status == 0)
        #expect(try service.pushes("by-address").isEmpty && service.pushes("by-name").isEmpty)
        let allowing = try Self.configuration(
            service.folder, section.replacingOccurrences(of: "}", with: ", allow_private_addresses: true}"), name: "allowing.yaml")
        let sent = Self.results(try CLI.run(["send", "--jsonl", "--config", allowing], stdin: byAddress + "\n"))
        #expect(sent.first?["status"] as? Int == 201, "\(sent)")
        let misspelt = try Self.configuration(
            service.folder, section.replacingOccurrences(of: "}", with: ", allow_private_addresses: yes}"), name: "misspelt.yaml")
        let refused = try CLI.run(["send", "--config", misspelt, "--check"])
        #expect(refused.status == 64 && refused.stderr.contains("apps.chat.webpush.allow_private_addresses: takes true or false"))
    }

    @Test(
        "send --redis: a subscription whose push service is at a loopback address is dead-lettered as bad_input, never retried, and the worker goes on to the next entry",
        .enabled(if: WireParityTests.redis != nil, "needs tools/with-redis")
    )
    func privateAddressesThroughAWorker() throws {
        let redis = try #require(WireParityTests.redis)
        let service = try WebPushTestService()
        let vapid = try Self.vapidKey(in: service.folder)
        let path = try Self.configuration(
            service.folder,
            "    webpush: {vapid_key_file: \(vapid.path), subject: \"mailto:ops@example.com\", ca_file: \(service.certificate)}")
        let stream = "private:\(UUID().uuidString.prefix(8))"
        func redisCLI(_ arguments: [String]) throws -> String {
            let output = try CLI.run(
                ["-h", "127.0.0.1", "-p", redis.port, "--raw"] + arguments, environment: ["REDISCLI_AUTH": redis.password],
                executable: URL(fileURLWithPath: "/usr/bin/redis-cli"))
            try #require(output.status == 0, "redis-cli \(arguments): \(output.stderr)")
            return output.stdout
        }
        let line = try service.subscribe("worker", vapid: vapid.publicKey).line(Self.push, extra: #","id":"private-1""#)
        _ = try redisCLI(["XADD", stream + ":in", "*", "doc", line])
        // The next entry, not a push at all: the worker reaches it, so the refusal stopped nothing.
        _ = try redisCLI(["XADD", stream + ":in", "*", "doc", #"{"id":"after","push":{}}"#])
        let worker = try CLI.run(
            [
                "send", "--config", path, "--redis", "redis://127.0.0.1:\(redis.port)", "--from", stream + ":in", "--group", "g", "--to",
                stream + ":out", "--dead-letter", stream + ":dead", "--exit-when-idle", "300",
            ], stdin: "", environment: ["KINDLY_PUSH_REDIS_PASSWORD": redis.password])
        #expect(worker.status == 0, "\(worker.stderr)")
        let dead = try redisCLI(["XRANGE", stream + ":dead", "-", "+"])
        #expect(dead.contains("bad_input") && dead.contains("private-1") && dead.contains("after"), "\(dead)")
        #expect(dead.contains("resolves to 127.0.0.1, a loopback, private, link-local or reserved address"), "\(dead)")
        #expect(try redisCLI(["XLEN", stream + ":out"]).trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        // Acknowledged, not left pending for another delivery.
        #expect(try redisCLI(["XPENDING", stream + ":in", "g"]).hasPrefix("0\n"))
        #expect(try service.pushes("worker").isEmpty)
    }

    @Test(
        "webpush.max_push_services: at a new push service the one unused longest is closed once its requests are answered; every push is sent, in input order"
    )
    func pushServiceLimit() throws {
        let (first, second, vapid, authorities) = try Self.twoServices()
        let push = Self.push
        /// The results of one run, and how many connections each service saw for its pushes (to
        /// subscriptions `prefix`-*).
        func run(_ limit: String, _ prefix: String) throws -> (results: [[String: Any]], connections: [Int]) {
            let path = try Self.configuration(
                first.folder,
                "    webpush: {vapid_key_file: \(vapid.path), subject: \"mailto:ops@example.com\", ca_file: \(authorities), "
                    + "allow_private_addresses: true\(limit)}",
                name: "\(prefix).yaml")
            let lines = try [(first, "a"), (second, "b"), (first, "c")].map { service, name in
                try service.subscribe("\(prefix)-\(name)", vapid: vapid.publicKey).line(push, extra: #","id":"\#(name)""#)
            }
            // One line at a time, each after the last one's result: the pools in use are known.
            let sender = try RunningCLI(["send", "--jsonl", "--config", path], environment: [:])
            for (index, line) in lines.enumerated() {
                sender.write(line + "\n")
                #expect(sender.waitUntil { sender.stdout.split(separator: "\n").count > index }, "\(sender.stderr)")
            }
            sender.closeInput()
            #expect(sender.finish() == 0, "\(sender.stderr)")
            let output = CLI.Output(status: 0, stdout: sender.stdout, stderr: sender.stderr, stdoutBytes: [], timedOut: false)
            let connections = try [first, second].map { service in
                let pushes = try service.records().filter {
                    ($0["subscription"] as? String ?? "").hasPrefix("\(prefix)-") && ($0["path"] as? String ?? "").hasPrefix("/push/")
                }
                return Set(pushes.map { "\($0["connection"] ?? "")" }).count
            }
            return (Self.results(output), connections)
        }
        let limited = try run(", max_push_services: 1", "limited")
        #expect(limited.results.map { $0["id"] as? String } == ["a", "b", "c"])
        #expect(limited.results.allSatisfy { $0["status"] as? Int == 201 }, "\(limited.results)")
        // The first service's pool was closed for the second's, and opened again.
        #expect(limited.connections == [2, 1])
        let open = try run("", "open")
        #expect(open.results.allSatisfy { $0["status"] as? Int == 201 }, "\(open.results)")
        #expect(open.connections == [1, 1])
    }

    @Test(
        "a push service whose name server does not answer holds no other push: the next subscription's push is sent while the lookup waits, and the held one ends as io when the answer is NXDOMAIN",
        .enabled(if: HeldNameServer.canRedirect, "needs root and unshare, for a resolv.conf of the command's own")
    )
    func slowNameServer() throws {
        let service = try WebPushTestService()
        let vapid = try Self.vapidKey(in: service.folder)
        let server = try HeldNameServer(address: "127.83.0.1")
        defer { server.stop() }
        let path = try Self.configuration(
            service.folder,
            "    webpush: {vapid_key_file: \(vapid.path), subject: \"mailto:ops@example.com\", ca_file: \(service.certificate), "
                + "allow_private_addresses: true}")
        let held = try service.subscribe("held", vapid: vapid.publicKey).line(Self.push, extra: #","id":"h""#)
            .replacingOccurrences(of: "https://127.0.0.1:", with: "https://held.kindly-test.invalid:")
        let free = try service.subscribe("free", vapid: vapid.publicKey).line(Self.push, extra: #","id":"f""#)
        // The name server answers once the second push reached its service, or after a 15 s
        // guard: half of what glibc waits for it (30 s, the most resolv.conf allows), so that a
        // lookup that held the loop cannot end by its own time-out first.
        let freeFirst = Locked(false)
        // Only read (its records file) by the watcher while the command runs.
        nonisolated(unsafe) let observed = service
        let watcher = Thread {
            let guardEnd = Date().addingTimeInterval(15)
            while Date() < guardEnd, (try? observed.pushes("free").isEmpty) ?? true { usleep(20_000) }
            freeFirst.withLock { $0 = Date() < guardEnd }
            server.release()
        }
        watcher.start()
        let output = try CLI.run(
            try server.command([CLI.binary.path, "send", "--jsonl", "--config", path], folder: service.folder),
            stdin: Array((held + "\n" + free + "\n").utf8), executable: URL(fileURLWithPath: "/usr/bin/unshare"), timeLimit: 120)
        #expect(server.queried.contains("held.kindly-test.invalid"), "\(server.queried)")
        #expect(freeFirst.withLock { $0 }, "the free push reached its service only after the name server answered")
        let results = Self.results(output)
        try #require(results.count == 2, "\(output.stdout) \(output.stderr)")
        let error = results[0]["error"] as? [String: Any]
        #expect(error?["code"] as? String == "io", "\(results[0])")
        #expect((error?["message"] as? String ?? "").contains("cannot resolve held.kindly-test.invalid"), "\(results[0])")
        #expect(results[1]["status"] as? Int == 201, "\(results[1])")
    }

    @Test(
        "webpush.max_push_services: a push to a new push service while every open one has a request in flight waits for an answer, however long, and is sent"
    )
    func pushServiceLimitWaits() throws {
        // The first service answers after 3 s: longer than a push's retries of a lost connection last.
        let slow = try WebPushTestService(script: ["delay_ms": 3000])
        let other = try WebPushTestService()
        let authorities = slow.folder.appendingPathComponent("authorities.pem").path
        try [slow, other].map { try String(contentsOfFile: $0.certificate, encoding: .utf8) }.joined()
            .write(toFile: authorities, atomically: true, encoding: .utf8)
        let vapid = try Self.vapidKey(in: slow.folder)
        let path = try Self.configuration(
            slow.folder,
            "    webpush: {vapid_key_file: \(vapid.path), subject: \"mailto:ops@example.com\", ca_file: \(authorities), "
                + "allow_private_addresses: true, max_push_services: 1}")
        let lines = try [(slow, "a"), (other, "b")].map { service, name in
            try service.subscribe("waits-\(name)", vapid: vapid.publicKey).line(Self.push, extra: #","id":"\#(name)""#)
        }
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        let results = Self.results(output)
        #expect(results.map { $0["id"] as? String } == ["a", "b"], "\(output.stdout) \(output.stderr)")
        #expect(results.allSatisfy { $0["status"] as? Int == 201 }, "\(results)")
        #expect(try other.pushes("waits-b").count == 1)
    }
}

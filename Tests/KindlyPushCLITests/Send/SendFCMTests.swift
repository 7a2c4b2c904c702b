import Foundation
import KindlyPush
import Testing

/// `send` to FCM's HTTP v1 API (wire-format section 9.3) through the real binary and the FCM
/// stand-in (tools/fcm/fcm_test_server.py: it verifies the RS256 assertion at its token endpoint
/// and refuses any message that is not exactly section 9.3's).
@Suite("kindly-push send to FCM (HTTP v1, OAuth 2.0 service account)", .offThePool)
struct SendFCMTests {
    /// A private FCM server and token endpoint, with its service account's key file.
    static func server(_ script: [String: Any] = [:]) throws -> StandIn {
        try StandIn("fcm/fcm_test_server.py", name: "the FCM test server", answers: script)
    }

    /// A `send --config` file whose app `chat` sends to `server`, with the platform `sections`
    /// after its `fcm` one (YAML lines under the app); its path.
    static func configuration(_ server: StandIn, beside sections: String = "") throws -> String {
        let path = server.folder.appendingPathComponent("send.yaml").path
        let account = server.folder.appendingPathComponent("service-account.json").path
        try """
        apps:
          chat:
            fcm: {service_account_file: \(account), url: "\(server.url)", ca_file: \(server.certificate)}
        \(sections)
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The accepted or refused sends the server recorded (not the token requests).
    static func sends(_ server: StandIn) throws -> [[String: Any]] { try server.records().filter { $0["kind"] as? String == "send" } }

    static func tokenRequests(_ server: StandIn) throws -> [[String: Any]] {
        try server.records().filter { $0["kind"] as? String == "token" }
    }

    static let push = #"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"kindly":{"v":1}}"#

    @Test(
        "sealed pushes of wire versions 1 and 3 reach FCM as data-only messages whose kindly_push is exactly the push (which decrypts); one access token from an RS256 assertion; priority, ttl and collapse_key from the line"
    )
    func delivered() throws {
        let server = try Self.server()
        let path = try Self.configuration(server)
        let keys = try KeyFolder()
        let sender = SenderKey.generate()
        let payload = try DecryptedPayload(chatId: "c-1", title: "Anna", body: "Lunch?", messageId: "m-1", sentAt: 1_764_460_800)
        let one = String(decoding: try KindlyPushSealer.seal(payload, for: keys.key.publicKey), as: UTF8.self)
        let three = String(
            decoding: try KindlyPushSealer.seal(payload, for: keys.key.publicKey, wire: .three, from: sender, placeholder: .default),
            as: UTF8.self)
        let expiration = Int(Date().timeIntervalSince1970) + 600
        let lines = [
            #"{"id":1,"fcm_token":"device-one","push":\#(one)}"#,
            #"{"id":3,"fcm_token":"device-three","push":\#(three),"collapse_id":"chat-1","priority":5,"expiration":\#(expiration)}"#,
        ]
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        let results = SendTests.lines(output)
        try #require(results.count == 2, "\(output.stdout)")
        #expect(results.map { $0["id"] as? Int } == [1, 3])
        #expect(results.allSatisfy { $0["platform"] as? String == "fcm" && $0["status"] as? Int == 200 }, "\(output.stdout)")
        #expect(results.map { $0["fcm_token"] as? String } == ["device-one", "device-three"])
        #expect(results.allSatisfy { ($0["name"] as? String ?? "").hasPrefix("projects/kindly-push-test/messages/") }, "\(output.stdout)")

        let sends = try Self.sends(server)
        try #require(sends.count == 2)
        for (push, token, reader) in [
            (one, "device-one", ["--key-file", keys.keyFile]),
            (three, "device-three", ["--key-file", keys.keyFile, "--sender-key", sender.publicKey.base64URL]),
        ] {
            let record = try #require(sends.first { $0["fcm_token"] as? String == token })
            let message = try #require((record["message"] as? [String: Any])?["message"] as? [String: Any])
            #expect(message["notification"] == nil)
            let document = try #require((message["data"] as? [String: Any])?["kindly_push"] as? String)
            #expect(document == push)
            let decrypted = try CLI.run(["decrypt"] + reader, stdin: document)
            #expect(decrypted.status == 0, "\(decrypted.stderr)")
            #expect(decrypted.stdout.contains("Lunch?"))
            let android = message["android"] as? [String: Any] ?? [:]
            if token == "device-one" {
                #expect(android["priority"] as? String == "HIGH")
                #expect(android["ttl"] == nil && android["collapse_key"] == nil)
            } else {
                #expect(android["priority"] as? String == "NORMAL")
                #expect(android["collapse_key"] as? String == "chat-1")
                let ttl = Int((android["ttl"] as? String ?? "").dropLast()) ?? -1
                #expect((590...600).contains(ttl), "\(android)")
            }
        }
        // One access token for both, from an assertion the server verified.
        let tokens = try Self.tokenRequests(server)
        #expect(tokens.count == 1)
        let assertion = tokens.first?["assertion"] as? [String: Any]
        #expect((assertion?["header"] as? [String: Any])?["alg"] as? String == "RS256")
        #expect((assertion?["claims"] as? [String: Any])?["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
    }

    @Test(
        "404 UNREGISTERED is gone, a 404 without it is not; 400 and 403 are that push's refusals; 429 with Retry-After is sent again, no sooner, then 200"
    )
    func answers() throws {
        let script: [String: Any] = [
            "answers": [
                "gone": [["status": 404]], "bad": [["status": 400]], "other": [["status": 403]],
                "busy": [["status": 429, "retry_after": 1]], "lost": [["status": 404, "error_code": ""]],
            ]
        ]
        let server = try Self.server(script)
        let path = try Self.configuration(server)
        let lines = ["gone", "bad", "other", "busy", "lost"].map { #"{"fcm_token":"\#($0)","push":\#(Self.push)}"# }
        let started = Date()
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        let elapsed = Date().timeIntervalSince(started)
        #expect(output.status == 0, "\(output.stderr)")
        let results = SendTests.lines(output)
        try #require(results.count == 5, "\(output.stdout)")
        #expect(results.map { $0["status"] as? Int } == [404, 400, 403, 200, 404], "\(output.stdout)")
        // Only UNREGISTERED says the device is gone: a backend drops the registration on it.
        #expect(results.map { $0["gone"] as? Bool } == [true, nil, nil, nil, nil])
        #expect(results[4]["reason"] as? String == "NOT_FOUND")
        #expect(results[0]["reason"] as? String == "UNREGISTERED")
        #expect(results[1]["reason"] as? String == "INVALID_ARGUMENT")
        #expect(results[2]["reason"] as? String == "SENDER_ID_MISMATCH")
        #expect(try Self.sends(server).filter { $0["fcm_token"] as? String == "busy" }.count == 2)
        #expect(elapsed >= 1, "the run took \(elapsed) s with a Retry-After: 1")
    }

    @Test("a revoked access token: each push answered 401 is sent again once with a token fetched again, once for all")
    func refreshOn401() throws {
        let server = try Self.server(["revoke_after": 2])
        let path = try Self.configuration(server)
        let lines = (0..<8).map { #"{"id":\#($0),"fcm_token":"device-\#($0)","push":\#(Self.push)}"# }
        // The server revokes every token issued after it accepts the second push: the pushes
        // after it meet a revoked token.
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        let results = SendTests.lines(output)
        #expect(results.map { $0["status"] as? Int } == Array(repeating: 200, count: 8), "\(output.stdout)")
        let sends = try Self.sends(server)
        #expect(sends.contains { $0["status"] as? Int == 401 }, "no push met the revoked token")
        #expect(try Self.tokenRequests(server).count == 2)
    }

    @Test(
        "a token endpoint that fails: one request per pause, not one per push; the pushes wait for the next fetch and are delivered, none failed"
    )
    func tokenEndpointFailing() throws {
        // The first two token requests are answered 500, the third gives a token.
        let server = try Self.server(["token_answers": [["status": 500], ["status": 500]]])
        let path = try Self.configuration(server)
        let lines = (0..<20).map { #"{"id":\#($0),"fcm_token":"device-\#($0)","push":\#(Self.push)}"# }
        let started = Date()
        let output = try CLI.run(["send", "--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        let elapsed = Date().timeIntervalSince(started)
        #expect(output.status == 0, "\(output.stderr)")
        let results = SendTests.lines(output)
        #expect(results.map { $0["status"] as? Int } == Array(repeating: 200, count: 20), "\(output.stdout)")
        // 500, 500 after the first pause (1 s), the token after the second (2 s).
        #expect(try Self.tokenRequests(server).map { $0["status"] as? Int } == [500, 500, 200])
        #expect(elapsed >= 3, "the run took \(elapsed) s with pauses of 1 and 2 s between the fetches")
    }

    @Test(
        "a token endpoint that answers late holds back the FCM pushes only: the APNs push of the same run reaches its server while the token request is unanswered"
    )
    func slowTokenEndpoint() throws {
        // Answered after ten minutes: a sender that waited for it would send nothing meanwhile.
        let server = try Self.server(["token_delay_ms": 600_000])
        let apns = try APNsTestServer(script: ["initial_streams": 100])
        let path = try Self.configuration(
            server,
            beside: """
                    apns: {team_id: \(APNsTestServer.teamID), key_id: \(APNsTestServer.keyID), key_file: \(apns.keyFile),
                           topic: \(APNsTestServer.topic), url: "\(apns.url)", ca_file: \(apns.certificate)}
                """)
        let sender = try RunningCLI(["send", "--jsonl", "--config", path], environment: [:])
        sender.write(#"{"id":1,"fcm_token":"device-1","push":\#(Self.push)}"# + "\n")
        sender.write(APNsTestServer.line(APNsTestServer.token(2), push: Self.push, extra: #","id":2"#) + "\n")
        // A guard against a hang, far below the token's delay.
        let delivered = sender.waitUntil(seconds: 120) { ((try? apns.records()) ?? []).contains { $0["status"] as? Int == 200 } }
        #expect(delivered, "\(sender.stderr)")
        // The token endpoint records a request once it answers it: none yet.
        #expect(try Self.tokenRequests(server).isEmpty)
        kill(sender.process.processIdentifier, SIGKILL)
    }

    @Test("--check describes the fcm section without its key; an unknown key is refused with its place")
    func check() throws {
        let server = try Self.server()
        let path = try Self.configuration(server)
        let output = try CLI.run(["send", "--config", path, "--check"])
        #expect(output.status == 0, "\(output.stderr)")
        let account = server.folder.appendingPathComponent("service-account.json").path
        #expect(output.stdout.contains("app 'chat': fcm \(server.url), service account \(account) (0600, an RSA key)"), "\(output.stdout)")
        #expect(!output.stdout.contains("PRIVATE KEY"))
        try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "url:", with: "uri:")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let refused = try CLI.run(["send", "--config", path, "--check"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("send.yaml:3:"), "\(refused.stderr)")
        #expect(refused.stderr.contains("apps.chat.fcm.uri: unknown key"), "\(refused.stderr)")
    }
}

import Foundation
import KindlyPush
import Testing

/// `send --config FILE`: several apps (two teams, two topics) from one YAML file in one process,
/// each push on its app's connections with its app's provider token, and the per-push fields
/// (`app`, `collapse_id`, `expiration`, `priority`) mapped to APNs's headers.
@Suite("kindly-push send --config (several apps from one file)", .offThePool)
struct SendConfigurationTests {
    /// A configuration of the test server's two teams as the apps `chat` (the default) and
    /// `second`, `connections` each; its path.
    static func configuration(_ server: APNsTestServer, connections: Int = 3, extra: String = "") throws -> String {
        let path = server.folder.appendingPathComponent("send.yaml").path
        let text = """
            # Two apps of two teams on one server.
            default_app: chat
            apps:
              chat:
                apns: {team_id: \(APNsTestServer.teamID), key_id: \(APNsTestServer.keyID), key_file: \(server.keyFile),
                       topic: \(APNsTestServer.topic), url: "\(server.url)", ca_file: \(server.certificate), connections: \(connections)}
              second:
                apns:
                  team_id: \(APNsTestServer.secondTeamID)
                  key_id: \(APNsTestServer.secondKeyID)
                  key_file: \(server.secondKeyFile)
                  topic: \(APNsTestServer.secondTopic)
                  url: "\(server.url)"
                  ca_file: \(server.certificate)
                  connections: \(connections)
            \(extra)
            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func send(_ server: APNsTestServer, _ arguments: [String], stdin: String = "") throws -> CLI.Output {
        try CLI.run(["send"] + arguments, stdin: Array(stdin.utf8), environment: server.environment)
    }

    /// The `kid` of a record's provider token.
    static func keyID(_ record: [String: Any]) -> String? {
        guard let authorization = record["authorization"] as? String else { return nil }
        let header = authorization.dropFirst("bearer ".count).split(separator: ".").first.map(String.init) ?? ""
        var text = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return nil
        }
        return object["kid"] as? String
    }

    @Test("two apps in one process: each push with its app's topic and token, on connections of its app only; results in input order")
    func twoApps() throws {
        let server = try APNsTestServer(script: ["initial_streams": 100])
        let path = try Self.configuration(server)
        var lines: [String] = []
        var apps: [String?] = []
        for index in 0..<300 {
            let app: String? = [nil, "chat", "second"][index % 3]
            apps.append(app)
            lines.append(APNsTestServer.line(APNsTestServer.token(index), extra: app.map { #","app":"\#($0)""# } ?? ""))
        }
        // A line naming no app of the file: its usage error, nothing sent.
        lines.insert(APNsTestServer.line(APNsTestServer.token(999), extra: #","id":7,"app":"nope""#), at: 150)
        let output = try Self.send(server, ["--jsonl", "--config", path], stdin: lines.map { $0 + "\n" }.joined())
        #expect(output.status == 0)
        #expect(output.stderr == "")
        let results = SendTests.lines(output)
        try #require(results.count == 301)
        let unknown = results[150]
        #expect(unknown["id"] as? Int == 7)
        #expect((unknown["error"] as? [String: Any])?["code"] as? String == "usage")
        #expect(((unknown["error"] as? [String: Any])?["message"] as? String ?? "").contains("no app 'nope' in \(path)"))
        var rest = results
        rest.remove(at: 150)
        #expect(rest.map { $0["token"] as? String } == (0..<300).map(APNsTestServer.token))
        #expect(rest.allSatisfy { $0["status"] as? Int == 200 })

        let records = try server.records().filter { $0["status"] is Int }
        #expect(records.count == 300)
        #expect(!records.contains { ($0["token"] as? String) == APNsTestServer.token(999) })
        var teamOfConnection: [Int: String] = [:]
        for record in records {
            let token = record["token"] as? String ?? ""
            let index = Int(token.suffix(8), radix: 16) ?? -1
            let second = apps[index] == "second"
            let headers = record["headers"] as? [String: String] ?? [:]
            #expect(headers["apns-topic"] == (second ? APNsTestServer.secondTopic : APNsTestServer.topic))
            let kid = Self.keyID(record)
            #expect(kid == (second ? APNsTestServer.secondKeyID : APNsTestServer.keyID))
            let connection = record["connection"] as? Int ?? -1
            if let team = teamOfConnection[connection] { #expect(team == kid, "connection \(connection) served two teams") }
            teamOfConnection[connection] = kid
        }
        // Each app's connections: at least one, at most its three.
        for kid in [APNsTestServer.keyID, APNsTestServer.secondKeyID] {
            #expect((1...3).contains(teamOfConnection.values.filter { $0 == kid }.count))
        }
    }

    @Test("two apps of one team and key share one provider token: every request of either carries the same token")
    func oneTokenPerTeamAndKey() throws {
        let server = try APNsTestServer()
        let path = server.folder.appendingPathComponent("shared.yaml").path
        let apns = """
            {team_id: \(APNsTestServer.teamID), key_id: \(APNsTestServer.keyID), key_file: \(server.keyFile), \
            topic: \(APNsTestServer.topic), url: "\(server.url)", ca_file: \(server.certificate), connections: 2}
            """
        try "apps:\n  chat:\n    apns: \(apns)\n  alerts:\n    apns: \(apns)\n".write(toFile: path, atomically: true, encoding: .utf8)
        let input = (0..<40).map { APNsTestServer.line(APNsTestServer.token($0), extra: #","app":"\#($0 % 2 == 0 ? "chat" : "alerts")""#) }
        let output = try Self.send(server, ["--jsonl", "--config", path], stdin: input.map { $0 + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        #expect(SendTests.lines(output).allSatisfy { $0["status"] as? Int == 200 })
        let records = try server.records().filter { $0["status"] is Int }
        #expect(records.count == 40)
        #expect(Set(records.compactMap { $0["authorization"] as? String }).count == 1)
        // Each app on connections of its own: more than one connection carried them.
        #expect(Set(records.compactMap { $0["connection"] as? Int }).count >= 2)
    }

    @Test("the per-push fields: apns-collapse-id, apns-expiration (Unix seconds) and apns-priority from the line, else the defaults")
    func perPushFields() throws {
        let server = try APNsTestServer()
        let silent = #"{"aps":{"content-available":1},"kindly":{"v":1}}"#
        let input = [
            APNsTestServer.line(APNsTestServer.token(1), extra: #","collapse_id":"chat-1","expiration":1900000000,"priority":5"#),
            APNsTestServer.line(APNsTestServer.token(2)),
            APNsTestServer.line(APNsTestServer.token(3), push: silent, extra: #","expiration":0"#),
            APNsTestServer.line(APNsTestServer.token(4), extra: #","priority":7"#),
            APNsTestServer.line(APNsTestServer.token(5), extra: #","expiration":-1"#),
        ].map { $0 + "\n" }.joined()
        // The run's --expiration counts from when send reads the clock: between these two.
        let before = Int(Date().timeIntervalSince1970)
        let output = try server.send(["--jsonl", "--expiration", "60"], stdin: input)
        let after = Int(Date().timeIntervalSince1970) + 1
        let results = SendTests.lines(output)
        try #require(results.count == 5)
        #expect(results[0..<3].allSatisfy { $0["status"] as? Int == 200 })
        #expect(((results[3]["error"] as? [String: Any])?["message"] as? String ?? "").contains("\"priority\" is 10"))
        #expect(((results[4]["error"] as? [String: Any])?["message"] as? String ?? "").contains("\"expiration\" is a whole number"))
        let records = try server.records().filter { $0["status"] is Int }
        func headers(_ number: Int) -> [String: String] {
            records.first { $0["token"] as? String == APNsTestServer.token(number) }?["headers"] as? [String: String] ?? [:]
        }
        #expect(headers(1)["apns-collapse-id"] == "chat-1")
        #expect(headers(1)["apns-expiration"] == "1900000000")
        #expect(headers(1)["apns-priority"] == "5")
        // No expiration of its own: the run's --expiration from now; the default priority.
        let expiration = Int(headers(2)["apns-expiration"] ?? "") ?? 0
        #expect((before + 60...after + 60).contains(expiration))
        #expect(headers(2)["apns-priority"] == "10")
        #expect(headers(2)["apns-collapse-id"] == nil)
        #expect(headers(3)["apns-expiration"] == "0")
        #expect(headers(3)["apns-priority"] == "5")
    }

    @Test("--check prints each app with its server, topic, team and key path and never a secret; exit 0")
    func check() throws {
        let server = try APNsTestServer()
        let path = try Self.configuration(server)
        let output = try Self.send(server, ["--config", path, "--check"])
        #expect(output.status == 0)
        #expect(output.stderr == "")
        #expect(output.stdout.hasPrefix("\(path): 2 apps, default 'chat'\n"))
        #expect(output.stdout.contains("app 'chat': apns \(server.url), topic \(APNsTestServer.topic), team \(APNsTestServer.teamID)"))
        #expect(output.stdout.contains("app 'second': apns \(server.url), topic \(APNsTestServer.secondTopic)"))
        #expect(output.stdout.contains("3 connections"))
        let key = try String(contentsOfFile: server.keyFile, encoding: .utf8)
        let body = key.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        #expect(!body.contains { output.stdout.contains($0) })
        // Nothing was sent.
        #expect(try server.records().isEmpty)
    }

    @Test("--check whose description cannot be written (standard output full) is an io error, not a success")
    func checkOutputFails() throws {
        let server = try APNsTestServer()
        let path = try Self.configuration(server)
        let output = try CLI.run(
            ["send", "--config", path, "--check"], stdin: [], environment: server.environment, standardOutputPath: "/dev/full")
        #expect(output.status == ErrorCode.io.exitStatus)
        #expect(output.stderr.hasPrefix("kindly-push: io: cannot write standard output"))
    }

    @Test("--check on the shipped example (data/config/send.yaml), its key files put where it names them")
    func shippedExample() throws {
        let server = try APNsTestServer()
        let example = try String(contentsOf: CLI.packageRoot.appendingPathComponent("data/config/send.yaml"), encoding: .utf8)
        let folder = server.folder.appendingPathComponent("etc")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for keyID in ["ABC123DEFG", "XYZ987WVUT"] {
            let key = folder.appendingPathComponent("AuthKey_\(keyID).p8").path
            try FileManager.default.copyItem(atPath: server.keyFile, toPath: key)
            chmod(key, 0o600)
        }
        let path = server.folder.appendingPathComponent("send.yaml").path
        try example.replacingOccurrences(of: "/etc/kindly-push/", with: folder.path + "/").write(
            toFile: path, atomically: true, encoding: .utf8)
        let output = try Self.send(server, ["--config", path, "--check"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.hasPrefix("\(path): 2 apps, default 'chat'\n"))
        #expect(
            output.stdout.contains("app 'chat': apns https://api.push.apple.com, topic ai.kindly.example, team TEAM123456, key ABC123DEFG"))
        #expect(output.stdout.contains("3 connections, trusting the system's authorities"))
        #expect(output.stdout.contains("app 'shop': apns https://api.push.apple.com, topic ai.kindly.shop"))
    }

    @Test(
        "the file's refusals: an unknown key, an unknown default_app, a key file others may read, a platform not served, one-app options beside it"
    )
    func refusals() throws {
        let server = try APNsTestServer()
        /// The configuration with `edit` applied to its text, checked: its standard error.
        func refused(_ edit: (String) -> String) throws -> String {
            let path = try Self.configuration(server)
            try edit(try String(contentsOfFile: path, encoding: .utf8)).write(toFile: path, atomically: true, encoding: .utf8)
            let output = try Self.send(server, ["--config", path, "--check"])
            #expect(output.status == 64, "\(output.stderr)")
            #expect(output.stdout == "")
            return output.stderr
        }
        let unknown = try refused { $0 + "colour: blue\n" }
        #expect(unknown.contains("send.yaml:"))
        #expect(unknown.contains(": colour: unknown key (known: default_app, apps)"))
        let misspelt = try refused { $0.replacingOccurrences(of: "  team_id:", with: "  tema_id:") }
        #expect(misspelt.contains("apps.second.apns.tema_id: unknown key"))
        let defaultApp = try refused { $0.replacingOccurrences(of: "default_app: chat", with: "default_app: mail") }
        #expect(defaultApp.contains("default_app: 'mail' is not one of the apps"))
        let platform = try refused { $0.replacingOccurrences(of: "  second:\n", with: "  second:\n    hms: {project: p}\n") }
        #expect(platform.contains("apps.second.hms: unknown key (known: apns, fcm, webpush)"))
        let notYAML = try refused { $0 + "apps: [\n" }
        #expect(notYAML.contains("send.yaml:"))

        let path = try Self.configuration(server)
        chmod(server.secondKeyFile, 0o644)
        let open = try Self.send(server, ["--config", path, "--check"])
        chmod(server.secondKeyFile, 0o600)
        #expect(open.status != 0)
        #expect(open.stderr.contains("app 'second': key_file: \(server.secondKeyFile): permissions 644 are too open"))
        let both = try Self.send(server, ["--config", path, "--topic", "x"])
        #expect(both.status == 64)
        #expect(both.stderr.contains("give either --config or '--topic'"))
        let checkAlone = try server.send(["--check"], stdin: "")
        #expect(checkAlone.status == 64)
        #expect(checkAlone.stderr.contains("'--check' checks the file of --config"))
    }
}

import Foundation
import KindlyPush

/// A private APNs test server (tools/apns/apns_test_server.py: HTTP/2 over TLS on loopback, on
/// PyPI's h2) for one test: its own certificate and team key (openssl), its script of answers
/// and faults, its record of every request, and optionally the test clock it shares with
/// `send` (KINDLY_PUSH_TEST_CLOCK_FILE). Stopped on deinit.
final class APNsTestServer {
    let folder: URL
    let process = Process()
    let port: Int
    let clockFile: String?

    static let keyID = "ABC123DEFG"
    static let teamID = "DEF123GHIJ"
    static let topic = "ai.kindly.test"
    /// The server's second team, its key and its topic (a second app of `send --config`).
    static let secondKeyID = "XYZ987WVUT"
    static let secondTeamID = "TEAM222222"
    static let secondTopic = "ai.kindly.second"

    /// The venv's Python (tools/lib/ensure-dependencies --with-python), else the one on PATH.
    static var python: [String] {
        let venv = CLI.packageRoot.appendingPathComponent(".venv/bin/python").path
        return FileManager.default.isExecutableFile(atPath: venv) ? [venv] : ["/usr/bin/env", "python3"]
    }

    static var serverScript: String { CLI.packageRoot.appendingPathComponent("tools/apns/apns_test_server.py").path }

    /// A server with `script` (answers per token, faults: see the server's text); with `clock`,
    /// the test clock starts at that Unix time.
    init(script: [String: Any] = [:], clock: Int? = nil) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Self.runToEnd(Self.python + [Self.serverScript, "--make-credentials", folder.path])
        var arguments = ["--dir", folder.path]
        let scriptURL = folder.appendingPathComponent("script.json")
        try JSONSerialization.data(withJSONObject: script).write(to: scriptURL)
        arguments += ["--script", scriptURL.path]
        if let clock {
            clockFile = folder.appendingPathComponent("clock").path
            try "\(clock)\n".write(toFile: clockFile!, atomically: true, encoding: .utf8)
            arguments += ["--clock-file", clockFile!]
        } else {
            clockFile = nil
        }
        port = try Self.launch(process, Self.serverScript, arguments, folder: folder, name: "the APNs test server")
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }

    struct ServerFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts `script` (a stand-in of tools/) with `arguments` on the venv's Python in `process`,
    /// its standard error in FOLDER/server.log, and waits for the port it writes to FOLDER/port.
    static func launch(_ process: Process, _ script: String, _ arguments: [String], folder: URL, name: String) throws -> Int {
        let python = Self.python
        process.executableURL = URL(fileURLWithPath: python[0])
        process.arguments = Array(python.dropFirst()) + [script] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: Self.emptyFile(folder.appendingPathComponent("server.log")))
        try process.run()
        let portFile = folder.appendingPathComponent("port").path
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.isRunning {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return number
            }
            usleep(20_000)
        }
        let log = (try? String(contentsOf: folder.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
        throw ServerFailure(description: "\(name) did not start: \(log)")
    }

    private static func emptyFile(_ url: URL) throws -> URL {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        return url
    }

    static func runToEnd(_ command: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ServerFailure(description: "\(command) exited \(process.terminationStatus)") }
    }

    var url: String { "https://127.0.0.1:\(port)" }
    var keyFile: String { folder.appendingPathComponent("AuthKey_\(Self.keyID).p8").path }
    var secondKeyFile: String { folder.appendingPathComponent("AuthKey_\(Self.secondKeyID).p8").path }
    var certificate: String { folder.appendingPathComponent("server.crt").path }

    /// `send`'s options for this server, then `extra`.
    func sendArguments(_ extra: [String] = []) -> [String] {
        [
            "send", "--auth-key-file", keyFile, "--key-id", Self.keyID, "--team-id", Self.teamID, "--topic", Self.topic, "--apns-url", url,
            "--ca-file", certificate,
        ] + extra
    }

    /// The environment of `send` for this server: the test clock when it has one.
    var environment: [String: String] { clockFile.map { ["KINDLY_PUSH_TEST_CLOCK_FILE": $0] } ?? [:] }

    /// Sets the test clock (Unix seconds).
    func setClock(_ seconds: Int) throws {
        let temporary = clockFile! + ".tmp"
        try "\(seconds)\n".write(toFile: temporary, atomically: false, encoding: .utf8)
        _ = rename(temporary, clockFile!)
    }

    /// Runs `send` against this server.
    func send(_ extra: [String] = [], stdin: String, timeLimit: Double = 60) throws -> CLI.Output {
        try CLI.run(sendArguments(extra), stdin: Array(stdin.utf8), environment: environment, timeLimit: timeLimit)
    }

    /// Every request the server received, in the order it answered (or dropped) them.
    func records() throws -> [[String: Any]] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("received.jsonl"), encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
        }
    }

    /// A device token: 64 hex digits.
    static func token(_ number: Int) -> String { String(repeating: "0", count: 56) + String(format: "%08x", number) }

    /// One input line: `push` for `token`, and the `extra` members.
    static func line(
        _ token: String, push: String = #"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"kindly":{"v":1}}"#,
        extra: String = ""
    ) -> String {
        #"{"token":"\#(token)","push":\#(push)\#(extra)}"#
    }

    /// The `iat` of a record's provider token.
    static func issuedAt(_ record: [String: Any]) -> Int? {
        guard let authorization = record["authorization"] as? String else { return nil }
        let parts = authorization.dropFirst("bearer ".count).split(separator: ".")
        guard parts.count == 3 else { return nil }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text), let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return nil
        }
        return claims["iat"] as? Int
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushLibcrypto
import KindlyPushWebPush

/// A stand-in of tools/ (a Python server on PyPI's h2, HTTP/2 over TLS on loopback) for one
/// test: its folder with its own certificate, its script, and its record of every request
/// (received.jsonl). Stopped on deinit.
final class StandIn {
    let folder: URL
    let process = Process()
    let port: Int

    /// `script` (tools/SCRIPT) made its credentials in a fresh folder and started with `answers`.
    init(_ script: String, name: String, answers: [String: Any]) throws {
        let path = CLI.packageRoot.appendingPathComponent("tools/\(script)").path
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-standin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try APNsTestServer.runToEnd(APNsTestServer.python + [path, "--make-credentials", folder.path])
        let scriptURL = folder.appendingPathComponent("script.json")
        try JSONSerialization.data(withJSONObject: answers).write(to: scriptURL)
        port = try APNsTestServer.launch(process, path, ["--dir", folder.path, "--script", scriptURL.path], folder: folder, name: name)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }

    var url: String { "https://127.0.0.1:\(port)" }
    var certificate: String { folder.appendingPathComponent("server.crt").path }

    /// Every request the stand-in received, in the order it answered them.
    func records() throws -> [[String: Any]] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("received.jsonl"), encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
        }
    }
}

/// A private Web Push service for one test (tools/webpush/push_service.py: RFC 8030 with VAPID):
/// its script of answers per subscription, and the messages it accepted.
final class WebPushTestService {
    let standIn: StandIn

    /// A service with `script` ("answers" per subscription id: see the service's text).
    init(script: [String: Any] = [:]) throws {
        standIn = try StandIn("webpush/push_service.py", name: "the Web Push service", answers: script)
    }

    var folder: URL { standIn.folder }
    var url: String { standIn.url }
    var certificate: String { standIn.certificate }

    /// A device's side of one subscription: its P-256 key pair and auth secret (made here, as a
    /// browser or the UnifiedPush connector makes them), and the endpoint the service gave.
    struct Subscriber {
        let id: String
        let endpoint: String
        let key: P256.PrivateKey
        let auth: [UInt8]

        /// The subscription as a send line carries it (registration section 9.1).
        var json: String {
            #"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(Base64.urlEncoded(key.publicKey))","auth":"\#(Base64.urlEncoded(auth))"}}"#
        }

        /// A send line for `push`, with the `extra` members.
        func line(_ push: String, extra: String = "") -> String { #"{"subscription":\#(json),"push":\#(push)\#(extra)}"# }

        /// A message the service kept for this subscription, opened with its keys.
        func open(_ message: [UInt8]) throws -> [UInt8] {
            let secret = auth.withUnsafeBytes { SecureBytes(copying: $0) }
            let plaintext = try message.withUnsafeBytes { try WebPushEncryption.decrypt($0, privateKey: key, auth: secret) }
            return plaintext.withUnsafeBytes { Array($0) }
        }
    }

    /// Subscribes `id` (the script's name for it) with the application server key `vapid`
    /// (`POST /subscribe`, by curl trusting the service's certificate).
    func subscribe(_ id: String, vapid: String) throws -> Subscriber {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = [
            "--silent", "--show-error", "--fail", "--cacert", certificate, "-X", "POST", "--data", #"{"id":"\#(id)","vapid":"\#(vapid)"}"#,
            "\(url)/subscribe",
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let endpoint = object["endpoint"] as? String
        else {
            throw APNsTestServer.ServerFailure(description: "subscribing \(id) failed: \(String(decoding: data, as: UTF8.self))")
        }
        return Subscriber(
            id: id, endpoint: endpoint, key: try P256.PrivateKey.generate(),
            auth: Array(SecureBytes.random(count: 16).withUnsafeBytes { Array($0) }))
    }

    /// The path of the `number`-th message (from 1) the service accepted for subscription `id`.
    func messagePath(_ id: String, _ number: Int) -> String {
        folder.appendingPathComponent("messages/\(id)/\(number).bin").path
    }

    /// The messages the service accepted for subscription `id`, in the order it accepted them.
    func messages(_ id: String) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while let data = FileManager.default.contents(atPath: messagePath(id, messages.count + 1)) { messages.append(Array(data)) }
        return messages
    }

    /// The pushes to subscription `id` the service received (not its subscribing), in order.
    func pushes(_ id: String) throws -> [[String: Any]] {
        try records().filter { $0["subscription"] as? String == id && ($0["path"] as? String ?? "").hasPrefix("/push/") }
    }

    /// Every request the service received, in the order it answered them.
    func records() throws -> [[String: Any]] { try standIn.records() }
}

import Foundation
import KindlyPush
import KindlyPushBase
import KindlyPushCore
import Testing

@Suite("kindly-push seal --recipients-inline", .offThePool)
struct RecipientsInlineTests {
    static func line(_ key: DeviceKey, _ plaintext: String, extra: String = "") -> String {
        #"{"public_key":"\#(key.publicKey.base64URL)","plaintext":\#(plaintext)\#(extra)}"#
    }

    static func lines(_ output: CLI.Output) -> [String] {
        output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    @Test(
        "2,000 lines for 500 devices: every push decrypts with its own device's key in the independent implementation",
        arguments: [1, 2])
    func manyDevices(_ jobs: Int) throws {
        // 2,000 lines are four batches of 512 (StreamBatching), so each worker of --jobs 2 takes
        // two, and each device has about four lines: the scale of tools/bench-redis (100,000 for
        // 1,000) is a benchmark's; the sanitized debug build seals about 300 lines a second.
        let devices = (0..<500).map { _ in DeviceKey.generate() }
        var generator = SystemRandomNumberGenerator()
        var input = ""
        var expected: [(key: DeviceKey, plaintext: JSONValue)] = []
        for index in 0..<2_000 {
            let key = devices[Int.random(in: 0..<devices.count, using: &generator)]
            let body = String(repeating: ["é", "漢", "👍🏽", "\\\"", "x"][index % 5], count: Int.random(in: 0...120, using: &generator))
            let plaintext = #"{"chat_id":"c-\#(index)","title":"T\#(index)","body":"\#(body)","message_id":"m-\#(index)"}"#
            // Every fifth line spelled with spaces: the strict path, which must seal the same way.
            input +=
                (index % 5 == 4 ? Self.line(key, plaintext).replacingOccurrences(of: "\":", with: "\": ") : Self.line(key, plaintext))
                + "\n"
            expected.append((key, try JSONValue(parsing: plaintext)))
        }
        let output = try CLI.run(["seal", "--jsonl", "--recipients-inline", "--jobs", "\(jobs)"], stdin: Array(input.utf8), timeLimit: 120)
        #expect(output.status == 0)
        #expect(output.stderr == "")
        let pushes = Self.lines(output)
        try #require(pushes.count == expected.count)
        for (index, push) in pushes.enumerated() {
            #expect(push.utf8.count <= 4096)
            let kid = try JSONValue(parsing: push)["kindly"]?["kid"]?.stringValue
            #expect(kid == expected[index].key.kid.base64URL, "line \(index + 1)")
        }
        let decrypted = try ReferenceDecryption.decrypt(zip(expected, pushes).map { ($0.key, $1) })
        var mismatches = 0
        for (index, result) in decrypted.enumerated() where (try? result.get()) != expected[index].plaintext {
            mismatches += 1
            if mismatches <= 3 { Issue.record("line \(index + 1): \(result)") }
        }
        #expect(mismatches == 0)
    }

    @Test("a bad line gives its error object on its line, exact, and the stream goes on", arguments: [1, 2])
    func badLines(_ jobs: Int) throws {
        let key = DeviceKey.generate()
        let good = #"{"chat_id":"c","title":"t","body":"b"}"#
        let cases: [(String, String?)] = [
            (Self.line(key, good), nil),
            ("", #"{"error":{"code":"bad_input","message":"the input is empty"}}"#),
            ("[1]", #"{"error":{"code":"bad_input","message":"the input is an array, not a JSON object"}}"#),
            (
                #"{"plaintext":\#(good)}"#,
                #"{"error":{"code":"bad_input","message":"\"public_key\" is missing (the device's public key)"}}"#
            ),
            (
                #"{"public_key":"not a key","plaintext":\#(good)}"#,
                #"{"error":{"code":"bad_input","message":"\"public_key\": the public key is not canonical base64"}}"#
            ),
            (
                #"{"public_key":"AAAA","plaintext":\#(good)}"#,
                #"{"error":{"code":"bad_input","message":"\"public_key\": the public key has the wrong length"}}"#
            ),
            (
                #"{"public_key":7,"plaintext":\#(good)}"#,
                #"{"error":{"code":"bad_input","message":"\"public_key\" is a number, not a string"}}"#
            ),
            (
                #"{"public_key":"\#(key.publicKey.base64URL)"}"#,
                #"{"error":{"code":"bad_input","message":"\"plaintext\" is missing (the message object)"}}"#
            ),
            (
                Self.line(key, #""text""#), #"{"error":{"code":"bad_input","message":"\"plaintext\" is a string, not a JSON object"}}"#
            ),
            (
                Self.line(key, good, extra: #","device":"x""#),
                #"{"error":{"code":"bad_input","message":"unknown member \"device\"; a --recipients-inline input has \"public_key\", \"plaintext\" and optionally \"id\", one of \"token\", \"fcm_token\" and \"subscription\", \"platform\", \"mode\", \"placeholder_title\", \"placeholder_body\", \"thread_id\", \"app\", \"collapse_id\", \"expiration\", \"priority\""}}"#
            ),
            (
                Self.line(key, good, extra: #","plaintext":\#(good)"#),
                #"{"error":{"code":"bad_input","message":"a member name occurs twice"}}"#
            ),
            (
                Self.line(key, good, extra: #","mode":"loud""#),
                #"{"error":{"code":"bad_input","message":"\"mode\" is neither \"visible\" nor \"silent\""}}"#
            ),
            (
                Self.line(key, good, extra: #","mode":"silent","placeholder_body":"x""#),
                #"{"error":{"code":"bad_input","message":"a silent push has no alert: \"placeholder_title\" and \"placeholder_body\" need \"mode\": \"visible\""}}"#
            ),
            (
                Self.line(key, #"{"chat_id":"c","title":"t"}"#),
                #"{"error":{"code":"bad_input","message":"the plaintext is not a Kindly message: \"body\" is missing"}}"#
            ),
            (
                Self.line(key, #"{"chat_id":"c","title":"t","body":"b","truncated":"yes"}"#),
                #"{"error":{"code":"bad_input","message":"the plaintext is not a Kindly message: \"truncated\" is a string, not a boolean"}}"#
            ),
            (
                Self.line(DeviceKey.generate(), #"{"chat_id":"c","title":"t","body":"\#(String(repeating: "z", count: 5_000))"}"#),
                nil
            ),
            (Self.line(key, good, extra: #","mode":"silent""#), nil),
        ]
        let lowOrder = #"{"public_key":"\#(Base64.urlEncoded([UInt8](repeating: 0, count: 32)))","plaintext":\#(good)}"#
        let input = (cases.map(\.0) + [lowOrder]).joined(separator: "\n")
        let output = try CLI.run(["seal", "--jsonl", "--recipients-inline", "--jobs", "\(jobs)"], stdin: input)
        #expect(output.status == 0)
        let lines = Self.lines(output)
        try #require(lines.count == cases.count + 1)
        for (index, (_, expected)) in cases.enumerated() {
            if let expected {
                #expect(lines[index] == expected, "line \(index + 1)")
            } else if index == cases.count - 2 {
                #expect(
                    lines[index].hasPrefix(#"{"error":{"code":"bad_input","message":"the sealed payload would be "#), "line \(index + 1)")
            } else {
                #expect(lines[index].hasPrefix(#"{"aps":"#), "line \(index + 1): \(lines[index])")
            }
        }
        #expect(lines.last == #"{"error":{"code":"bad_input","message":"the device public key gives an all-zero shared secret"}}"#)
        #expect(lines[cases.count - 1].hasPrefix(#"{"aps":{"content-available":1},"kindly":"#))
    }

    @Test("a line's own mode and placeholder override the command's; the rest take the command's")
    func lineAlerts() throws {
        let key = DeviceKey.generate()
        let good = #"{"chat_id":"c","title":"t","body":"b"}"#
        let input = [
            Self.line(key, good),
            Self.line(key, good, extra: #","placeholder_title":"Yo","placeholder_body":"Look""#),
            Self.line(key, good, extra: #","placeholder_body":"Only the body""#),
            Self.line(key, good, extra: #","mode":"silent""#),
            Self.line(key, good, extra: #","placeholder_title":"Esc \"aped\"""#),
            Self.line(key, good, extra: #","mode":"visible""#),
        ].joined(separator: "\n")
        let output = try CLI.run(
            ["seal", "--jsonl", "--recipients-inline", "--placeholder-title", "Default title"], stdin: input)
        #expect(output.status == 0, "\(output.stderr)")
        let alerts = try Self.lines(output).map { try JSONValue(parsing: $0)["aps"] }
        func visible(_ title: String, _ body: String) -> JSONValue {
            ["alert": ["title": .string(title), "body": .string(body)], "mutable-content": 1, "sound": "default"]
        }
        #expect(
            alerts == [
                visible("Default title", "Open the app to read it"), visible("Yo", "Look"), visible("Default title", "Only the body"),
                ["content-available": 1], visible("Esc \"aped\"", "Open the app to read it"),
                visible("Default title", "Open the app to read it"),
            ])
        let folder = try KeyFolder(key: key)
        for line in Self.lines(output) {
            let decrypted = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: line)
            #expect(decrypted.stdout == good + "\n")
        }
    }

    @Test(
        "delivery fields carried for send, thread_id in a visible push's aps, alike on both paths and in every wire version; bad ones refused"
    )
    func deliveryFields() throws {
        let folder = try KeyFolder()
        let sender = SenderKey.generate()
        let senderFile = folder.url.appendingPathComponent("sender.json").path
        try SenderKeyFile.write(sender, to: senderFile)
        let plaintext = #"{"chat_id":"c","title":"t","body":"b"}"#
        let fields = #","token":"00aa","app":"chat","collapse_id":"chat-7","thread_id":"chat 7","expiration":1900000000,"priority":5"#
        let compact = Self.line(folder.key, plaintext, extra: fields)
        let spaced = compact.replacingOccurrences(of: "\":", with: "\": ")
        let silent = Self.line(folder.key, plaintext, extra: #","mode":"silent","thread_id":"chat 7","collapse_id":"s""#)
        let refused = [
            (#","priority":1"#, #""priority" is 10 (deliver now) or 5 (when the device's power allows)"#),
            (#","expiration":-5"#, #""expiration" is a whole number of Unix seconds from 0 to 4294967295"#),
            (#","expiration":1.5"#, #""expiration" is a whole number of Unix seconds from 0 to 4294967295"#),
            (#","collapse_id":"\#(String(repeating: "c", count: 65))""#, #""collapse_id" is 1 to 64 bytes of printable text"#),
            (#","collapse_id":7"#, #""collapse_id" is not a string"#), (#","app":"a b""#, #""app" is 1 to 64 letters"#),
            (#","thread_id":"a\u0007""#, #""thread_id" is 1 to 128 bytes of printable text"#),
        ]
        let input = ([compact, spaced, silent] + refused.map { Self.line(folder.key, plaintext, extra: #","id":1"# + $0.0) })
            .joined(separator: "\n")
        let versions: [(String, [String])] = [
            ("version 1", []), ("version 2", ["--sender-key-file", senderFile]), ("version 3 mode_base", ["--wire", "3"]),
            ("version 3 mode_auth", ["--wire", "3", "--sender-key-file", senderFile]),
        ]
        for (name, arguments) in versions {
            let output = try CLI.run(["seal", "--jsonl", "--recipients-inline"] + arguments, stdin: input)
            #expect(output.status == 0, "\(name): \(output.stderr)")
            let lines = Self.lines(output)
            try #require(lines.count == 3 + refused.count, "\(name)")
            for line in lines[0..<2] {
                let value = try JSONValue(parsing: line)
                #expect(value.objectValue?.keys == ["token", "app", "collapse_id", "expiration", "priority", "push"], "\(name)")
                #expect(value["app"] == "chat" && value["collapse_id"] == "chat-7", "\(name)")
                #expect(value["expiration"] == .number(JSONNumber(1_900_000_000)) && value["priority"] == 5, "\(name)")
                #expect(value["push"]?["aps"]?["thread-id"] == "chat 7", "\(name)")
                #expect(value["push"]?["aps"]?.objectValue?.keys == ["alert", "mutable-content", "sound", "thread-id"], "\(name)")
                // The push as written: from "push": to the line's closing brace.
                let push = String(line[line.range(of: #""push":"#)!.upperBound...].dropLast())
                let pin = arguments.contains(senderFile) ? ["--sender-key", sender.publicKey.base64URL] : []
                let decrypted = try CLI.run(["decrypt", "--key-file", folder.keyFile] + pin, stdin: push)
                #expect(decrypted.stdout == plaintext + "\n", "\(name): \(decrypted.stderr)")
            }
            // The two paths write the same line but for the random bytes of the seal.
            let first = try JSONValue(parsing: lines[0])
            let second = try JSONValue(parsing: lines[1])
            #expect(first["push"]?["aps"] == second["push"]?["aps"] && first.objectValue?.keys == second.objectValue?.keys, "\(name)")
            // A silent push has no banner to group: no thread-id.
            let quiet = try JSONValue(parsing: lines[2])
            #expect(quiet["collapse_id"] == "s" && quiet["push"]?["aps"] == ["content-available": 1], "\(name)")
            for (line, (_, message)) in zip(lines[3...], refused) {
                let error = try JSONValue(parsing: line)
                #expect(error["error"]?["code"] == "bad_input" && error["id"] == 1, "\(name): \(line)")
                #expect(error["error"]?["message"]?.stringValue?.hasPrefix(message) == true, "\(name): \(line)")
            }
        }
    }

    /// A subscription's JSON as a browser gives it: `{"endpoint", "keys": {"p256dh", "auth"}}`
    /// with a fresh uncompressed P-256 point's shape (seal checks lengths; send, the curve).
    static func subscription(_ endpoint: String = "https://push.example/s/1", point: [UInt8]? = nil, auth: [UInt8]? = nil) -> String {
        let p256dh = point ?? ([4] + (0..<64).map { _ in UInt8.random(in: 0...255) })
        let secret = auth ?? (0..<16).map { _ in UInt8.random(in: 0...255) }
        return #"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(Base64.urlEncoded(p256dh))","auth":"\#(Base64.urlEncoded(secret))"}}"#
    }

    /// The push of an output line: from `"push":` to the line's closing brace.
    static func push(of line: String) throws -> String {
        let start = try #require(line.range(of: #""push":"#), "no push: \(line)")
        return String(line[start.upperBound...].dropLast())
    }

    /// The four ways of sealing, as `seal` is told them: the arguments after `--recipients-inline`
    /// and the arguments of `decrypt` that open its pushes.
    static func versions(_ folder: KeyFolder, sender: SenderKey) throws -> [(name: String, seal: [String], decrypt: [String])] {
        let senderFile = folder.url.appendingPathComponent("sender.json").path
        try SenderKeyFile.write(sender, to: senderFile)
        let pin = ["--key-file", folder.keyFile, "--sender-key", sender.publicKey.base64URL]
        return [
            ("version 1", [], ["--key-file", folder.keyFile]), ("version 2", ["--sender-key-file", senderFile], pin),
            ("version 3 mode_base", ["--wire", "3"], ["--key-file", folder.keyFile]),
            ("version 3 mode_auth", ["--wire", "3", "--sender-key-file", senderFile], pin),
        ]
    }

    @Test(
        "fcm_token and subscription carried to send's shape on both paths, in every wire version; each push held to its platform's budget, --fit cutting to it; a wrong registration refused"
    )
    func platforms() throws {
        let folder = try KeyFolder()
        let sender = SenderKey.generate()
        let plaintext = #"{"chat_id":"c","title":"t","body":"b"}"#
        let subscription = Self.subscription()
        let fcm = Self.line(folder.key, plaintext, extra: #","fcm_token":"fcm:AB-c_9","app":"chat","priority":5"#)
        let webPush = Self.line(folder.key, plaintext, extra: #","subscription":\#(subscription),"collapse_id":"c-1""#)
        let spaced = [fcm, webPush].map { $0.replacingOccurrences(of: "\":", with: "\": ") }
        let refused = [
            (#","fcm_token":7"#, #""fcm_token" is a number, not a string"#),
            (#","fcm_token":"has space""#, #""fcm_token" is not an FCM registration token (printable, 1 to 4096 bytes)"#),
            (#","subscription":"https://push.example/s/1""#, #""subscription" is not {"endpoint": URL, "keys": {"p256dh", "auth"}}"#),
            (
                #","subscription":\#(Self.subscription("http://push.example/s/1"))"#,
                #"the subscription's "endpoint" is not an https:// URL with a host (printable, no fragment, at most 2048 bytes)"#
            ),
            (#","subscription":{"endpoint":"https://push.example/s/1"}"#, #"the subscription has no "keys" {"p256dh", "auth"} strings"#),
            (
                #","subscription":\#(Self.subscription(point: [4] + [UInt8](repeating: 1, count: 32)))"#,
                #"the subscription's "p256dh" is not the base64url of an uncompressed P-256 point (65 bytes)"#
            ),
            (
                #","subscription":\#(Self.subscription(auth: [UInt8](repeating: 1, count: 15)))"#,
                #"the subscription's "auth" is not the base64url of 16 bytes"#
            ),
            (
                #","token":"00aa","fcm_token":"f""#,
                #"a line names one device: "token" (APNs), "fcm_token" (FCM) or "subscription" (Web Push), not 2"#
            ),
        ]
        let input = ([fcm, webPush] + spaced + refused.map { Self.line(folder.key, plaintext, extra: #","id":1"# + $0.0) })
            .joined(separator: "\n")
        for version in try Self.versions(folder, sender: sender) {
            let output = try CLI.run(["seal", "--jsonl", "--recipients-inline"] + version.seal, stdin: input)
            #expect(output.status == 0, "\(version.name): \(output.stderr)")
            let lines = Self.lines(output)
            try #require(lines.count == 4 + refused.count, "\(version.name)")
            for (index, line) in lines[0..<4].enumerated() {
                let value = try JSONValue(parsing: line)
                if index % 2 == 0 {
                    #expect(value.objectValue?.keys == ["fcm_token", "app", "priority", "push"], "\(version.name)")
                    #expect(value["fcm_token"] == "fcm:AB-c_9", "\(version.name)")
                } else {
                    #expect(value.objectValue?.keys == ["subscription", "collapse_id", "push"], "\(version.name)")
                    // The subscription as it came, in the writer's compact form, on both paths.
                    #expect(line.hasPrefix(#"{"subscription":\#(subscription),"#), "\(version.name): \(line)")
                }
                let decrypted = try CLI.run(["decrypt"] + version.decrypt, stdin: try Self.push(of: line))
                #expect(decrypted.stdout == plaintext + "\n", "\(version.name): \(decrypted.stderr)")
            }
            for (line, (_, message)) in zip(lines[4...], refused) {
                let error = try JSONValue(parsing: line)
                #expect(error["error"]?["code"] == "bad_input" && error["id"] == 1, "\(version.name): \(line)")
                #expect(error["error"]?["message"]?.stringValue == message, "\(version.name): \(line)")
            }
            try budgets(folder, version: version, sender: sender)
        }
    }

    @Test(
        "a registration as wire-format section 9.1 stores it (\"platform\" beside \"token\" or \"subscription\") becomes send's line, in every wire version; a platform that is not one, or without its address, is refused"
    )
    func storedRegistrations() throws {
        let folder = try KeyFolder()
        let sender = SenderKey.generate()
        let plaintext = #"{"chat_id":"c","title":"t","body":"b"}"#
        let subscription = Self.subscription()
        let stored = [
            (#","platform":"fcm","token":"fcm:AB-c_9""#, "fcm_token", JSONValue.string("fcm:AB-c_9")),
            (#","platform":"webpush","subscription":\#(subscription)"#, "subscription", try JSONValue(parsing: subscription)),
            (#","platform":"apns","token":"00aa""#, "token", JSONValue.string("00aa")),
        ]
        let refused = [
            (#","platform":"hms","token":"x""#, #""platform" is not "apns", "fcm" or "webpush" (wire-format section 9.1)"#),
            (
                #","platform":"webpush","token":"x""#,
                #""platform" is "webpush", whose registration names the device by "subscription", which is missing"#
            ),
            (#","platform":"fcm","token":"has space""#, #""token" is not an FCM registration token (printable, 1 to 4096 bytes)"#),
        ]
        let input = (stored + refused.map { ($0.0, "", JSONValue.null) }).map {
            Self.line(folder.key, plaintext, extra: #","id":1"# + $0.0)
        }
        .joined(separator: "\n")
        for version in try Self.versions(folder, sender: sender) {
            let output = try CLI.run(["seal", "--jsonl", "--recipients-inline"] + version.seal, stdin: input)
            #expect(output.status == 0, "\(version.name): \(output.stderr)")
            let lines = Self.lines(output)
            try #require(lines.count == stored.count + refused.count, "\(version.name)")
            for (line, (_, member, address)) in zip(lines, stored) {
                let value = try JSONValue(parsing: line)
                #expect(value.objectValue?.keys == ["id", member, "push"], "\(version.name): \(line)")
                #expect(value[member] == address, "\(version.name): \(line)")
                let decrypted = try CLI.run(["decrypt"] + version.decrypt, stdin: try Self.push(of: line))
                #expect(decrypted.stdout == plaintext + "\n", "\(version.name): \(decrypted.stderr)")
            }
            for (line, (_, message)) in zip(lines[stored.count...], refused) {
                let error = try JSONValue(parsing: line)
                #expect(error["error"]?["code"] == "bad_input" && error["id"] == 1, "\(version.name): \(line)")
                #expect(error["error"]?["message"]?.stringValue == message, "\(version.name): \(line)")
            }
        }
    }

    /// A message whose push is over FCM's and Web Push's budgets and within APNs's: sealed for
    /// APNs; refused for the other two, naming their budget; with `--fit`, cut to fit each.
    func budgets(
        _ folder: KeyFolder, version: (name: String, seal: [String], decrypt: [String]), sender: SenderKey
    ) throws {
        // The body whose push (visible, the default placeholder) is 3994 to 4096 bytes.
        let sealing = version.seal.contains("3") ? WireVersion.three : version.seal.isEmpty ? .one : .two
        let from = version.seal.contains("--sender-key-file") ? sender : nil
        var body = ""
        for length in stride(from: 2_600, to: 3_100, by: 4) {
            let payload = try DecryptedPayload(chatId: "c", title: "t", body: String(repeating: "x", count: length))
            guard
                let push = try? KindlyPushSealer.seal(payload, for: folder.key.publicKey, wire: sealing, from: from, placeholder: .default)
            else { break }
            if push.count > PushPlatform.webPush.maximumPayloadSize {
                body = String(repeating: "x", count: length)
                break
            }
        }
        try #require(!body.isEmpty, "\(version.name)")
        let plaintext = #"{"chat_id":"c","title":"t","body":"\#(body)"}"#
        let lines = [
            Self.line(folder.key, plaintext, extra: #","token":"00aa""#),
            Self.line(folder.key, plaintext, extra: #","fcm_token":"f""#),
            Self.line(folder.key, plaintext, extra: #","subscription":\#(Self.subscription())"#),
        ]
        let inputs = [lines, lines.map { $0.replacingOccurrences(of: "\":", with: "\": ") }]
        for input in inputs {
            let output = try CLI.run(["seal", "--jsonl", "--recipients-inline"] + version.seal, stdin: input.joined(separator: "\n"))
            let results = try Self.lines(output).map { try JSONValue(parsing: $0) }
            try #require(results.count == 3, "\(version.name)")
            #expect(results[0]["push"] != nil, "\(version.name)")
            for (result, platform) in zip(results[1...], [PushPlatform.fcm, .webPush]) {
                let message = result["error"]?["message"]?.stringValue ?? ""
                #expect(
                    message.hasPrefix("the sealed payload would be ")
                        && message.hasSuffix(" bytes, over \(platform.possessive) limit of \(platform.maximumPayloadSize)"),
                    "\(version.name): \(message)")
            }
            let fitted = try CLI.run(
                ["seal", "--jsonl", "--fit", "--recipients-inline"] + version.seal, stdin: input.joined(separator: "\n"))
            let pushes = try Self.lines(fitted).map(Self.push(of:))
            try #require(pushes.count == 3, "\(version.name): \(fitted.stdout)")
            for (push, platform) in zip(pushes, [PushPlatform.apns, .fcm, .webPush]) {
                #expect(push.utf8.count <= platform.maximumPayloadSize, "\(version.name) \(platform)")
                let opened = try JSONValue(parsing: try CLI.run(["decrypt"] + version.decrypt, stdin: push).stdout)
                // APNs's push fits whole; the others are cut, and say so.
                let truncated: JSONValue? = platform == .apns ? nil : true
                #expect(opened["truncated"] == truncated, "\(version.name) \(platform)")
                #expect(opened["body"]?.stringValue?.hasSuffix(platform == .apns ? "x" : "x…") == true, "\(version.name) \(platform)")
            }
        }
    }

    @Test(
        "end to end: seal --recipients-inline for an APNs, an FCM and a Web Push device in every wire version, then send --config: each stand-in keeps a push that opens to the same plaintext"
    )
    func sealThenSend() throws {
        let apns = try APNsTestServer()
        let service = try WebPushTestService()
        let fcm = try SendFCMTests.server()
        let vapid = try SendWebPushTests.vapidKey(in: service.folder)
        let account = fcm.folder.appendingPathComponent("service-account.json").path
        let sections = [
            """
                apns: {team_id: \(APNsTestServer.teamID), key_id: \(APNsTestServer.keyID), key_file: \(apns.keyFile),
                       topic: \(APNsTestServer.topic), url: "\(apns.url)", ca_file: \(apns.certificate)}
            """,
            "    fcm: {service_account_file: \(account), url: \"\(fcm.url)\", ca_file: \(fcm.certificate)}",
            SendWebPushTests.webPushSection(service, key: vapid.path),
        ]
        let configuration = try SendWebPushTests.configuration(service.folder, sections.joined(separator: "\n"))
        let folder = try KeyFolder()
        let sender = SenderKey.generate()
        let plaintext = #"{"chat_id":"c-1","title":"Anna","body":"Lunch? 🥗","message_id":"m-1"}"#
        let versions = try Self.versions(folder, sender: sender)
        var sealed: [String] = []
        var subscribers: [WebPushTestService.Subscriber] = []
        for (index, version) in versions.enumerated() {
            let subscriber = try service.subscribe("v\(index)", vapid: vapid.publicKey)
            subscribers.append(subscriber)
            let input = [
                Self.line(folder.key, plaintext, extra: #","id":"apns-\#(index)","token":"\#(APNsTestServer.token(index))""#),
                Self.line(folder.key, plaintext, extra: #","id":"fcm-\#(index)","fcm_token":"device-\#(index)""#),
                Self.line(folder.key, plaintext, extra: #","id":"webpush-\#(index)","subscription":\#(subscriber.json),"app":"chat""#),
            ]
            let output = try CLI.run(["seal", "--jsonl", "--recipients-inline"] + version.seal, stdin: input.joined(separator: "\n"))
            #expect(output.status == 0, "\(version.name): \(output.stderr)")
            sealed += Self.lines(output)
        }
        try #require(sealed.count == 12)
        let output = try CLI.run(["send", "--jsonl", "--config", configuration], stdin: sealed.map { $0 + "\n" }.joined())
        #expect(output.status == 0, "\(output.stderr)")
        let results = SendTests.lines(output)
        try #require(results.count == 12, "\(output.stdout)")
        #expect(results.map { $0["platform"] as? String } == Array(repeating: ["apns", "fcm", "webpush"], count: 4).flatMap { $0 })
        #expect(results.allSatisfy { [200, 201].contains($0["status"] as? Int) }, "\(output.stdout)")

        let records = try apns.records().filter { $0["status"] as? Int == 200 }
        let sends = try SendFCMTests.sends(fcm).filter { $0["status"] as? Int == 200 }
        for (index, version) in versions.enumerated() {
            let apnsPush = try #require(records.first { $0["token"] as? String == APNsTestServer.token(index) }?["payload"] as? String)
            let fcmRecord = try #require(sends.first { $0["fcm_token"] as? String == "device-\(index)" })
            let fcmMessage = (fcmRecord["message"] as? [String: Any])?["message"] as? [String: Any]
            let fcmPush = try #require((fcmMessage?["data"] as? [String: Any])?["kindly_push"] as? String)
            let messages = service.messages(subscribers[index].id)
            try #require(messages.count == 1, "\(version.name)")
            let webPush = String(decoding: try subscribers[index].open(messages[0]), as: UTF8.self)
            for (platform, push) in [("APNs", apnsPush), ("FCM", fcmPush), ("Web Push", webPush)] {
                let decrypted = try CLI.run(["decrypt"] + version.decrypt, stdin: push)
                #expect(decrypted.stdout == plaintext + "\n", "\(version.name) through \(platform): \(decrypted.stderr)")
            }
        }
    }

    @Test("the pushes have the shape of seal --public-key's, and one document works without --jsonl")
    func sameShapeAsOneRecipient() throws {
        let folder = try KeyFolder()
        let plaintext = #"{"chat_id":"c","title":"t","body":"héllo"}"#
        let inline = try CLI.run(["seal", "--recipients-inline"], stdin: Self.line(folder.key, plaintext))
        let single = try CLI.run(["seal", "--public-key", folder.key.publicKey.base64URL], stdin: plaintext)
        #expect(inline.status == 0 && single.status == 0)
        let a = try JSONValue(parsing: inline.stdout)
        let b = try JSONValue(parsing: single.stdout)
        #expect(
            a["aps"] == b["aps"] && a["kindly"]?["kid"] == b["kindly"]?["kid"]
                && a["kindly"]?.objectValue?.keys == b["kindly"]?.objectValue?.keys)
        #expect(inline.stdout.utf8.count == single.stdout.utf8.count)
        #expect(try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: inline.stdout).stdout == plaintext + "\n")
        let bad = try CLI.run(["seal", "--recipients-inline"], stdin: #"{"plaintext":{}}"#)
        #expect(bad.status == 65)
        #expect(bad.stderr == "kindly-push: bad_input: \"public_key\" is missing (the device's public key)\n")
        #expect(bad.stdout == "")
    }

    @Test("more devices than the cache holds: sealers are evicted and made again, and every push still decrypts")
    func eviction() throws {
        let devices = (0..<1_100).map { _ in DeviceKey.generate() }
        var input = ""
        // Round-robin twice over 1,100 devices with one thread: every look-up misses a 1,024-recipient cache.
        for index in 0..<2_200 {
            input += Self.line(devices[index % devices.count], #"{"chat_id":"c\#(index)","title":"t","body":"b"}"#) + "\n"
        }
        let output = try CLI.run(["seal", "--jsonl", "--recipients-inline", "--jobs", "1"], stdin: Array(input.utf8), timeLimit: 120)
        #expect(output.status == 0)
        let pushes = Self.lines(output)
        try #require(pushes.count == 2_200)
        for (index, push) in pushes.enumerated() {
            let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [devices[index % devices.count]]))
            #expect(decryption.decrypt(userInfo: try JSONReader.parse(Array(push.utf8)))?.chatId == "c\(index)", "line \(index + 1)")
        }
    }

    @Test("--fit cuts each line's long body for its own device, and leaves short ones alone")
    func fitPerLine() throws {
        let first = try KeyFolder()
        let second = try KeyFolder()
        let long = #"{"chat_id":"c","title":"t","body":"\#(String(repeating: "👍🏽", count: 2_000))","message_id":"m"}"#
        let short = #"{"chat_id":"c","title":"t","body":"b"}"#
        let input = [Self.line(first.key, long), Self.line(second.key, short), Self.line(second.key, long, extra: #","mode":"silent""#)]
        let output = try CLI.run(["seal", "--jsonl", "--fit", "--recipients-inline"], stdin: input.joined(separator: "\n"))
        #expect(output.status == 0)
        let pushes = Self.lines(output)
        try #require(pushes.count == 3)
        for (push, folder) in zip(pushes, [first, second, second]) {
            #expect(push.utf8.count <= 4096)
            let decrypted = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: push)
            #expect(decrypted.status == 0)
        }
        let cut = try JSONValue(parsing: try CLI.run(["decrypt", "--key-file", first.keyFile], stdin: pushes[0]).stdout)
        #expect(cut["truncated"] == true && cut["message_id"] == "m")
        #expect(cut["body"]?.stringValue?.hasSuffix("👍🏽…") == true)
        #expect(try CLI.run(["decrypt", "--key-file", second.keyFile], stdin: pushes[1]).stdout == short + "\n")
        // The silent push has a smaller template, so more of the body fits.
        let silent = try JSONValue(parsing: try CLI.run(["decrypt", "--key-file", second.keyFile], stdin: pushes[2]).stdout)
        #expect((silent["body"]?.stringValue?.utf8.count ?? 0) > (cut["body"]?.stringValue?.utf8.count ?? 0))
    }

    @Test("usage: --recipients-inline with a device key of the command is refused")
    func usage() throws {
        let key = DeviceKey.generate()
        let output = try CLI.run(["seal", "--recipients-inline", "--public-key", key.publicKey.base64URL], stdin: "{}")
        #expect(output.status == 64)
        #expect(
            output.stderr
                == "kindly-push: usage: --recipients-inline reads each device's key from its input: give no --public-key or --key-file\n")
    }
}

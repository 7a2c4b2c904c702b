import Foundation
import KindlyPush
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
                #"{"error":{"code":"bad_input","message":"unknown member \"device\"; a --recipients-inline input has \"public_key\", \"plaintext\" and optionally \"id\", \"token\", \"mode\", \"placeholder_title\", \"placeholder_body\", \"thread_id\", \"app\", \"collapse_id\", \"expiration\", \"priority\""}}"#
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

import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("kindly-push seal --fit", .offThePool)
struct SealFitTests {
    static let units: [(String, String)] = [
        ("Latin", "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "),
        ("CJK", "你好世界，这是一个很长的消息。日本語のテキスト。한국어 "),
        ("emoji with skin tones", "👍🏽👋🏿🧑🏻‍💻👩🏾‍🚀🤝🏼 "),
        ("combining marks", "e\u{301}a\u{308}\u{323}o\u{302}\u{303}\u{304}n\u{303}\u{1100}\u{1161}\u{11A8} "),
        ("JSON escapes", "\"quoted\" \\back\\slash\u{1}\u{1f}\n\t\r\u{8}\u{c}/ "),
        ("everything", "a\"é漢👍🏽\u{301}\\\u{7}\n"),
    ]
    static let sizes = [3_000, 4_500, 10_000, 30_000, 60_000, 100_000]

    static func body(_ unit: String, bytes: Int) -> String {
        var body = ""
        while body.utf8.count < bytes { body += unit }
        return body
    }

    @Test(
        "bodies of 3,000 to 100,000 bytes: pushes of at most 4096 bytes whose body is the longest prefix of whole characters that fits, with … and truncated: true"
    )
    func longBodies() throws {
        let key = DeviceKey.generate()
        var cases: [(name: String, payload: DecryptedPayload)] = []
        var jsonl = ""
        var viaCLI: [Int] = []
        var pushes: [String] = []
        for (name, unit) in Self.units {
            for size in Self.sizes {
                let payload = try DecryptedPayload(
                    chatId: "chat-42", title: "Anna", body: Self.body(unit, bytes: size), messageId: "m-7", extras: ["extra": [1, 2]])
                let text = JSONWriter.compactBytes(.object(payload.object))
                cases.append(("\(name), \(size) bytes", payload))
                // `--fit` reads lines of up to 1 MiB: every body goes through the command.
                #expect(text.count <= 1 << 20)
                jsonl += String(decoding: text, as: UTF8.self) + "\n"
                viaCLI.append(cases.count - 1)
                pushes.append("")
            }
        }
        // Through the command, one stream, 100,000-byte bodies included.
        let output = try CLI.run(["seal", "--fit", "--jsonl", "--public-key", key.publicKey.base64URL], stdin: Array(jsonl.utf8))
        #expect(output.status == 0)
        let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        try #require(lines.count == viaCLI.count)
        for (index, line) in zip(viaCLI, lines) { pushes[index] = String(line) }
        #expect(viaCLI.count == cases.count)

        let decrypted = try ReferenceDecryption.decrypt(pushes.map { (key, $0) })
        for (index, (name, payload)) in cases.enumerated() {
            #expect(pushes[index].utf8.count <= 4096, "\(name)")
            guard case .success(let plaintext) = decrypted[index] else {
                Issue.record("\(name): the reference says \(decrypted[index])")
                continue
            }
            #expect(plaintext["truncated"] == true, "\(name)")
            #expect(plaintext["chat_id"] == "chat-42" && plaintext["title"] == "Anna" && plaintext["message_id"] == "m-7", "\(name)")
            #expect(plaintext["extra"] == [1, 2], "\(name)")
            let cut = Array((plaintext["body"]?.stringValue ?? "").utf8)
            guard cut.suffix(3).elementsEqual("…".utf8) else {
                Issue.record("\(name): the body does not end with …")
                continue
            }
            // The prefix is whole characters of the body (compared byte for byte)...
            let prefix = Array(cut.dropLast(3))
            let characters = Array(payload.body)
            var count = 0
            var length = 0
            while length < prefix.count, count < characters.count {
                length += characters[count].utf8.count
                count += 1
            }
            #expect(length == prefix.count && Array(String(characters[..<count]).utf8) == prefix, "\(name)")
            #expect(count > 0 || payload.body.isEmpty, "\(name)")
            // ...and the longest: one more character makes a push over 4096 bytes.
            var longer = payload.object
            longer["body"] = .string(String(characters[...count]) + "…")
            longer["truncated"] = true
            #expect(throws: KindlyPushSealer.SealingError.self, "\(name)") {
                try KindlyPushSealer.seal(try DecryptedPayload(validating: longer), for: key.publicKey)
            }
        }
    }

    @Test("a message that fits is sealed unchanged and without the flag; without --fit a long one is still refused (65)")
    func fitsOrRefused() throws {
        let folder = try KeyFolder()
        let short = #"{"chat_id":"c","title":"t","body":"short, with \"quotes\"","sent_at":5}"#
        let fitted = try CLI.run(["seal", "--fit", "--key-file", folder.keyFile], stdin: short)
        #expect(fitted.status == 0)
        #expect(try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: fitted.stdout).stdout == short + "\n")

        let long = #"{"chat_id":"c","title":"t","body":"\#(String(repeating: "x", count: 5_000))"}"#
        let refused = try CLI.run(["seal", "--key-file", folder.keyFile], stdin: long)
        #expect(refused.status == 65)
        #expect(refused.stdout == "")
        #expect(refused.stderr.hasPrefix("kindly-push: bad_input: the sealed payload would be "))
        #expect(refused.stderr.hasSuffix(" bytes, over APNs' limit of 4096\n"))
        let cut = try CLI.run(["seal", "--fit", "--key-file", folder.keyFile], stdin: long)
        #expect(cut.status == 0)
        let decrypted = try JSONValue(parsing: try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: cut.stdout).stdout)
        #expect(decrypted["truncated"] == true)
        #expect(decrypted.objectValue?.keys == ["chat_id", "title", "body", "truncated"])
    }

    @Test("a title too long for any body gives the minimal plaintext; a huge chat_id is refused even with --fit")
    func minimal() throws {
        let folder = try KeyFolder()
        let input = #"{"chat_id":"c","title":"\#(String(repeating: "T", count: 4_500))","body":"b","message_id":"m","sent_at":1,"x":1}"#
        for mode in ["visible", "silent"] {
            let sealed = try CLI.run(["seal", "--fit", "--mode", mode, "--key-file", folder.keyFile], stdin: input)
            #expect(sealed.status == 0)
            let decrypted = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: sealed.stdout)
            #expect(decrypted.stdout == #"{"chat_id":"c","message_id":"m","title":"","body":"","truncated":true}"# + "\n")
        }
        let hopeless = try CLI.run(
            ["seal", "--fit", "--key-file", folder.keyFile],
            stdin: #"{"chat_id":"\#(String(repeating: "c", count: 4_000))","title":"t","body":"b"}"#)
        #expect(hopeless.status == 65)
        #expect(hopeless.stderr.hasPrefix("kindly-push: bad_input: the sealed payload would be "))
    }

    @Test("a non-boolean truncated is bad_input (65), on the fast path and the general one, with and without --fit")
    func truncatedMustBeBoolean() throws {
        let key = DeviceKey.generate()
        let cases = [
            (#"{"chat_id":"c","title":"t","body":"b","truncated":1}"#, "a number"),
            (#"{ "chat_id": "c", "title": "t", "body": "b", "truncated": null }"#, "null"),
            (#"{"chat_id":"c","title":"t","body":"b","truncated":"true"}"#, "a string"),
        ]
        for (text, type) in cases {
            for fit in [[], ["--fit"]] {
                let output = try CLI.run(["seal", "--public-key", key.publicKey.base64URL] + fit, stdin: text)
                #expect(output.status == 65)
                #expect(
                    output.stderr
                        == "kindly-push: bad_input: the plaintext is not a Kindly message: \"truncated\" is \(type), not a boolean\n")
            }
        }
        for flag in ["true", "false"] {
            let output = try CLI.run(
                ["seal", "--public-key", key.publicKey.base64URL], stdin: #"{"chat_id":"c","title":"t","body":"b","truncated":\#(flag)}"#)
            #expect(output.status == 0)
        }
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Wire format version 3 through the binary: `seal --wire`, and `decrypt`, `route` and `senders`
/// reading version 3 with no flag, alone and in a `--jsonl` stream that mixes versions 1, 2 and 3.
/// (Every version 3 vector also goes through `decrypt` in DecryptAndSealTests.)
@Suite("kindly-push and wire format version 3", .offThePool)
struct VersionThreeCLITests {
    static let plaintext = #"{"chat_id":"c-1","title":"Anna","body":"Hi!"}"#

    struct Setup {
        let folder: KeyFolder
        let sender: SenderKey
        let senderFile: String

        init() throws {
            folder = try KeyFolder()
            sender = SenderKey.generate()
            senderFile = folder.url.appendingPathComponent("sender.json").path
            try SenderKeyFile.write(sender, to: senderFile)
        }

        func seal(_ arguments: [String], _ text: String = VersionThreeCLITests.plaintext) throws -> String {
            let output = try CLI.run(["seal", "--key-file", folder.keyFile] + arguments, stdin: text)
            #expect(output.status == 0, "\(output.stderr)")
            return String(output.stdout.dropLast())
        }
    }

    @Test("seal --wire 3 is mode_base, with --sender-key-file mode_auth; without --wire the defaults are as before")
    func sealWire() throws {
        let setup = try Setup()
        let cases: [([String], Int, [String])] = [
            (["--wire", "3"], 3, ["v", "kid", "enc", "ct"]),
            (["--wire", "3", "--sender-key-file", setup.senderFile], 3, ["v", "kid", "sid", "enc", "ct"]),
            ([], 1, ["v", "kid", "epk", "n", "ct"]), (["--wire", "1"], 1, ["v", "kid", "epk", "n", "ct"]),
            (["--sender-key-file", setup.senderFile], 2, ["v", "kid", "sid", "epk", "n", "ct"]),
            (["--wire", "2", "--sender-key-file", setup.senderFile], 2, ["v", "kid", "sid", "epk", "n", "ct"]),
        ]
        for (arguments, version, keys) in cases {
            let push = try JSONValue(parsing: try setup.seal(arguments))
            #expect(push["kindly"]?["v"] == .number(JSONNumber(version)), "\(arguments)")
            #expect(push["kindly"]?.objectValue?.keys == keys, "\(arguments)")
        }
        for arguments in [["--wire", "1", "--sender-key-file", setup.senderFile], ["--wire", "2"], ["--wire", "4"], ["--wire", "v3"]] {
            let output = try CLI.run(["seal", "--key-file", setup.folder.keyFile] + arguments, stdin: Self.plaintext)
            #expect(output.status == 64, "\(arguments)")
            #expect(output.stdout == "")
            #expect(output.stderr.hasPrefix("kindly-push: usage: "))
        }
    }

    @Test("a --jsonl stream mixing versions 1, 2 and 3: each line decrypts or gives the spec's code, pinned and not")
    func mixedStream() throws {
        let setup = try Setup()
        let stranger = try Setup()
        let v1 = try setup.seal([])
        let v2 = try setup.seal(["--sender-key-file", setup.senderFile])
        let base = try setup.seal(["--wire", "3"])
        let auth = try setup.seal(["--wire", "3", "--sender-key-file", setup.senderFile])
        let strangerAuth = try CLI.run(
            ["seal", "--key-file", setup.folder.keyFile, "--wire", "3", "--sender-key-file", stranger.senderFile], stdin: Self.plaintext
        ).stdout.dropLast()
        func edit(_ push: String, _ change: (inout JSONObject) -> Void) throws -> String {
            var document = try JSONValue(parsing: push).objectValue!
            var envelope = document["kindly"]!.objectValue!
            change(&envelope)
            document["kindly"] = .object(envelope)
            return JSONValue.object(document).compactText
        }
        let enc = try JSONValue(parsing: auth)["kindly"]!["enc"]!.stringValue!
        let ct = try JSONValue(parsing: auth)["kindly"]!["ct"]!.stringValue!
        let lines: [(String, pinned: String?, unpinned: String?)] = [
            (v1, "untrusted_sender", nil),
            (v2, nil, "untrusted_sender"),
            (base, "untrusted_sender", nil),
            (auth, nil, "untrusted_sender"),
            (String(strangerAuth), "untrusted_sender", "untrusted_sender"),
            (#"{"aps":{}}"#, "not_kindly", "not_kindly"),
            (try edit(auth) { $0["v"] = "3" }, "unsupported_version", "unsupported_version"),
            (try edit(auth) { $0["v"] = 4 }, "unsupported_version", "unsupported_version"),
            (try edit(auth) { $0["enc"] = .string(String(enc.dropLast(2))) }, "malformed", "malformed"),
            (try edit(auth) { $0["sid"] = 7 }, "malformed", "malformed"),
            (try edit(auth) { $0["kid"] = "AAAAAAAAAAA" }, "key_unavailable", "key_unavailable"),
            (try edit(auth) { $0["sid"] = nil }, "untrusted_sender", "authentication_failed"),  // a stripped sid
            (try edit(auth) { $0["sid"] = .string(stranger.sender.publicKey.sid.base64URL) }, "untrusted_sender", "untrusted_sender"),
            (try edit(auth) { $0["enc"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, "authentication_failed", "untrusted_sender"),
            (try edit(base) { $0["enc"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, "untrusted_sender", "authentication_failed"),
            // Its first character changed (a ct that began with "A" was left as it was: 1 run in 64).
            (
                try edit(auth) { $0["ct"] = .string((ct.first == "A" ? "B" : "A") + ct.dropFirst()) }, "authentication_failed",
                "untrusted_sender"
            ),
            ("", "bad_input", "bad_input"),
        ]
        let input = lines.map(\.0).joined(separator: "\n") + "\n"
        for pinned in [true, false] {
            let pins = pinned ? ["--sender-key", setup.sender.publicKey.base64URL] : []
            let output = try CLI.run(["decrypt", "--jsonl", "--key-file", setup.folder.keyFile] + pins, stdin: input)
            #expect(output.status == 0, "\(output.stderr)")
            let results = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
            try #require(results.count == lines.count)
            for (index, (line, result)) in zip(lines, results).enumerated() {
                let expected = pinned ? line.pinned : line.unpinned
                let value = try JSONValue(parsing: result)
                if let expected {
                    #expect(value["error"]?["code"] == .string(expected), "line \(index + 1), pinned \(pinned): \(result)")
                } else {
                    #expect(value["chat_id"] == "c-1", "line \(index + 1), pinned \(pinned): \(result)")
                }
                // One document at a time gives the same result, with the spec's exit code.
                guard pinned, !line.0.isEmpty else { continue }
                let single = try CLI.run(["decrypt", "--key-file", setup.folder.keyFile] + pins, stdin: line.0)
                #expect(single.status == (expected.map { DecryptAndSealTests.exitStatus[$0]! } ?? 0), "line \(index + 1)")
            }
        }
    }

    @Test("senders pins in the keyring work for version 3 mode_auth; mode_base is refused once a sender is pinned")
    func sendersPins() throws {
        let setup = try Setup()
        let keyring = setup.folder.url.appendingPathComponent("ring").path
        let environment = ["KINDLY_PUSH_KEYRING_DIR": keyring]
        let keygen = try CLI.run(["keygen", "--keyring", "file"], environment: environment)
        let publicKey = try #require(try JSONValue(parsing: keygen.stdout)["public_key"]?.stringValue)
        let base = try CLI.run(["seal", "--wire", "3", "--public-key", publicKey], stdin: Self.plaintext).stdout
        let auth = try CLI.run(
            ["seal", "--wire", "3", "--public-key", publicKey, "--sender-key-file", setup.senderFile], stdin: Self.plaintext
        ).stdout
        func decrypt(_ push: String) throws -> Int32 {
            try CLI.run(["decrypt", "--keyring", "file"], stdin: push, environment: environment).status
        }
        #expect(try decrypt(base) == 0)
        #expect(try decrypt(auth) == 7)
        let add = try CLI.run(
            ["senders", "add", "--keyring", "file", "--public-key", setup.sender.publicKey.base64URL], environment: environment)
        #expect(add.status == 0)
        #expect(try decrypt(base) == 7)
        #expect(try decrypt(auth) == 0)
        let route = try CLI.run(
            ["route", "--keyring", "file", "--app-state", "background", "--extension"], stdin: auth, environment: environment)
        #expect(route.status == 0)
        #expect(try JSONValue(parsing: route.stdout)["body"] == "Hi!")
    }

    @Test("seal --wire 3 with --recipients-inline --jsonl and with --fit")
    func streamsAndFit() throws {
        let setup = try Setup()
        let devices = (0..<3).map { _ in DeviceKey.generate() }
        let input = devices.enumerated().map { index, key in
            #"{"public_key":"\#(key.publicKey.base64URL)","plaintext":{"chat_id":"c-\#(index)","title":"t","body":"b"}}"#
        }
        for sender in [nil, setup.senderFile] {
            let extra = sender.map { ["--sender-key-file", $0] } ?? []
            let output = try CLI.run(
                ["seal", "--wire", "3", "--jsonl", "--recipients-inline"] + extra, stdin: (input + [input[0]]).joined(separator: "\n"))
            #expect(output.status == 0, "\(output.stderr)")
            let lines = output.stdout.split(separator: "\n").map(String.init)
            try #require(lines.count == 4)
            for (line, (key, chat)) in zip(lines, [(devices[0], "c-0"), (devices[1], "c-1"), (devices[2], "c-2"), (devices[0], "c-0")]) {
                let push = try JSONValue(parsing: line)
                #expect(push["kindly"]?["v"] == 3)
                #expect((push["kindly"]?["sid"] != nil) == (sender != nil))
                let reader = KindlyPushDecryption(
                    keyring: InMemoryKeyring(keys: [key]), pinnedSenderKeys: sender == nil ? [] : [setup.sender.publicKey])
                #expect(try reader.decryptResult(userInfo: push).get().chatId == chat)
            }
            let body = String(repeating: "é👍🏽 ", count: 2_000)
            let long = JSONValue.object(["chat_id": "c", "title": "t", "body": .string(body)]).compactText
            let fitted = try CLI.run(["seal", "--wire", "3", "--fit", "--key-file", setup.folder.keyFile] + extra, stdin: long)
            #expect(fitted.status == 0, "\(fitted.stderr)")
            #expect(fitted.stdoutBytes.count - 1 <= 4096)
            let push = try JSONValue(parsing: fitted.stdout)
            #expect(push["kindly"]?["v"] == 3)
            let reader = KindlyPushDecryption(
                keyring: InMemoryKeyring(keys: [setup.folder.key]), pinnedSenderKeys: sender == nil ? [] : [setup.sender.publicKey])
            #expect(try reader.decryptResult(userInfo: push).get().object["truncated"] == true)
            let refused = try CLI.run(["seal", "--wire", "3", "--key-file", setup.folder.keyFile] + extra, stdin: long)
            #expect(refused.status == 65)
        }
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Version 2 through the real binary: sender-keygen, seal --sender-key-file, decrypt and route
/// with --sender-key, senders add|list|delete, exit 7 untrusted_sender.
@Suite("kindly-push with sender keys (version 2)", .offThePool)
struct SenderKeyCLITests {
    static let plaintext = #"{"chat_id":"c-7","title":"Bank","body":"Code 1234"}"#

    /// A device key file and a sender key file made by the binary, in one folder.
    final class Keys {
        let folder: KeyFolder
        let senderFile: String
        let sid: String
        let senderPublicKey: String

        init() throws {
            folder = try KeyFolder()
            senderFile = folder.url.appendingPathComponent("sender.json").path
            let keygen = try CLI.run(["sender-keygen", "--key-file", senderFile])
            try #require(keygen.status == 0, "\(keygen.stderr)")
            let printed = try JSONValue(parsing: keygen.stdout)
            sid = try #require(printed["sid"]?.stringValue)
            senderPublicKey = try #require(printed["public_key"]?.stringValue)
        }

        var keyFile: String { folder.keyFile }

        func seal(_ extra: [String] = [], stdin: String = SenderKeyCLITests.plaintext) throws -> CLI.Output {
            try CLI.run(["seal", "--key-file", keyFile, "--sender-key-file", senderFile] + extra, stdin: stdin)
        }
    }

    @Test("sender-keygen writes a 0600 sender key file and prints exactly its sid and public key")
    func senderKeygen() throws {
        let folder = try KeyFolder()
        let path = folder.url.appendingPathComponent("sender.json").path
        let output = try CLI.run(["sender-keygen", "--key-file", path])
        #expect(output.status == 0)
        #expect(output.stderr == "")
        let key = try SenderKeyFile.read(path)
        #expect(output.stdout == #"{"sid":"\#(key.sid)","public_key":"\#(key.publicKey)"}"# + "\n")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try CLI.run(["sender-keygen", "--key-file", path])
        #expect(again.status == 74)
        #expect(again.stdout == "")
        #expect(again.stderr == "kindly-push: io: \(path): already exists; refusing to overwrite a key\n")
        #expect(try SenderKeyFile.read(path).publicKey == key.publicKey)
        let missing = try CLI.run(["sender-keygen"])
        #expect(missing.status == 64)
        #expect(missing.stderr == "kindly-push: usage: missing '--key-file PATH' (see 'kindly-push sender-keygen --help')\n")
    }

    @Test("seal --sender-key-file writes version 2; decrypt reads it with --sender-key and refuses it without (exit 7)")
    func sealAndDecrypt() throws {
        let keys = try Keys()
        let sealed = try keys.seal()
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let envelope = try #require(try JSONValue(parsing: sealed.stdout)["kindly"]?.objectValue)
        #expect(envelope.keys == ["v", "kid", "sid", "epk", "n", "ct"])
        #expect(envelope["v"] == 2)
        #expect(envelope["sid"] == .string(keys.sid))

        let decrypted = try CLI.run(["decrypt", "--key-file", keys.keyFile, "--sender-key", keys.senderPublicKey], stdin: sealed.stdout)
        #expect(decrypted.status == 0)
        #expect(decrypted.stdout == Self.plaintext + "\n")
        let refused = try CLI.run(["decrypt", "--key-file", keys.keyFile], stdin: sealed.stdout)
        #expect(refused.status == 7)
        #expect(refused.stdout == "")
        #expect(refused.stderr == "kindly-push: untrusted_sender: no pinned sender key has sid \(keys.sid)\n")
        let stranger = SenderKey.generate().publicKey.base64URL
        let wrong = try CLI.run(["decrypt", "--key-file", keys.keyFile, "--sender-key=" + stranger], stdin: sealed.stdout)
        #expect(wrong.status == 7)
        // Repeatable: the pinned key may be any of several.
        let several = try CLI.run(
            ["decrypt", "--key-file", keys.keyFile, "--sender-key=" + stranger, "--sender-key=" + keys.senderPublicKey],
            stdin: sealed.stdout)
        #expect(several.status == 0)

        // Version 1 in pinned mode is refused; without pins it reads as before.
        let v1 = try CLI.run(["seal", "--key-file", keys.keyFile], stdin: Self.plaintext)
        let downgraded = try CLI.run(["decrypt", "--key-file", keys.keyFile, "--sender-key", keys.senderPublicKey], stdin: v1.stdout)
        #expect(downgraded.status == 7)
        #expect(
            downgraded.stderr == "kindly-push: untrusted_sender: a version 1 push cannot prove its sender, and sender keys are pinned\n")
        #expect(try CLI.run(["decrypt", "--key-file", keys.keyFile], stdin: v1.stdout).status == 0)
    }

    @Test("a device key file is refused where a sender key file is expected, and the reverse (exit 74)")
    func kindsApart() throws {
        let keys = try Keys()
        let asSender = try CLI.run(["seal", "--key-file", keys.keyFile, "--sender-key-file", keys.keyFile], stdin: Self.plaintext)
        #expect(asSender.status == 74)
        #expect(asSender.stderr == #"kindly-push: io: \#(keys.keyFile): a device key file (it has "kid"), not a sender key file"# + "\n")
        let asDevice = try CLI.run(["decrypt", "--key-file", keys.senderFile], stdin: "{}")
        #expect(asDevice.status == 74)
        #expect(asDevice.stderr == #"kindly-push: io: \#(keys.senderFile): a sender key file (it has "sid"), not a device key file"# + "\n")
        #expect(try CLI.run(["seal", "--key-file", keys.senderFile], stdin: Self.plaintext).status == 74)
        chmod(keys.senderFile, 0o644)
        let loose = try CLI.run(["seal", "--key-file", keys.keyFile, "--sender-key-file", keys.senderFile], stdin: Self.plaintext)
        #expect(loose.status == 74)
        #expect(loose.stderr.contains("permissions 644 are too open"))
    }

    @Test("--sender-key that is not a 32-byte base64 key is a usage error")
    func badSenderKey() throws {
        let folder = try KeyFolder()
        for value in ["abc", "not base64!", Base64.urlEncoded([UInt8](repeating: 1, count: 31))] {
            let output = try CLI.run(["decrypt", "--key-file", folder.keyFile, "--sender-key=" + value], stdin: "{}")
            #expect(output.status == 64, "\(value)")
            #expect(output.stderr.hasPrefix("kindly-push: usage: --sender-key: "))
        }
    }

    @Test("senders add, list and delete in the file keyring: version 1 refused while a sender is pinned, read again after")
    func sendersInFileKeyring() throws {
        let keys = try Keys()
        let keyring = keys.folder.url.appendingPathComponent("ring").path
        let environment = ["KINDLY_PUSH_KEYRING_DIR": keyring]
        let keygen = try CLI.run(["keygen", "--keyring", "file"], environment: environment)
        let publicKey = try #require(try JSONValue(parsing: keygen.stdout)["public_key"]?.stringValue)
        let v1 = try CLI.run(["seal", "--public-key", publicKey], stdin: Self.plaintext).stdout
        let v2 = try CLI.run(["seal", "--public-key", publicKey, "--sender-key-file", keys.senderFile], stdin: Self.plaintext).stdout
        func decrypt(_ push: String) throws -> CLI.Output {
            try CLI.run(["decrypt", "--keyring", "file"], stdin: push, environment: environment)
        }

        #expect(try decrypt(v1).status == 0)
        #expect(try decrypt(v2).status == 7)
        #expect(try CLI.run(["senders", "list", "--keyring", "file"], environment: environment).stdout == "")

        let add = try CLI.run(
            ["senders", "add", "--keyring", "file", "--public-key", keys.senderPublicKey, "--label", "backend"], environment: environment)
        #expect(add.status == 0)
        #expect(add.stdout == "")
        #expect(add.stderr == "")
        let list = try CLI.run(["senders", "list", "--keyring", "file"], environment: environment)
        #expect(list.status == 0)
        let entry = try JSONValue(parsing: list.stdout)
        #expect(entry.objectValue?.keys == ["sid", "public_key", "label", "created"])
        #expect(entry["sid"] == .string(keys.sid))
        #expect(entry["public_key"] == .string(keys.senderPublicKey))
        #expect(entry["label"] == "backend")
        #expect(list.stdout.filter { $0 == "\n" }.count == 1)
        let files = try FileManager.default.contentsOfDirectory(atPath: keyring + "/senders")
        #expect(files == ["\(keys.sid).json"])

        let refused = try decrypt(v1)
        #expect(refused.status == 7)
        #expect(refused.stderr.hasPrefix("kindly-push: untrusted_sender: "))
        let read = try decrypt(v2)
        #expect(read.status == 0)
        #expect(read.stdout == Self.plaintext + "\n")

        let again = try CLI.run(["senders", "add", "--keyring", "file", "--public-key", keys.senderPublicKey], environment: environment)
        #expect(again.status == 74)
        #expect(
            again.stderr
                == "kindly-push: io: cannot pin the sender key in the file keyring: a sender key with sid \(keys.sid) is pinned already\n")

        let delete = try CLI.run(["senders", "delete", "--keyring", "file", "--", keys.sid], environment: environment)
        #expect(delete.status == 0)
        #expect(delete.stdout == "")
        #expect(try decrypt(v1).status == 0)
        #expect(try decrypt(v2).status == 7)
        let gone = try CLI.run(["senders", "delete", "--keyring", "file", "--", keys.sid], environment: environment)
        #expect(gone.status == 7)
        #expect(gone.stderr == "kindly-push: untrusted_sender: no sender key with sid \(keys.sid) is pinned\n")
        #expect(try CLI.run(["senders", "list", "--keyring", "file"], environment: environment).stdout == "")
    }

    @Test(
        "senders usage errors",
        arguments: [
            (["senders"], "missing action: add, list or delete (see 'kindly-push senders --help')"),
            (["senders", "remove"], "unknown senders action 'remove'; expected add, list or delete (see 'kindly-push senders --help')"),
            (["senders", "add"], "missing '--public-key B64' (see 'kindly-push senders --help')"),
            (["senders", "add", "--public-key", "abc"], "--public-key: the sender public key has the wrong length"),
            (["senders", "delete"], "senders delete takes exactly one sid"),
            (["senders", "delete", "abc"], "'abc' is not a sid (8 bytes of base64url)"),
            (["senders", "list", "--public-key", "abc"], "senders list takes no --public-key (see 'kindly-push senders --help')"),
        ])
    func sendersUsage(_ arguments: [String], _ message: String) throws {
        let output = try CLI.run(arguments + ["--keyring", "file"])
        #expect(output.status == 64)
        #expect(output.stdout == "")
        #expect(output.stderr == "kindly-push: usage: \(message)\n")
    }

    @Test(
        "--jsonl: version 2 pushes through the fast path, a version 1 line in pinned mode is an untrusted_sender object", arguments: [1, 2])
    func jsonLines(_ jobs: Int) throws {
        let keys = try Keys()
        var input = ""
        var expected: [String] = []
        for index in 0..<200 {
            let plaintext = #"{"chat_id":"c\#(index)","title":"t","body":"\#(String(repeating: "é", count: index))"}"#
            if index % 10 == 3 {
                input += try CLI.run(["seal", "--key-file", keys.keyFile], stdin: plaintext).stdout
                expected.append(
                    #"{"error":{"code":"untrusted_sender","message":"a version 1 push cannot prove its sender, and sender keys are pinned"}}"#
                )
            } else {
                expected.append(plaintext)
            }
        }
        // The version 2 lines come from one seal --jsonl run (its own fast path).
        let plaintexts = (0..<200).filter { $0 % 10 != 3 }.map {
            #"{"chat_id":"c\#($0)","title":"t","body":"\#(String(repeating: "é", count: $0))"}"#
        }
        let sealed = try keys.seal(["--jsonl", "--jobs", "\(jobs)"], stdin: plaintexts.joined(separator: "\n") + "\n")
        #expect(sealed.status == 0)
        var v2Lines = sealed.stdout.split(separator: "\n").map(String.init).makeIterator()
        var v1Lines = input.split(separator: "\n").map(String.init).makeIterator()
        var stream = ""
        for index in 0..<200 {
            stream += (index % 10 == 3 ? v1Lines.next()! : v2Lines.next()!) + "\n"
        }
        let output = try CLI.run(
            ["decrypt", "--jsonl", "--jobs", "\(jobs)", "--key-file", keys.keyFile, "--sender-key", keys.senderPublicKey], stdin: stream)
        #expect(output.status == 0)
        #expect(output.stderr == "kindly-push: 20 of 200 lines failed (20 untrusted_sender); each has its error line in the output\n")
        #expect(output.stdout == expected.joined(separator: "\n") + "\n")
    }

    @Test("seal --sender-key-file to a low-order device key is bad_input, per document and per line")
    func lowOrderRecipient() throws {
        let keys = try Keys()
        let zero = Base64.urlEncoded([UInt8](repeating: 0, count: 32))
        let single = try CLI.run(["seal", "--public-key", zero, "--sender-key-file", keys.senderFile], stdin: Self.plaintext)
        #expect(single.status == 65)
        #expect(single.stderr == "kindly-push: bad_input: the device public key gives an all-zero shared secret\n")
        let lines = try CLI.run(
            ["seal", "--jsonl", "--public-key", zero, "--sender-key-file", keys.senderFile],
            stdin: Self.plaintext + "\n" + Self.plaintext + "\n")
        #expect(lines.status == 0)
        let object = #"{"error":{"code":"bad_input","message":"the device public key gives an all-zero shared secret"}}"#
        #expect(lines.stdout == object + "\n" + object + "\n")
    }

    @Test("route in pinned mode refuses a push that only carries the decrypted mark, and shows a version 2 push that decrypts now")
    func routeInPinnedMode() throws {
        let keys = try Keys()
        let v1 = try CLI.run(["seal", "--key-file", keys.keyFile], stdin: Self.plaintext).stdout
        var forged = try #require(try JSONValue(parsing: v1).objectValue)
        var envelope = try #require(forged["kindly"]?.objectValue)
        envelope["decrypted"] = true
        envelope["chat_id"] = "attacker"
        forged["kindly"] = .object(envelope)
        forged["aps"] = ["alert": ["title": "Your bank", "body": "Log in at evil.example"], "mutable-content": 1]
        let forgedText = JSONValue.object(forged).compactText
        let arguments = ["route", "--app-state", "foreground", "--extension", "--key-file", keys.keyFile]

        let unpinned = try CLI.run(arguments, stdin: forgedText)
        #expect(
            unpinned.stdout
                == #"{"kindly":true,"kind":"visible","presentation":"banner","presenter":"sdk","delegate_consulted":true,"chat_id":"attacker","title":"Your bank","body":"Log in at evil.example"}"#
                + "\n")
        let pinned = try CLI.run(arguments + ["--sender-key", keys.senderPublicKey], stdin: forgedText)
        #expect(pinned.status == 0)
        #expect(
            pinned.stdout
                == #"{"kindly":true,"kind":"visible","presentation":"placeholder","presenter":"system","delegate_consulted":false,"reason":"untrusted_sender"}"#
                + "\n")

        let v2 = try keys.seal().stdout
        let applied = try CLI.run(["decrypt", "--apply", "--key-file", keys.keyFile, "--sender-key", keys.senderPublicKey], stdin: v2)
        #expect(applied.status == 0)
        let shown = try CLI.run(arguments + ["--sender-key", keys.senderPublicKey], stdin: applied.stdout)
        #expect(
            shown.stdout
                == #"{"kindly":true,"kind":"visible","presentation":"banner","presenter":"sdk","delegate_consulted":true,"chat_id":"c-7","title":"Bank","body":"Code 1234"}"#
                + "\n")
    }

    @Test("help names the new commands and options")
    func help() throws {
        let seal = try CLI.run(["seal", "--help"]).stdout
        #expect(seal.contains("--sender-key-file <path>"))
        for command in ["decrypt", "route"] {
            let text = try CLI.run([command, "--help"]).stdout
            #expect(text.contains("--sender-key <b64>"), "\(command)")
        }
        // Help is wrapped to the width: compare words, not line breaks.
        let decryptHelp = try CLI.run(["decrypt", "--help"]).stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(decryptHelp.contains("7 untrusted_sender"))
        let senders = try CLI.run(["senders", "--help"])
        #expect(senders.status == 0)
        #expect(senders.stdout.hasPrefix("OVERVIEW: Pin a sender key in the keyring, list the pinned keys, or remove one.\n"))
        let sendersHelp = senders.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(sendersHelp.contains("USAGE: kindly-push senders add --public-key <b64> [--label <text>]"))
        #expect(sendersHelp.contains("kindly-push senders delete <sid>"))
        let keygen = try CLI.run(["help", "sender-keygen"])
        #expect(keygen.stdout.contains("USAGE: kindly-push sender-keygen --key-file <path>"))
    }

    @Test("senders add, list and delete in the Secret Service", .enabled(if: SecretServiceSession.isRunning, "no Secret Service"))
    func sendersInSecretService() throws {
        let keys = try Keys()
        var environment = SecretServiceSession.environment
        environment["KINDLY_PUSH_SECRET_SERVICE_COLLECTION"] = try SecretServiceSession.createCollection()
        let keygen = try CLI.run(["keygen", "--keyring", "secret-service"], environment: environment)
        try #require(keygen.status == 0, "\(keygen.stderr)")
        let publicKey = try #require(try JSONValue(parsing: keygen.stdout)["public_key"]?.stringValue)
        let v1 = try CLI.run(["seal", "--public-key", publicKey], stdin: Self.plaintext).stdout
        let v2 = try CLI.run(["seal", "--public-key", publicKey, "--sender-key-file", keys.senderFile], stdin: Self.plaintext).stdout
        let add = try CLI.run(
            ["senders", "add", "--keyring", "secret-service", "--public-key", keys.senderPublicKey], environment: environment)
        #expect(add.status == 0, "\(add.stderr)")
        let list = try CLI.run(["senders", "list", "--keyring", "secret-service"], environment: environment)
        #expect(try JSONValue(parsing: list.stdout)["sid"] == .string(keys.sid))
        #expect(try CLI.run(["decrypt", "--keyring", "secret-service"], stdin: v2, environment: environment).status == 0)
        #expect(try CLI.run(["decrypt", "--keyring", "secret-service"], stdin: v1, environment: environment).status == 7)
        #expect(try CLI.run(["senders", "delete", "--keyring", "secret-service", "--", keys.sid], environment: environment).status == 0)
        #expect(try CLI.run(["decrypt", "--keyring", "secret-service"], stdin: v1, environment: environment).status == 0)
    }
}

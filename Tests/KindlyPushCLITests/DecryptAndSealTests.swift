import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushVectors
import Testing

@Suite("kindly-push seal, check, decrypt and keygen", .offThePool)
struct DecryptAndSealTests {
    static let exitStatus: [String: Int32] = [
        "not_kindly": 1, "unsupported_version": 2, "malformed": 3, "key_unavailable": 4, "authentication_failed": 5, "bad_plaintext": 6,
        "untrusted_sender": 7,
    ]

    struct VectorCase: CustomTestStringConvertible, Sendable {
        let name: String
        let vector: TestVector
        var testDescription: String { name }
    }

    static let vectors: [VectorCase] = {
        let folder = CLI.packageRoot.appendingPathComponent("TestVectors")
        let files = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []
        return files.filter { $0.pathExtension == "json" }.sorted { $0.path < $1.path }.flatMap { url -> [VectorCase] in
            guard let data = try? Data(contentsOf: url), let vectors = try? TestVector.vectors(inFile: [UInt8](data)) else { return [] }
            return vectors.enumerated().map {
                VectorCase(name: "\(url.lastPathComponent) #\($0.offset + 1): \($0.element.description)", vector: $0.element)
            }
        }
    }()

    @Test("decrypt prints each vector's payload, or exits with its reason's code and one stderr line", arguments: vectors)
    func vectorThroughCLI(_ item: VectorCase) throws {
        let folder = try KeyFolder(key: item.vector.deviceKey)
        let pins = item.vector.pinnedSenderKeys.map { "--sender-key=" + $0.base64URL }
        let output = try CLI.run(["decrypt", "--key-file", folder.keyFile] + pins, stdin: JSONWriter.compactBytes(item.vector.apns))
        // The command pins no degenerate key (the library's reader, which the
        // vector describes, still counts it as a pin: `verify` checks that).
        if item.vector.pinnedSenderKeys.contains(where: { $0.unusableReason != nil }) {
            #expect(output.status == 64, "\(output.stderr)")
            #expect(output.stderr.hasPrefix("kindly-push: usage: --sender-key: the sender public key "), "\(output.stderr)")
            return
        }
        switch item.vector.expected {
        case .payload(let expected):
            #expect(output.status == 0)
            #expect(output.stderr == "")
            #expect(output.stdoutBytes.last == 0x0A)
            let printed = try JSONReader.parse(Array(output.stdoutBytes.dropLast()))
            #expect(printed.objectValue?.hasSameMembers(as: expected) == true)
        case .failure(let reason):
            #expect(output.status == Self.exitStatus[reason.code])
            #expect(output.stdout == "")
            #expect(output.stderr.hasPrefix("kindly-push: \(reason.code): "))
            #expect(output.stderr.filter { $0 == "\n" }.count == 1)
        }
    }

    @Test("verify runs the committed vectors and ends with N passed, 0 failed")
    func verifyCommittedVectors() throws {
        let output = try CLI.run(["verify", CLI.packageRoot.appendingPathComponent("TestVectors").path])
        #expect(output.status == 0)
        let last = output.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last == "\(Self.vectors.count) passed, 0 failed")
        #expect(Self.vectors.count >= 60)
    }

    @Test("verify reports a failing vector and exits non-zero")
    func verifyCatchesAFailure() throws {
        let folder = try KeyFolder()
        let item = try #require(
            Self.vectors.first { if case .payload = $0.vector.expected { return $0.vector.sealing != nil } else { return false } })
        let url = CLI.packageRoot.appendingPathComponent("TestVectors").appendingPathComponent(item.name.components(separatedBy: " #")[0])
        var text = try String(contentsOf: url, encoding: .utf8)
        // Claim a different outcome for every vector of the file: each must now fail.
        text = text.replacingOccurrences(of: "\"result\": \"ok\"", with: "\"result\": \"error\", \"reason\": \"malformed\"")
        let broken = folder.url.appendingPathComponent("broken.json")
        try text.write(to: broken, atomically: true, encoding: .utf8)
        let output = try CLI.run(["verify", broken.path])
        #expect(output.status == 1)
        #expect(output.stdout.contains("FAIL "))
        #expect(output.stdout.hasSuffix(" failed\n") && !output.stdout.hasSuffix(" 0 failed\n"))
    }

    @Test("keygen writes a 0600 key file and prints the registration; seal and decrypt round-trip with it")
    func keygenSealDecrypt() throws {
        let folder = try KeyFolder()
        let path = folder.url.appendingPathComponent("new.json").path
        let keygen = try CLI.run(["keygen", "--key-file", path, "--token", "0A0B", "--push-mode", "silent", "--sdk-version", "3.1.0"])
        #expect(keygen.status == 0)
        let registration = try JSONValue(parsing: keygen.stdout)
        let key = try KeyFile.read(path)
        #expect(
            registration == [
                "token": "0a0b", "platform": "apns", "push_mode": "silent", "public_key": .string(key.publicKey.base64URL),
                "kid": .string(key.kid.base64URL), "sdk_version": "3.1.0",
            ])
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        #expect(!keygen.stdout.contains(key.secretKey.withUnsafeBytes { Base64.urlEncoded($0) }))

        let again = try CLI.run(["keygen", "--key-file", path])
        #expect(again.status == 74)
        #expect(again.stderr == "kindly-push: io: \(path): already exists; refusing to overwrite a key\n")

        let plaintext = #"{"chat_id":"c-1","title":"Anna","body":"Hi! 👋","x":[1,{"y":null}]}"#
        let sealed = try CLI.run(["seal", "--public-key", key.publicKey.base64URL, "--mode", "silent"], stdin: plaintext)
        #expect(sealed.status == 0)
        #expect(sealed.stdout.hasPrefix(#"{"aps":{"content-available":1},"kindly":{"v":1,"kid":""#))
        let decrypted = try CLI.run(["decrypt", "--key-file", path], stdin: sealed.stdout)
        #expect(decrypted.status == 0)
        #expect(decrypted.stdout == plaintext + "\n")

        let applied = try CLI.run(["decrypt", "--key-file", path, "--apply"], stdin: sealed.stdout)
        let document = try JSONValue(parsing: applied.stdout)
        #expect(document["aps"] == ["content-available": 1, "alert": ["title": "Anna", "body": "Hi! 👋"]])
        #expect(document["kindly"]?["decrypted"] == true)
        #expect(document["kindly"]?["chat_id"] == "c-1")
        let check = try CLI.run(["check"], stdin: applied.stdout)
        #expect(check.stdout == #"{"kindly":true,"decrypted":true}"# + "\n")
        #expect(check.status == 0)
    }

    @Test("keygen, keys list, decrypt and keys delete work on the file keyring")
    func fileKeyring() throws {
        let folder = try KeyFolder()
        let environment = ["KINDLY_PUSH_KEYRING_DIR": folder.url.appendingPathComponent("ring").path]
        let first = try JSONValue(
            parsing: try CLI.run(["keygen", "--keyring", "file", "--label", "phone"], environment: environment).stdout)
        let second = try JSONValue(
            parsing: try CLI.run(["keygen", "--keyring", "file", "--label", "tablet"], environment: environment).stdout)
        let list = try CLI.run(["keys", "list", "--keyring", "file"], environment: environment)
        #expect(list.status == 0)
        let entries = try list.stdout.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        let listed: Set<String> = Set(entries.compactMap { $0["kid"]?.stringValue })
        let created: Set<String> = Set([first, second].compactMap { $0["kid"]?.stringValue })
        #expect(listed == created && listed.count == 2)
        #expect(entries.allSatisfy { $0.objectValue?.keys.sorted() == ["created", "kid", "label", "public_key"] })

        let sealed = try CLI.run(
            ["seal", "--public-key", first["public_key"]!.stringValue!], stdin: #"{"chat_id":"c","title":"t","body":"b"}"#)
        #expect(try CLI.run(["decrypt", "--keyring", "file"], stdin: sealed.stdout, environment: environment).status == 0)
        let verbose = try CLI.run(
            ["decrypt", "--verbose"], stdin: sealed.stdout, environment: environment.merging(["DBUS_SESSION_BUS_ADDRESS": ""]) { $1 })
        #expect(verbose.status == 0)
        #expect(verbose.stderr.hasPrefix("kindly-push: using the file keyring"))

        let delete = try CLI.run(["keys", "delete", "--keyring", "file", "--", first["kid"]!.stringValue!], environment: environment)
        #expect(delete.status == 0)
        let after = try CLI.run(["decrypt", "--keyring", "file"], stdin: sealed.stdout, environment: environment)
        #expect(after.status == 4)
        #expect(after.stderr.hasPrefix("kindly-push: key_unavailable: "))
        #expect(
            try CLI.run(["keys", "delete", "--keyring", "file", "--", first["kid"]!.stringValue!], environment: environment).status == 4)
    }

    @Test(
        "a standard output that cannot be written is io (74), in single-document and --jsonl mode",
        arguments: [["check"], ["check", "--jsonl"], ["decrypt", "--keyring", "file"], ["--help"]])
    func standardOutputFails(_ arguments: [String]) throws {
        let output = try CLI.run(arguments, stdin: Array(#"{"kindly":{}}"#.utf8 + [0x0A]), standardOutputPath: "/dev/full")
        let expected: Int32 = arguments == ["decrypt", "--keyring", "file"] ? 2 : 74  // decrypt fails first: version
        #expect(output.status == expected)
        if expected == 74 { #expect(output.stderr.hasPrefix("kindly-push: io: cannot write standard output: ")) }
    }

    @Test("decrypt --apply --jsonl rewrites each push in order and reports bad lines in place")
    func applyLines() throws {
        let folder = try KeyFolder()
        let pushes = try (0..<3).map { index in
            try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c\(index)", title: "T\(index)", body: "B"), for: folder.key.publicKey)
        }
        let input = pushes[0] + [0x0A] + Array("[]\n".utf8) + pushes[2]
        let output = try CLI.run(["decrypt", "--apply", "--jsonl", "--jobs", "2", "--key-file", folder.keyFile], stdin: input)
        #expect(output.status == 0)
        let lines = try output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map {
            try JSONValue(parsing: String($0))
        }
        #expect(lines.count == 3)
        for (line, index) in [(lines[0], 0), (lines[2], 2)] {
            #expect(line["aps"]?["alert"] == ["title": .string("T\(index)"), "body": "B"])
            #expect(line["kindly"]?["decrypted"] == true)
            #expect(line["kindly"]?["chat_id"] == .string("c\(index)"))
        }
        #expect(lines[1] == ["error": ["code": "bad_input", "message": "the input is an array, not a JSON object"]])
    }

    @Test("seal writes the given placeholder, and refuses one for a silent push")
    func placeholders() throws {
        let key = DeviceKey.generate().publicKey.base64URL
        let plaintext = #"{"chat_id":"c","title":"t","body":"b"}"#
        // "--help" as a value is a title, not a request for help.
        let sealed = try CLI.run(
            ["seal", "--public-key", key, "--placeholder-title", "--help", "--placeholder-body", "Neu"], stdin: plaintext)
        #expect(sealed.status == 0)
        #expect(try JSONValue(parsing: sealed.stdout)["aps"]?["alert"] == ["title": "--help", "body": "Neu"])
        let silent = try CLI.run(["seal", "--public-key", key, "--mode", "silent", "--placeholder-title", "x"], stdin: plaintext)
        #expect(silent.status == 64)
        #expect(
            silent.stderr
                == "kindly-push: usage: a silent push has no alert: --placeholder-title and --placeholder-body need --mode visible\n")
    }

    @Test("--help is help only where an option can stand")
    func helpPosition() throws {
        #expect(try CLI.run(["decrypt", "--frob", "--help"]).status == 64)
        #expect(try CLI.run(["decrypt", "--keyring", "file", "-h"]).stdout.hasPrefix("OVERVIEW: Decrypt"))
        #expect(try CLI.run(["keys", "delete", "--", "--help"]).status == 64)  // a kid, and not a valid one
    }

    @Test("keys delete takes a kid that begins with a dash, and one after --")
    func kidWithLeadingDash() throws {
        let folder = try KeyFolder()
        let ring = folder.url.appendingPathComponent("ring").path
        // About one kid in 64 begins with "-": make keys until one does. One in 4,096 begins with
        // "--", which is an option's spelling and goes after `--` (as `other` does below).
        var key = DeviceKey.generate()
        while !key.kid.base64URL.hasPrefix("-") || key.kid.base64URL.hasPrefix("--") { key = DeviceKey.generate() }
        try FileKeyring(folder: ring).store(key, label: "dash")
        let other = DeviceKey.generate()
        try FileKeyring(folder: ring).store(other, label: "other")
        let environment = ["KINDLY_PUSH_KEYRING_DIR": ring]
        let deleted = try CLI.run(["keys", "delete", key.kid.base64URL, "--keyring", "file"], environment: environment)
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(try CLI.run(["keys", "delete", "--keyring", "file", "--", other.kid.base64URL], environment: environment).status == 0)
        #expect(try FileKeyring(folder: ring).list().isEmpty)
    }

    @Test(
        "input that is not one JSON object of at most 64 KiB is bad_input (65)",
        arguments: [
            ([], "the input is empty"), (Array(" \n".utf8), "the input is empty"),
            (Array("[1]".utf8), "the input is an array, not a JSON object"),
            (Array("null".utf8), "the input is null, not a JSON object"),
            (Array("{\"a\":".utf8), "the input is not JSON: the document ends too early"),
            ([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], "the input is not UTF-8 (invalid UTF-8 at offset 2)"),
            (Array("{} {}".utf8), "the input is not JSON: content after the document at offset 3"),
            (Array(("{\"a\":\"" + String(repeating: "x", count: 65_536) + "\"}").utf8), "the input is over 64 KiB"),
        ] as [([UInt8], String)])
    func badInput(_ input: [UInt8], _ message: String) throws {
        for command in [["check"], ["decrypt", "--keyring", "file"], ["seal", "--public-key", DeviceKey.generate().publicKey.base64URL]] {
            let output = try CLI.run(command, stdin: input)
            #expect(output.status == 65)
            #expect(output.stdout == "")
            #expect(output.stderr == "kindly-push: bad_input: \(message)\n")
        }
    }

    @Test("a document of exactly 64 KiB is read")
    func exactLimit() throws {
        let prefix = #"{"kindly":{"v":4},"pad":""#
        let text = prefix + String(repeating: "x", count: 65_536 - prefix.utf8.count - 2) + "\"}"
        #expect(text.utf8.count == 65_536)
        let output = try CLI.run(["decrypt", "--keyring", "file"], stdin: text)
        #expect(output.status == 2)
    }

    @Test("seal refuses a plaintext that breaks section 4, and one that would exceed 4096 bytes")
    func sealRefusals() throws {
        let key = DeviceKey.generate().publicKey.base64URL
        let missing = try CLI.run(["seal", "--public-key", key], stdin: #"{"chat_id":"c","title":"t"}"#)
        #expect(missing.status == 65)
        #expect(missing.stderr == "kindly-push: bad_input: the plaintext is not a Kindly message: \"body\" is missing\n")
        let large = try CLI.run(
            ["seal", "--public-key", key], stdin: #"{"chat_id":"c","title":"t","body":"\#(String(repeating: "x", count: 3000))"}"#)
        #expect(large.status == 65)
        #expect(large.stderr.hasPrefix("kindly-push: bad_input: the sealed payload would be "))
        #expect(large.stderr.hasSuffix(" bytes, over APNs' limit of 4096\n"))
    }

    @Test("a key file that is missing, loose or malformed is an io error (74)")
    func keyFileErrors() throws {
        let folder = try KeyFolder()
        let push = #"{"kindly":{"v":1}}"#
        let missing = folder.url.appendingPathComponent("none.json").path
        #expect(try CLI.run(["decrypt", "--key-file", missing], stdin: push).stderr == "kindly-push: io: \(missing): no such file\n")
        chmod(folder.keyFile, 0o644)
        let loose = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: push)
        #expect(loose.status == 74)
        #expect(
            loose.stderr
                == "kindly-push: io: \(folder.keyFile): permissions 644 are too open; a key file must be 0600 (chmod 600 \(folder.keyFile))\n"
        )
        let sealLoose = try CLI.run(["seal", "--key-file", folder.keyFile], stdin: #"{"chat_id":"c","title":"t","body":"b"}"#)
        #expect(sealLoose.status == 74)
    }

    @Test("check says whether a push is Kindly's and decrypted, exiting 1 when it is not Kindly's")
    func check() throws {
        let cases: [(String, String, Int32)] = [
            (#"{"aps":{"alert":"hi"}}"#, #"{"kindly":false,"decrypted":false}"#, 1),
            (#"{"kindly":{}}"#, #"{"kindly":true,"decrypted":false}"#, 0),
            (#"{"kindly":{"decrypted":1}}"#, #"{"kindly":true,"decrypted":true}"#, 0),
            (#"{"kindly":[]}"#, #"{"kindly":false,"decrypted":false}"#, 1),
        ]
        for (input, expected, status) in cases {
            let output = try CLI.run(["check"], stdin: input)
            #expect(output.stdout == expected + "\n")
            #expect(output.status == status)
            #expect(output.stderr == "")
        }
    }
}

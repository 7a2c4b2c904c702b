import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// No command prints key material: every output and error of every command is searched for
/// the secret key in base64url, standard base64 and hex.
@Suite("Secret hygiene", .offThePool)
struct SecretHygieneTests {
    /// Every spelling of a secret that could leak.
    static func spellings(of key: DeviceKey) -> [String] {
        let bytes = key.secretKey.withUnsafeBytes { Array($0) }
        let url = Base64.urlEncoded(bytes)
        let standard = url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let hex = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        // A prefix is enough to count as a leak: 16 characters of a secret are already too many.
        return [url, standard, hex, hex.uppercased()].flatMap { [$0, String($0.prefix(16))] }
    }

    static func expectNoLeak(_ output: CLI.Output, of key: DeviceKey, _ what: String) {
        for secret in spellings(of: key) {
            #expect(!output.stdout.contains(secret), "stdout of \(what)")
            #expect(!output.stderr.contains(secret), "stderr of \(what)")
        }
    }

    @Test("no command, output or error contains the secret key")
    func noCommandLeaks() throws {
        let folder = try KeyFolder()
        let key = folder.key
        let ring = ["KINDLY_PUSH_KEYRING_DIR": folder.url.appendingPathComponent("ring").path]
        let sealedForKey = try CLI.run(["seal", "--key-file", folder.keyFile], stdin: #"{"chat_id":"c","title":"t","body":"b"}"#).stdout
        let payload = try DecryptedPayload(chatId: "c", title: "t", body: "b")
        let forStranger = JSONWriter.compactBytes(try JSONReader.parse(KindlyPushSealer.seal(payload, for: DeviceKey.generate().publicKey)))
        var tampered = try JSONValue(parsing: sealedForKey).objectValue!
        var envelope = tampered["kindly"]!.objectValue!
        envelope["n"] = .string(Base64.urlEncoded([UInt8](repeating: 7, count: 24)))
        tampered["kindly"] = .object(envelope)

        let runs: [(String, [String], [UInt8], [String: String])] = [
            ("decrypt", ["decrypt", "--key-file", folder.keyFile], Array(sealedForKey.utf8), [:]),
            ("decrypt --apply", ["decrypt", "--apply", "--key-file", folder.keyFile], Array(sealedForKey.utf8), [:]),
            ("decrypt --jsonl", ["decrypt", "--jsonl", "--key-file", folder.keyFile], Array((sealedForKey + "x\n{}\n").utf8), [:]),
            ("decrypt, another key", ["decrypt", "--key-file", folder.keyFile], forStranger, [:]),
            ("decrypt, tampered", ["decrypt", "--key-file", folder.keyFile], JSONWriter.compactBytes(.object(tampered)), [:]),
            ("decrypt, not kindly", ["decrypt", "--key-file", folder.keyFile], Array("{}".utf8), [:]),
            ("decrypt, bad input", ["decrypt", "--key-file", folder.keyFile], Array("[".utf8), [:]),
            ("route", ["route", "--app-state", "foreground", "--key-file", folder.keyFile], Array(sealedForKey.utf8), [:]),
            (
                "route, tampered", ["route", "--app-state", "background", "--key-file", folder.keyFile],
                JSONWriter.compactBytes(.object(tampered)), [:]
            ),
            ("check", ["check"], Array(sealedForKey.utf8), [:]),
            ("seal", ["seal", "--key-file", folder.keyFile], Array(#"{"chat_id":"c","title":"t","body":"b"}"#.utf8), [:]),
            ("seal, bad plaintext", ["seal", "--key-file", folder.keyFile], Array(#"{"chat_id":1}"#.utf8), [:]),
            ("keys list", ["keys", "list", "--keyring", "file"], [], ring),
            ("help", ["decrypt", "--help"], [], [:]),
            ("usage error", ["decrypt", "--key-file", folder.keyFile, "--nope"], [], [:]),
        ]
        for (what, arguments, input, environment) in runs {
            let output = try CLI.run(arguments, stdin: input, environment: environment)
            Self.expectNoLeak(output, of: key, what)
        }

        // The key that keygen makes is never printed either: not by keygen itself, nor later.
        let keygen = try CLI.run(["keygen", "--keyring", "file", "--verbose"], environment: ring)
        #expect(keygen.status == 0)
        let listed = try CLI.run(["keys", "list", "--keyring", "file"], environment: ring)
        let kid = try #require(try JSONValue(parsing: String(listed.stdout.split(separator: "\n")[0]))["kid"]?.stringValue)
        let stored = try FileKeyring(folder: ring["KINDLY_PUSH_KEYRING_DIR"]!).key(for: try #require(KeyID(base64: kid)))
        Self.expectNoLeak(keygen, of: stored, "keygen --keyring file --verbose")
        Self.expectNoLeak(listed, of: stored, "keys list (stored key)")
        let sealedForStored = try CLI.run(
            ["seal", "--public-key", stored.publicKey.base64URL], stdin: #"{"chat_id":"c","title":"t","body":"b"}"#)
        Self.expectNoLeak(
            try CLI.run(["decrypt", "--keyring", "file", "--verbose"], stdin: sealedForStored.stdout, environment: ring), of: stored,
            "decrypt (keyring)")
    }

    @Test("key-file errors never quote the file, even when it holds the secret")
    func keyFileErrors() throws {
        let folder = try KeyFolder()
        let secret = folder.key.secretKey.withUnsafeBytes { Base64.urlEncoded($0) }
        let cases: [(String, String)] = [
            ("kid of another key", #"{"kid":"AAAAAAAAAAA","public_key":"\#(folder.key.publicKey.base64URL)","secret_key":"\#(secret)"}"#),
            (
                "public key of another key",
                #"{"kid":"\#(folder.key.kid.base64URL)","public_key":"\#(DeviceKey.generate().publicKey.base64URL)","secret_key":"\#(secret)"}"#
            ),
            ("truncated", #"{"kid":"\#(folder.key.kid.base64URL)","secret_key":"\#(secret)"#),
            ("secret with a bad character", #"{"secret_key":"\#(secret.dropLast())*"}"#),
            ("secret as a number", #"{"secret_key":12345678901234567890,"note":"\#(secret)"}"#),
        ]
        for (what, text) in cases {
            let path = folder.url.appendingPathComponent("bad.json").path
            try? FileManager.default.removeItem(atPath: path)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
            let output = try CLI.run(["decrypt", "--key-file", path], stdin: "{}")
            #expect(output.status == 74, "\(what)")
            Self.expectNoLeak(output, of: folder.key, what)
        }
        chmod(folder.keyFile, 0o644)
        Self.expectNoLeak(try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: "{}"), of: folder.key, "loose key file")
    }

    @Test("key files and keyring entries are 0600 in a 0700 folder even under umask 000")
    func permissionsUnderPermissiveUmask() throws {
        let folder = try KeyFolder()
        let keyFile = folder.url.appendingPathComponent("k.json").path
        let ring = folder.url.appendingPathComponent("ring").path
        let script =
            "umask 000; \"$0\" keygen --key-file \"$1\" >/dev/null && KINDLY_PUSH_KEYRING_DIR=\"$2\" \"$0\" keygen --keyring file >/dev/null"
        let output = try CLI.run(["-c", script, CLI.binary.path, keyFile, ring], executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(output.status == 0, "\(output.stderr)")
        func mode(_ path: String) throws -> Int { try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int }
        #expect(try mode(keyFile) == 0o600)
        #expect(try mode(ring) == 0o700)
        let entries = try FileManager.default.contentsOfDirectory(atPath: ring)
        #expect(entries.count == 1)
        for entry in entries { #expect(try mode(ring + "/" + entry) == 0o600) }
    }
}

import Foundation
import KindlyPush
import Testing

/// Through the real binary: degenerate keys are refused, and the
/// senders.pinned marker keeps pinned mode.
@Suite("Degenerate sender and device keys, and a pinned mode without pins, are refused", .offThePool)
struct UntrustedKeyRefusalTests {
    /// base64url of the little-endian 32 bytes of `value` (given as its 32 bytes).
    static func key(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// 2^255 - 19 + `add`, little-endian.
    static func pPlus(_ add: UInt8) -> [UInt8] {
        var bytes = [UInt8](repeating: 0xFF, count: 32)
        bytes[31] = 0x7F
        bytes[0] = 0xED &+ add
        return bytes
    }

    /// Degenerate keys: all-zero, one, p - 1 (order 4), an order-8 point, p and
    /// p + 9 (the base point spelt non-canonically), the base point, and 2^255 + 9 (top bit set).
    static let degenerate: [(String, [UInt8])] = [
        ("all-zero", [UInt8](repeating: 0, count: 32)),
        ("one", [1] + [UInt8](repeating: 0, count: 31)),
        (
            "p - 1",
            {
                var b = pPlus(0)
                b[0] = 0xEC
                return b
            }()
        ),
        (
            "an order-8 point",
            [
                0xE0, 0xEB, 0x7A, 0x7C, 0x3B, 0x41, 0xB8, 0xAE, 0x16, 0x56, 0xE3, 0xFA, 0xF1, 0x9F, 0xC4, 0x6A, 0xDA, 0x09, 0x8D, 0xEB,
                0x9C,
                0x32, 0xB1, 0xFD, 0x86, 0x62, 0x05, 0x16, 0x5F, 0x49, 0xB8, 0x00,
            ]
        ),
        ("p", pPlus(0)),
        ("p + 9", pPlus(9)),
        ("the base point", [9] + [UInt8](repeating: 0, count: 31)),
        ("2^255 + 9", [9] + [UInt8](repeating: 0, count: 30) + [0x80]),
    ]

    @Test("senders add and --sender-key refuse degenerate sender keys with a reason, and pin nothing", arguments: degenerate)
    func degenerateSenderKeys(_ name: String, _ bytes: [UInt8]) throws {
        let folder = try KeyFolder()
        let environment = ["KINDLY_PUSH_KEYRING_DIR": folder.url.appendingPathComponent("keys").path]
        let add = try CLI.run(["senders", "add", "--keyring", "file", "--public-key", Self.key(bytes)], environment: environment)
        #expect(add.status == 64, "\(name): \(add.stderr)")
        #expect(add.stderr.hasPrefix("kindly-push: usage: --public-key: the sender public key "), "\(name): \(add.stderr)")
        #expect(add.stderr.hasSuffix(": it is not pinned\n"), "\(name): \(add.stderr)")
        let list = try CLI.run(["senders", "list", "--keyring", "file"], environment: environment)
        #expect(list.stdout == "", "\(name) was pinned")

        let push = String(
            decoding: try KindlyPushSealer.seal(DecryptedPayload(chatId: "c", title: "t", body: "b"), for: folder.key.publicKey),
            as: UTF8.self)
        let decrypt = try CLI.run(["decrypt", "--key-file", folder.keyFile, "--sender-key", Self.key(bytes)], stdin: push)
        #expect(decrypt.status == 64, "\(name): \(decrypt.stderr)")
        #expect(decrypt.stderr.hasPrefix("kindly-push: usage: --sender-key: the sender public key "), "\(name): \(decrypt.stderr)")
    }

    @Test("seal refuses the base point and non-canonical device keys; a small-order one is refused as before")
    func degenerateDeviceKeys() throws {
        for (name, bytes) in Self.degenerate {
            let seal = try CLI.run(["seal", "--public-key", Self.key(bytes)], stdin: #"{"chat_id":"c","title":"t","body":"b"}"#)
            #expect(seal.status != 0, "\(name) was sealed for")
            #expect(seal.stdout == "", "\(name)")
            #expect(seal.stderr.filter { $0 == "\n" }.count == 1, "\(name): \(seal.stderr)")
        }
        let recipient = #"{"public_key":"\#(Self.key(Self.pPlus(9)))","plaintext":{"chat_id":"c","title":"t","body":"b"}}"#
        let inline = try CLI.run(["seal", "--jsonl", "--recipients-inline"], stdin: recipient + "\n")
        #expect(inline.status == 0)
        #expect(inline.stdout.contains(#""code":"bad_input""#), "\(inline.stdout)")
        #expect(inline.stdout.contains("the device public key is not canonical"), "\(inline.stdout)")
        // A real key still works.
        let good = try CLI.run(
            ["senders", "add", "--keyring", "file", "--public-key", SenderKey.generate().publicKey.base64URL],
            environment: [
                "KINDLY_PUSH_KEYRING_DIR": try KeyFolder().url.appendingPathComponent("keys").path
            ])
        #expect(good.status == 0, "\(good.stderr)")
    }

    @Test(
        "with the senders.pinned marker and no correctly named pin (emptied, or an alias copy only), no push is trusted; doctor says so once and flags the alias",
        arguments: ["emptied", "alias"])
    func markerWithoutPins(_ how: String) throws {
        let keyring = try RevocationAndLeftoverFileTests.SharedKeyring("file")
        var sender = try keyring.senderKey()
        // A sid whose standard spelling can be a file name (no "/").
        while sender.sid.contains("_") { sender = try keyring.senderKey() }
        #expect(try keyring.run(["senders", "add", "--public-key", sender.publicKey]).status == 0)
        func seal(_ extra: [String]) throws -> String {
            let sealed = try CLI.run(
                ["seal", "--public-key", keyring.devicePublicKey] + extra, stdin: RevocationAndLeftoverFileTests.plaintext)
            try #require(sealed.status == 0, "\(sealed.stderr)")
            return sealed.stdout.trimmingCharacters(in: .newlines)
        }
        let pushes = [
            ("version 1", try seal([])), ("version 2", try seal(["--sender-key-file", sender.file])),
            ("version 3 mode_base", try seal(["--wire", "3"])),
            ("version 3 mode_auth", try seal(["--wire", "3", "--sender-key-file", sender.file])),
        ]
        func decrypt(_ push: String) throws -> CLI.Output {
            try CLI.run(["decrypt", "--keyring", "file"], stdin: push, environment: keyring.environment)
        }
        let senders = keyring.folder.appendingPathComponent("keys/senders")
        let pin = senders.appendingPathComponent(sender.sid + ".json")
        let alias = senders.appendingPathComponent(
            sender.sid.replacingOccurrences(of: "-", with: "+") + String(repeating: "=", count: (4 - sender.sid.count % 4) % 4) + ".json")
        if how == "alias" {
            try FileManager.default.moveItem(at: pin, to: alias)
        } else {
            try FileManager.default.removeItem(at: pin)
        }
        for (name, push) in pushes {
            let output = try decrypt(push)
            #expect(output.status == 7, "\(how), \(name) decrypted or failed otherwise: \(output.stderr)")
            #expect(output.stdout == "", "\(how), \(name)")
            #expect(output.stderr.contains("untrusted_sender") || output.stderr.contains("the pins cannot be read"), "\(output.stderr)")
        }
        let doctor = try CLI.run(["doctor", "--keyring", "file"], environment: keyring.environment)
        let lines = doctor.stdout.split(separator: "\n").map(String.init)
        let pinned = lines.filter { $0.contains("pinned-senders:") }
        #expect(pinned.count == 1 && pinned.allSatisfy { $0.hasPrefix("problem") }, "\(doctor.stdout)")
        let marker = lines.filter { $0.contains("senders.pinned:") }
        #expect(marker.count == 1 && marker.allSatisfy { $0.hasPrefix("problem") }, "\(doctor.stdout)")
        #expect(
            !lines.contains { $0.hasPrefix("ok") && ($0.contains("pins sender keys") || $0.contains("pinned-senders: none")) },
            "\(doctor.stdout)")
        let flagged = lines.filter { $0.contains(alias.path) && $0.contains("not the canonical name of sid \(sender.sid)") }
        #expect(flagged.count == (how == "alias" ? 1 : 0), "\(doctor.stdout)")
        #expect(flagged.allSatisfy { $0.hasPrefix("warning  pin-file: ") }, "\(doctor.stdout)")

        // The ways out: pin again (version 2 and version 3 mode_auth decrypt, the others stay
        // refused), then delete the last pin (its alias goes with it; version 1 reads again).
        #expect(try keyring.run(["senders", "add", "--public-key", sender.publicKey]).status == 0)
        for (name, push) in pushes {
            #expect(
                try decrypt(push).status == (name.hasSuffix("2") || name.hasSuffix("mode_auth") ? 0 : 7), "\(how), pinned again: \(name)")
        }
        #expect(try keyring.run(["senders", "delete", "--", sender.sid]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: senders.path) == [])
        #expect(try decrypt(pushes[0].1).status == 0)
    }
}

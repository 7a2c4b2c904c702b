import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `seal --recipients-inline` and `seal --fit` with `--sender-key-file`: version 2 for many
/// devices and for messages cut to fit.
@Suite("seal --recipients-inline and --fit with a sender key", .offThePool)
struct SealVersionTwoStreamsTests {
    @Test("each line is version 2 from the sender, decrypts only where the sender is pinned, and a low-order key fails alone")
    func recipientsInline() throws {
        let folder = try KeyFolder()
        let sender = SenderKey.generate()
        let senderFile = folder.url.appendingPathComponent("sender.json").path
        try SenderKeyFile.write(sender, to: senderFile)
        let devices = (0..<3).map { _ in DeviceKey.generate() }
        var input = devices.enumerated().map { index, key in
            #"{"public_key":"\#(key.publicKey.base64URL)","plaintext":{"chat_id":"c-\#(index)","title":"t","body":"b"}}"#
        }
        // The all-zero point: X25519 with it is all zeros, so no push can be sealed for it.
        input.insert(
            #"{"public_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","plaintext":{"chat_id":"x","title":"t","body":"b"}}"#, at: 1)
        input.append(input[0])  // the first device again: its cached sealer
        let output = try CLI.run(
            ["seal", "--jsonl", "--recipients-inline", "--sender-key-file", senderFile], stdin: input.joined(separator: "\n"))
        #expect(output.status == 0, "\(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 5)
        #expect(try JSONValue(parsing: lines[1])["error"]?["code"] == "bad_input")
        for (line, (key, chat)) in zip(
            [lines[0], lines[2], lines[3], lines[4]], [(devices[0], "c-0"), (devices[1], "c-1"), (devices[2], "c-2"), (devices[0], "c-0")])
        {
            let push = try JSONValue(parsing: line)
            #expect(push["kindly"]?["v"] == 2)
            #expect(push["kindly"]?["sid"] == .string(sender.publicKey.sid.base64URL))
            let pinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key], pinnedSenders: [sender.publicKey]))
            #expect(try pinned.decryptResult(userInfo: push).get().chatId == chat)
            let otherPin = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key], pinnedSenders: [SenderKey.generate().publicKey]))
            guard case .failure(let failure) = otherPin.decryptResult(userInfo: push) else {
                Issue.record("decrypted without its sender pinned")
                continue
            }
            #expect(failure.reason == .untrustedSender)
        }
    }

    @Test("--fit with a sender key: the cut push, sid included, is at most 4096 bytes and decrypts for the pinned sender")
    func fitVersionTwo() throws {
        let folder = try KeyFolder()
        let sender = SenderKey.generate()
        let senderFile = folder.url.appendingPathComponent("sender.json").path
        try SenderKeyFile.write(sender, to: senderFile)
        let body = String(repeating: "é👍🏽 ", count: 2_000)
        let plaintext = JSONValue.object(["chat_id": "c", "title": "t", "body": .string(body)]).compactText
        let output = try CLI.run(
            ["seal", "--fit", "--key-file", folder.keyFile, "--sender-key-file", senderFile], stdin: plaintext)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdoutBytes.count - 1 <= 4096)
        let push = try JSONValue(parsing: output.stdout)
        #expect(push["kindly"]?["v"] == 2)
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [folder.key], pinnedSenders: [sender.publicKey]))
        let payload = try decryption.decryptResult(userInfo: push).get()
        #expect(payload.truncated == true)
        #expect(payload.body.hasSuffix("…"))
        #expect(body.hasPrefix(String(payload.body.dropLast())))
        // The longest prefix: the same cut for version 1 has room for the 8 bytes of sid more.
        let versionOne = try JSONValue(parsing: try CLI.run(["seal", "--fit", "--key-file", folder.keyFile], stdin: plaintext).stdout)
        let v1Body = try KindlyPushDecryption(keyring: InMemoryKeyring(keys: [folder.key])).decryptResult(userInfo: versionOne).get().body
        #expect(v1Body.count >= payload.body.count)
    }
}

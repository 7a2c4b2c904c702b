import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Version 2 pushes cross between kindly-push and the independent Python implementation
/// (tools/reference/kindly_ref.py), both ways, and seal byte for byte alike.
@Suite("Version 2 interoperability with the independent implementation", .offThePool)
struct InteropVersionTwoTests {
    /// A device key file, and a sender key file written by `writer` ("swift" or "python").
    static func keys(senderFrom writer: String) throws -> (folder: KeyFolder, senderFile: String, sender: SenderKey) {
        let folder = try KeyFolder()
        let path = folder.url.appendingPathComponent("sender.json").path
        if writer == "swift" {
            try #require(try CLI.run(["sender-keygen", "--key-file", path]).status == 0)
        } else {
            let made = try InteropTests.runReference(["sender-keygen"], stdin: "")
            try #require(made.status == 0, "\(made.stderr)")
            #expect(FileManager.default.createFile(atPath: path, contents: Data(made.stdout.utf8), attributes: [.posixPermissions: 0o600]))
        }
        return (folder, path, try SenderKeyFile.read(path))
    }

    @Test(
        "a version 2 push sealed by the Python implementation decrypts with kindly-push, only with the sender pinned",
        arguments: InteropTests.plaintexts, ["swift", "python"])
    func pythonToSwift(_ plaintext: String, _ writer: String) throws {
        let (folder, senderFile, sender) = try Self.keys(senderFrom: writer)
        let sealed = try InteropTests.runReference(
            ["seal", "--key-file", folder.keyFile, "--sender-key-file", senderFile], stdin: plaintext)
        try #require(sealed.status == 0, "\(sealed.stderr)")
        #expect(try JSONValue(parsing: sealed.stdout)["kindly"]?["sid"] == .string(sender.sid.base64URL))
        let decrypted = try CLI.run(
            ["decrypt", "--key-file", folder.keyFile, "--sender-key=" + sender.publicKey.base64URL], stdin: sealed.stdout)
        #expect(decrypted.status == 0, "\(decrypted.stderr)")
        #expect(try JSONValue(parsing: decrypted.stdout) == JSONValue(parsing: plaintext))
        #expect(try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: sealed.stdout).status == 7)
    }

    @Test(
        "a version 2 push sealed by kindly-push decrypts with the Python implementation, only with the sender pinned",
        arguments: InteropTests.plaintexts, ["swift", "python"])
    func swiftToPython(_ plaintext: String, _ writer: String) throws {
        let (folder, senderFile, sender) = try Self.keys(senderFrom: writer)
        for jsonl in [false, true] {
            let sealed = try CLI.run(
                ["seal", "--key-file", folder.keyFile, "--sender-key-file", senderFile] + (jsonl ? ["--jsonl"] : []), stdin: plaintext)
            #expect(sealed.status == 0)
            let decrypted = try InteropTests.runReference(
                ["decrypt", "--key-file", folder.keyFile, "--sender-key=" + sender.publicKey.base64URL], stdin: sealed.stdout)
            try #require(decrypted.status == 0, "\(decrypted.stderr)")
            #expect(try JSONValue(parsing: decrypted.stdout) == JSONValue(parsing: plaintext))
            let unpinned = try InteropTests.runReference(["decrypt", "--key-file", folder.keyFile], stdin: sealed.stdout)
            #expect(unpinned.status == 7)
        }
    }

    @Test("both implementations seal byte-identical version 2 pushes from the same keys, ephemeral key and nonce")
    func byteIdenticalSealing() throws {
        let (folder, senderFile, sender) = try Self.keys(senderFrom: "swift")
        let ephemeral = SecureBytes.random(count: 32)
        let nonce = (0..<24).map { UInt8($0 * 11) }
        for plaintext in InteropTests.plaintexts.prefix(2) {
            let binding = try KindlyPushSealer.binding(of: sender, for: folder.key.publicKey)
            let envelope = try KindlyPushSealer.sealMessage(
                Array(plaintext.utf8), for: folder.key.publicKey, sender: binding, ephemeralSecretKey: ephemeral, nonce: nonce)
            let ours = KindlyPushSealer.apnsDocument(envelope, mode: .visible).compactText
            let theirs = try InteropTests.runReference(
                [
                    "seal", "--key-file", folder.keyFile, "--sender-key-file", senderFile, "--verbatim",
                    "--ephemeral-secret-key=" + ephemeral.withUnsafeBytes { Base64.urlEncoded($0) }, "--nonce=" + Base64.urlEncoded(nonce),
                ], stdin: plaintext)
            #expect(theirs.stdout == ours + "\n", "\(theirs.stderr)")
        }
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Pushes cross between kindly-push and the independent Python implementation
/// (tools/reference/kindly_ref.py: PyPI cryptography and pycryptodome, no libsodium).
@Suite("Interoperability with the independent implementation", .offThePool)
struct InteropTests {
    static let reference = CLI.packageRoot.appendingPathComponent("tools/reference/kindly_ref.py").path
    static let python = URL(fileURLWithPath: "/usr/bin/env")

    static func runReference(_ arguments: [String], stdin: String) throws -> CLI.Output {
        try CLI.run(["python3", reference] + arguments, stdin: Array(stdin.utf8), executable: python)
    }

    static let plaintexts = [
        #"{"chat_id":"c-1","title":"Anna","body":"Hi!"}"#,
        #"{"chat_id":"😀","title":"مرحبا","body":"שלום / \"x\" \\ 你好","message_id":"m","sent_at":9007199254740991,"extra":{"a":[true,null,1.5]}}"#,
        #"{"chat_id":"c","title":"","body":"\#(String(repeating: "ä", count: 1000))"}"#,
    ]

    @Test("a push sealed by the Python implementation decrypts with kindly-push", arguments: plaintexts, [false, true])
    func pythonToSwift(_ plaintext: String, _ silent: Bool) throws {
        let folder = try KeyFolder()
        let sealed = try Self.runReference(
            ["seal", "--key-file", folder.keyFile] + (silent ? ["--mode", "silent"] : []), stdin: plaintext)
        try #require(sealed.status == 0, "\(sealed.stderr)")
        let decrypted = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: sealed.stdout)
        #expect(decrypted.status == 0)
        #expect(try JSONValue(parsing: decrypted.stdout) == JSONValue(parsing: plaintext))
    }

    @Test("a push sealed by kindly-push decrypts with the Python implementation", arguments: plaintexts, [false, true])
    func swiftToPython(_ plaintext: String, _ silent: Bool) throws {
        let folder = try KeyFolder()
        let sealed = try CLI.run(["seal", "--key-file", folder.keyFile] + (silent ? ["--mode", "silent"] : []), stdin: plaintext)
        #expect(sealed.status == 0)
        let decrypted = try Self.runReference(["decrypt", "--key-file", folder.keyFile], stdin: sealed.stdout)
        try #require(decrypted.status == 0, "\(decrypted.stderr)")
        #expect(try JSONValue(parsing: decrypted.stdout) == JSONValue(parsing: plaintext))
    }

    @Test("both implementations seal byte-identical pushes from the same ephemeral key and nonce")
    func byteIdenticalSealing() throws {
        let folder = try KeyFolder()
        let ephemeral = SecureBytes.random(count: 32)
        let nonce = (0..<24).map { UInt8($0 * 7) }
        let plaintext = #"{"chat_id":"c","title":"T","body":"B"}"#
        let envelope = try KindlyPushSealer.sealMessage(
            Array(plaintext.utf8), for: folder.key.publicKey, ephemeralSecretKey: ephemeral, nonce: nonce)
        let ours = KindlyPushSealer.apnsDocument(envelope, mode: .visible).compactText
        // `=`: a base64url value may begin with "-", which argparse would take for an option.
        let theirs = try Self.runReference(
            [
                "seal", "--key-file", folder.keyFile,
                "--ephemeral-secret-key=" + ephemeral.withUnsafeBytes { Base64.urlEncoded($0) },
                "--nonce=" + Base64.urlEncoded(nonce),
            ], stdin: plaintext)
        #expect(theirs.stdout == ours + "\n", "\(theirs.stderr)")
    }
}

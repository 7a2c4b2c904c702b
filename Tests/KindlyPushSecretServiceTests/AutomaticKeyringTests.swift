import Foundation
import KindlyPush
import KindlyPushSecretService
import KindlyPushTesting
import Testing

/// One rule for where keys live: the command's `--keyring auto` and the library's
/// `SecretServiceKeyring.automatic()` find the same key (serialized: the tests set the process's
/// default keyring).
@Suite("Automatic keyring", .serialized, .offThePool)
struct AutomaticKeyringTests {
    static let payload = try! DecryptedPayload(chatId: "c-1", title: "Anna", body: "Hi!", messageId: "m-1")

    /// Runs the built `kindly-push` with `arguments` in `environment` (nothing else inherited).
    static func kindlyPush(_ arguments: [String], environment: [String: String]) throws -> ProcessOutput {
        let binary =
            ProcessInfo.processInfo.environment["KINDLY_PUSH_BINARY"].flatMap { $0.isEmpty ? nil : $0 }
            ?? packageRoot.appendingPathComponent(".build/debug/kindly-push").path
        return try run(binary, arguments, environment: environment)
    }

    @Test("without a session bus, a plain keygen and SecretServiceKeyring.automatic() agree: the file keyring")
    func automaticWithoutBus() throws {
        let folder = try TemporaryFolder()
        let environment = ["HOME": folder.path, "KINDLY_PUSH_KEYRING_DIR": folder.path + "/keys", "PATH": "/usr/bin:/bin"]
        let keygen = try Self.kindlyPush(["keygen"], environment: environment)
        try #require(keygen.status == 0, "\(keygen.errorText)")
        let kid = try #require(try JSONValue(parsing: keygen.standardOutput)["kid"]?.stringValue)
        let keyring = SecretServiceKeyring.automatic(environment: environment)
        #expect(keyring is FileKeyring)
        #expect(try keyring.list().map(\.kid.base64URL) == [kid])
    }

    @Test("on a desktop, SecretServiceKeyring.automatic() finds the key a plain keygen stored in the Secret Service", .needsSecretService)
    func automaticFindsTheCommandsKey() async throws {
        let folder = try TemporaryFolder()
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = folder.path
        environment["KINDLY_PUSH_KEYRING_DIR"] = folder.path + "/keys"
        // The store may take longer than a desktop's 1.5 s on a loaded machine.
        environment["KINDLY_PUSH_TEST_SECRET_SERVICE_BUDGET_MS"] = "30000"
        let keygen = try Self.kindlyPush(["keygen", "--label", "automatic default"], environment: environment)
        try #require(keygen.status == 0, "\(keygen.errorText)")
        #expect(keygen.errorText.contains("secret-service keyring"))
        let registration = try JSONValue(parsing: keygen.standardOutput)
        let publicKey = try DevicePublicKey(base64: try #require(registration["public_key"]?.stringValue))
        let kidText = try #require(registration["kid"]?.stringValue)
        let kid = try #require(KeyID(base64: kidText))
        defer { try? SecretServiceKeyring().delete(kid) }

        let sealed = try KindlyPushSealer.seal(Self.payload, for: publicKey)
        let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(sealed)) as? [AnyHashable: Any])
        // The default keyring is the process's: set only inside withDefaultKeyring, one test at a
        // time (the library's tests set it too, in the same process).
        // Its budget is the command's above: the desktop's 1.5 s can run out on a loaded machine.
        await withDefaultKeyring(SecretServiceKeyring.automatic(environment: environment, timeout: .seconds(30))) {
            #expect(KindlyPushDecryption.defaultKeyring is SecretServiceKeyring)
            #expect(KindlyPushDecryption.decrypt(userInfo: userInfo) == Self.payload)
            // The library's default alone (no host setting) is the file keyring: it cannot see the key.
            KindlyPushDecryption.defaultKeyring = nil
            #expect(KindlyPushDecryption.decrypt(userInfo: userInfo) == nil)
        }
    }
}

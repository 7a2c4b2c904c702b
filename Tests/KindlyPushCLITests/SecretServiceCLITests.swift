import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `kindly-push` against the real gnome-keyring that tools/with-secret-service starts. Skipped,
/// by name, where no Secret Service was started (the library's harness test fails in CI then).
@Suite(
    "kindly-push with the Secret Service",
    .enabled(if: SecretServiceSession.isRunning, "no Secret Service: run under tools/with-secret-service"), .offThePool)
struct SecretServiceCLITests {
    @Test("keygen --keyring secret-service stores a key that secret-tool lists, and a push for it decrypts")
    func keygenSecretToolDecrypt() throws {
        let environment = SecretServiceSession.environment
        let keygen = try CLI.run(["keygen", "--keyring", "secret-service", "--label", "cli test"], environment: environment)
        try #require(keygen.status == 0, "\(keygen.stderr)")
        let registration = try JSONValue(parsing: keygen.stdout)
        let kid = try #require(registration["kid"]?.stringValue)
        let search = try CLI.run(
            ["secret-tool", "search", "--all", "--", "kid", kid], environment: environment, executable: URL(fileURLWithPath: "/usr/bin/env")
        )
        #expect(search.status == 0)
        #expect((search.stdout + search.stderr).contains("attribute.kid = \(kid)"))
        #expect((search.stdout + search.stderr).contains("cli test"))

        let sealed = try CLI.run(
            ["seal", "--public-key", registration["public_key"]!.stringValue!], stdin: #"{"chat_id":"c","title":"T","body":"B"}"#)
        let decrypted = try CLI.run(["decrypt", "--keyring", "secret-service"], stdin: sealed.stdout, environment: environment)
        #expect(decrypted.status == 0, "\(decrypted.stderr)")
        #expect(decrypted.stdout == #"{"chat_id":"c","title":"T","body":"B"}"# + "\n")
        // auto picks the Secret Service when the session bus answers, and says so.
        let auto = try CLI.run(["decrypt", "--verbose"], stdin: sealed.stdout, environment: environment)
        #expect(auto.status == 0)
        #expect(auto.stderr == "kindly-push: using the secret-service keyring\n")
        let listed = try CLI.run(["keys", "list", "--keyring", "secret-service"], environment: environment)
        #expect(listed.stdout.contains(#""kid":"\#(kid)""#))
        #expect(try CLI.run(["keys", "delete", "--keyring", "secret-service", "--", kid], environment: environment).status == 0)
        #expect(try CLI.run(["decrypt", "--keyring", "secret-service"], stdin: sealed.stdout, environment: environment).status == 4)
    }

    @Test("a locked collection gives key_unavailable (exit 4) within 2 s, and the push decrypts after unlocking")
    func lockedCollection() throws {
        let collection = try SecretServiceSession.createCollection()
        var environment = SecretServiceSession.environment
        environment["KINDLY_PUSH_SECRET_SERVICE_COLLECTION"] = collection
        let keygen = try CLI.run(["keygen", "--keyring", "secret-service"], environment: environment)
        try #require(keygen.status == 0, "\(keygen.stderr)")
        let publicKey = try #require(try JSONValue(parsing: keygen.stdout)["public_key"]?.stringValue)
        let sealed = try CLI.run(["seal", "--public-key", publicKey], stdin: #"{"chat_id":"c","title":"T","body":"B"}"#).stdout

        try SecretServiceSession.control(["lock", collection])
        // A prompt would wait for ever: the cap (10 s) is reached only by one.
        let locked = try CLI.run(["decrypt", "--keyring", "secret-service"], stdin: sealed, environment: environment, timeLimit: 10)
        #expect(!locked.timedOut)
        #expect(locked.status == 4)
        #expect(locked.stderr.hasPrefix("kindly-push: key_unavailable: "), "\(locked.stderr)")

        try SecretServiceSession.control(["unlock", collection])
        let unlocked = try CLI.run(["decrypt", "--keyring", "secret-service"], stdin: sealed, environment: environment)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
    }

    @Test("with DBUS_SESSION_BUS_ADDRESS unset, --keyring auto falls back to the file keyring")
    func autoWithoutBus() throws {
        // CLI.run starts from a clean environment: no DBUS_SESSION_BUS_ADDRESS.
        let keygen = try CLI.run(["keygen", "--verbose"])
        #expect(keygen.status == 0)
        #expect(keygen.stderr.hasPrefix("kindly-push: using the file keyring ("))
        let withDeadBus = try CLI.run(
            ["keygen", "--verbose"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"], timeLimit: 10)
        #expect(withDeadBus.status == 0)
        #expect(withDeadBus.stderr.hasPrefix("kindly-push: using the file keyring ("))
    }
}

/// The harness's session, as the environment of the commands under test.
enum SecretServiceSession {
    static let variables = ProcessInfo.processInfo.environment
    static var isRunning: Bool { variables["KINDLY_PUSH_TEST_SECRET_SERVICE"] == "1" }

    static var environment: [String: String] {
        variables.filter {
            ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "KINDLY_PUSH_TEST_KEYRING_PASSWORD"].contains($0.key)
        }
    }

    static func control(_ arguments: [String]) throws {
        let output = try CLI.run(
            [CLI.packageRoot.appendingPathComponent("tools/secret-service-control").path] + arguments, environment: environment,
            executable: URL(fileURLWithPath: "/usr/bin/env"))
        guard output.status == 0 else { throw ControlFailure(description: output.stderr) }
    }

    static func createCollection() throws -> String {
        let output = try CLI.run(
            [
                CLI.packageRoot.appendingPathComponent("tools/secret-service-control").path, "create",
                "kindly cli \(UInt32.random(in: 0...UInt32.max))",
            ],
            environment: environment, executable: URL(fileURLWithPath: "/usr/bin/env"))
        guard output.status == 0 else { throw ControlFailure(description: output.stderr) }
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    struct ControlFailure: Error, CustomStringConvertible {
        let description: String
    }
}

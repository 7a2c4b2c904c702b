import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `keygen --reuse` and `--push-mode automatic` (issue 10): registering again does not rotate the
/// key, and automatic mode resolves from the declared presenter.
@Suite("kindly-push keygen: reuse and automatic mode")
struct RegistrationLifecycleTests {
    @Test("keygen --reuse creates a key only when none is stored, then prints the newest one's registration")
    func reuseInKeyring() throws {
        let folder = try KeyFolder()
        let environment = ["KINDLY_PUSH_KEYRING_DIR": folder.url.appendingPathComponent("ring").path]
        let first = try CLI.run(["keygen", "--keyring", "file", "--reuse", "--token", "AA"], environment: environment)
        #expect(first.status == 0)
        let second = try CLI.run(["keygen", "--keyring", "file", "--reuse", "--token", "BB"], environment: environment)
        #expect(second.status == 0)
        let a = try JSONValue(parsing: first.stdout)
        let b = try JSONValue(parsing: second.stdout)
        #expect(a["kid"] == b["kid"])
        #expect(b["token"] == "bb")
        let list = try CLI.run(["keys", "list", "--keyring", "file"], environment: environment)
        #expect(list.stdout.split(separator: "\n").count == 1)
        // Without --reuse a new key is made; --reuse then picks the newest (keys are dated in whole
        // seconds: wait for the next one, so that "newest" is not a tie).
        Thread.sleep(forTimeInterval: 1.1)
        let third = try JSONValue(parsing: try CLI.run(["keygen", "--keyring", "file"], environment: environment).stdout)
        #expect(third["kid"] != a["kid"])
        let fourth = try JSONValue(parsing: try CLI.run(["keygen", "--keyring", "file", "--reuse"], environment: environment).stdout)
        #expect(fourth["kid"] == third["kid"])
    }

    @Test("keygen --reuse --key-file registers the existing file's key and writes one when there is none")
    func reuseKeyFile() throws {
        let folder = try KeyFolder()
        let reused = try CLI.run(["keygen", "--key-file", folder.keyFile, "--reuse"])
        #expect(reused.status == 0)
        #expect(try JSONValue(parsing: reused.stdout)["kid"] == .string(folder.key.kid.base64URL))
        let fresh = folder.url.appendingPathComponent("new.json").path
        let created = try CLI.run(["keygen", "--key-file", fresh, "--reuse"])
        #expect(created.status == 0)
        #expect(FileManager.default.fileExists(atPath: fresh))
        #expect(try KeyFile.read(fresh).kid.base64URL == (try JSONValue(parsing: created.stdout))["kid"]?.stringValue)
    }

    @Test(
        "--push-mode automatic is alert with --presenter notify and silent otherwise",
        arguments: [
            (["--push-mode", "automatic", "--presenter", "notify"], "alert"),
            (["--push-mode", "automatic", "--presenter", "none"], "silent"),
            (["--push-mode", "automatic"], "silent"),
            (["--push-mode", "alert"], "alert"),
            (["--push-mode", "silent", "--presenter", "notify"], "silent"),
            ([], "alert"),
        ] as [([String], String)])
    func automaticMode(_ options: [String], _ expected: String) throws {
        let folder = try KeyFolder()
        let output = try CLI.run(["keygen", "--key-file", folder.keyFile, "--reuse"] + options)
        #expect(output.status == 0)
        #expect(try JSONValue(parsing: output.stdout)["push_mode"] == .string(expected))
    }
}

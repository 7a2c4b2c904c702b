import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `keygen --reuse` and `--push-mode automatic`: registering again does not rotate the
/// key, and automatic mode resolves from the declared presenter.
@Suite("kindly-push keygen: reuse and automatic mode", .offThePool)
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
            ([], "silent"),  // automatic, the SDK's default, and no presenter installed
        ] as [([String], String)])
    func automaticMode(_ options: [String], _ expected: String) throws {
        let folder = try KeyFolder()
        let output = try CLI.run(
            ["keygen", "--key-file", folder.keyFile, "--reuse"] + options, environment: ["XDG_DATA_DIRS": "/nonexistent"])
        #expect(output.status == 0)
        #expect(try JSONValue(parsing: output.stdout)["push_mode"] == .string(expected))
    }

    @Test(
        "keygen without --push-mode is automatic: alert exactly when the desktop agent's D-Bus service file is installed",
        arguments: ["home", "xdg-data-home", "xdg-data-dirs"])
    func automaticDetectsThePresenter(_ place: String) throws {
        let folder = try KeyFolder()
        let root = folder.url.path
        let services: String
        // Never the machine's own folders: an agent installed there would decide.
        var environment = ["XDG_DATA_DIRS": "/nonexistent"]
        switch place {
        case "home":
            services = root + "/home/.local/share/dbus-1/services"
            environment["HOME"] = root + "/home"
        case "xdg-data-home":
            services = root + "/data/dbus-1/services"
            environment["XDG_DATA_HOME"] = root + "/data"
        default:
            services = root + "/system/dbus-1/services"
            environment["XDG_DATA_DIRS"] = "/nonexistent:" + root + "/system"
        }
        func pushMode(_ options: [String] = []) throws -> JSONValue? {
            let output = try CLI.run(["keygen", "--key-file", folder.keyFile, "--reuse"] + options, environment: environment)
            #expect(output.status == 0, "\(output.stderr)")
            return try JSONValue(parsing: output.stdout)["push_mode"]
        }
        #expect(try pushMode() == "silent")
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        // A folder of that name is not a service file.
        try FileManager.default.createDirectory(atPath: services + "/ai.kindly.Push1.service", withIntermediateDirectories: true)
        #expect(try pushMode() == "silent")
        try FileManager.default.removeItem(atPath: services + "/ai.kindly.Push1.service")
        try Data("[D-BUS Service]\nName=ai.kindly.Push1\nExec=/usr/bin/kindly-push notify --follow\n".utf8)
            .write(to: URL(fileURLWithPath: services + "/ai.kindly.Push1.service"))
        #expect(try pushMode() == "alert")
        #expect(try pushMode(["--push-mode", "automatic"]) == "alert")
        #expect(try pushMode(["--presenter", "none"]) == "silent")
        #expect(try pushMode(["--push-mode", "silent"]) == "silent")
    }
}

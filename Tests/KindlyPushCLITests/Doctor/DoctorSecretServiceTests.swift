import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `kindly-push doctor` beside the real gnome-keyring that tools/with-secret-service starts.
@Suite(
    "kindly-push doctor with the Secret Service",
    .enabled(if: SecretServiceSession.isRunning, "no Secret Service: run under tools/with-secret-service"), .offThePool)
struct DoctorSecretServiceTests {
    @Test("a locked collection is a problem (exit 1) within 2 s, and all is ok once it is unlocked")
    func lockedCollection() throws {
        let collection = try SecretServiceSession.createCollection()
        var environment = SecretServiceSession.environment
        environment["KINDLY_PUSH_SECRET_SERVICE_COLLECTION"] = collection
        let keyring = try DoctorTests.Keyring(keys: 0)
        let keygen = try CLI.run(["keygen", "--keyring", "secret-service"], environment: environment)
        try #require(keygen.status == 0, "\(keygen.stderr)")
        let kid = try #require(try JSONValue(parsing: keygen.stdout)["kid"]?.stringValue)
        try SecretServiceSession.control(["lock", collection])

        let locked = try DoctorTests.doctor(keyring: keyring, environment: environment)
        #expect(locked.status == 1)
        let lines = DoctorTests.lines(locked)
        // The notification server depends on the harness (dunst joins the bus under tools/with-desktop).
        try #require(lines.count == 11, "\(locked.stdout)")
        let name = "the Secret Service collection \(collection)"
        #expect(
            lines[0]
                == "ok       keyring: auto uses the secret-service keyring (\(name)): the session bus answers and offers the Secret Service"
        )
        #expect(lines[1] == "ok       session-bus: answers")
        #expect(lines[2].hasPrefix("ok       secret-service: answers (in ") && lines[2].hasSuffix(" ms)"))
        #expect(
            lines[3]
                == "problem  secret-service-collection: \(name) is locked: no push decrypts until it is unlocked; to fix: unlock it (log in to the desktop session, or unlock it in Seahorse); KindlyPush never prompts"
        )
        #expect(lines[4] == "ok       file-keyring: \(keyring.folder) does not exist (not used)")
        #expect(lines[5] == "warning  device-keys: not listed: the Secret Service collection cannot be read (see above)")
        #expect(
            lines[6]
                == "ok       pinned-senders: in the Secret Service: kindly-push senders list --keyring secret-service lists them"
        )
        #expect(lines[7].contains(" notification-server: "))
        #expect(lines[10] == (lines[7].hasPrefix("warning") ? "1 problem, 2 warnings" : "1 problem, 1 warning"))

        try SecretServiceSession.control(["unlock", collection])
        let unlocked = try DoctorTests.doctor(keyring: keyring, environment: environment)
        #expect(unlocked.status == 0)
        let after = DoctorTests.lines(unlocked)
        #expect(after[3] == "ok       secret-service-collection: \(name) is unlocked (1 device key)")
        #expect(after[5] == "ok       device-keys: 1 in the secret-service keyring: \(kid) (0 days old)")
        #expect(after.last?.hasPrefix("0 problems, ") == true)
        #expect(after.filter { $0.hasPrefix("warning") }.allSatisfy { $0.hasPrefix("warning  notification-server: ") })
        // Asked about the file keyring, the locked collection is a warning only.
        try SecretServiceSession.control(["lock", collection])
        let files = try DoctorTests.doctor(["--keyring", "file"], keyring: keyring, environment: environment)
        #expect(files.status == 0)
        #expect(DoctorTests.lines(files)[3].hasPrefix("warning  secret-service-collection: \(name) is locked"))
        try SecretServiceSession.control(["unlock", collection])
    }

    @Test(
        "a collection that does not exist is a problem for doctor (it once said unlocked), and keygen's refusal gives the same way out"
    )
    func missingCollection() throws {
        var environment = SecretServiceSession.environment
        let alias = "kindly-missing-\(UInt32.random(in: 0...UInt32.max))"
        environment["KINDLY_PUSH_SECRET_SERVICE_COLLECTION"] = alias
        let keyring = try DoctorTests.Keyring(keys: 0)
        let doctor = try DoctorTests.doctor(keyring: keyring, environment: environment)
        #expect(doctor.status == 1)
        let lines = DoctorTests.lines(doctor)
        try #require(lines.count == 11, "\(doctor.stdout)")
        let name = "the Secret Service collection '\(alias)'"
        let action =
            "create it where your keyring prompts for its password (Seahorse: File, New, Password Keyring, then Set as Default; "
            + "gnome-keyring-daemon --unlock at login makes the 'login' one), or use --keyring file"
        #expect(
            lines[3] == "problem  secret-service-collection: \(name) does not exist: keygen cannot store a key in it; to fix: \(action)")
        #expect(lines[5] == "warning  device-keys: not listed: the Secret Service collection does not exist (see above)")
        let keygen = try CLI.run(["keygen", "--keyring", "secret-service"], environment: environment)
        #expect(keygen.status == 74)
        #expect(
            keygen.stderr
                == "kindly-push: io: cannot store the key in the secret-service keyring: \(name) does not exist: \(action) (KindlyPush never prompts)\n"
        )
    }

    @Test(
        "an activatable Secret Service that is not running: doctor says so and does not start it (gnome-keyring started so would be locked)"
    )
    func activatableService() throws {
        let bus = try TestBus(activates: [
            "org.freedesktop.secrets": "/usr/bin/gnome-keyring-daemon --start --foreground --components=secrets"
        ])
        let keyring = try DoctorTests.Keyring(keys: 0)
        let result = try DoctorTests.doctor(keyring: keyring, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let lines = DoctorTests.lines(result)
        #expect(
            lines.contains(
                "ok       keyring: auto uses the secret-service keyring (the Secret Service collection 'default'): the session bus answers "
                    + "and starts the Secret Service at the first call to it"), "\(result.stdout)")
        #expect(
            lines.contains(
                "warning  secret-service: not running: the session bus starts it (org.freedesktop.secrets) at the first command that "
                    + "needs a key, and doctor does not; to fix: log in to the desktop session, or start it unlocked before that command: "
                    + "gnome-keyring-daemon --unlock (the password on standard input)"), "\(result.stdout)")
        #expect(
            lines.contains("warning  device-keys: not listed: the Secret Service is not running (doctor does not start it) (see above)"))
        #expect(try !bus.hasOwner("org.freedesktop.secrets"), "doctor started the Secret Service")
        // The bus does start it for a command that needs it: the name was activatable.
        _ = try CLI.run(
            ["keys", "list", "--keyring", "secret-service"],
            environment: keyring.environment.merging(["DBUS_SESSION_BUS_ADDRESS": bus.address]) { $1 })
        #expect(try bus.hasOwner("org.freedesktop.secrets"))
    }

    @Test("a Secret Service that never answers is a problem within the 1.5 s budget")
    func hungService() throws {
        let bus = try TestBus()
        let hung = Process()
        hung.executableURL = URL(fileURLWithPath: CLI.packageRoot.appendingPathComponent("tools/secret-service-control").path)
        hung.arguments = ["hang"]
        hung.environment = ProcessInfo.processInfo.environment.merging(["DBUS_SESSION_BUS_ADDRESS": bus.address]) { $1 }
        let input = Pipe()
        let output = Pipe()
        hung.standardInput = input
        hung.standardOutput = output
        try hung.run()
        defer {
            try? input.fileHandleForWriting.close()
            hung.waitUntilExit()
        }
        #expect(String(decoding: output.fileHandleForReading.readData(ofLength: 6), as: UTF8.self) == "ready\n")

        let keyring = try DoctorTests.Keyring(keys: 0)
        let started = Date()
        let result = try DoctorTests.doctor(keyring: keyring, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        // It waited its probe's budget (1.5 s) and not D-Bus's 25 s (doctor's cap of 10 s).
        let seconds = Date().timeIntervalSince(started)
        #expect(seconds > 1.2, "took \(seconds) s")
        #expect(result.status == 1)
        let lines = DoctorTests.lines(result)
        // One figure, rounded, in one pair of parentheses: the budget doctor names, whatever a
        // loaded machine left of it after the probe (what was left read "1.4 seconds" once).
        #expect(
            lines[2]
                == "problem  secret-service: does not answer: the Secret Service did not answer within 1.5 seconds (while trying to open the Secret Service collection 'default'); to fix: restart the keyring daemon (gnome-keyring-daemon), or use --keyring file",
            "\(result.stdout)")
        #expect(lines[2].hasSuffix("; to fix: restart the keyring daemon (gnome-keyring-daemon), or use --keyring file"))
    }
}

/// `kindly-push doctor` beside the real notification server (dunst) of tools/with-desktop.
@Suite(
    "kindly-push doctor with a notification server",
    .enabled(if: DesktopSession.isRunning, "no notification server: run under tools/with-desktop"), .offThePool)
struct DoctorDesktopTests {
    /// What dunst says through gdbus: an implementation other than the one under test.
    static func gdbus(_ method: String) throws -> String {
        let output = try CLI.run(
            [
                "gdbus", "call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
                "--method", "org.freedesktop.Notifications.\(method)",
            ], environment: DesktopSession.environment, executable: URL(fileURLWithPath: "/usr/bin/env"))
        guard output.status == 0 else { throw DoctorTests.Failure(description: output.stderr) }
        return output.stdout
    }

    /// The quoted strings of a gdbus answer, in order: `('dunst', 'knopwob', '1.9.0', '1.2')`.
    static func strings(_ answer: String) -> [String] {
        answer.split(separator: "'", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    @Test("the notification server's name, vendor, version, specification and capabilities, as the server gives them")
    func notificationServer() throws {
        let information = Self.strings(try Self.gdbus("GetServerInformation"))
        try #require(information.count == 4)
        let capabilities = Self.strings(try Self.gdbus("GetCapabilities")).sorted()
        let keyring = try DoctorTests.Keyring(keys: 1)
        // Doctor gives the server 0.7 s a call; a machine busy with the rest of the suite can take
        // longer to schedule dunst. What the server answers is checked here, not how soon: the
        // test suite's hook gives it 8 s (the budget itself: NotifyTests.hungServer's kind).
        func doctor(_ arguments: [String]) throws -> [String] {
            var environment = DesktopSession.environment
            environment["KINDLY_PUSH_TEST_NOTIFICATION_BUDGET_MS"] = "8000"
            return DoctorTests.lines(try DoctorTests.doctor(arguments, keyring: keyring, environment: environment))
        }
        let line = try #require(try doctor([]).first { $0.contains(" notification-server: ") })
        #expect(
            line
                == "ok       notification-server: \(information[0]) \(information[2]) (\(information[1])), specification \(information[3]); capabilities: \(capabilities.joined(separator: ", "))"
        )
        let object = try #require(
            try doctor(["--json"]).map { try JSONValue(parsing: $0) }.first { $0["check"] == "notification-server" })
        #expect(object["capabilities"] == .array(capabilities.map { .string($0) }))
        #expect(object["name"]?.stringValue == information[0])
    }
}

import Foundation
import KindlyPush
import KindlyPushCore

/// The desktop of tools/with-desktop (dunst on Xvfb, on a private session bus), as the
/// environment of the commands under test, and what dunst received (tools/desktop-control).
enum DesktopSession {
    static let variables = ProcessInfo.processInfo.environment
    /// tools/with-desktop sets this when dunst owns org.freedesktop.Notifications on the bus.
    static var isRunning: Bool { variables["KINDLY_PUSH_TEST_DESKTOP"] == "1" }
    /// In CI the desktop tests must run, never be skipped.
    static var isRequired: Bool { variables["CI"] == "true" }

    /// The session's bus and display, and a budget of 30 s for each call to the notification
    /// server: dunst under a loaded suite can take longer than the 2 s of a desktop, and a call
    /// that runs out is retried (the server shows that push twice), so a test that counts what
    /// was shown must not depend on it.
    static var environment: [String: String] {
        var environment = variables.filter { ["DBUS_SESSION_BUS_ADDRESS", "DISPLAY"].contains($0.key) }
        environment["KINDLY_PUSH_TEST_NOTIFICATION_BUDGET_MS"] = "30000"
        return environment
    }

    static let control = CLI.packageRoot.appendingPathComponent("tools/desktop-control").path

    /// A notification as dunst keeps it in its history.
    struct Shown: Equatable, CustomStringConvertible {
        let id: Int
        let app: String
        let summary: String
        let body: String
        let category: String
        /// The markup dunst drew (its format: app name, summary, body).
        let message: String

        var description: String { "#\(id) [\(app)] \(summary) / \(body) (\(category))" }
    }

    /// Closes what is on screen (dunst keeps it in its history) and returns every notification
    /// in the history whose app name, summary or body contains `marker`, oldest first.
    static func shown(_ marker: String) throws -> [Shown] {
        let output = try run(["shown", marker])
        return try output.split(separator: "\n").map { line in
            let entry = try JSONValue(parsing: String(line))
            func text(_ key: String) -> String { entry[key]?.stringValue ?? "" }
            let id = entry["id"]?.numberValue.flatMap { $0.integerValue(in: 0...Int64(Int32.max)) }.map { Int($0) } ?? -1
            return Shown(
                id: id, app: text("app"), summary: text("summary"), body: text("body"), category: text("category"),
                message: text("message"))
        }
    }

    /// The unique names of the connections on the bus.
    static func connections() throws -> [String] {
        let output = try CLI.run(
            [
                "gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus", "--method",
                "org.freedesktop.DBus.ListNames",
            ], environment: environment, executable: URL(fileURLWithPath: "/usr/bin/env"))
        guard output.status == 0 else { throw ControlFailure(description: "ListNames: \(output.stderr)") }
        return output.stdout.split(separator: "'").map(String.init).filter { $0.hasPrefix(":") }
    }

    /// Clicks the oldest notification on screen: dunst sends ActionInvoked to its client.
    static func click() throws { _ = try run(["click"]) }

    /// How many notifications are on screen.
    static func displayed() throws -> Int { Int(try run(["count"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }

    /// Waits until `count` notifications are on screen; false after `seconds`.
    static func waitUntilDisplayed(_ count: Int, seconds: Double = 15) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try displayed() == count { return true }
            usleep(50_000)
        }
        return false
    }

    private static func run(_ arguments: [String]) throws -> String {
        let output = try CLI.run([control] + arguments, environment: environment, executable: URL(fileURLWithPath: "/usr/bin/env"))
        guard output.status == 0 else { throw ControlFailure(description: "desktop-control \(arguments): \(output.stderr)") }
        return output.stdout
    }

    struct ControlFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `body` while no other test uses the notification server: every test that looks at
    /// what dunst shows clicks or closes notifications, so they take turns (a lock file shared by
    /// every test target), starting from an empty screen.
    static func exclusive<Result>(_ body: () async throws -> Result) async throws -> Result {
        let lockPath = (variables["KINDLY_PUSH_TEST_DESKTOP_DIR"] ?? NSTemporaryDirectory()) + "/tests.lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ControlFailure(description: "cannot open \(lockPath)") }
        defer { close(descriptor) }
        // While it waits for the lock, the test gives its slot (TestSlots) to one that can run.
        var gaveSlot = false
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if !gaveSlot {
                TestSlots.shared.give()
                gaveSlot = true
            }
            do {
                try await Task.sleep(for: .milliseconds(50))
            } catch {
                await TestSlots.shared.take()
                throw error
            }
        }
        if gaveSlot { await TestSlots.shared.take() }
        _ = try shown("\u{1}nothing")
        return try await body()
    }
}

/// A `kindly-push` process that runs while the test goes on: standard input is a pipe the test
/// writes to; standard output and error go to files the test can read at any time.
final class RunningCLI {
    let process = Process()
    private let input = Pipe()
    private let folder: URL
    private let outURL: URL
    private let errURL: URL

    init(_ arguments: [String], environment: [String: String]) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-running-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        outURL = folder.appendingPathComponent("out")
        errURL = folder.appendingPathComponent("err")
        guard FileManager.default.createFile(atPath: outURL.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        guard FileManager.default.createFile(atPath: errURL.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        process.executableURL = CLI.binary
        process.arguments = arguments
        var base = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": folder.path]
        for name in ["ASAN_OPTIONS", "TSAN_OPTIONS", "SWIFT_BACKTRACE"] { base[name] = ProcessInfo.processInfo.environment[name] }
        base.merge(CLI.budgets) { $1 }
        process.environment = base.merging(environment) { $1 }
        process.standardInput = input
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: folder)
    }

    func write(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    var stdout: String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }

    /// Waits until `condition` holds; false after `seconds`.
    func waitUntil(seconds: Double = 15, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return false
    }

    /// Waits for the process to end; its status, or nil when it was still running after `seconds`
    /// (it is killed then).
    func finish(seconds: Double = 15) -> Int32? {
        let ended = waitUntil(seconds: seconds) { !process.isRunning }
        if !ended {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

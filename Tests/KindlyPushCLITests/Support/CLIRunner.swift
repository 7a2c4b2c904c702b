import Foundation
import KindlyPush
import KindlyPushCore

/// Runs the built `kindly-push` binary, as swift-argument-parser's example tests do: real
/// process, real standard streams, exact output and exit status.
enum CLI {
    /// The package's folder: this file is Tests/KindlyPushCLITests/Support/CLIRunner.swift.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `$KINDLY_PUSH_BINARY` (set by tools/test), else the debug build.
    static let binary: URL = {
        if let path = ProcessInfo.processInfo.environment["KINDLY_PUSH_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return packageRoot.appendingPathComponent(".build/debug/kindly-push")
    }()

    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
        let stdoutBytes: [UInt8]
        /// The process was still running after the time limit and was killed.
        let timedOut: Bool
    }

    /// The test hooks of the servers' budgets: a keyring operation may take longer than a
    /// desktop's 1.5 s on a loaded machine, so the tests of what the Secret Service stores give it
    /// 30 s (the budget's own tests, doctor's, have budgets of their own).
    static let budgets = ["KINDLY_PUSH_TEST_SECRET_SERVICE_BUDGET_MS": "30000"]

    /// Runs `executable` (the CLI by default) with `arguments`, `stdin` and `environment` added
    /// to a clean one. Streams go through files, so large inputs and outputs never deadlock.
    static func run(
        _ arguments: [String], stdin: [UInt8] = [], environment: [String: String] = [:], executable: URL? = nil,
        timeLimit: Double = 60, standardOutputPath: String? = nil
    ) throws -> Output {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let inURL = folder.appendingPathComponent("in")
        let outURL = folder.appendingPathComponent("out")
        let errURL = folder.appendingPathComponent("err")
        try Data(stdin).write(to: inURL)
        guard FileManager.default.createFile(atPath: outURL.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        guard FileManager.default.createFile(atPath: errURL.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        let process = Process()
        process.executableURL = executable ?? binary
        process.arguments = arguments
        var base = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": folder.path]
        // Without a session bus, `auto` picks the file keyring: tests say which keyring they mean.
        base["KINDLY_PUSH_KEYRING_DIR"] = folder.appendingPathComponent("keys").path
        base.merge(budgets) { $1 }
        // A sanitized binary (tools/test --sanitize) runs with the suite's sanitizer settings.
        for name in ["ASAN_OPTIONS", "TSAN_OPTIONS", "SWIFT_BACKTRACE"] {
            base[name] = ProcessInfo.processInfo.environment[name]
        }
        process.environment = base.merging(environment) { $1 }
        process.standardInput = try FileHandle(forReadingFrom: inURL)
        process.standardOutput = try FileHandle(forWritingTo: standardOutputPath.map(URL.init(fileURLWithPath:)) ?? outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        try process.run()
        // A hang is a failure, not a stuck suite: kill the process past the limit.
        let deadline = Date().addingTimeInterval(timeLimit)
        while process.isRunning, Date() < deadline { usleep(2_000) }
        let timedOut = process.isRunning
        if timedOut { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let out = try [UInt8](Data(contentsOf: outURL))
        let err = try Data(contentsOf: errURL)
        return Output(
            status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
            stdoutBytes: out, timedOut: timedOut)
    }

    static func run(_ arguments: [String], stdin: String, environment: [String: String] = [:], timeLimit: Double = 60) throws -> Output {
        try run(arguments, stdin: Array(stdin.utf8), environment: environment, timeLimit: timeLimit)
    }
}

/// A temporary folder with a key file in it, removed on deinit. Its mode is set (0700), not left to the
/// umask: tests of the library set the umask to 0 for the whole test process while others run,
/// and a folder others may write to is refused for keys (a route test once failed so).
final class KeyFolder: Sendable {
    let url: URL
    let key: DeviceKey
    var keyFile: String { url.appendingPathComponent("device.json").path }

    init(key: DeviceKey = .generate()) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        self.key = key
        try KeyFile.write(key, to: keyFile)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

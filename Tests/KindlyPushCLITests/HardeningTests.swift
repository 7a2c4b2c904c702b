import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Hostile input through the real binary: crashes, ownership, leftovers of
/// interrupted writes, bounded inputs, one-line errors, closed standard streams, a bus that never
/// answers, a missing HOME.
@Suite("Hostile input: no crash, no leftover, one-line errors, bounded waits", .offThePool)
struct HardeningTests {
    static let plaintext = #"{"chat_id":"c","title":"t","body":"b"}"#

    static func sealed(for key: DeviceKey) throws -> String {
        String(
            decoding: try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c", title: "t", body: "b"), for: key.publicKey), as: UTF8.self
        )
    }

    /// Runs `script` with /bin/sh; `$0`, `$1`... are the binary and `arguments`.
    static func shell(
        _ script: String, _ arguments: [String] = [], stdin: [UInt8] = [], environment: [String: String] = [:], timeLimit: Double = 60
    ) throws -> CLI.Output {
        try CLI.run(
            ["-c", script, CLI.binary.path] + arguments, stdin: stdin, environment: environment,
            executable: URL(fileURLWithPath: "/bin/sh"), timeLimit: timeLimit)
    }

    static var isRoot: Bool { geteuid() == 0 }

    /// Every 8-byte window of `secret`, as raw bytes and as hex in the spellings a crash report uses.
    static func expectNoRun(of secret: [UInt8], in output: [UInt8], _ what: String) {
        let text = String(decoding: output, as: UTF8.self).lowercased()
        for start in 0...(secret.count - 8) {
            let window = Array(secret[start..<(start + 8)])
            let hex = window.map { String(format: "%02x", $0) }
            #expect(!text.contains(hex.joined()), "\(what): hex run at \(start)")
            #expect(!text.contains(hex.joined(separator: " ")), "\(what): spaced hex run at \(start)")
            #expect(!text.contains(hex.reversed().joined()), "\(what): little-endian run at \(start)")
            #expect(!output.indices.dropLast(7).contains { Array(output[$0..<($0 + 8)]) == window }, "\(what): raw run at \(start)")
        }
    }

    // MARK: 2. Crashes

    /// Runs `decrypt --jsonl` under `ulimit -c unlimited` in a folder of its own, feeds it one push
    /// through a pipe that stays open (the key is loaded), then sends `signal`. Returns how it ended, its standard error, and the folder's files.
    static func signalled(_ signal: Int32) throws -> (process: Process, stderr: [UInt8], files: [String], key: DeviceKey) {
        let folder = try KeyFolder()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "ulimit -c unlimited && exec \"$0\" decrypt --jsonl --jobs 2 --key-file \"$1\"", CLI.binary.path, folder.keyFile,
        ]
        process.currentDirectoryURL = folder.url
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": folder.url.path]
        let input = Pipe()
        let output = Pipe()
        let errorURL = folder.url.appendingPathComponent("stderr")
        #expect(FileManager.default.createFile(atPath: errorURL.path, contents: nil))
        process.standardInput = input
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data((try Self.sealed(for: folder.key) + "\n").utf8))
        // The key file is read at start; the line waits in the reader for more input or its end.
        usleep(700_000)
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { usleep(2_000) }
        let hung = process.isRunning
        if hung { kill(process.processIdentifier, SIGKILL) }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(!hung, "the process went on after signal \(signal)")
        let stderr = try [UInt8](Data(contentsOf: errorURL))
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
        return (process, stderr, files, folder.key)
    }

    /// A sanitized binary (tools/test --sanitize) leaves crashes to the sanitizer's own report.
    static var sanitized: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["ASAN_OPTIONS"] != nil || environment["TSAN_OPTIONS"] != nil
    }

    @Test(
        "a SIGSEGV sent to a running decrypt --jsonl prints one fixed line, dumps nothing, and fails",
        .enabled(if: !sanitized, "a sanitized binary leaves crashes to the sanitizer"))
    func sigsegvDumpsNothing() throws {
        let (process, stderr, files, key) = try Self.signalled(SIGSEGV)
        #expect(process.terminationReason == .exit && process.terminationStatus == 70, "status \(process.terminationStatus)")
        #expect(String(decoding: stderr, as: UTF8.self) == "kindly-push: crashed (SIGSEGV)\n")
        Self.expectNoRun(of: key.secretKey.withUnsafeBytes { Array($0) }, in: stderr, "stderr")
        #expect(!files.contains { $0.hasPrefix("core") }, "\(files)")
    }

    @Test("the process is not dumpable: a SIGSYS (whose default action dumps core) leaves no core file")
    func noCoreFile() throws {
        // The control: a dumpable process killed the same way leaves a core file here. Without
        // it, "no core file" would also hold on a machine whose cores go elsewhere (a piped
        // core_pattern), and the test could not fail.
        let control = try KeyFolder()
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "ulimit -c unlimited && kill -SYS $$"]
        shell.currentDirectoryURL = control.url
        try shell.run()
        shell.waitUntilExit()
        let controlFiles = try FileManager.default.contentsOfDirectory(atPath: control.url.path)
        try #require(
            controlFiles.contains { $0.hasPrefix("core") },
            "cores are not written to the working folder here (core_pattern), so their absence proves nothing")
        let (process, stderr, files, _) = try Self.signalled(SIGSYS)
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGSYS)
        #expect(stderr.isEmpty)
        #expect(!files.contains { $0.hasPrefix("core") }, "\(files)")
    }

    // MARK: 3. Ownership

    @Test("a keyring folder owned by another user is refused, naming the path and the owner", .enabled(if: isRoot, "needs root to chown"))
    func foreignKeyringFolder() throws {
        let folder = try KeyFolder()
        let ring = folder.url.appendingPathComponent("ring").path
        #expect(mkdir(ring, 0o700) == 0)
        #expect(chown(ring, 65534, 65534) == 0)
        let keygen = try CLI.run(["keygen", "--keyring", "file"], environment: ["KINDLY_PUSH_KEYRING_DIR": ring])
        #expect(keygen.status == 74)
        #expect(keygen.stdout == "")
        #expect(keygen.stderr.hasPrefix("kindly-push: io: "), "\(keygen.stderr)")
        #expect(keygen.stderr.contains(ring) && keygen.stderr.contains("nobody"), "\(keygen.stderr)")
        #expect(keygen.stderr.filter { $0 == "\n" }.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: ring).isEmpty)
        let list = try CLI.run(["keys", "list", "--keyring", "file"], environment: ["KINDLY_PUSH_KEYRING_DIR": ring])
        #expect(list.status == 74)
        #expect(list.stderr.contains(ring) && list.stderr.contains("nobody"), "\(list.stderr)")
    }

    @Test("a key file owned by another user is refused, in the keyring and as --key-file", .enabled(if: isRoot, "needs root to chown"))
    func foreignKeyFile() throws {
        let folder = try KeyFolder()
        let ring = folder.url.appendingPathComponent("ring").path
        let planted = DeviceKey.generate()
        try FileKeyring(folder: ring).store(planted, label: "planted")
        let plantedPath = "\(ring)/\(planted.kid.base64URL).json"
        #expect(chown(plantedPath, 65534, 65534) == 0)
        let environment = ["KINDLY_PUSH_KEYRING_DIR": ring]
        let list = try CLI.run(["keys", "list", "--keyring", "file"], environment: environment)
        #expect(list.status == 74)
        #expect(list.stdout == "")
        #expect(list.stderr.contains(plantedPath) && list.stderr.contains("nobody"), "\(list.stderr)")
        let decrypt = try CLI.run(["decrypt", "--keyring", "file"], stdin: try Self.sealed(for: planted), environment: environment)
        #expect(decrypt.status == 4)
        #expect(decrypt.stderr.contains(plantedPath) && decrypt.stderr.contains("nobody"), "\(decrypt.stderr)")

        #expect(chown(folder.keyFile, 65534, 65534) == 0)
        let keyFile = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: try Self.sealed(for: folder.key))
        #expect(keyFile.status == 74)
        #expect(keyFile.stderr.hasPrefix("kindly-push: io: \(folder.keyFile): "), "\(keyFile.stderr)")
        #expect(keyFile.stderr.contains("nobody"))
    }

    @Test("a key file in a folder that others can write to, or that another user owns, is refused")
    func unsafeParentFolder() throws {
        let folder = try KeyFolder()
        #expect(chmod(folder.url.path, 0o777) == 0)
        let open = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: try Self.sealed(for: folder.key))
        #expect(open.status == 74)
        #expect(open.stderr.hasPrefix("kindly-push: io: \(folder.url.path): "), "\(open.stderr)")
        #expect(open.stderr.contains("writable"), "\(open.stderr)")
        // The sticky bit (as on /tmp) stops others from renaming or removing the file: allowed.
        #expect(chmod(folder.url.path, 0o1777) == 0)
        #expect(try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: try Self.sealed(for: folder.key)).status == 0)
        #expect(chmod(folder.url.path, 0o755) == 0)
        #expect(try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: try Self.sealed(for: folder.key)).status == 0)
        if Self.isRoot {
            #expect(chown(folder.url.path, 65534, 65534) == 0)
            let foreign = try CLI.run(["decrypt", "--key-file", folder.keyFile], stdin: try Self.sealed(for: folder.key))
            #expect(foreign.status == 74)
            #expect(foreign.stderr.contains("nobody"), "\(foreign.stderr)")
        }
    }

    // MARK: 4. Leftovers of interrupted writes

    @Test("leftover temporary files of an interrupted write are removed and reported by keys list")
    func leftoversRemoved() throws {
        let folder = try KeyFolder()
        let ring = folder.url.appendingPathComponent("ring").path
        let kept = DeviceKey.generate()
        try FileKeyring(folder: ring).store(kept, label: "kept")
        let keptPath = "\(ring)/\(kept.kid.base64URL).json"
        // What a killed writer left before: a whole key under a temporary name, and a second link.
        let whole = "\(ring)/.kindly-push-AbC123"
        try KeyFile.write(DeviceKey.generate(), to: whole)
        let linked = "\(ring)/.kindly-push-XyZ789"
        #expect(link(keptPath, linked) == 0)
        let list = try CLI.run(["keys", "list", "--keyring", "file"], environment: ["KINDLY_PUSH_KEYRING_DIR": ring])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains(kept.kid.base64URL))
        #expect(list.stderr.contains(whole) && list.stderr.contains(linked), "\(list.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: ring) == ["\(kept.kid.base64URL).json"])
        var status = stat()
        #expect(stat(keptPath, &status) == 0 && status.st_nlink == 1)
    }

    @Test("with the named-temporary-file fallback, killed keygens leave no second link and nothing after the next open")
    func killedFallbackKeygens() throws {
        let folder = try KeyFolder()
        let ring = folder.url.appendingPathComponent("ring").path
        let environment = ["KINDLY_PUSH_KEYRING_DIR": ring, "KINDLY_PUSH_TEST_NO_O_TMPFILE": "1"]
        for round in 0..<30 {
            // Killed after 0 to 9 ms, spread over the rounds: somewhere in start-up, writing or linking.
            _ = try Self.shell(
                "\"$0\" keygen --keyring file >/dev/null 2>&1 & p=$!; sleep 0.00\(round % 10); kill -KILL $p; wait $p",
                environment: environment, timeLimit: 20)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: ring)) ?? [] {
                var status = stat()
                #expect(lstat("\(ring)/\(name)", &status) == 0)
                #expect(status.st_nlink == 1, "\(name) has \(status.st_nlink) links")
                #expect(name.hasSuffix(".json") || name.hasPrefix(".kindly-push-"), "\(name)")
            }
        }
        let list = try CLI.run(["keys", "list", "--keyring", "file"], environment: environment)
        #expect(list.status == 0, "\(list.stderr)")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: ring)) ?? []
        #expect(names.allSatisfy { $0.hasSuffix(".json") }, "\(names)")
        #expect(list.stdout.split(separator: "\n").count == names.count)
        // The fallback still stores keys.
        let keygen = try CLI.run(["keygen", "--keyring", "file"], environment: environment)
        #expect(keygen.status == 0, "\(keygen.stderr)")
    }

    // MARK: 5. verify

    @Test("verify refuses what is not a regular file, and files over its size limit, at once")
    func verifyBoundedInput() throws {
        let folder = try KeyFolder()
        let fifo = folder.url.appendingPathComponent("fifo.json").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let large = folder.url.appendingPathComponent("large.json").path
        #expect(FileManager.default.createFile(atPath: large, contents: nil))
        #expect(truncate(large, 100 << 20) == 0)
        let cases: [(String, String)] = [
            ("/dev/zero", "FAIL /dev/zero: not a regular file\n"),
            (fifo, "FAIL \(fifo): not a regular file\n"),
            (large, "FAIL \(large): over the 4 MiB limit of a vector file\n"),
        ]
        for (path, line) in cases {
            // Bounded memory too: the run would die under this limit if it read without one (not
            // under AddressSanitizer, whose shadow memory needs far more address space).
            let limit = Self.sanitized ? "" : "ulimit -v 2000000; "
            let output = try Self.shell(limit + "exec \"$0\" verify \"$1\"", [path], timeLimit: 10)
            #expect(!output.timedOut, "\(path): reading without a bound")
            #expect(output.status == 1, "\(path): \(output.status) \(output.stderr)")
            #expect(output.stdout == line + "0 passed, 1 failed\n")
        }
        // A folder's FIFO is refused the same way, and the folder's other files still run.
        let output = try CLI.run(["verify", folder.url.path], timeLimit: 10)
        #expect(!output.timedOut)
        #expect(output.stdout.contains("FAIL \(fifo): not a regular file\n"))
    }

    // MARK: 6. Labels

    @Test("a label over 256 characters or with a control character is refused before anything is written")
    func labels() throws {
        let folder = try KeyFolder()
        let ring = folder.url.appendingPathComponent("ring").path
        let environment = ["KINDLY_PUSH_KEYRING_DIR": ring]
        for label in [
            String(repeating: "x", count: 70_000), String(repeating: "é", count: 257), "a\nb", "a\u{1B}[31mb", "a\u{7F}", "\u{85}",
        ] {
            let output = try CLI.run(["keygen", "--keyring", "file", "--label", label], environment: environment)
            #expect(output.status == 64, "\(label.prefix(10))")
            #expect(output.stdout == "")
            #expect(output.stderr.hasPrefix("kindly-push: usage: --label: "), "\(output.stderr.prefix(200))")
            #expect(output.stderr.filter { $0 == "\n" }.count == 1)
            #expect(!FileManager.default.fileExists(atPath: ring))
        }
        // Pinned sender keys have labels too: the same rule.
        let sender = SenderKey.generate().publicKey.base64URL
        for label in [String(repeating: "x", count: 70_000), "a\nb"] {
            let output = try CLI.run(
                ["senders", "add", "--keyring", "file", "--public-key", sender, "--label", label], environment: environment)
            #expect(output.status == 64)
            #expect(output.stderr.hasPrefix("kindly-push: usage: --label: "), "\(output.stderr.prefix(200))")
            #expect(!FileManager.default.fileExists(atPath: ring))
        }
        let longest = try CLI.run(["keygen", "--keyring", "file", "--label", String(repeating: "é", count: 256)], environment: environment)
        #expect(longest.status == 0, "\(longest.stderr)")
        let list = try CLI.run(["keys", "list", "--keyring", "file"], environment: environment)
        #expect(list.status == 0)
        #expect(list.stdout.contains(String(repeating: "é", count: 256)))
    }

    // MARK: 7. One-line errors

    @Test("paths from the command line and the environment are escaped: the error is one printable line")
    func escapedErrors() throws {
        let hostile = "/nonexistent/a\u{1B}[31m\nkindly-push: ok: FAKE SECOND LINE\u{7}\u{202E}"
        let keyFile = try CLI.run(["decrypt", "--key-file", hostile], stdin: "{}")
        let ring = try CLI.run(["keys", "list", "--keyring", "file", "--verbose"], environment: ["KINDLY_PUSH_KEYRING_DIR": hostile])
        for output in [keyFile, ring] {
            #expect(output.stderr.filter { $0 == "\n" }.count == output.stderr.split(separator: "\n").count)
            #expect(output.stderr.unicodeScalars.allSatisfy { $0 == "\n" || ($0.value >= 0x20 && $0.value != 0x7F && $0 != "\u{202E}") })
            #expect(output.stderr.contains(#"/nonexistent/a\x1b[31m\nkindly-push: ok: FAKE SECOND LINE\x07\u{202e}"#), "\(output.stderr)")
        }
        #expect(keyFile.status == 74)
        #expect(keyFile.stderr.filter { $0 == "\n" }.count == 1)
    }

    // MARK: 8. Closed standard streams

    @Test("a standard output closed at start is io (74) and nothing is written anywhere else")
    func closedStandardOutput() throws {
        let folder = try KeyFolder()
        let push = Array((try Self.sealed(for: folder.key) + "\n").utf8)
        let before = try Data(contentsOf: URL(fileURLWithPath: folder.keyFile))
        for arguments in [["decrypt"], ["decrypt", "--jsonl", "--jobs", "1"], ["decrypt", "--jsonl", "--jobs", "2"]] {
            let output = try Self.shell(
                "exec 1>&-; exec \"$0\" \"$@\"", arguments + ["--key-file", folder.keyFile], stdin: push, timeLimit: 20)
            #expect(output.status == 74, "\(arguments)")
            #expect(output.stderr == "kindly-push: io: cannot write standard output: Bad file descriptor\n", "\(arguments)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder.keyFile)) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["device.json"])
        // A closed standard input reads as empty; a closed standard error keeps the exit status.
        let noInput = try Self.shell("exec 0<&-; exec \"$0\" decrypt --key-file \"$1\"", [folder.keyFile])
        #expect(noInput.status == 65)
        #expect(noInput.stderr == "kindly-push: bad_input: the input is empty\n")
        let noError = try Self.shell("exec 2>&-; exec \"$0\" decrypt --key-file \"$1\"", [folder.keyFile], stdin: Array("[".utf8))
        #expect(noError.status == 65)
    }

    // MARK: 9. A keyring that never answers

    @Test("a bus that never answers costs one time budget per stream, not one per push, whatever --jobs")
    func negativeCache() throws {
        let folder = try KeyFolder()
        let socket = folder.url.appendingPathComponent("bus").path
        let listener = try SilentSocket(path: socket)
        defer { listener.close() }
        // One budget (1 s) per push would be 40 s: the cap of 20 s lies far from both, so only
        // a budget paid per push reaches it, not a loaded machine.
        var input = ""
        for _ in 0..<40 { input += try Self.sealed(for: DeviceKey.generate()) + "\n" }
        for jobs in ["1", "4"] {
            let output = try CLI.run(
                ["decrypt", "--jsonl", "--jobs", jobs, "--keyring", "secret-service"], stdin: input,
                environment: [
                    "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(socket)",
                    // The keyring's own budget (1.5 s), not the suite's 30 s.
                    "KINDLY_PUSH_TEST_SECRET_SERVICE_BUDGET_MS": "",
                ], timeLimit: 20)
            #expect(!output.timedOut, "--jobs \(jobs): 40 pushes took 20 s: a budget per push")
            #expect(output.status == 0)
            let lines = output.stdout.split(separator: "\n")
            #expect(lines.count == 40)
            #expect(lines.allSatisfy { $0.contains(#""code":"key_unavailable""#) }, "\(output.stdout)")
        }
    }

    // MARK: Also: HOME unset, keys list with bad entries, where keygen stored the key

    @Test("with HOME unset, the file keyring is under the password database's home, not the current folder")
    func homeUnset() throws {
        let entry = try #require(getpwuid(geteuid()), "no password database entry for this user")
        let directory = try #require(entry.pointee.pw_dir)
        let home = String(cString: directory)
        let output = try CLI.run(
            [
                "-u", "HOME", "-u", "KINDLY_PUSH_KEYRING_DIR", "-u", "XDG_DATA_HOME", CLI.binary.path, "keys", "list", "--keyring", "file",
                "--verbose",
            ],
            executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(
            output.stderr.hasPrefix("kindly-push: using the file keyring (\(home)/.local/share/kindly-push/keys)\n"), "\(output.stderr)")
    }

    @Test("keys list lists the good entries, reports each bad one on standard error, and exits 74")
    func listWithBadEntries() throws {
        let folder = try KeyFolder()
        let ring = folder.url.appendingPathComponent("ring").path
        let keyring = FileKeyring(folder: ring)
        let good = [DeviceKey.generate(), DeviceKey.generate()]
        for key in good { try keyring.store(key, label: "good") }
        let loose = DeviceKey.generate()
        try keyring.store(loose, label: "loose")
        let loosePath = "\(ring)/\(loose.kid.base64URL).json"
        #expect(chmod(loosePath, 0o644) == 0)
        let symlinked = "\(ring)/\(DeviceKey.generate().kid.base64URL).json"
        #expect(symlink(folder.keyFile, symlinked) == 0)
        let oversized = "\(ring)/\(DeviceKey.generate().kid.base64URL).json"
        #expect(FileManager.default.createFile(atPath: oversized, contents: Data(count: 70_000), attributes: [.posixPermissions: 0o600]))
        let list = try CLI.run(["keys", "list", "--keyring", "file"], environment: ["KINDLY_PUSH_KEYRING_DIR": ring])
        #expect(list.status == 74)
        let listed = Set(list.stdout.split(separator: "\n").compactMap { try? JSONValue(parsing: String($0))["kid"]?.stringValue })
        #expect(listed == Set(good.map(\.kid.base64URL)))
        let errors = list.stderr.split(separator: "\n")
        #expect(errors.count == 3, "\(list.stderr)")
        for path in [loosePath, symlinked, oversized] {
            #expect(errors.contains { $0.hasPrefix("kindly-push: io: \(path): ") }, "\(path)")
        }
    }

    @Test("keygen with --keyring auto says where it stored the key; on a bus that does not answer it stores nothing, nor does senders add")
    func autoKeygen() throws {
        let folder = try KeyFolder()
        let ring = folder.url.appendingPathComponent("ring").path
        let absent = try CLI.run(
            ["keygen"], environment: ["KINDLY_PUSH_KEYRING_DIR": ring, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        #expect(absent.status == 0)
        #expect(absent.stderr == "kindly-push: stored the key in the file keyring (\(ring))\n")
        let socket = folder.url.appendingPathComponent("bus").path
        let listener = try SilentSocket(path: socket)
        defer { listener.close() }
        // Its budget (1 s), not D-Bus's 25 s: the cap of 10 s is reached only without the budget.
        let slow = try CLI.run(
            ["keygen"], environment: ["KINDLY_PUSH_KEYRING_DIR": ring, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(socket)"], timeLimit: 10)
        #expect(!slow.timedOut)
        #expect(slow.status == 74)
        #expect(slow.stdout == "")
        #expect(slow.stderr.hasPrefix("kindly-push: io: "), "\(slow.stderr)")
        #expect(slow.stderr.filter { $0 == "\n" }.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: ring).count == 1)
        // A sender key is pinned as a key is stored: not in the file keyring behind the bus's back.
        let pin = try CLI.run(
            ["senders", "add", "--public-key", SenderKey.generate().publicKey.base64URL],
            environment: ["KINDLY_PUSH_KEYRING_DIR": ring, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(socket)"], timeLimit: 20)
        #expect(pin.status == 74, "\(pin.stderr)")
        #expect(pin.stderr.hasPrefix("kindly-push: io: "), "\(pin.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ring + "/senders"), "the pin went to the file keyring")
    }
}

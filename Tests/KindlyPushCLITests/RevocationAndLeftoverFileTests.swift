import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Revocations, killed writes and output targets, through the real binary.
@Suite("Running readers follow revocations; killed writes leave nothing behind; outputs go where they are sent", .offThePool)
struct RevocationAndLeftoverFileTests {
    static let plaintext = #"{"chat_id":"c","title":"t","body":"b"}"#

    /// A keyring shared by several runs of the binary: a file keyring in a folder of its own, or
    /// a fresh collection of the Secret Service.
    final class SharedKeyring {
        let folder: URL
        let kind: String
        let environment: [String: String]
        let devicePublicKey: String
        let kid: String

        init(_ kind: String) throws {
            self.kind = kind
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-revocation-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            var environment = ["PATH": "/usr/bin:/bin", "HOME": folder.path]
            if kind == "secret-service" {
                environment.merge(SecretServiceSession.environment) { $1 }
                environment["KINDLY_PUSH_SECRET_SERVICE_COLLECTION"] = try SecretServiceSession.createCollection()
            } else {
                environment["KINDLY_PUSH_KEYRING_DIR"] = folder.appendingPathComponent("keys").path
            }
            self.environment = environment
            let keygen = try CLI.run(["keygen", "--keyring", kind], environment: environment)
            try #require(keygen.status == 0, "\(keygen.stderr)")
            let printed = try JSONValue(parsing: keygen.stdout)
            devicePublicKey = try #require(printed["public_key"]?.stringValue)
            kid = try #require(printed["kid"]?.stringValue)
        }

        deinit { try? FileManager.default.removeItem(at: folder) }

        /// Runs the binary on this keyring (`--keyring` goes before a `--`).
        func run(_ arguments: [String]) throws -> CLI.Output {
            var arguments = arguments
            arguments.insert(contentsOf: ["--keyring", kind], at: arguments.firstIndex(of: "--") ?? arguments.endIndex)
            return try CLI.run(arguments, environment: environment)
        }

        /// A new sender key file: its path, sid and public key.
        func senderKey() throws -> (file: String, sid: String, publicKey: String) {
            let file = folder.appendingPathComponent("sender-\(UUID().uuidString).json").path
            let keygen = try CLI.run(["sender-keygen", "--key-file", file])
            try #require(keygen.status == 0, "\(keygen.stderr)")
            let printed = try JSONValue(parsing: keygen.stdout)
            return (file, try #require(printed["sid"]?.stringValue), try #require(printed["public_key"]?.stringValue))
        }

        /// A push for the device key, version 2 from `senderFile` or version 1 without.
        func push(senderFile: String? = nil) throws -> String {
            let sealed = try CLI.run(
                ["seal", "--public-key", devicePublicKey] + (senderFile.map { ["--sender-key-file", $0] } ?? []),
                stdin: RevocationAndLeftoverFileTests.plaintext)
            try #require(sealed.status == 0, "\(sealed.stderr)")
            return sealed.stdout.trimmingCharacters(in: .newlines)
        }

        /// A running `decrypt --jsonl` on this keyring.
        func reader() throws -> LiveFilterTests.LiveProcess {
            try LiveFilterTests.LiveProcess(["decrypt", "--jsonl", "--keyring", kind], environment: environment)
        }
    }

    static let keyrings = SecretServiceSession.isRunning ? ["file", "secret-service"] : ["file"]

    /// The result code of one line through `reader`: `ok` or the error's code.
    static func code(of push: String, through reader: LiveFilterTests.LiveProcess) throws -> String {
        reader.send(push)
        let line = try #require(reader.nextLine(timeout: 10), "the reader answered nothing")
        let value = try JSONValue(parsing: line)
        return value["error"]?["code"]?.stringValue ?? "ok"
    }

    /// Sends `push` every 0.1 s until its result is `code`; the seconds that took (`nil` past 15
    /// s: a cap that only a reader which never follows the change reaches; the readers check for
    /// changes once a second, which is a figure of docs/security-model.md, not a test's bound).
    static func secondsUntil(_ code: String, for push: String, through reader: LiveFilterTests.LiveProcess) throws -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < 15 {
            if try Self.code(of: push, through: reader) == code { return Date().timeIntervalSince(start) }
            usleep(100_000)
        }
        return nil
    }

    // MARK: 1. Running readers follow revocations

    @Test("a running decrypt --jsonl refuses a deleted sender's pushes within 2 s of senders delete", arguments: keyrings)
    func readerFollowsSendersDelete(_ kind: String) throws {
        let keyring = try SharedKeyring(kind)
        let sender = try keyring.senderKey()
        #expect(try keyring.run(["senders", "add", "--public-key", sender.publicKey]).status == 0)
        let push = try keyring.push(senderFile: sender.file)
        let reader = try keyring.reader()
        #expect(try Self.code(of: push, through: reader) == "ok")
        let delete = try keyring.run(["senders", "delete", "--", sender.sid])
        #expect(delete.status == 0, "\(delete.stderr)")
        let seconds = try Self.secondsUntil("untrusted_sender", for: push, through: reader)
        #expect(seconds != nil, "not followed within 15 s")
        // Refused for good, not once.
        #expect(try Self.code(of: push, through: reader) == "untrusted_sender")
        #expect(reader.finish() == 0)
    }

    @Test("a running decrypt --jsonl refuses version 1 within 2 s of the first senders add", arguments: keyrings)
    func readerFollowsFirstSendersAdd(_ kind: String) throws {
        let keyring = try SharedKeyring(kind)
        let version1 = try keyring.push()
        let reader = try keyring.reader()
        #expect(try Self.code(of: version1, through: reader) == "ok")
        let sender = try keyring.senderKey()
        #expect(try keyring.run(["senders", "add", "--public-key", sender.publicKey]).status == 0)
        let seconds = try Self.secondsUntil("untrusted_sender", for: version1, through: reader)
        #expect(seconds != nil, "not followed within 15 s")
        // The new sender's pushes decrypt in the same run.
        #expect(try Self.code(of: try keyring.push(senderFile: sender.file), through: reader) == "ok")
        #expect(reader.finish() == 0)
    }

    @Test("a running decrypt --jsonl answers key_unavailable within 2 s of keys delete", arguments: keyrings)
    func readerFollowsKeysDelete(_ kind: String) throws {
        let keyring = try SharedKeyring(kind)
        let push = try keyring.push()
        let reader = try keyring.reader()
        #expect(try Self.code(of: push, through: reader) == "ok")
        let delete = try keyring.run(["keys", "delete", "--", keyring.kid])
        #expect(delete.status == 0, "\(delete.stderr)")
        let seconds = try Self.secondsUntil("key_unavailable", for: push, through: reader)
        #expect(seconds != nil, "not followed within 15 s")
        #expect(reader.finish() == 0)
    }

    @Test("senders delete and keys delete say in their help how soon running readers follow")
    func helpSaysHowSoon() throws {
        for topic in ["senders", "keys"] {
            let help = try CLI.run(["help", topic])
            #expect(help.status == 0)
            #expect(help.stdout.contains("follow"), "\(topic): \(help.stdout)")
            #expect(help.stdout.contains("within 1 s"), "\(topic)")
        }
    }
}

// MARK: - Points 3 to 5, 7, 11 to 13

extension RevocationAndLeftoverFileTests {
    /// The names in `folder` that are hidden temporary files of a write (`*.kindly-push-*`).
    static func hiddenFiles(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.contains(".kindly-push-") }.sorted()
    }

    /// Runs `body` (a `Process.run()`) with SIGTERM, SIGINT and SIGHUP unblocked on this thread:
    /// the test runner's threads block them, and a child inherits the mask of the thread that
    /// starts it, where they would then never arrive.
    static func withSignalsUnblocked<T>(_ body: () throws -> T) rethrows -> T {
        var signals = sigset_t()
        var previous = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_UNBLOCK, &signals, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return try body()
    }

    /// The environment of a run with the named-temporary-file fallback forced.
    static func fallback(_ folder: URL) -> [String: String] {
        [
            "PATH": "/usr/bin:/bin", "HOME": folder.path, "KINDLY_PUSH_KEYRING_DIR": folder.appendingPathComponent("keys").path,
            "KINDLY_PUSH_TEST_NO_O_TMPFILE": "1",
        ]
    }

    /// A running `decrypt --jsonl` or `seal --jsonl` with `--output FOLDER/NAME` and the fallback
    /// forced, fed one line; made once its hidden temporary file exists. Started with
    /// posix_spawn, not Process: with no signal blocked and SIGTERM, SIGINT and SIGHUP at their
    /// default (the test runner's threads block them, and a child inherits that mask), and
    /// waited for with waitpid (Process could miss the end of a child killed while many others
    /// end).
    final class OutputRun {
        let pid: pid_t
        let input: Int32
        let output: String
        private(set) var signalled: Int32?

        init(_ command: String, key: KeyFolder, name: String = "out.jsonl") throws {
            output = key.url.appendingPathComponent(name).path
            let before = RevocationAndLeftoverFileTests.hiddenFiles(in: key.url)
            let line: String
            let arguments: [String]
            if command == "decrypt" {
                arguments = ["decrypt", "--jsonl", "--key-file", key.keyFile, "--output", output]
                line = try HardeningTests.sealed(for: key.key)
            } else {
                arguments = ["seal", "--jsonl", "--public-key", key.key.publicKey.base64URL, "--output", output]
                line = RevocationAndLeftoverFileTests.plaintext
            }
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw CocoaError(.fileWriteUnknown) }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            var none = sigset_t()
            sigemptyset(&none)
            posix_spawnattr_setsigmask(&attributes, &none)
            var defaults = sigset_t()
            sigemptyset(&defaults)
            for signal in [SIGPIPE] + RevocationAndLeftoverFileTests.terminating { sigaddset(&defaults, signal) }
            posix_spawnattr_setsigdefault(&attributes, &defaults)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
            let argv = ([CLI.binary.path] + arguments).map { strdup($0) } + [nil]
            let envp = RevocationAndLeftoverFileTests.fallback(key.url).map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { for pointer in argv + envp { free(pointer) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, CLI.binary.path, &actions, &attributes, argv, envp)
            close(ends[0])
            guard spawned == 0 else {
                close(ends[1])
                throw CocoaError(.executableLoad)
            }
            self.pid = pid
            input = ends[1]
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            let deadline = Date().addingTimeInterval(10)
            while RevocationAndLeftoverFileTests.hiddenFiles(in: key.url).count <= before.count, Date() < deadline { usleep(5_000) }
            // The line is read and its result written into the file.
            usleep(200_000)
        }

        /// Waits for the end (SIGKILL past 10 s); the exit status, or nil when a signal ended it
        /// (then in ``signalled``).
        @discardableResult
        func wait() -> Int32? {
            var status: Int32 = 0
            let deadline = Date().addingTimeInterval(10)
            while waitpid(pid, &status, WNOHANG) == 0 {
                if Date() > deadline { kill(pid, SIGKILL) }
                usleep(5_000)
            }
            // WIFSIGNALED / WEXITSTATUS, which Swift does not import.
            let signal = status & 0x7F
            if signal != 0 {
                signalled = signal
                return nil
            }
            return (status >> 8) & 0xFF
        }

        func stop(_ signal: Int32) {
            kill(pid, signal)
            wait()
            close(input)
        }

        func finish() -> Int32? {
            close(input)
            return wait()
        }
    }

    // MARK: 4. Plaintext left by killed --output runs

    /// Signals whose default action ends the process (but the crash signals and SIGKILL): each
    /// must remove the run's hidden file, as SIGTERM does (SIGUSR1, SIGALRM
    /// and SIGXFSZ once left it).
    static let terminating: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXFSZ, SIGXCPU, SIGVTALRM, SIGPROF]

    @Test(
        "a --output run stopped by a signal whose default action ends it removes its hidden file (O_TMPFILE fallback forced)",
        arguments: ["decrypt", "seal"], terminating)
    func outputRunSignalled(_ command: String, _ signal: Int32) throws {
        let key = try KeyFolder()
        let run = try OutputRun(command, key: key)
        try #require(Self.hiddenFiles(in: key.url).count == 1, "the fallback made no hidden file")
        run.stop(signal)
        #expect(run.signalled == signal, "it did not die of the signal")
        #expect(Self.hiddenFiles(in: key.url) == [])
        #expect(!FileManager.default.fileExists(atPath: run.output))
    }

    @Test(
        "a --output run killed outright leaves a hidden file that the next --output into the folder removes, not a live run's",
        arguments: ["decrypt", "seal"])
    func outputRunKilledThenSwept(_ command: String) throws {
        let key = try KeyFolder()
        let live = try OutputRun(command, key: key, name: "live.jsonl")
        let liveFiles = Self.hiddenFiles(in: key.url)
        try #require(liveFiles.count == 1)
        let killed = try OutputRun(command, key: key)
        killed.stop(SIGKILL)
        let left = Self.hiddenFiles(in: key.url)
        #expect(left.count == 2, "\(left)")
        let line = command == "decrypt" ? try HardeningTests.sealed(for: key.key) : Self.plaintext
        let arguments =
            command == "decrypt"
            ? ["decrypt", "--jsonl", "--key-file", key.keyFile, "--output", killed.output]
            : ["seal", "--jsonl", "--public-key", key.key.publicKey.base64URL, "--output", killed.output]
        let next = try CLI.run(arguments, stdin: Array((line + "\n").utf8), environment: Self.fallback(key.url))
        #expect(next.status == 0, "\(next.stderr)")
        #expect(Self.hiddenFiles(in: key.url) == liveFiles, "the killed run's file is swept, the live run's kept")
        #expect(live.finish() == 0)
        #expect(Self.hiddenFiles(in: key.url) == [])
        #expect(FileManager.default.fileExists(atPath: live.output))
    }

    // MARK: 5. Secret keys left by killed key writes

    /// Writes a 0600 file at `path` as a killed write would have left it.
    static func leftover(_ path: String) throws {
        #expect(FileManager.default.createFile(atPath: path, contents: Data("a secret key".utf8), attributes: [.posixPermissions: 0o600]))
    }

    @Test("keygen --key-file, sender-keygen and senders add remove what killed writes left in their folders, never a live write's")
    func keyWritersSweep() throws {
        let folder = try KeyFolder()
        let environment = Self.fallback(folder.url)
        let stale = folder.url.appendingPathComponent(".kindly-push-tmp-AbC123").path
        let live = folder.url.appendingPathComponent(".kindly-push-tmp-XyZ789").path
        try Self.leftover(stale)
        try Self.leftover(live)
        // A live writer holds its file's lock.
        let held = open(live, O_RDONLY)
        #expect(flock(held, LOCK_EX) == 0)
        defer { close(held) }
        let keygen = try CLI.run(["keygen", "--key-file", folder.url.appendingPathComponent("new.json").path], environment: environment)
        #expect(keygen.status == 0, "\(keygen.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale), "keygen --key-file left a stale temporary file")
        #expect(FileManager.default.fileExists(atPath: live), "keygen --key-file removed a live writer's file")

        try Self.leftover(stale)
        let senderKeygen = try CLI.run(
            ["sender-keygen", "--key-file", folder.url.appendingPathComponent("sender.json").path], environment: environment)
        #expect(senderKeygen.status == 0, "\(senderKeygen.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale), "sender-keygen left a stale temporary file")
        #expect(FileManager.default.fileExists(atPath: live))

        // The senders folder is swept as the key folder is.
        let keys = folder.url.appendingPathComponent("keys")
        let first = try CLI.run(
            ["senders", "add", "--keyring", "file", "--public-key", SenderKey.generate().publicKey.base64URL], environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        let staleSender = keys.appendingPathComponent("senders/.kindly-push-tmp-Qwe456").path
        try Self.leftover(staleSender)
        let add = try CLI.run(
            ["senders", "add", "--keyring", "file", "--public-key", SenderKey.generate().publicKey.base64URL], environment: environment)
        #expect(add.status == 0, "\(add.stderr)")
        #expect(!FileManager.default.fileExists(atPath: staleSender), "senders add left a stale temporary file in senders/")
        try Self.leftover(staleSender)
        #expect(try CLI.run(["senders", "list", "--keyring", "file"], environment: environment).status == 0)
        #expect(!FileManager.default.fileExists(atPath: staleSender), "senders list left a stale temporary file in senders/")
        // The first pin writes its marker (senders.pinned) into the key folder: a pin killed
        // there leaves its temporary file beside the keys, which senders list removes too (a
        // kill-loops run under load once found one left).
        let staleMarker = keys.appendingPathComponent(".kindly-push-tmp-Mrk789").path
        try Self.leftover(staleMarker)
        #expect(try CLI.run(["senders", "list", "--keyring", "file"], environment: environment).status == 0)
        #expect(!FileManager.default.fileExists(atPath: staleMarker), "senders list left a stale temporary file in the key folder")
    }

    // MARK: 3. A senders folder that is a link, or gone

    @Test("a senders folder replaced by a link (to an empty folder, or dangling) or removed never leaves pinned mode; doctor says so")
    func sendersFolderLinkedOrGone() throws {
        let keyring = try SharedKeyring("file")
        let sender = try keyring.senderKey()
        #expect(try keyring.run(["senders", "add", "--public-key", sender.publicKey]).status == 0)
        let version1 = try keyring.push()
        let version2 = try keyring.push(senderFile: sender.file)
        func decrypt(_ push: String) throws -> CLI.Output {
            try CLI.run(["decrypt", "--keyring", "file"], stdin: push, environment: keyring.environment)
        }
        #expect(try decrypt(version2).status == 0)
        #expect(try decrypt(version1).status == 7)
        let keys = keyring.folder.appendingPathComponent("keys")
        let senders = keys.appendingPathComponent("senders")
        let real = keyring.folder.appendingPathComponent("senders.real")
        let empty = keyring.folder.appendingPathComponent("empty")
        try FileManager.default.moveItem(at: senders, to: real)
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createSymbolicLink(at: senders, withDestinationURL: empty)
        let linked = try decrypt(version1)
        #expect(linked.status == 7, "a link to an empty folder read as no pins: \(linked.stderr)")
        #expect(linked.stderr.contains("symbolic link"), "\(linked.stderr)")
        let doctor = try CLI.run(["doctor", "--keyring", "file"], environment: keyring.environment)
        #expect(doctor.stdout.contains("senders is a symbolic link"), "\(doctor.stdout)")
        #expect(!doctor.stdout.contains("senders: not a key file name"), "\(doctor.stdout)")
        try FileManager.default.removeItem(at: empty)
        #expect(try decrypt(version1).status == 7, "a dangling link read as no pins")
        try FileManager.default.removeItem(at: senders)
        let gone = try decrypt(version1)
        #expect(gone.status == 7, "a vanished senders folder read as no pins: \(gone.stderr)")
        #expect(gone.stderr.contains("the pins cannot be read"), "\(gone.stderr)")
        let doctorGone = try CLI.run(["doctor", "--keyring", "file"], environment: keyring.environment)
        #expect(doctorGone.stdout.contains("the pins cannot be read"), "\(doctorGone.stdout)")
        // Put back, the pin works; deleting the last pin leaves pinned mode, as before.
        try FileManager.default.moveItem(at: real, to: senders)
        #expect(try decrypt(version2).status == 0)
        #expect(try keyring.run(["senders", "delete", "--", sender.sid]).status == 0)
        #expect(try decrypt(version1).status == 0)
    }

    // MARK: 7. Relative or broken HOME and KINDLY_PUSH_KEYRING_DIR

    static let badLocations: [(String, String)] = [
        ("KINDLY_PUSH_KEYRING_DIR", "keys"), ("KINDLY_PUSH_KEYRING_DIR", "./keys"), ("KINDLY_PUSH_KEYRING_DIR", "ABSOLUTE/keys\n"),
        ("HOME", "home"), ("HOME", "ABSOLUTE\n"),
        // A space or a tab at the end (or the start) is a quoting mistake too.
        ("KINDLY_PUSH_KEYRING_DIR", "ABSOLUTE/keys "), ("KINDLY_PUSH_KEYRING_DIR", "ABSOLUTE/keys\t"), ("HOME", "ABSOLUTE "),
    ]

    @Test(
        "a relative HOME or KINDLY_PUSH_KEYRING_DIR, or one with a line break or a space or tab at an end, is a usage error; nothing is written",
        arguments: badLocations)
    func badKeyringLocation(_ variable: String, _ value: String) throws {
        let folder = try KeyFolder()
        let work = folder.url.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        var environment = ["KINDLY_PUSH_KEYRING_DIR": "", "XDG_DATA_HOME": ""]
        environment[variable] = value.replacingOccurrences(of: "ABSOLUTE", with: work.path)
        for arguments in [
            ["keygen", "--keyring", "file"], ["keys", "list", "--keyring", "file"],
            ["senders", "add", "--keyring", "file", "--public-key", SenderKey.generate().publicKey.base64URL],
        ] {
            let output = try HardeningTests.shell(#"cd "$1" && shift && exec "$0" "$@""#, [work.path] + arguments, environment: environment)
            #expect(output.status == 64, "\(arguments): \(output.stderr)")
            #expect(output.stderr.hasPrefix("kindly-push: usage: \(variable) "), "\(arguments): \(output.stderr)")
            #expect(output.stderr.filter { $0 == "\n" }.count == 1, "\(output.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: work.path) == [], "\(arguments) wrote into the current folder")
        }
    }

    // MARK: 11. --output onto a FIFO, a character device, or -

    @Test("--output onto a FIFO writes into it, a character device is written directly, and --output - is standard output")
    func outputSpecialFiles() throws {
        let key = try KeyFolder()
        let push = try HardeningTests.sealed(for: key.key)
        let expected = Self.plaintext + "\n"
        // -: standard output, and no file named "-".
        let dash = try HardeningTests.shell(
            #"cd "$1" && exec "$0" decrypt --key-file "$2" --output -"#, [key.url.path, key.keyFile], stdin: Array(push.utf8))
        #expect(dash.status == 0, "\(dash.stderr)")
        #expect(dash.stdout == expected)
        #expect(!FileManager.default.fileExists(atPath: key.url.appendingPathComponent("-").path), "--output - made a file named -")
        // A FIFO: its reader gets the output, and it stays a FIFO.
        let fifo = key.url.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let received = key.url.appendingPathComponent("received").path
        let cat = Process()
        cat.executableURL = URL(fileURLWithPath: "/bin/sh")
        cat.arguments = ["-c", #"exec cat "$0" > "$1""#, fifo, received]
        // None of the test's own streams: a reader left waiting on the FIFO must not hold the
        // test runner's output open after the test process ends.
        cat.standardInput = FileHandle.nullDevice
        cat.standardError = FileHandle.nullDevice
        try Self.withSignalsUnblocked { try cat.run() }
        defer {
            // Whatever happened: a writer that opens and closes the FIFO gives the reader its end,
            // and a reader still there is killed.
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            if cat.isRunning { kill(cat.processIdentifier, SIGKILL) }
            cat.waitUntilExit()
        }
        let intoFIFO = try CLI.run(["decrypt", "--key-file", key.keyFile, "--output", fifo], stdin: push, timeLimit: 10)
        #expect(intoFIFO.status == 0, "\(intoFIFO.stderr)")
        let deadline = Date().addingTimeInterval(10)
        while cat.isRunning, Date() < deadline { usleep(10_000) }
        #expect(try String(contentsOfFile: received, encoding: .utf8) == expected)
        var status = stat()
        #expect(lstat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
        // A character device: a private copy of /dev/null where this user may make one (root),
        // else /dev/null itself (never replaced as root: a regression would break the machine).
        let device: String
        if HardeningTests.isRoot {
            device = key.url.appendingPathComponent("null").path
            #expect(mknod(device, S_IFCHR | 0o600, (1 << 8) | 3) == 0)  // makedev(1, 3), a macro Swift does not import
        } else {
            device = "/dev/null"
        }
        let intoDevice = try CLI.run(["decrypt", "--key-file", key.keyFile, "--output", device], stdin: push)
        #expect(intoDevice.status == 0, "\(intoDevice.stderr)")
        #expect(intoDevice.stdout == "")
        #expect(stat(device, &status) == 0 && status.st_mode & S_IFMT == S_IFCHR, "the device was replaced by a file")
        #expect(Self.hiddenFiles(in: key.url) == [])
    }

    // MARK: 12. TERM=dumb

    @Test("with TERM=dumb the progress line has no escape sequence; with TERM=xterm it has", arguments: ["dumb", "xterm"])
    func progressLineOnDumbTerminal(_ term: String) throws {
        let key = try KeyFolder()
        let push = try HardeningTests.sealed(for: key.key)
        let pushFile = key.url.appendingPathComponent("push").path
        try Data((push + "\n").utf8).write(to: URL(fileURLWithPath: pushFile))
        // script(1) gives standard error a terminal; the pushes arrive over 1 s.
        let command =
            #"for i in 1 2 3 4 5 6 7 8; do cat "$2"; sleep 0.15; done | TERM=\#(term) "$0" decrypt --jsonl --key-file "$1" > /dev/null"#
        let output = try CLI.run(
            ["-qec", "sh -c '\(command)' \(CLI.binary.path) \(key.keyFile) \(pushFile)", "/dev/null"],
            executable: URL(fileURLWithPath: "/usr/bin/script"), timeLimit: 30)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains(" lines, "), "no progress line: \(output.stdout.debugDescription)")
        #expect(output.stdout.contains("\u{1B}[K") == (term != "dumb"), "\(output.stdout.debugDescription)")
    }

    // MARK: 13. A pin file under another spelling of its sid

    @Test("a pin file under another spelling of its sid (padded standard base64) is not a second pin, and senders delete removes it")
    func pinUnderAliasName() throws {
        let keyring = try SharedKeyring("file")
        var sender = try keyring.senderKey()
        // A sid whose standard spelling can be a file name (no "/").
        while sender.sid.contains("_") { sender = try keyring.senderKey() }
        #expect(try keyring.run(["senders", "add", "--public-key", sender.publicKey]).status == 0)
        let senders = keyring.folder.appendingPathComponent("keys/senders")
        let alias = sender.sid.replacingOccurrences(of: "-", with: "+") + String(repeating: "=", count: (4 - sender.sid.count % 4) % 4)
        try FileManager.default.copyItem(
            at: senders.appendingPathComponent(sender.sid + ".json"), to: senders.appendingPathComponent(alias + ".json"))
        let list = try keyring.run(["senders", "list"])
        #expect(list.status == 0)
        #expect(list.stdout.split(separator: "\n").count == 1, "listed twice: \(list.stdout)")
        let delete = try keyring.run(["senders", "delete", "--", sender.sid])
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: senders.path) == [], "senders delete left a file behind")
        #expect(try keyring.run(["senders", "list"]).stdout == "")
        // Out of pinned mode: version 1 reads again.
        #expect(try CLI.run(["decrypt", "--keyring", "file"], stdin: try keyring.push(), environment: keyring.environment).status == 0)
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `kindly-push doctor` run as a binary: exact lines, exit status, time, and no secret printed.
@Suite("kindly-push doctor", .offThePool)
struct DoctorTests {
    /// A file keyring folder of the test's own with `count` keys made by `keygen`.
    final class Keyring {
        let folder: String
        let uid = geteuid()

        init(keys count: Int) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-doctor-\(UUID().uuidString)/keys").path
            for _ in 0..<count {
                let made = try CLI.run(["keygen", "--keyring", "file"], environment: environment)
                guard made.status == 0 else { throw Failure(description: made.stderr) }
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: (folder as NSString).deletingLastPathComponent) }

        var environment: [String: String] { ["KINDLY_PUSH_KEYRING_DIR": folder] }

        /// The key files, by name, with their JSON.
        func files() throws -> [(path: String, object: JSONValue)] {
            guard FileManager.default.fileExists(atPath: folder) else { return [] }
            return try FileManager.default.contentsOfDirectory(atPath: folder).sorted().filter { $0.hasSuffix(".json") }.map { name in
                let path = folder + "/" + name
                return (path, try JSONValue(parsing: String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)))
            }
        }

        /// Every spelling of every secret key in the folder: base64url, base64, hex.
        func secretSpellings() throws -> [String] {
            try files().flatMap { file -> [String] in
                let secret = try #require(file.object["secret_key"]?.stringValue)
                let bytes = try Base64.decode(secret)
                let standard = Data(bytes).base64EncodedString()
                return [secret, standard, String(standard.dropLast()), bytes.map { String(format: "%02x", $0) }.joined()]
            }
        }

        /// `device-keys`: the keys oldest first, as the keyring lists them.
        func deviceKeysLine(now: Int64 = Int64(Date().timeIntervalSince1970)) throws -> String {
            let entries = try files().map { file in
                (
                    created: Int64(file.object["created"]?.numberValue?.integerValue(in: 0...Int64.max) ?? 0),
                    kid: file.object["kid"]!.stringValue!
                )
            }.sorted { ($0.created, $0.kid) < ($1.created, $1.kid) }
            let described = entries.map { entry -> String in
                let days = (now - entry.created) / 86_400
                return "\(entry.kid) (\(days) day\(days == 1 ? "" : "s") old)"
            }
            return "ok       device-keys: \(entries.count) in the file keyring: " + described.joined(separator: ", ")
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `pkg-config --modversion`, a source of the libraries' versions independent of the binary.
    static func packageVersion(_ name: String) throws -> String {
        let output = try CLI.run(["pkg-config", "--modversion", name], executable: URL(fileURLWithPath: "/usr/bin/env"))
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func libraryLines() throws -> [String] {
        [
            "ok       libsodium: \(try packageVersion("libsodium"))",
            "ok       libsecret: \(try packageVersion("libsecret-1")) (built with; libsecret reports no version at run time)",
        ]
    }

    /// Runs doctor; checks that it ended and that no secret of `keyring` is in the output. Each
    /// probe has a budget under a second; the cap, 10 s, lies under D-Bus's own 25 s time-out, so
    /// a probe that waits for the bus's answer without its budget is killed there and fails,
    /// whatever the machine's load (a bound of 2 s measured the load).
    static func doctor(_ arguments: [String] = [], keyring: Keyring, environment: [String: String] = [:]) throws -> CLI.Output {
        let output = try CLI.run(["doctor"] + arguments, environment: keyring.environment.merging(environment) { $1 }, timeLimit: 10)
        #expect(!output.timedOut, "doctor did not end within 10 s")
        for secret in try keyring.secretSpellings() {
            #expect(!output.stdout.contains(secret) && !output.stderr.contains(secret), "a secret key is in doctor's output")
        }
        #expect(output.stderr == "")
        return output
    }

    static func lines(_ output: CLI.Output) -> [String] {
        output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    @Test("a healthy file keyring: every line ok, exit 0")
    func healthy() throws {
        let keyring = try Keyring(keys: 2)
        let output = try Self.doctor(keyring: keyring)
        let files = try keyring.files()
        var expected = [
            "ok       keyring: auto uses the file keyring (\(keyring.folder)): there is no session bus (DBUS_SESSION_BUS_ADDRESS is not set)",
            "ok       session-bus: none (DBUS_SESSION_BUS_ADDRESS is not set): keys live in files here",
            "ok       secret-service: not used: no session bus",
            "ok       file-keyring: \(keyring.folder): owner uid \(keyring.uid) (this user), mode 0700",
        ]
        expected += files.map { "ok       key-file: \($0.path): owner uid \(keyring.uid) (this user), mode 0600" }
        expected += [
            try keyring.deviceKeysLine(),
            "ok       pinned-senders: none: version 1 pushes are read, version 2 pushes are refused (untrusted_sender)",
            "ok       notification-server: not used: no session bus (kindly-push notify needs a desktop session)",
        ]
        expected += try Self.libraryLines() + ["0 problems, 0 warnings"]
        #expect(Self.lines(output) == expected)
        #expect(output.status == 0)
    }

    @Test("pinned sender keys: listed by sid, the senders folder checked as a private folder")
    func pinnedSenders() throws {
        let keyring = try Keyring(keys: 1)
        let senders = [SenderKey.generate(), SenderKey.generate()]
        for sender in senders {
            let added = try CLI.run(
                ["senders", "add", "--keyring", "file", "--public-key=" + sender.publicKey.base64URL], environment: keyring.environment)
            #expect(added.status == 0, "\(added.stderr)")
        }
        let output = try Self.doctor(keyring: keyring)
        let lines = Self.lines(output)
        #expect(lines.contains("ok       file-keyring: \(keyring.folder)/senders: owner uid \(keyring.uid) (this user), mode 0700"))
        let pinned = try #require(lines.first { $0.hasPrefix("ok       pinned-senders: 2 pinned (") })
        for sender in senders { #expect(pinned.contains(sender.publicKey.sid.base64URL)) }
        #expect(!lines.contains { $0.contains("not a key file name") })
        #expect(output.status == 0)
    }

    @Test("--json: one object per check, with the same statuses, and the key files' owner and mode")
    func json() throws {
        let keyring = try Keyring(keys: 1)
        let output = try Self.doctor(["--json"], keyring: keyring)
        #expect(output.status == 0)
        let objects = try Self.lines(output).map { try JSONValue(parsing: $0) }
        #expect(
            objects.compactMap { $0["check"]?.stringValue } == [
                "keyring", "session-bus", "secret-service", "file-keyring", "key-file", "device-keys", "pinned-senders",
                "notification-server", "libsodium", "libsecret",
            ])
        #expect(objects.allSatisfy { $0["status"] == "ok" && $0["message"]?.stringValue != nil && $0["action"] == nil })
        let file = try #require(objects.first { $0["check"] == "key-file" })
        #expect(file["mode"] == "0600" && file["owner_uid"] == .number(JSONNumber(Int(keyring.uid))))
        #expect(file["path"]?.stringValue == (try keyring.files()[0].path))
        let kid = try keyring.files()[0].object["kid"]!
        #expect(
            objects.first { $0["check"] == "device-keys" }?["keys"] == [
                ["kid": kid, "created": try keyring.files()[0].object["created"]!, "age_days": 0]
            ])
        #expect(objects.first { $0["check"] == "keyring" }?["keyring"] == "file")
    }

    @Test("a key file with mode 0644 is a problem with the chmod that fixes it, and the keys cannot be listed: exit 1")
    func looseKeyFile() throws {
        let keyring = try Keyring(keys: 2)
        let files = try keyring.files()
        chmod(files[0].path, 0o644)
        let output = try Self.doctor(keyring: keyring)
        let lines = Self.lines(output)
        #expect(output.status == 1)
        #expect(
            lines.contains(
                "problem  key-file: \(files[0].path): mode 0644, group or others can read it (the keyring refuses it); to fix: chmod 600 \(files[0].path)"
            ))
        #expect(lines.contains("ok       key-file: \(files[1].path): owner uid \(keyring.uid) (this user), mode 0600"))
        #expect(
            lines.contains(
                "problem  device-keys: cannot be listed: \(files[0].path): permissions 644 are too open; a key file must be 0600 (chmod 600 \(files[0].path)); to fix: see the file-keyring and key-file lines"
            ))
        #expect(lines.last == "2 problems, 0 warnings")
        #expect(lines.filter { $0.hasPrefix("problem") }.count == 2)

        // Fixed as it says: healthy again.
        chmod(files[0].path, 0o600)
        #expect(try Self.doctor(keyring: keyring).status == 0)
        // A folder that others can enter is a problem too.
        chmod(keyring.folder, 0o755)
        let folder = try Self.doctor(keyring: keyring)
        #expect(folder.status == 1)
        #expect(
            Self.lines(folder).contains(
                "problem  file-keyring: \(keyring.folder): mode 0755, group or others can enter it (the keyring refuses it); to fix: chmod 700 \(keyring.folder)"
            ))
    }

    @Test("a key over a year old gets a rotation warning, and warnings alone exit 0")
    func oldKey() throws {
        let keyring = try Keyring(keys: 1)
        let file = try keyring.files()[0]
        var object = try #require(file.object.objectValue)
        let created = Int64(Date().timeIntervalSince1970) - 400 * 86_400
        object["created"] = .number(JSONNumber(Int(created)))
        try Data(JSONValue.object(object).compactText.utf8).write(to: URL(fileURLWithPath: file.path))
        chmod(file.path, 0o600)
        let output = try Self.doctor(keyring: keyring)
        #expect(output.status == 0)
        let kid = try #require(file.object["kid"]?.stringValue)
        #expect(
            Self.lines(output).contains(
                "warning  device-keys: 1 in the file keyring: \(kid) (400 days old); the oldest is over a year old; to fix: rotate: kindly-push keygen, register the new key, then kindly-push keys delete KID once no push uses the old one"
            ))
        #expect(Self.lines(output).last == "0 problems, 1 warning")
    }

    @Test("no session bus (DBUS_SESSION_BUS_ADDRESS names no socket): a warning, auto uses files, exit 0")
    func noSessionBus() throws {
        let keyring = try Keyring(keys: 1)
        let output = try Self.doctor(keyring: keyring, environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/kindly-bus"])
        let lines = Self.lines(output)
        #expect(output.status == 0)
        try #require(lines.count == 11)
        #expect(lines[0] == "ok       keyring: auto uses the file keyring (\(keyring.folder)): the session bus does not answer")
        #expect(lines[1].hasPrefix("warning  session-bus: DBUS_SESSION_BUS_ADDRESS is set but the bus does not answer ("))
        #expect(lines[1].hasSuffix("); to fix: start the session bus, or unset DBUS_SESSION_BUS_ADDRESS where there is none"))
        #expect(lines[2] == "ok       secret-service: not used: no session bus")
        #expect(lines[5] == (try keyring.deviceKeysLine()))
        #expect(lines[6].hasPrefix("ok       pinned-senders: none"))
        #expect(lines[7].hasPrefix("warning  notification-server: kindly-push notify cannot show banners here: "))
        #expect(lines.last == "0 problems, 2 warnings")

        // Asked for the Secret Service explicitly, the same is a problem.
        let asked = try Self.doctor(
            ["--keyring", "secret-service"], keyring: keyring,
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/kindly-bus"])
        let askedLines = Self.lines(asked)
        #expect(asked.status == 1)
        #expect(
            askedLines.first == "ok       keyring: the secret-service keyring (the Secret Service collection 'default'), as --keyring says")
        #expect(askedLines[1].hasPrefix("problem  session-bus: "))
        #expect(
            askedLines[2]
                == "problem  secret-service: cannot be reached: no session bus answers; to fix: see session-bus, or use --keyring file")
        #expect(askedLines.contains("warning  device-keys: not listed: the Secret Service cannot be reached (see above)"))
    }

    @Test("a bus that accepts the connection and never answers costs at most the probe's budget")
    func silentBus() throws {
        let keyring = try Keyring(keys: 1)
        let socketPath = (keyring.folder as NSString).deletingLastPathComponent + "/bus"
        try FileManager.default.createDirectory(
            atPath: keyring.folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let listener = try SilentSocket(path: socketPath)
        defer { listener.close() }
        let output = try Self.doctor(keyring: keyring, environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(socketPath)"])
        #expect(output.status == 0)
        #expect(
            Self.lines(output)[1]
                == "warning  session-bus: DBUS_SESSION_BUS_ADDRESS is set but the bus does not answer (it did not answer within 0.5 seconds); to fix: start the session bus, or unset DBUS_SESSION_BUS_ADDRESS where there is none"
        )
    }

    @Test("a bus that authenticates and then never answers (not even Hello): doctor still ends, at its deadline")
    func busThatNeverSaysHello() throws {
        let keyring = try Keyring(keys: 1)
        try FileManager.default.createDirectory(
            atPath: keyring.folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let socketPath = (keyring.folder as NSString).deletingLastPathComponent + "/bus"
        let bus = try MuteBus(path: socketPath)
        let output = try Self.doctor(keyring: keyring, environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(socketPath)"])
        #expect(output.status == 0)
        #expect(
            Self.lines(output)[1]
                == "warning  session-bus: DBUS_SESSION_BUS_ADDRESS is set but the bus does not answer (it did not answer within 1.5 seconds); to fix: start the session bus, or unset DBUS_SESSION_BUS_ADDRESS where there is none"
        )
        bus.stop()
        #expect(bus.authenticated)
    }

    @Test("no key folder yet: ok, and a warning that no key can decrypt here")
    func noFolder() throws {
        let keyring = try Keyring(keys: 0)
        let output = try Self.doctor(keyring: keyring)
        let lines = Self.lines(output)
        #expect(output.status == 0)
        #expect(lines.contains("ok       file-keyring: \(keyring.folder) does not exist (keygen makes it (0700) with the first key)"))
        #expect(
            lines.contains(
                "warning  device-keys: none in the file keyring: no push can be decrypted here; to fix: make one with kindly-push keygen (a backend that only seals needs none)"
            ))
    }
}

/// A Unix socket that accepts connections into its backlog and never reads or writes: a bus
/// that does not answer (the doctor and the hardening tests use it).
final class SilentSocket {
    private var descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8.prefix($0.count - 1)) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0, listen(descriptor, 64) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
    }
}

/// A D-Bus server that completes the authentication (SASL EXTERNAL) of every client and then
/// reads and never answers, not even the `Hello` that GLib sends without a deadline.
final class MuteBus {
    static let script = """
        import socket, sys
        server = socket.socket(socket.AF_UNIX)
        server.bind(sys.argv[1])
        server.listen(8)
        print("ready", flush=True)
        clients = []
        while True:
            client, _ = server.accept()
            clients.append(client)
            pending = b""
            talking = True
            while talking:
                data = client.recv(4096)
                if not data:
                    break
                pending += data
                while talking and b"\\r\\n" in pending:
                    line, pending = pending.split(b"\\r\\n", 1)
                    line = line.lstrip(b"\\0")
                    if line.startswith(b"AUTH EXTERNAL") or line.startswith(b"DATA"):
                        client.sendall(b"OK 0123456789abcdef0123456789abcdef\\r\\n")
                        print("authenticated", flush=True)
                    elif line.startswith(b"AUTH"):
                        client.sendall(b"REJECTED EXTERNAL\\r\\n")
                    elif line.startswith(b"NEGOTIATE_UNIX_FD"):
                        client.sendall(b"AGREE_UNIX_FD\\r\\n")
                    elif line.startswith(b"BEGIN"):
                        talking = False
        """

    let process = Process()
    private let output = Pipe()

    init(path: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", MuteBus.script, path]
        process.standardOutput = output
        try process.run()
        guard String(decoding: output.fileHandleForReading.readData(ofLength: 6), as: UTF8.self) == "ready\n" else {
            throw DoctorTests.Failure(description: "the mute bus did not start")
        }
    }

    /// Whether a client got through the authentication (read after `stop()`).
    private(set) var authenticated = false

    deinit {
        if process.isRunning { stop() }
    }

    func stop() {
        // SIGKILL: a child started from a Dispatch thread inherits its blocked signals, SIGTERM included.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        authenticated = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("authenticated")
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushSecretService
import Testing

/// Against the real gnome-keyring that tools/with-secret-service starts. Every test uses fresh
/// random keys (unique kids), and the tests that lock a collection lock one of their own, so
/// these tests run in parallel with each other and with anything else using the keyring.
@Suite("Secret Service keyring against a real gnome-keyring", .offThePool)
struct SecretServiceKeyringTests {
    /// What the keyring does, not how soon a loaded machine schedules gnome-keyring: the call
    /// budget is ``hangCap``. The default budget (1.5 s) is what the tests of buses that never
    /// answer check, below.
    let keyring = SecretServiceKeyring(timeout: hangCap)

    @Test("the harness's session bus answers and has a Secret Service", .needsSecretService)
    func sessionBusAnswers() {
        #expect(SecretServiceKeyring.sessionBusAnswers(timeout: hangCap))
    }

    @Test("stores a key, finds it by kid, lists its public information, and deletes it", .needsSecretService)
    func storeLookUpListDelete() throws {
        let key = DeviceKey.generate()
        let before = Int64(Date().timeIntervalSince1970)
        try keyring.store(key, label: "store and look up")

        let found = try keyring.key(for: key.kid)
        #expect(found.secretKey == key.secretKey)
        #expect(found.kid == key.kid)

        let entry = try #require(try keyring.list().first { $0.kid == key.kid })
        #expect(entry.publicKey == key.publicKey)
        #expect(entry.label == "store and look up")
        #expect((before...before + 60).contains(entry.created))

        try keyring.delete(key.kid)
        #expect(keyringError { try keyring.key(for: key.kid) } == .notFound(key.kid))
        #expect(try !keyring.list().contains { $0.kid == key.kid })
        #expect(keyringError { try keyring.delete(key.kid) } == .notFound(key.kid))
    }

    @Test("refuses to store a kid that is stored already", .needsSecretService)
    func refusesDuplicateKid() throws {
        let key = DeviceKey.generate()
        try keyring.store(key, label: "first")
        defer { try? keyring.delete(key.kid) }
        #expect(keyringError { try keyring.store(key, label: "second") } == .alreadyExists(key.kid))
        #expect(try keyring.list().filter { $0.kid == key.kid }.map(\.label) == ["first"])
    }

    @Test("keeps rotated keys apart: each push decrypts with its own key, and deleting one leaves the other", .needsSecretService)
    func rotation() throws {
        let old = DeviceKey.generate()
        let new = DeviceKey.generate()
        try keyring.store(old, label: "rotation: old")
        try keyring.store(new, label: "rotation: new")
        defer { try? keyring.delete(new.kid) }
        let oldPush = try sealedPush(for: old, chat: "old")
        let newPush = try sealedPush(for: new, chat: "new")

        #expect(decryptionFailure(oldPush, with: keyring) == nil)
        #expect(decryptionFailure(newPush, with: keyring) == nil)
        #expect(KindlyPushDecryption(keyring: keyring).decrypt(userInfo: newPush)?.chatId == "new")

        try keyring.delete(old.kid)
        #expect(decryptionFailure(oldPush, with: keyring) == .keyUnavailable)
        #expect(decryptionFailure(newPush, with: keyring) == nil)
    }

    @Test("look-ups close their transfer sessions: 30 of them leave no pile of open sessions in the service", .needsSecretService)
    func sessionsAreClosed() throws {
        let key = DeviceKey.generate()
        try keyring.store(key, label: "sessions")
        defer { try? keyring.delete(key.kid) }
        for _ in 0..<30 { _ = try keyring.key(for: key.kid) }
        Thread.sleep(forTimeInterval: 0.3)  // the Close calls are sent without waiting for their answers
        let output = try run(
            "/usr/bin/gdbus",
            [
                "introspect", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets/session",
            ])
        let open = String(decoding: output.standardOutput, as: UTF8.self).components(separatedBy: "node ").count - 1
        // Without closing, this test alone leaves 30 or more; other tests running at once hold a few.
        #expect(open < 20, "\(open) sessions open")
    }

    @Test("a stored key shows up in secret-tool search under its kid, in the default collection", .needsSecretService)
    func visibleToSecretTool() throws {
        let key = DeviceKey.generate()
        try keyring.store(key, label: "seen by secret-tool")
        defer { try? keyring.delete(key.kid) }

        // secret-tool prints the secret on standard output: only the public lines are read as
        // text there. It prints the attributes on standard error.
        let output = try run("/usr/bin/secret-tool", ["search", "--all", "--", "kid", key.kid.base64URL])
        #expect(output.status == 0, "\(output.errorText)")
        let lines = output.lines(startingWith: ["label = ", "schema = "])
        #expect(lines.contains("label = KindlyPush device key \(key.kid): seen by secret-tool"))
        #expect(lines.contains("schema = ai.kindly.push.DeviceKey"))
        let attributes = output.errorText.split(separator: "\n").map(String.init)
        #expect(attributes.contains("attribute.kid = \(key.kid.base64URL)"))
        #expect(attributes.contains("attribute.public_key = \(key.publicKey.base64URL)"))
        #expect(attributes.contains("attribute.label = seen by secret-tool"))
        #expect(attributes.contains { $0.hasPrefix("attribute.created = ") })

        // The default alias is the harness's "login" collection.
        let search = try run(
            "/usr/bin/gdbus",
            [
                "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.SearchItems", "{'kid': '\(key.kid.base64URL)'}",
            ])
        #expect(String(decoding: search.standardOutput, as: UTF8.self).contains("'/org/freedesktop/secrets/collection/login/"))
    }

    @Test("an item another client changes in place (ItemChanged, same path) changes the change token", .needsSecretService)
    func inPlaceChangeChangesTheToken() throws {
        // A collection of its own: other suites store into the default one meanwhile.
        let keyring = SecretServiceKeyring(collection: .objectPath(try SecretServiceControl.createCollection()), timeout: hangCap)
        let key = DeviceKey.generate()
        try keyring.store(key, label: "changed in place")
        defer { try? keyring.delete(key.kid) }
        // A token once no item changed in the last two seconds (Modified counts whole seconds).
        func settledToken() -> KeyringChangeToken? {
            for _ in 0..<60 {
                if let token = keyring.changeToken() { return token }
                usleep(100_000)
            }
            return nil
        }
        let before = try #require(settledToken())
        #expect(keyring.changeToken() == before, "nothing changed")
        let search = try run(
            "/usr/bin/gdbus",
            [
                "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.SearchItems", "{'kid': '\(key.kid.base64URL)'}",
            ])
        let reply = String(decoding: search.standardOutput, as: UTF8.self)
        let path = try #require(reply.split(separator: "'").first { $0.hasPrefix("/org/freedesktop/secrets/collection/") })
        let set = try run(
            "/usr/bin/gdbus",
            [
                "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", String(path), "--method",
                "org.freedesktop.DBus.Properties.Set", "org.freedesktop.Secret.Item", "Label", "<'relabelled by another client'>",
            ])
        #expect(set.status == 0, "\(set.errorText)")
        #expect(keyring.changeToken() == nil, "a change of this second is not settled yet")
        let after = try #require(settledToken())
        #expect(after != before)
    }

    @Test("a locked collection is key_unavailable within 2 s, and the key decrypts again once it is unlocked", .needsSecretService)
    func lockedCollection() throws {
        let collection = try SecretServiceControl.createCollection()
        let keyring = SecretServiceKeyring(collection: .objectPath(collection), timeout: hangCap)
        let key = DeviceKey.generate()
        try keyring.store(key, label: "lock test")
        let push = try sealedPush(for: key)
        #expect(decryptionFailure(push, with: keyring) == nil)

        try SecretServiceControl.lock(collection)
        let (error, duration) = elapsed { keyringError { try keyring.key(for: key.kid) } }
        guard case .locked? = error else {
            Issue.record("a locked collection gave \(String(describing: error)), not .locked")
            return
        }
        print("lock -> key_unavailable: key(for:) answered .locked in \(duration)")
        #expect(duration < hangCap)
        #expect(decryptionFailure(push, with: keyring) == .keyUnavailable)
        #expect(isLocked(keyringError { try keyring.list() }))
        #expect(isLocked(keyringError { try keyring.store(DeviceKey.generate(), label: "while locked") }))
        #expect(isLocked(keyringError { try keyring.delete(key.kid) }))

        try SecretServiceControl.unlock(collection)
        #expect(decryptionFailure(push, with: keyring) == nil)
        #expect(try keyring.list().map(\.kid) == [key.kid])
    }

    @Test("a collection that does not exist holds no keys and is never created", .needsSecretService)
    func missingCollection() throws {
        let path = "/org/freedesktop/secrets/collection/kindly_missing_\(UInt32.random(in: 0...UInt32.max))"
        let keyring = SecretServiceKeyring(collection: .objectPath(path), timeout: hangCap)
        let key = DeviceKey.generate()
        #expect(keyringError { try keyring.key(for: key.kid) } == .notFound(key.kid))
        #expect(try keyring.list().isEmpty)
        guard case .io(let message)? = keyringError({ try keyring.store(key, label: "nowhere") }) else {
            Issue.record("storing into a missing collection did not fail with .io")
            return
        }
        #expect(message.contains("does not exist"))
    }

    @Test("many threads storing and looking up at once lose nothing", .needsSecretService)
    func concurrentStoresAndLookUps() throws {
        let threads = 8
        let keysPerThread = 4
        let keys = (0..<threads * keysPerThread).map { _ in DeviceKey.generate() }
        // Half the threads share this test's keyring (one connection); the others bring their own.
        let failures = onThreads(threads) { index in
            let keyring = index.isMultiple(of: 2) ? self.keyring : SecretServiceKeyring(timeout: hangCap)
            for key in keys[(index * keysPerThread)..<((index + 1) * keysPerThread)] {
                try keyring.store(key, label: "concurrent \(index)")
                guard try keyring.key(for: key.kid).secretKey == key.secretKey else {
                    throw KeyringError.io("a different secret came back for \(key.kid)")
                }
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        let listed = Set(try keyring.list().map(\.kid))
        for key in keys {
            #expect(listed.contains(key.kid))
            #expect(try keyring.key(for: key.kid).secretKey == key.secretKey)
            try keyring.delete(key.kid)
        }
    }
}

/// libsecret registers its GLib types lazily and not thread-safely, so the race is on a process's
/// very first calls. These tests start fresh copies of the test process in which several threads
/// make those first calls at the same instant.
@Suite("Secret Service keyring on a process's first use", .offThePool)
struct SecretServiceKeyringFirstUseTests {
    static let childVariable = "KINDLY_PUSH_TEST_FIRST_USE_CHILD"

    @Test("many threads making a fresh process's first libsecret calls at once all succeed", .needsSecretService)
    func firstUseInFreshProcesses() throws {
        let testProcess = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childVariable] = "1"
        for _ in 0..<5 {
            let output = try run(
                testProcess, ["--testing-library", "swift-testing", "--filter", "SecretServiceKeyringFirstUseTests/childProcess"],
                environment: environment)
            // Swift Testing reports on standard error.
            #expect(output.status == 0, "\(output.errorText)")
            #expect(output.errorText.contains("Test run with 1 test"), "the child ran no test: \(output.errorText)")
        }
    }

    @Test(
        "(inside a fresh test process) threads store, look up and delete at once",
        .enabled(if: ProcessInfo.processInfo.environment[childVariable] == "1", "runs only inside the fresh processes of the test above"))
    func childProcess() {
        let failures = onThreads(8) { index in
            let keyring = SecretServiceKeyring(timeout: hangCap)
            let key = DeviceKey.generate()
            try keyring.store(key, label: "first use \(index)")
            guard try keyring.key(for: key.kid).secretKey == key.secretKey else {
                throw KeyringError.io("a different secret came back for \(key.kid)")
            }
            try keyring.delete(key.kid)
        }
        #expect(failures.isEmpty, "\(failures)")
    }
}

/// Outside any Secret Service: these need no bus at all and always run.
@Suite("Secret Service keyring without a usable bus", .offThePool)
struct SecretServiceKeyringUnreachableTests {
    @Test("a bus address with nobody listening is key_unavailable (unreachable) at once")
    func deadBus() throws {
        let folder = try TemporaryFolder()
        let keyring = SecretServiceKeyring(busAddress: "unix:path=\(folder.path)/no-bus-here")
        let kid = DeviceKey.generate().kid
        let (error, duration) = elapsed { keyringError { try keyring.key(for: kid) } }
        #expect(isUnreachable(error), "\(String(describing: error))")
        #expect(duration < hangCap)
        #expect(isUnreachable(keyringError { try keyring.list() }))
        #expect(isUnreachable(keyringError { try keyring.store(DeviceKey.generate(), label: "x") }))
        #expect(!SecretServiceKeyring.sessionBusAnswers(busAddress: "unix:path=\(folder.path)/no-bus-here"))
        #expect(decryptionFailure(try sealedPush(for: DeviceKey.generate()), with: keyring) == .keyUnavailable)
    }

    @Test("a bus that accepts the connection but never answers costs the time budget, not more")
    func silentBus() throws {
        let folder = try TemporaryFolder()
        let socketPath = "\(folder.path)/silent-bus"
        let listener = try SilentListener(path: socketPath)
        defer { listener.close() }
        let keyring = SecretServiceKeyring(busAddress: "unix:path=\(socketPath)")
        let (error, duration) = elapsed { keyringError { try keyring.key(for: DeviceKey.generate().kid) } }
        #expect(isUnreachable(error), "\(String(describing: error))")
        print("silent bus -> key_unavailable: key(for:) answered .unreachable in \(duration)")
        #expect(duration < hangCap)
        let (answers, checkDuration) = elapsed {
            SecretServiceKeyring.sessionBusAnswers(busAddress: "unix:path=\(socketPath)", timeout: .milliseconds(300))
        }
        #expect(!answers)
        #expect(checkDuration < hangCap)
    }

    @Test("a Secret Service that owns its name but never answers is key_unavailable within 2 s", .needsSecretService)
    func hungService() throws {
        let bus = try TestBus()
        let service = try HungSecretService(busAddress: bus.address)
        defer { service.stop() }
        let keyring = SecretServiceKeyring(busAddress: bus.address)
        let kid = DeviceKey.generate().kid
        let (error, duration) = elapsed { keyringError { try keyring.key(for: kid) } }
        #expect(isUnreachable(error), "\(String(describing: error))")
        print("hung Secret Service -> key_unavailable: key(for:) answered .unreachable in \(duration)")
        #expect(duration < hangCap)
        let (storeError, storeDuration) = elapsed { keyringError { try keyring.store(DeviceKey.generate(), label: "x") } }
        #expect(isUnreachable(storeError))
        #expect(storeDuration < hangCap)
    }
}

/// The CI guard: CI must run the Secret Service tests, so a CI run without the harness fails here.
@Suite("Secret Service test harness", .offThePool)
struct SecretServiceKeyringHarnessTests {
    @Test("in CI, a real Secret Service was started for the tests", .enabled(if: SecretServiceTestEnvironment.isRequired))
    func startedInCI() {
        #expect(
            SecretServiceTestEnvironment.isRunning,
            "CI=true but the Secret Service was not started: run the tests as tools/with-secret-service swift test")
    }
}

// MARK: - Helpers

private func isLocked(_ error: KeyringError?) -> Bool {
    if case .locked? = error { return true }
    return false
}

private func isUnreachable(_ error: KeyringError?) -> Bool {
    if case .unreachable? = error { return true }
    return false
}

/// Drives the harness's gnome-keyring without prompts (tools/secret-service-control, gdbus).
enum SecretServiceControl {
    static let tool = packageRoot.appendingPathComponent("tools/secret-service-control").path

    /// A new collection of its own, unlocked, protected by the harness's password.
    static func createCollection() throws -> String {
        let output = try run(tool, ["create", "kindly test \(UInt32.random(in: 0...UInt32.max))"])
        guard output.status == 0 else { throw ControlError(output.errorText) }
        return String(decoding: output.standardOutput, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Locks with the Secret Service's own method, org.freedesktop.Secret.Service.Lock.
    static func lock(_ collection: String) throws {
        let output = try run(
            "/usr/bin/gdbus",
            [
                "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.Lock", "['\(collection)']",
            ])
        guard output.status == 0 else { throw ControlError(output.errorText) }
    }

    /// Unlocks with the password, through gnome-keyring's interface for this (the standard
    /// Unlock always wants a prompt).
    static func unlock(_ collection: String) throws {
        let output = try run(tool, ["unlock", collection])
        guard output.status == 0 else { throw ControlError(output.errorText) }
    }

    struct ControlError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// A process that owns org.freedesktop.secrets on `busAddress` and never answers a call.
final class HungSecretService {
    let process = Process()
    let input = Pipe()

    init(busAddress: String) throws {
        process.executableURL = URL(fileURLWithPath: SecretServiceControl.tool)
        process.arguments = ["hang"]
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        guard try readLine(from: output.fileHandleForReading) == "ready" else {
            throw SecretServiceControl.ControlError("the hung service did not start")
        }
    }

    /// Closing its standard input ends it.
    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// A Unix socket that accepts connections (into its backlog) and never reads or writes.
final class SilentListener {
    private var descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: Array(path.utf8.prefix(buffer.count - 1)) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0, listen(descriptor, 16) == 0 else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
    }

    func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
    }
}

/// The first line a child prints.
private func readLine(from handle: FileHandle) throws -> String {
    var line: [UInt8] = []
    while true {
        guard let byte = try handle.read(upToCount: 1), let first = byte.first else { break }
        if first == UInt8(ascii: "\n") { break }
        line.append(first)
    }
    return String(decoding: line, as: UTF8.self)
}

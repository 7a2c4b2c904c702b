import Foundation
import KindlyPushTesting
import Testing

@testable import KindlyPush
@testable import KindlyPushCore

/// `CachingKeyring` follows changes that another process makes to its keyring.
@Suite("Caching keyring: changes made elsewhere", .offThePool)
struct CachingKeyringChangesTests {
    /// A file keyring in a folder of its own, with one key and one pinned sender.
    final class Folder {
        let url: URL
        let keyring: FileKeyring
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()

        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-changes-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            keyring = FileKeyring(folder: url.appendingPathComponent("keys").path)
            try keyring.store(key, label: "test")
            try keyring.pinSender(sender.publicKey, label: "test")
        }

        deinit { try? FileManager.default.removeItem(at: url) }
    }

    static func caching(_ base: any Keyring, _ clock: ManualClock) -> CachingKeyring {
        CachingKeyring(
            base, failureLifetime: .seconds(3), retryInterval: .seconds(3), changeCheckInterval: .milliseconds(500), clock: clock)
    }

    @Test("a pin and a key removed by another process are dropped at the next check, with their version 2 secret")
    func fileKeyringChangesFollowed() throws {
        let folder = try Folder()
        let clock = ManualClock()
        let keyring = Self.caching(folder.keyring, clock)
        // The first check, one interval after the start, drops what was read before it.
        clock.advance(by: .milliseconds(500))
        #expect(try keyring.key(for: folder.key.kid).kid == folder.key.kid)
        #expect(try keyring.pinnedSenders().map(\.sid) == [folder.sender.sid])
        _ = try SenderSecretCache.shared.binding(device: folder.key, sender: folder.sender.publicKey)
        #expect(SenderSecretCache.shared.contains(kid: folder.key.kid, sid: folder.sender.sid))

        // Another process unpins (a plain unlink: nothing in this process is told).
        #expect(unlink(folder.keyring.sendersFolder + "/" + folder.sender.sid.base64URL + ".json") == 0)
        clock.advance(by: .milliseconds(499))
        #expect(try keyring.pinnedSenders().map(\.sid) == [folder.sender.sid], "checked before the interval")
        clock.advance(by: .milliseconds(1))
        // The last pin gone by hand, the marker keeps pinned mode.
        #expect(throws: KeyringError.self) { try keyring.pinnedSenders() }
        #expect(!SenderSecretCache.shared.contains(kid: folder.key.kid, sid: folder.sender.sid), "the secret of a dropped pin is kept")

        // And deletes the key file (loaded again after the drop).
        #expect(try keyring.key(for: folder.key.kid).kid == folder.key.kid)
        #expect(unlink(folder.keyring.folder + "/" + folder.key.kid.base64URL + ".json") == 0)
        #expect(try keyring.key(for: folder.key.kid).kid == folder.key.kid)
        clock.advance(by: .milliseconds(500))
        #expect(throws: KeyringError.notFound(folder.key.kid)) { try keyring.key(for: folder.key.kid) }
    }

    @Test(
        "with no change between checks nothing is read again; one that cannot tell now (nil) is read again at each check, one that keeps no fingerprint once its time-to-live has passed"
    )
    func tokensDecideRereads() throws {
        let key = DeviceKey.generate()
        let clock = ManualClock()
        let counted = ControllableKeyring(keys: [key])
        let keyring = Self.caching(counted, clock)
        #expect(try keyring.key(for: key.kid).kid == key.kid)
        for _ in 0..<5 {
            clock.advance(by: .seconds(1))
            #expect(try keyring.key(for: key.kid).kid == key.kid)
        }
        // Once before the first check, once after it dropped that, then never again.
        #expect(counted.lookupsStarted == 2)

        // A keyring that cannot tell now (nil: a failed reading) is read again at each check.
        let unsure = CannotTell()
        try unsure.inner.store(key, label: "test")
        let rereadingUnsure = Self.caching(unsure, clock)
        for _ in 0..<5 {
            clock.advance(by: .seconds(1))
            #expect(try rereadingUnsure.key(for: key.kid).kid == key.kid)
        }
        #expect(unsure.inner.lookupCount == 5)

        // A keyring that keeps no fingerprint (one written before change tokens: the default,
        // `untracked`) is read again once its time-to-live (5 s from the start, then from each
        // drop) has passed, never at each check (it once was, so a slow
        // keyring was read for every push).
        let silent = PinnedSenderTests.DeviceKeysOnly()
        #expect(silent.changeToken() == .untracked)
        try silent.inner.store(key, label: "test")
        let rereading = Self.caching(silent, clock)
        #expect(rereading.untrackedLifetime == .seconds(5))
        var reads: [Int] = []
        for _ in 0..<11 {
            clock.advance(by: .seconds(1))
            #expect(try rereading.key(for: key.kid).kid == key.kid)
            reads.append(silent.inner.lookupCount)
        }
        // Read at 1 s, dropped and read again at 5 s and at 10 s.
        #expect(reads == [1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3])
    }

    @Test("a change that returns while a slow token reading is under way is followed one interval after the reading began")
    func slowTokenReadingKeepsTheInterval() throws {
        let key = DeviceKey.generate()
        let clock = ManualClock()
        let slow = SlowToken(clock: clock)
        try slow.inner.store(key, label: "test")
        let keyring = Self.caching(slow, clock)
        #expect(try keyring.key(for: key.kid).kid == key.kid)
        // The first check (500 ms) reads the first token at once.
        clock.advance(by: .milliseconds(500))
        #expect(try keyring.key(for: key.kid).kid == key.kid)
        // The check at 1,000 ms reads the token of before the change; the reading takes 400 ms
        // and the change (the key deleted) returns 100 ms into it, at 1,100 ms.
        slow.slowReading = { try? slow.inner.delete(key.kid) }
        clock.advance(by: .milliseconds(500))
        #expect(try keyring.key(for: key.kid).kid == key.kid, "the reading saw the keyring of before the change")
        // 500 ms after the change returned (1,600 ms), a look-up must not give the key: counted
        // from the reading's end (1,900 ms), the next check would not be due yet.
        clock.advance(by: .milliseconds(200))
        #expect(throws: KeyringError.notFound(key.kid)) { try keyring.key(for: key.kid) }
    }

    /// A keyring whose token is its count of changes. While `slowReading` is set, the next reading
    /// takes 400 ms of `clock`, runs `slowReading` 100 ms into it (a change made meanwhile,
    /// counted) and gives the token of the moment it began.
    final class SlowToken: Keyring, @unchecked Sendable {
        let name = "slow-token"
        let inner = InMemoryKeyring()
        let clock: ManualClock
        var slowReading: (() -> Void)?
        private var changes = 0

        init(clock: ManualClock) { self.clock = clock }

        func store(_ key: DeviceKey, label: String) throws(KeyringError) { try inner.store(key, label: label) }
        func key(for kid: KeyID) throws(KeyringError) -> DeviceKey { try inner.key(for: kid) }
        func list() throws(KeyringError) -> [KeyringEntry] { try inner.list() }
        func delete(_ kid: KeyID) throws(KeyringError) { try inner.delete(kid) }
        func changeToken() -> KeyringChangeToken? {
            let token = KeyringChangeToken("\(changes)")
            if let change = slowReading {
                slowReading = nil
                clock.advance(by: .milliseconds(100))
                change()
                changes += 1
                clock.advance(by: .milliseconds(300))
            }
            return token
        }
    }

    /// A keyring whose change token is always `nil`: it can never tell now.
    struct CannotTell: Keyring {
        let name = "cannot-tell"
        let inner = InMemoryKeyring()
        func store(_ key: DeviceKey, label: String) throws(KeyringError) { try inner.store(key, label: label) }
        func key(for kid: KeyID) throws(KeyringError) -> DeviceKey { try inner.key(for: kid) }
        func list() throws(KeyringError) -> [KeyringEntry] { try inner.list() }
        func delete(_ kid: KeyID) throws(KeyringError) { try inner.delete(kid) }
        func changeToken() -> KeyringChangeToken? { nil }
    }

    /// A keyring whose look-ups, once `holds` is set, read the key and then wait for `answer`
    /// before returning it: a look-up that read the keyring just before a change.
    final class LateAnswer: Keyring {
        let name = "late-answer"
        let inner = InMemoryKeyring()
        let holds = Locked(false)
        let reading = DispatchSemaphore(value: 0)
        let answer = DispatchSemaphore(value: 0)
        func store(_ key: DeviceKey, label: String) throws(KeyringError) { try inner.store(key, label: label) }
        func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
            let key = try inner.key(for: kid)
            if holds.withLock({ $0 }) {
                reading.signal()
                answer.wait()
            }
            return key
        }
        func list() throws(KeyringError) -> [KeyringEntry] { try inner.list() }
        func delete(_ kid: KeyID) throws(KeyringError) { try inner.delete(kid) }
        func changeToken() -> KeyringChangeToken? { inner.changeToken() }
    }

    @Test("a look-up that read the keyring before a change does not put its answer back after the drop")
    func lateAnswerIsNotKept() throws {
        let key = DeviceKey.generate()
        let clock = ManualClock()
        let base = LateAnswer()
        try base.inner.store(key, label: "test")
        let keyring = Self.caching(base, clock)
        base.holds.withLock { $0 = true }
        let first = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? keyring.key(for: key.kid)
            first.signal()
        }
        #expect(base.reading.wait(timeout: .now() + 10) == .success)
        base.holds.withLock { $0 = false }
        // Deleted elsewhere meanwhile; a check on another thread drops the caches.
        try base.inner.delete(key.kid)
        clock.advance(by: .milliseconds(500))
        let second = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? keyring.pinnedSenders()
            second.signal()
        }
        Thread.sleep(forTimeInterval: 0.2)
        base.answer.signal()
        #expect(first.wait(timeout: .now() + 10) == .success)
        #expect(second.wait(timeout: .now() + 10) == .success)
        #expect(throws: KeyringError.notFound(key.kid)) { try keyring.key(for: key.kid) }
    }
}

import Foundation
import KindlyPush
import KindlyPushBase
import KindlyPushCore
import KindlyPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A keyring whose look-ups (a key, the pins) each take `seconds` on a ``ManualClock`` (moved
/// on, no wait), or, with no clock, block until the test calls ``release()`` (at most 60 s). It
/// has no `changeToken()` of its own: the protocol's default (``KeyringChangeToken/untracked``),
/// a keyring that keeps no fingerprint.
final class SlowKeyring: Keyring {
    let name = "slow"
    let inner: InMemoryKeyring
    let seconds: Double
    let clock: ManualClock?
    /// Look-ups begun, and look-ups that have returned.
    let started = Locked(0)
    let finished = Locked(0)
    /// Set by ``release()``: blocked look-ups return.
    let released = Locked(false)

    init(keys: [DeviceKey], seconds: Double = 0, clock: ManualClock? = nil) {
        inner = InMemoryKeyring(keys: keys)
        self.seconds = seconds
        self.clock = clock
    }

    /// Lets every blocked look-up (and every later one) return.
    func release() { released.withLock { $0 = true } }

    private func slowly<T>(_ body: () throws(KeyringError) -> T) throws(KeyringError) -> T {
        started.withLock { $0 += 1 }
        defer { finished.withLock { $0 += 1 } }
        if let clock {
            clock.advance(by: .milliseconds(Int(seconds * 1000)))
        } else {
            let deadline = ContinuousClock.now + .seconds(60)
            while !released.withLock({ $0 }), ContinuousClock.now < deadline { usleep(1000) }
        }
        return try body()
    }

    func store(_ key: DeviceKey, label: String) throws(KeyringError) { try inner.store(key, label: label) }
    func key(for kid: KeyID) throws(KeyringError) -> DeviceKey { try slowly { () throws(KeyringError) in try inner.key(for: kid) } }
    func list() throws(KeyringError) -> [KeyringEntry] { try inner.list() }
    func delete(_ kid: KeyID) throws(KeyringError) { try inner.delete(kid) }
    func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        try slowly { () throws(KeyringError) in try inner.pinnedSenders() }
    }
}

/// The library's stream with a keyring that blocks, and with one that
/// gives no change token.
@Suite("The stream and a slow keyring", .offThePool)
struct PushStreamKeyringTests {
    static func pushes(_ count: Int) throws -> [[UInt8]] {
        try (0..<count).map { index in
            try KindlyPushSealer.seal(DecryptedPayload(chatId: "c", title: "t\(index)", body: "b"), for: PushStreamTests.key.publicKey)
        }
    }

    @Test(
        "a stream cancelled while a look-up blocks ends without waiting for it (threads and reading task too); the abandoned look-up returns harmlessly",
        // The wait for the stream's first look-up has no bound of its own (bounds of 30 s and
        // 120 s ran out in CI's AddressSanitizer pass, the cooperative pool held by other
        // tests): a stream that never asks the keyring fails here instead of holding the run.
        .timeLimit(.minutes(10)), arguments: [false, true])
    func cancelledWhileLookupBlocks(caching: Bool) async throws {
        // The look-up blocks until the test releases it: "ended without waiting" is "ended while
        // the look-up was still blocked", whatever the machine's load (a bound in milliseconds
        // failed in CI at 0.6 s with the cooperative pool busy with other tests).
        let keyring = SlowKeyring(keys: [PushStreamTests.key])
        defer { keyring.release() }
        let decryption = KindlyPushDecryption(keyring: caching ? CachingKeyring(keyring) : keyring)
        let documents = CountingDocuments(try Self.pushes(20))
        let threads = Locked(0)
        let ended = Locked(false)
        let results = Locked(0)
        let task = BatchRunnerThreads.$counter.withValue(threads) {
            Task {
                for await _ in decryption.decryptStream(documents, jobs: 2) { results.withLock { $0 += 1 } }
                ended.withLock { $0 = true }
            }
        }
        while keyring.started.withLock({ $0 }) == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        try await Task.sleep(nanoseconds: 200_000_000)
        task.cancel()
        // Not `await task.value`: a stream that waited for the look-up would hold the test.
        let deadline = ContinuousClock.now + .seconds(30)
        while !ended.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(nanoseconds: 2_000_000) }
        #expect(ended.withLock { $0 }, "the cancelled stream had not ended 30 s after its cancellation, its look-up still blocked")
        #expect(keyring.finished.withLock { $0 } < keyring.started.withLock { $0 }, "no look-up was still blocked when the stream ended")
        #expect(results.withLock { $0 } == 0, "a result came after the look-up was abandoned")
        try await PushStreamTests.expectEnded(documents, threads: threads)
        // The abandoned look-up returns once released: nothing waits for it, nothing breaks.
        keyring.release()
        let returned = ContinuousClock.now + .seconds(10)
        while keyring.finished.withLock({ $0 }) < keyring.started.withLock({ $0 }), ContinuousClock.now < returned {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(keyring.finished.withLock { $0 } == keyring.started.withLock { $0 })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(threads.withLock { $0 } == 0)
        #expect(results.withLock { $0 } == 0)
    }

    @Test("behind CachingKeyring, a keyring with no change token is read once per time-to-live, not once per push")
    func noTokenCached() async throws {
        let clock = ManualClock()
        // Each look-up moves the clock on 2 s: a slow keyring, which a read per push would show.
        let keyring = SlowKeyring(keys: [PushStreamTests.key], seconds: 2, clock: clock)
        let caching = CachingKeyring(
            keyring, failureLifetime: .seconds(3), retryInterval: .seconds(3), changeCheckInterval: .milliseconds(500), clock: clock)
        let decryption = KindlyPushDecryption(keyring: caching)
        var decrypted = 0
        for await result in decryption.decryptStream(CountingDocuments(try Self.pushes(20)), jobs: 1) {
            if case .decrypted = result.outcome { decrypted += 1 }
        }
        #expect(decrypted == 20)
        // The key and the pins, each once (4 s of the clock, within the time-to-live).
        #expect(keyring.started.withLock { $0 } == 2, "20 pushes read the keyring \(keyring.started.withLock { $0 }) times")
        // Past the time-to-live it is read again (once), so a change made elsewhere is followed.
        clock.advance(by: .seconds(60))
        for await result in decryption.decryptStream(CountingDocuments(try Self.pushes(5)), jobs: 1) {
            if case .decrypted = result.outcome { decrypted += 1 }
        }
        #expect(decrypted == 25)
        #expect(keyring.started.withLock { $0 } == 4)
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

/// The negative cache and circuit breaker of `CachingKeyring`.
@Suite("Caching keyring: failures remembered", .offThePool)
struct CachingKeyringTests {
    static func caching(_ base: any Keyring, _ clock: ManualClock) -> CachingKeyring {
        CachingKeyring(base, failureLifetime: .seconds(3), retryInterval: .seconds(5), changeCheckInterval: .seconds(3600), clock: clock)
    }

    @Test("a kid that is not there is asked once per failure lifetime, and a key stored meanwhile is found after it")
    func notFoundRemembered() throws {
        let base = ControllableKeyring()
        let clock = ManualClock()
        let keyring = Self.caching(base, clock)
        let key = DeviceKey.generate()
        for _ in 0..<5 { #expect(throws: KeyringError.notFound(key.kid)) { try keyring.key(for: key.kid) } }
        #expect(base.lookupsStarted == 1)
        try base.inner.store(key, label: "late")
        clock.advance(by: .milliseconds(2999))
        #expect(throws: KeyringError.notFound(key.kid)) { try keyring.key(for: key.kid) }
        clock.advance(by: .milliseconds(1))
        #expect(try keyring.key(for: key.kid).kid == key.kid)
        #expect(base.lookupsStarted == 2)
        // Another kid's failure does not hide it, nor the other way round.
        #expect(throws: KeyringError.self) { try keyring.key(for: DeviceKey.generate().kid) }
        #expect(try keyring.key(for: key.kid).kid == key.kid)
        #expect(base.lookupsStarted == 3)
    }

    @Test("after a time-out every kid fails at once until the retry interval, then one look-up tries again")
    func breakerOpensAndCloses() throws {
        let key = DeviceKey.generate()
        let base = ControllableKeyring(keys: [key])
        let clock = ManualClock()
        let keyring = Self.caching(base, clock)
        let timeout = KeyringError.unreachable("the Secret Service did not answer within 1.5 s")
        base.failure = timeout
        #expect(throws: timeout) { try keyring.key(for: DeviceKey.generate().kid) }
        #expect(base.lookupsStarted == 1)
        base.failure = nil
        for _ in 0..<10 { #expect(throws: timeout) { try keyring.key(for: key.kid) } }
        #expect(base.lookupsStarted == 1)
        clock.advance(by: .seconds(5))
        #expect(try keyring.key(for: key.kid).kid == key.kid)
        #expect(base.lookupsStarted == 2)
        // Closed again: another kid is asked at once.
        #expect(throws: KeyringError.self) { try keyring.key(for: DeviceKey.generate().kid) }
        #expect(base.lookupsStarted == 3)
    }

    @Test("threads that need keys while the keyring hangs wait for that one look-up, not one each")
    func oneLookupAtATime() throws {
        let base = ControllableKeyring()
        base.failure = .unreachable("did not answer")
        base.blocksLookups = true
        let keyring = Self.caching(base, ManualClock())
        let failures = Locked(0)
        let done = DispatchGroup()
        for _ in 0..<8 {
            done.enter()
            Thread.detachNewThread {
                do throws(KeyringError) {
                    _ = try keyring.key(for: DeviceKey.generate().kid)
                } catch {
                    if case .unreachable = error { failures.withLock { $0 += 1 } }
                }
                done.leave()
            }
        }
        // Give every thread time to arrive; only one of them reaches the keyring.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(base.lookupsStarted == 1)
        base.release()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(failures.withLock { $0 } == 8)
        #expect(base.lookupsStarted == 1)
    }
}

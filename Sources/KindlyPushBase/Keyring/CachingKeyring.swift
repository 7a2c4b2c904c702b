internal import KindlyPushCore

/// A keyring that remembers every key it has loaded, so that a stream of pushes loads each
/// `kid` once per run instead of once per push, and that remembers failures for a short while,
/// so that a keyring that does not answer costs one time budget, not one per push.
///
/// - A key, once loaded, is kept (in its wiped secure storage, released with the cache).
/// - A failed look-up (no such key, a locked keyring, a storage error) is remembered for that
///   `kid` for `failureLifetime` (3 s by default): the pushes for it in that time fail at once
///   with the same error, and the keyring is asked again after it, so a key stored or unlocked
///   meanwhile is found.
/// - A keyring that cannot be reached (``KeyringError/unreachable(_:)``: no bus, or a Secret
///   Service that did not answer within its time budget) opens a circuit breaker: for
///   `retryInterval` (3 s by default) every look-up of a `kid` not loaded yet fails at once
///   with that error, then one look-up tries the keyring again, and the breaker closes when it
///   answers.
/// - One look-up at a time reaches the underlying keyring: a thread that needs a key while
///   another is asking waits for that answer and then reads the caches, so N threads (`--jobs N`)
///   facing a keyring that hangs wait one time budget together, not N.
/// - The pinned sender keys are read once; pins added or removed through this keyring refresh the
///   remembered list, pins changed elsewhere are seen by the next run. Reading them goes through
///   the same breaker: while it is open they fail at once, and a time-out reading them opens it.
public final class CachingKeyring: Keyring {
    /// The keyring asked on a miss.
    public let base: any Keyring
    /// How long a failed look-up of one `kid` is remembered.
    package let failureLifetime: Duration
    /// How long look-ups fail at once after the keyring could not be reached.
    package let retryInterval: Duration
    private let clock: any KindlyClock

    private struct Failure: Sendable {
        let error: KeyringError
        let until: ContinuousClock.Instant
    }

    private struct State: Sendable {
        var keys: [KeyID: DeviceKey] = [:]
        var failures: [KeyID: Failure] = [:]
        var outage: Failure?
    }

    private let state = Locked(State())
    private let senders = Locked<[PinnedSender]?>(nil)
    /// Held while the underlying keyring is asked, so that one look-up at a time reaches it.
    private let lookups = Locked(())

    public var name: String { base.name }

    /// A cache in front of `base`, remembering failures for 3 s.
    public convenience init(_ base: any Keyring) {
        self.init(base, failureLifetime: .seconds(3), retryInterval: .seconds(3), clock: SystemKindlyClock())
    }

    /// A cache in front of `base` with the given lifetimes, reading time from `clock`.
    package init(_ base: any Keyring, failureLifetime: Duration, retryInterval: Duration, clock: any KindlyClock) {
        self.base = base
        self.failureLifetime = failureLifetime
        self.retryInterval = retryInterval
        self.clock = clock
    }

    public func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        if let known = remembered(kid) { return try known.get() }
        return try lookups.withLock { (_) throws(KeyringError) -> DeviceKey in
            // Another thread may have had the answer while this one waited.
            if let known = remembered(kid) { return try known.get() }
            let key: DeviceKey
            do throws(KeyringError) {
                key = try base.key(for: kid)
            } catch {
                let now = clock.now
                state.withLock { state in
                    if case .unreachable = error {
                        state.outage = Failure(error: error, until: now + retryInterval)
                    } else {
                        state.failures[kid] = Failure(error: error, until: now + failureLifetime)
                    }
                }
                throw error
            }
            state.withLock { state in
                state.keys[kid] = key
                state.failures[kid] = nil
                state.outage = nil
            }
            return key
        }
    }

    /// The key, or the failure, that the caches hold for `kid` now; `nil` when the keyring must be asked.
    private func remembered(_ kid: KeyID) -> Result<DeviceKey, KeyringError>? {
        state.withLock { state in
            if let key = state.keys[kid] { return .success(key) }
            // The clock is read only on a miss: a loaded key costs one dictionary look-up.
            let now = clock.now
            if let outage = state.outage, now < outage.until { return .failure(outage.error) }
            if let failure = state.failures[kid] {
                if now < failure.until { return .failure(failure.error) }
                state.failures[kid] = nil
            }
            return nil
        }
    }

    public func store(_ key: DeviceKey, label: String) throws(KeyringError) {
        try base.store(key, label: label)
        state.withLock { _ = $0.failures.removeValue(forKey: key.kid) }
    }

    public func list() throws(KeyringError) -> [KeyringEntry] {
        try base.list()
    }

    public func delete(_ kid: KeyID) throws(KeyringError) {
        try base.delete(kid)
        // Evicted after the delete: a look-up racing it cannot put the key back for good.
        state.withLock { _ = $0.keys.removeValue(forKey: kid) }
        SenderSecretCache.shared.evict(kid: kid)
    }

    /// Pins `key` with `label` (see ``Keyring/pinSender(_:label:)``).
    public func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        try base.pinSender(key, label: label)
        senders.withLock { $0 = nil }
    }

    /// Every pinned sender key, oldest first (see ``Keyring/pinnedSenders()``).
    public func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        if let pinned = senders.withLock({ $0 }) { return pinned }
        return try lookups.withLock { (_) throws(KeyringError) -> [PinnedSender] in
            if let pinned = senders.withLock({ $0 }) { return pinned }
            let now = clock.now
            if let outage = state.withLock({ $0.outage }), now < outage.until { throw outage.error }
            let pinned: [PinnedSender]
            do throws(KeyringError) {
                pinned = try base.pinnedSenders()
            } catch {
                if case .unreachable = error {
                    state.withLock { $0.outage = Failure(error: error, until: now + retryInterval) }
                }
                throw error
            }
            senders.withLock { $0 = pinned }
            return pinned
        }
    }

    /// Removes the pinned sender key `sid` (see ``Keyring/unpinSender(_:)``).
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        try base.unpinSender(sid)
        senders.withLock { $0 = nil }
        SenderSecretCache.shared.evict(sid: sid)
    }
}

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
/// - The pinned sender keys are read once and remembered; pins added or removed through this
///   keyring refresh the remembered list. Reading them goes through the same breaker: while it is
///   open they fail at once, and a time-out reading them opens it.
/// - Changes made elsewhere (another process's `senders add`, `senders delete`, `keys delete`)
///   are followed: at most every `changeCheckInterval` (0.5 s by default), on the first look-up
///   after it, the keyring's ``Keyring/changeToken()`` is read and compared with the last one.
///   When it differs, or the keyring cannot give one now (`nil`: a failed reading, a locked
///   collection, a change too recent to tell, an open breaker), every remembered key, pin and
///   failure is dropped (the keys' secure storage is wiped as it is released, and their
///   entries in the cache of version 2 secrets go too) and the keyring is read again. So a
///   long-running reader applies a pin or key change within about `changeCheckInterval` plus one
///   reading, never later. A look-up that began before a drop does not put its answer back.
///   Between checks a remembered key costs one dictionary look-up and one clock reading.
/// - A keyring that keeps no fingerprint (its token is ``KeyringChangeToken/untracked``, the
///   protocol's default) cannot be watched: what was read from it is remembered for at most
///   `untrackedLifetime` (5 s by default) after the last drop, then dropped and read again at the
///   next check. A change made elsewhere to such a keyring is
///   applied within about `untrackedLifetime` plus `changeCheckInterval` and one reading; the
///   pushes in between cost no reading (before, every check dropped everything, so a keyring
///   taking 2 s per look-up was read again for every push).
public final class CachingKeyring: Keyring {
    /// The keyring asked on a miss.
    public let base: any Keyring
    /// How long a failed look-up of one `kid` is remembered.
    package let failureLifetime: Duration
    /// How long look-ups fail at once after the keyring could not be reached.
    package let retryInterval: Duration
    /// How often, at most, the keyring's change token is read to follow changes made elsewhere.
    package let changeCheckInterval: Duration
    /// How long what was read from a keyring that keeps no fingerprint is remembered.
    package let untrackedLifetime: Duration
    private let clock: any KindlyClock

    private struct Failure: Sendable {
        let error: KeyringError
        let until: ContinuousClock.Instant
    }

    private struct State: Sendable {
        var keys: [KeyID: DeviceKey] = [:]
        var failures: [KeyID: Failure] = [:]
        var outage: Failure?
        var senders: [PinnedSender]?
        /// Counts the drops: an answer asked for before the last drop is not kept.
        var generation: UInt64 = 0
        /// The change token of the last check; `nil` before the first and when none could be had.
        var token: KeyringChangeToken?
        var nextCheck: ContinuousClock.Instant
        var checking = false
        /// The last drop (or the start): a keyring that keeps no fingerprint is read again
        /// after ``untrackedLifetime`` from it.
        var since: ContinuousClock.Instant
    }

    private let state: Locked<State>
    /// Held while the underlying keyring is asked, so that one look-up at a time reaches it.
    private let lookups = Locked(())

    public var name: String { base.name }

    /// How long a failed look-up of a kid is remembered.
    package static let defaultFailureLifetime: Duration = .seconds(3)
    /// After a time-out, how long look-ups of kids not loaded yet fail at once.
    package static let defaultRetryInterval: Duration = .seconds(3)
    /// How often, at most, the keyring's change token is read.
    package static let defaultChangeCheckInterval: Duration = .milliseconds(500)
    /// How long what was read from a keyring that keeps no fingerprint is remembered.
    package static let defaultUntrackedLifetime: Duration = .seconds(5)

    /// A cache in front of `base`, remembering failures for 3 s and following changes made
    /// elsewhere within 0.5 s (within 5 s for a keyring that keeps no fingerprint).
    public convenience init(_ base: any Keyring) {
        self.init(
            base, failureLifetime: Self.defaultFailureLifetime, retryInterval: Self.defaultRetryInterval,
            changeCheckInterval: Self.defaultChangeCheckInterval, untrackedLifetime: Self.defaultUntrackedLifetime,
            clock: SystemKindlyClock())
    }

    /// A cache in front of `base` with the given lifetimes, reading time from `clock`.
    package init(
        _ base: any Keyring, failureLifetime: Duration, retryInterval: Duration,
        changeCheckInterval: Duration = CachingKeyring.defaultChangeCheckInterval,
        untrackedLifetime: Duration = CachingKeyring.defaultUntrackedLifetime,
        clock: any KindlyClock
    ) {
        self.base = base
        self.failureLifetime = failureLifetime
        self.retryInterval = retryInterval
        self.changeCheckInterval = changeCheckInterval
        self.untrackedLifetime = untrackedLifetime
        self.clock = clock
        // The first check comes one interval after the start and drops what was read before it
        // (there is no earlier token to compare with): a one-shot run never reads a token. A
        // keyring without a token keeps it for `untrackedLifetime` from the start.
        let now = clock.now
        state = Locked(State(nextCheck: now + changeCheckInterval, since: now))
    }

    public func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        if let known = remembered(kid) { return try known.get() }
        return try lookups.whileLocked { () throws(KeyringError) -> DeviceKey in
            // Another thread may have had the answer while this one waited.
            if let known = remembered(kid, checking: false) { return try known.get() }
            let generation = state.withLock { $0.generation }
            let key: DeviceKey
            do throws(KeyringError) {
                key = try base.key(for: kid)
            } catch {
                let now = clock.now
                state.withLock { state in
                    guard state.generation == generation else { return }
                    if case .unreachable = error {
                        state.outage = Failure(error: error, until: now + retryInterval)
                    } else {
                        state.failures[kid] = Failure(error: error, until: now + failureLifetime)
                    }
                }
                throw error
            }
            state.withLock { state in
                guard state.generation == generation else { return }
                state.keys[kid] = key
                state.failures[kid] = nil
                state.outage = nil
            }
            return key
        }
    }

    /// The key, or the failure, that the caches hold for `kid` now; `nil` when the keyring must
    /// be asked. First follows changes made elsewhere when a check is due (and `checking`).
    private func remembered(_ kid: KeyID, checking: Bool = true) -> Result<DeviceKey, KeyringError>? {
        enum Answer {
            case due
            case known(Result<DeviceKey, KeyringError>?)
        }
        let answer = state.withLock { state -> Answer in
            // One clock reading per look-up: a loaded key costs that and one dictionary look-up.
            let now = clock.now
            if checking, !state.checking, now >= state.nextCheck {
                state.checking = true
                return .due
            }
            return .known(Self.lookUp(kid, in: &state, now: now))
        }
        switch answer {
        case .known(let result):
            return result
        case .due:
            followChanges()
            return state.withLock { state in Self.lookUp(kid, in: &state, now: clock.now) }
        }
    }

    /// What the caches hold for `kid` now when that can be told without asking the keyring or
    /// reading its change token (no check is due); `nil` when ``key(for:)`` would have to. For a
    /// caller that must not block (a stream's threads, which can then give up a look-up).
    package func rememberedWithoutAsking(_ kid: KeyID) -> Result<DeviceKey, KeyringError>? {
        state.withLock { state in
            let now = clock.now
            guard state.checking || now < state.nextCheck else { return nil }
            return Self.lookUp(kid, in: &state, now: now)
        }
    }

    /// The remembered pins when no check is due, else `nil` (as ``rememberedWithoutAsking(_:)``).
    package func rememberedPinsWithoutAsking() -> [PinnedSender]? {
        state.withLock { state in
            guard state.checking || clock.now < state.nextCheck else { return nil }
            return state.senders
        }
    }

    /// What `state` holds for `kid` at `now` (an expired failure is forgotten).
    private static func lookUp(_ kid: KeyID, in state: inout State, now: ContinuousClock.Instant) -> Result<DeviceKey, KeyringError>? {
        if let key = state.keys[kid] { return .success(key) }
        if let outage = state.outage, now < outage.until { return .failure(outage.error) }
        if let failure = state.failures[kid] {
            if now < failure.until { return .failure(failure.error) }
            state.failures[kid] = nil
        }
        return nil
    }

    /// Reads the keyring's change token and drops everything remembered when it is not the last
    /// one, when there is none (`nil`: the keyring cannot tell now, or the breaker is open), or,
    /// for a keyring that keeps no fingerprint (``KeyringChangeToken/untracked``), when
    /// ``untrackedLifetime`` has passed since the last drop. Called by the one thread that found
    /// a check due.
    private func followChanges() {
        // The next check is counted from before the token is read: a change that returned after
        // this moment is seen by the first look-up `changeCheckInterval` after it, however long
        // the reading takes (counted from after it, a slow reading would push the next check
        // past that).
        let readAt = clock.now
        let inOutage = state.withLock { state in state.outage.map { readAt < $0.until } ?? false }
        // An open breaker means the keyring does not answer: no token, so nothing stays cached.
        let token = inOutage ? nil : base.changeToken()
        let dropped = state.withLock { state -> (kids: [KeyID], sids: [SenderID]) in
            let now = clock.now
            defer {
                state.checking = false
                state.nextCheck = readAt + changeCheckInterval
            }
            if let token, token.isUntracked {
                // A keyring that keeps no fingerprint: what it gave is kept for a bounded time.
                if now < state.since + untrackedLifetime { return ([], []) }
            } else if let token, token == state.token {
                return ([], [])
            }
            state.token = token
            state.since = now
            return Self.drop(&state)
        }
        Self.evictSecrets(dropped)
    }

    /// Forgets every key, pin and failure (the keys' storage is wiped as it is released).
    private static func drop(_ state: inout State) -> (kids: [KeyID], sids: [SenderID]) {
        let dropped = (kids: Array(state.keys.keys), sids: state.senders?.map(\.sid) ?? [])
        state.keys = [:]
        state.failures = [:]
        state.senders = nil
        state.generation &+= 1
        return dropped
    }

    /// Wipes the version 2 secrets of the dropped keys and pins.
    private static func evictSecrets(_ dropped: (kids: [KeyID], sids: [SenderID])) {
        for kid in dropped.kids { SenderSecretCache.shared.evict(kid: kid) }
        for sid in dropped.sids { SenderSecretCache.shared.evict(sid: sid) }
    }

    /// Follows changes made elsewhere when a check is due.
    private func followChangesIfDue() {
        let due = state.withLock { state -> Bool in
            guard !state.checking, clock.now >= state.nextCheck else { return false }
            state.checking = true
            return true
        }
        if due { followChanges() }
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
        // Evicted after the delete, and a look-up racing it does not put the key back.
        state.withLock { state in
            state.keys[kid] = nil
            state.generation &+= 1
        }
        SenderSecretCache.shared.evict(kid: kid)
    }

    /// Pins `key` with `label` (see ``Keyring/pinSender(_:label:)``).
    public func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        try base.pinSender(key, label: label)
        state.withLock { state in
            state.senders = nil
            state.generation &+= 1
        }
    }

    /// Every pinned sender key, oldest first (see ``Keyring/pinnedSenders()``).
    public func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        followChangesIfDue()
        if let pinned = state.withLock({ $0.senders }) { return pinned }
        return try lookups.whileLocked { () throws(KeyringError) -> [PinnedSender] in
            let (cached, generation) = state.withLock { ($0.senders, $0.generation) }
            if let cached { return cached }
            let now = clock.now
            if let outage = state.withLock({ $0.outage }), now < outage.until { throw outage.error }
            let pinned: [PinnedSender]
            do throws(KeyringError) {
                pinned = try base.pinnedSenders()
            } catch {
                if case .unreachable = error {
                    state.withLock { state in
                        if state.generation == generation { state.outage = Failure(error: error, until: now + retryInterval) }
                    }
                }
                throw error
            }
            state.withLock { state in
                if state.generation == generation { state.senders = pinned }
            }
            return pinned
        }
    }

    /// Removes the pinned sender key `sid` (see ``Keyring/unpinSender(_:)``).
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        try base.unpinSender(sid)
        state.withLock { state in
            state.senders = nil
            state.generation &+= 1
        }
        SenderSecretCache.shared.evict(sid: sid)
    }

    /// The base keyring's token (see ``Keyring/changeToken()``).
    public func changeToken() -> KeyringChangeToken? {
        base.changeToken()
    }
}

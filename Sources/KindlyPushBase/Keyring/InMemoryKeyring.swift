internal import KindlyPushCore

/// A keyring that lives in memory: for services that keep device keys (and the sender keys they
/// pin) in their own secret store and hand them over at start, and for tests.
///
/// It can be locked and unlocked to exercise `key_unavailable`, and counts look-ups so that a
/// test can check that keys are loaded once. Thread-safe.
public final class InMemoryKeyring: Keyring {
    public let name = "memory"

    private struct State {
        var keys: [KeyID: (key: DeviceKey, entry: KeyringEntry)] = [:]
        var senders: [SenderID: PinnedSender] = [:]
        var isLocked = false
        var lookups = 0
        /// Counts the stores, deletes, pins and unpins, for ``changeToken()``.
        var changes: UInt64 = 0
    }

    private let state = Locked(State())

    /// An unlocked keyring holding `keys` and pinning `pinnedSenders` (a key given twice is
    /// pinned once). Given pins are kept as they are, degenerate or not, unlike
    /// ``pinSender(_:label:)``: a test can hold what a keyring pinned before such keys were
    /// refused, and see a push that names one fail authentication.
    public init(keys: [DeviceKey] = [], pinnedSenders: [SenderPublicKey] = []) {
        for key in keys { try? store(key, label: "test key") }
        for sender in pinnedSenders { try? insertPin(sender, label: "test sender") }
    }

    /// While locked every look-up fails with ``KeyringError/locked(_:)``.
    public var isLocked: Bool {
        get { state.withLock { $0.isLocked } }
        set { state.withLock { $0.isLocked = newValue } }
    }

    /// How many times ``key(for:)`` was called.
    public var lookupCount: Int { state.withLock { $0.lookups } }

    public func store(_ key: DeviceKey, label: String) throws(KeyringError) {
        let result: KeyringError? = state.withLock { state in
            if state.isLocked { return .locked("in-memory keyring") }
            if state.keys[key.kid] != nil { return .alreadyExists(key.kid) }
            let entry = KeyringEntry(kid: key.kid, publicKey: key.publicKey, label: label, created: Int64(state.keys.count))
            state.keys[key.kid] = (key, entry)
            state.changes &+= 1
            return nil
        }
        if let result { throw result }
    }

    public func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        let result: Result<DeviceKey, KeyringError> = state.withLock { state in
            state.lookups += 1
            if state.isLocked { return .failure(.locked("in-memory keyring")) }
            guard let stored = state.keys[kid] else { return .failure(.notFound(kid)) }
            return .success(stored.key)
        }
        return try result.get()
    }

    public func list() throws(KeyringError) -> [KeyringEntry] {
        state.withLock { $0.keys.values.map(\.entry).sorted() }
    }

    public func delete(_ kid: KeyID) throws(KeyringError) {
        let removed = state.withLock { state in
            state.changes &+= 1
            return state.keys.removeValue(forKey: kid) != nil
        }
        if !removed { throw .notFound(kid) }
        SenderSecretCache.shared.evict(kid: kid)
    }

    /// Pins `key` with `label` (see ``Keyring/pinSender(_:label:)``).
    public func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        if let problem = key.unusableReason { throw .io("cannot pin the sender key: \(problem)") }
        try insertPin(key, label: label)
    }

    private func insertPin(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        let result: KeyringError? = state.withLock { state in
            if state.isLocked { return .locked("in-memory keyring") }
            if state.senders[key.sid] != nil { return .senderAlreadyPinned(key.sid) }
            state.senders[key.sid] = PinnedSender(publicKey: key, label: label, created: Int64(state.senders.count))
            state.changes &+= 1
            return nil
        }
        if let result { throw result }
    }

    /// Pinned keys are public: they are listed while the keyring is locked, as ``list()`` lists
    /// the keys (the lock stands for secret keys that cannot be read now).
    public func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        state.withLock { $0.senders.values.sorted() }
    }

    /// Removes the pinned sender key `sid` (see ``Keyring/unpinSender(_:)``).
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        let removed = state.withLock { state in
            state.changes &+= 1
            return state.senders.removeValue(forKey: sid) != nil
        }
        if !removed { throw .senderNotFound(sid) }
        SenderSecretCache.shared.evict(sid: sid)
    }

    /// Changes with every store, delete, pin and unpin (see ``Keyring/changeToken()``).
    public func changeToken() -> KeyringChangeToken? {
        let changes = state.withLock { $0.changes }
        return KeyringChangeToken(withUnsafeBytes(of: changes) { Array($0) })
    }
}

internal import KindlyPushCore

/// A keyring that remembers every key it has loaded, so that a stream of pushes loads each
/// `kid` once per run instead of once per push, and the pinned sender keys once. Failures are
/// not remembered: a locked keyring that is unlocked later is asked again. Pins added or removed
/// through this keyring refresh the remembered list; pins changed elsewhere are seen by the next
/// run.
///
/// Cached keys stay in their wiped secure buffers storage and are released with the cache.
public final class CachingKeyring: Keyring {
    /// The keyring asked on a miss.
    public let base: any Keyring
    private let cache = Locked<[KeyID: DeviceKey]>([:])
    private let senders = Locked<[PinnedSender]?>(nil)

    public var name: String { base.name }

    /// A cache in front of `base`.
    public init(_ base: any Keyring) {
        self.base = base
    }

    public func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        if let key = cache.withLock({ $0[kid] }) { return key }
        let key = try base.key(for: kid)
        cache.withLock { $0[kid] = key }
        return key
    }

    public func store(_ key: DeviceKey, label: String) throws(KeyringError) {
        try base.store(key, label: label)
    }

    public func list() throws(KeyringError) -> [KeyringEntry] {
        try base.list()
    }

    public func delete(_ kid: KeyID) throws(KeyringError) {
        try base.delete(kid)
        // Evicted after the delete: a look-up racing it cannot put the key back for good.
        cache.withLock { _ = $0.removeValue(forKey: kid) }
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
        let pinned = try base.pinnedSenders()
        senders.withLock { $0 = pinned }
        return pinned
    }

    /// Removes the pinned sender key `sid` (see ``Keyring/unpinSender(_:)``).
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        try base.unpinSender(sid)
        senders.withLock { $0 = nil }
        SenderSecretCache.shared.evict(sid: sid)
    }
}

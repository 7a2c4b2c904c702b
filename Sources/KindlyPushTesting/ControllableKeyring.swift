internal import Dispatch
public import KindlyPush
internal import KindlyPushCore

/// A keyring that fails or blocks on demand, around an `InMemoryKeyring`: for testing how a
/// service handles a locked keyring, an unreachable Secret Service, or one that hangs.
///
/// ```swift
/// let keyring = ControllableKeyring(keys: [deviceKey])
/// keyring.failure = .locked("test")      // every operation now fails as a locked keyring does
/// keyring.failure = nil
/// keyring.blocksLookups = true           // look-ups wait until release() is called
/// ```
public final class ControllableKeyring: Keyring {
    /// The name reported in errors and listings.
    public let name = "controllable"
    /// The keyring that answers when nothing is injected.
    public let inner: InMemoryKeyring

    private struct State {
        var failure: KeyringError?
        var blocksLookups = false
        var lookupsStarted = 0
    }

    private let state = Locked(State())
    private let gate = DispatchSemaphore(value: 0)

    /// A keyring holding `keys` and pinning `pinnedSenders`, answering normally until told otherwise.
    public init(keys: [DeviceKey] = [], pinnedSenders: [SenderPublicKey] = []) {
        inner = InMemoryKeyring(keys: keys, pinnedSenders: pinnedSenders)
    }

    /// When set, every operation throws this error instead of answering.
    public var failure: KeyringError? {
        get { state.withLock { $0.failure } }
        set { state.withLock { $0.failure = newValue } }
    }

    /// When `true`, each ``key(for:)`` waits until ``release()`` lets it go on.
    public var blocksLookups: Bool {
        get { state.withLock { $0.blocksLookups } }
        set { state.withLock { $0.blocksLookups = newValue } }
    }

    /// How many look-ups have begun (blocked ones included).
    public var lookupsStarted: Int { state.withLock { $0.lookupsStarted } }

    /// Lets one blocked look-up (now or later) go on.
    public func release() {
        gate.signal()
    }

    public func store(_ key: DeviceKey, label: String) throws(KeyringError) {
        if let failure { throw failure }
        try inner.store(key, label: label)
    }

    public func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        let blocks = state.withLock { state in
            state.lookupsStarted += 1
            return state.blocksLookups
        }
        if blocks { gate.wait() }
        if let failure { throw failure }
        return try inner.key(for: kid)
    }

    public func list() throws(KeyringError) -> [KeyringEntry] {
        if let failure { throw failure }
        return try inner.list()
    }

    public func delete(_ kid: KeyID) throws(KeyringError) {
        if let failure { throw failure }
        try inner.delete(kid)
    }

    /// Pins `key` with `label` (see `Keyring/pinSender(_:label:)`).
    public func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        if let failure { throw failure }
        try inner.pinSender(key, label: label)
    }

    /// Every pinned sender key, oldest first (see `Keyring/pinnedSenders()`).
    public func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        if let failure { throw failure }
        return try inner.pinnedSenders()
    }

    /// Removes the pinned sender key `sid` (see `Keyring/unpinSender(_:)`).
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        if let failure { throw failure }
        try inner.unpinSender(sid)
    }

    /// The inner keyring's token, or `nil` (cannot tell) while a failure is injected.
    public func changeToken() -> KeyringChangeToken? {
        failure == nil ? inner.changeToken() : nil
    }
}

internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where device keys live: the Secret Service, a folder of key files, memory; and the sender
/// keys the device pinned (docs/spec/wire-format.md section 7.1).
///
/// Several keys may coexist (rotation): ``KindlyPushDecryption`` looks up the key named by
/// each push's `kid`, and the pinned sender key named by a version 2 push's `sid`. A keyring
/// that holds a pinned sender key puts its reader in pinned mode: version 1 pushes are refused.
/// Implementations are `Sendable` and safe to call from many threads.
///
/// The pinning requirements have default implementations for keyrings that cannot hold pinned
/// keys: they hold none (so their reader is never in pinned mode), pinning fails, and unpinning
/// finds nothing. A keyring that wraps another must forward all three, or its reader would
/// leave pinned mode, and ``changeToken()`` too, or a cache in front of it would take it for
/// a keyring without one (re-read every 5 s rather than followed within 0.5 s).
public protocol Keyring: Sendable {
    /// A short name for messages (`file`, `secret-service`, `memory`).
    var name: String { get }

    /// Stores `key` under its kid with a human-readable `label`.
    func store(_ key: DeviceKey, label: String) throws(KeyringError)

    /// The key whose kid is `kid`.
    func key(for kid: KeyID) throws(KeyringError) -> DeviceKey

    /// Every stored key's public information (never a secret).
    func list() throws(KeyringError) -> [KeyringEntry]

    /// Deletes the key whose kid is `kid`.
    func delete(_ kid: KeyID) throws(KeyringError)

    /// Pins the sender key `key` with a human-readable `label`. Pinned keys are public, but
    /// whoever adds one can send pushes that authenticate: they are stored with the same care as
    /// device keys. A degenerate key (not canonical, the base point, or of small order: with the
    /// base point pinned anybody can seal a mode_auth push that authenticates) is refused with
    /// ``KeyringError/io(_:)`` by the keyrings of this package.
    func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError)

    /// Every pinned sender key, oldest first. The reader is in pinned mode exactly when there is
    /// one. A keyring that cannot say (a file it cannot read, a locked collection) throws: its
    /// reader then trusts no push (`untrusted_sender`) rather than leave pinned mode.
    func pinnedSenders() throws(KeyringError) -> [PinnedSender]

    /// Removes the pinned sender key whose sid is `sid`.
    func unpinSender(_ sid: SenderID) throws(KeyringError)

    /// A cheap fingerprint of which keys and pins the keyring holds now, for a cache in front of
    /// it (``CachingKeyring``) to notice changes made elsewhere, such as another process's
    /// `senders delete`: two equal tokens mean that nothing was stored, deleted, pinned or
    /// unpinned between them. `nil` means the keyring cannot tell now (reading it failed, or a
    /// change is too recent to tell): the cache then drops what it holds and reads the keyring
    /// again. ``KeyringChangeToken/untracked`` means it keeps no fingerprint at all: the cache
    /// then keeps what it read for a bounded time (``CachingKeyring``: 5 s) and reads it again.
    /// The default implementation returns ``KeyringChangeToken/untracked``.
    func changeToken() -> KeyringChangeToken?
}

/// What ``Keyring/changeToken()`` returns: an opaque value that is equal for two readings of a
/// keyring exactly when nothing changed in between (as far as the keyring can see).
public struct KeyringChangeToken: Sendable, Hashable {
    package let bytes: [UInt8]
    /// Whether this is ``untracked``, which no token made of bytes equals.
    package let isUntracked: Bool

    /// A token made of `bytes`; keyrings outside this package build one from their own state.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        isUntracked = false
    }

    /// A token made of the UTF-8 of `text`.
    public init(_ text: String) {
        self.init(Array(text.utf8))
    }

    private init(untracked: Void) {
        bytes = []
        isUntracked = true
    }

    /// What a keyring that keeps no fingerprint gives (the protocol's default): nothing can be
    /// followed, so a cache in front of it keeps what it read for a bounded time and then reads
    /// it again (``CachingKeyring``: 5 s), rather than on every check as for `nil`.
    public static let untracked = KeyringChangeToken(untracked: ())
}

extension Keyring {
    /// A keyring that keeps no fingerprint cannot tell: ``KeyringChangeToken/untracked``, so a
    /// cache in front of it re-reads it every 5 s (``CachingKeyring``'s time-to-live for it).
    public func changeToken() -> KeyringChangeToken? {
        .untracked
    }
}

/// A stored key's public information. Entries sort oldest first, then by kid, in every keyring.
public struct KeyringEntry: Sendable, Hashable, Comparable, Codable {
    /// The key's id.
    public let kid: KeyID
    /// The key's public half.
    public let publicKey: DevicePublicKey
    /// The label it was stored with.
    public let label: String
    /// Unix seconds when the key was stored.
    public let created: Int64

    /// An entry; keyrings make these when they list their keys.
    public init(kid: KeyID, publicKey: DevicePublicKey, label: String, created: Int64) {
        self.kid = kid
        self.publicKey = publicKey
        self.label = label
        self.created = created
    }

    enum CodingKeys: String, CodingKey {
        case kid
        case publicKey = "public_key"
        case label, created
    }

    /// Older first, then by kid.
    public static func < (lhs: KeyringEntry, rhs: KeyringEntry) -> Bool {
        (lhs.created, lhs.kid.base64URL) < (rhs.created, rhs.kid.base64URL)
    }
}

/// Why a keyring could not do what was asked. Messages never contain key material.
public enum KeyringError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No key with this kid is stored.
    case notFound(KeyID)
    /// A key with this kid is stored already.
    case alreadyExists(KeyID)
    /// The keyring (or the collection holding the key) is locked.
    case locked(String)
    /// The keyring service could not be reached (no session bus, no Secret Service, a time-out).
    case unreachable(String)
    /// Storage failed: a file, a folder, permissions.
    case io(String)
    /// No sender key with this sid is pinned.
    case senderNotFound(SenderID)
    /// A sender key with this sid is pinned already.
    case senderAlreadyPinned(SenderID)

    /// Whether asking again later may succeed: `true` for ``locked(_:)`` and
    /// ``unreachable(_:)``, `false` for a key that is not there or storage that failed.
    public var isTransient: Bool {
        switch self {
        case .locked, .unreachable: return true
        case .notFound, .alreadyExists, .io, .senderNotFound, .senderAlreadyPinned: return false
        }
    }

    /// One line for people; never key material.
    public var description: String {
        switch self {
        case .notFound(let kid): return "no key with kid \(kid) is stored"
        case .alreadyExists(let kid): return "a key with kid \(kid) is stored already"
        case .locked(let detail): return "the keyring is locked (\(detail))"
        case .unreachable(let detail): return "the keyring cannot be reached (\(detail))"
        case .io(let detail): return detail
        case .senderNotFound(let sid): return "no sender key with sid \(sid) is pinned"
        case .senderAlreadyPinned(let sid): return "a sender key with sid \(sid) is pinned already"
        }
    }
}

/// The current time in Unix seconds, for `created`.
package func unixTimeNow() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec)
}

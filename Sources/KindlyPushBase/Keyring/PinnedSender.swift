internal import KindlyPushCore

/// A pinned sender key and its metadata (docs/spec/wire-format.md section 7.1). Entries sort oldest first,
/// then by sid, in every keyring.
public struct PinnedSender: Sendable, Hashable, Comparable {
    /// The pinned key, as its bytes were pinned.
    public let publicKey: SenderPublicKey
    /// A human-readable label given when it was pinned.
    public let label: String
    /// Unix seconds when the key was pinned.
    public let created: Int64

    /// The pinned key's id.
    public var sid: SenderID { publicKey.sid }

    /// An entry for `publicKey`.
    public init(publicKey: SenderPublicKey, label: String, created: Int64) {
        self.publicKey = publicKey
        self.label = label
        self.created = created
    }

    /// Oldest first, then by sid.
    public static func < (lhs: PinnedSender, rhs: PinnedSender) -> Bool {
        (lhs.created, lhs.sid.base64URL) < (rhs.created, rhs.sid.base64URL)
    }
}

extension Keyring {
    /// A keyring that cannot hold pinned keys cannot pin one.
    public func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        throw .io("the \(name) keyring cannot hold pinned sender keys")
    }

    /// A keyring that cannot hold pinned keys holds none: its reader is not in pinned mode.
    public func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        []
    }

    /// A keyring that cannot hold pinned keys has none to remove.
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        throw .senderNotFound(sid)
    }
}

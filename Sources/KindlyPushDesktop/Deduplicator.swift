public import KindlyPush
internal import KindlyPushCore

/// What the de-duplication store claims for one notification, made from a
/// `DevicePresentation` (whose identities the library's handler computes, so that the rule
/// is written once): the store keeps only digests of these fields, keyed with its own secret.
public struct StoreClaim: Sendable, Equatable {
    /// The claim's namespace: a placeholder never takes a message's place.
    public enum Namespace: UInt8, Sendable {
        /// A decrypted message (key id with message id, or with the envelope nonce).
        case message = 1
        /// A placeholder, by envelope (key id with nonce).
        case placeholder = 2
    }

    /// Which namespace ``identity`` is claimed in.
    public var namespace: Namespace
    /// The identity claimed: a push with the same one, in the same namespace, is not shown again.
    public var identity: [UInt8]
    /// The envelope's identity: a placeholder is recorded under it, and a banner of the same
    /// envelope replaces that placeholder.
    public var envelope: [UInt8]?
    /// The banner's chat: its new banner replaces the chat's last one; `nil` for a placeholder.
    public var chat: String?
    /// ``DesktopNotifier/serverIdentity``: a recorded notification id counts only for the server
    /// that gave it.
    public var server: String
    /// Whether a claim made before stops the post (`--no-dedup` turns it off: the notification is
    /// posted and recorded whatever came before, and still replaces the chat's last banner).
    public var checksDuplicates = true

    /// A claim with these fields.
    public init(namespace: Namespace, identity: [UInt8], envelope: [UInt8]?, chat: String?, server: String) {
        self.namespace = namespace
        self.identity = identity
        self.envelope = envelope
        self.chat = chat
        self.server = server
    }

    /// The claim for `presentation`, to be shown on `server`; `nil` when it shows nothing or has
    /// no identity (a push without envelope fields is shown each time it comes).
    public init?(_ presentation: DevicePresentation, server: String) {
        switch presentation.content {
        case .banner(_, _, let chat):
            guard let identity = presentation.messageIdentity else { return nil }
            self.init(namespace: .message, identity: identity, envelope: presentation.envelopeIdentity, chat: chat, server: server)
        case .placeholder:
            guard let identity = presentation.envelopeIdentity else { return nil }
            self.init(namespace: .placeholder, identity: identity, envelope: identity, chat: nil, server: server)
        case .none:
            return nil
        }
    }
}

/// The notifications a new one replaces, as the store found them inside the claim's transaction.
public struct StoreSlot: Sendable, Equatable {
    /// The chat's last banner on this server.
    public var chatNotification: UInt32?
    /// The placeholder shown for the same envelope on this server (a banner replaces it).
    public var placeholderNotification: UInt32?
    /// The `x-dunst-stack-tag` to post with (one per chat, or per placeholder's envelope), so
    /// that a push presented again after a kill takes the place of its first request, if the
    /// server drew it; `nil` for none.
    public var stackTag: String?

    /// A slot with these notifications (none by default).
    public init(chatNotification: UInt32? = nil, placeholderNotification: UInt32? = nil, stackTag: String? = nil) {
        self.chatNotification = chatNotification
        self.placeholderNotification = placeholderNotification
        self.stackTag = stackTag
    }

    /// The `replaces_id` to post with: the envelope's placeholder first, else the chat's banner.
    public var replacesID: UInt32 { placeholderNotification ?? chatNotification ?? 0 }
}

/// What became of a claim.
public enum ClaimResult: Sendable, Equatable {
    /// Claimed before: nothing was posted.
    case duplicate
    /// Posted as notification `id` and recorded.
    case posted(UInt32)
    /// `post` posted nothing (the server failed): the claim was not kept, so a later delivery is shown.
    case notPosted
}

/// Why the de-duplication store could not be used. The message names the file and the cause.
public struct DeduplicationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, with the file's path.
    public let description: String

    /// An error that says `description`.
    public init(_ description: String) {
        self.description = description
    }
}

/// Where `kindly-push notify` remembers what it showed: the pushes already shown (so that a push
/// delivered twice gives one banner), the last banner of each chat (so that a new message
/// replaces it, through `replaces_id`), and the placeholder of each envelope (so that the banner
/// of a push first shown as a placeholder replaces it).
///
/// Times are Unix seconds. Implementations are safe to call from several threads; the SQLite one
/// is also safe across processes.
public protocol Deduplicator: Sendable {
    /// Claims `claim` and, when it was not claimed before, calls `post` with the notifications
    /// to replace and records what it posted, all as one step: of several concurrent claims of
    /// one identity exactly one posts, and concurrent banners of one chat replace each other
    /// instead of each taking a new notification. When `post` returns `nil`, nothing is kept.
    func present(_ claim: StoreClaim, at time: Int64, post: (StoreSlot) -> UInt32?) throws(DeduplicationError) -> ClaimResult

    /// Forgets every entry recorded before `time`.
    func purge(before time: Int64) throws(DeduplicationError)
}

/// A ``Deduplicator`` in memory: for one process's lifetime, for tests, and for a run whose
/// store cannot be used.
public final class InMemoryDeduplicator: Deduplicator {
    private struct Entry: Sendable {
        var id: UInt32
        var server: String
        var time: Int64
    }

    private struct State: Sendable {
        var shown: [[UInt8]: Int64] = [:]
        var chats: [String: Entry] = [:]
        var placeholders: [[UInt8]: Entry] = [:]
    }

    private let state = Locked(State())

    /// An empty store.
    public init() {}

    /// Claims, posts and records under one lock.
    public func present(_ claim: StoreClaim, at time: Int64, post: (StoreSlot) -> UInt32?) -> ClaimResult {
        state.withLock { state in
            let key = [claim.namespace.rawValue] + claim.identity
            guard state.shown[key] == nil || !claim.checksDuplicates else { return .duplicate }
            func id(_ entry: Entry?) -> UInt32? { entry.flatMap { $0.server == claim.server ? $0.id : nil } }
            let slot = StoreSlot(
                chatNotification: claim.chat.flatMap { id(state.chats[$0]) },
                placeholderNotification: claim.envelope.flatMap { id(state.placeholders[$0]) })
            guard let posted = post(slot) else { return .notPosted }
            state.shown[key] = time
            let entry = Entry(id: posted, server: claim.server, time: time)
            if let chat = claim.chat { state.chats[chat] = entry }
            if let envelope = claim.envelope {
                if claim.namespace == .placeholder {
                    state.placeholders[envelope] = entry
                } else {
                    state.placeholders.removeValue(forKey: envelope)
                }
            }
            return .posted(posted)
        }
    }

    /// Forgets what was recorded before `time`.
    public func purge(before time: Int64) {
        state.withLock { state in
            state.shown = state.shown.filter { $0.value >= time }
            state.chats = state.chats.filter { $0.value.time >= time }
            state.placeholders = state.placeholders.filter { $0.value.time >= time }
        }
    }
}

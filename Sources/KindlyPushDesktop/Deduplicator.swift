public import KindlyPush
internal import KindlyPushCore

/// Which push a banner showed, as the de-duplication store keeps it: a BLAKE2b digest of the
/// push's key id and its message id (or, without one, its envelope nonce), so that the store
/// holds no message id in clear.
///
/// APNs and relays deliver some pushes twice; both copies carry the same key id and message id
/// (and the same envelope), so they have the same key.
public struct DeduplicationKey: Sendable, Hashable {
    /// 32 bytes.
    package let digest: [UInt8]

    package init(digest: [UInt8]) {
        self.digest = digest
    }

    /// The key of a Kindly push: its `kindly.kid` with `messageID` (from the decrypted payload or
    /// the extension's `kindly.message_id`), or, when `messageID` is `nil`, with its envelope
    /// nonce `kindly.n`. `nil` when the push has no `kindly` object, or the fields it needs are
    /// not strings: such a push is shown each time it comes.
    public init?(userInfo: JSONValue, messageID: String?) {
        guard let envelope = SealedEnvelope.envelopes(in: userInfo).first,
            let kid = envelope[KindlyKey.kid]?.stringValue
        else { return nil }
        var input = Array("kindly-push/dedup/v1".utf8)
        DeduplicationKey.appendField(DeduplicationKey.binary(kid), to: &input)
        if let messageID {
            input.append(1)
            DeduplicationKey.appendField(Array(messageID.utf8), to: &input)
        } else {
            guard let nonce = envelope[KindlyKey.nonce]?.stringValue else { return nil }
            input.append(2)
            DeduplicationKey.appendField(DeduplicationKey.binary(nonce), to: &input)
        }
        digest = input.withUnsafeBytes { BLAKE2b.hash($0, outputLength: 32) }
    }

    /// A base64 field's bytes, or its text when it does not decode (one spelling per delivery).
    private static func binary(_ text: String) -> [UInt8] {
        (try? Base64.decode(text)) ?? Array(text.utf8)
    }

    /// A length-prefixed field, so that no two different inputs hash the same bytes.
    static func appendField(_ bytes: [UInt8], to input: inout [UInt8]) {
        var length = UInt32(clamping: bytes.count).bigEndian
        withUnsafeBytes(of: &length) { input.append(contentsOf: $0) }
        input.append(contentsOf: bytes)
    }
}

/// A chat, as the store keeps the id of its last banner: a BLAKE2b digest of the chat id.
public struct ChatKey: Sendable, Hashable {
    /// 32 bytes.
    package let digest: [UInt8]

    /// The key of the Kindly chat `chatID`.
    public init(chatID: String) {
        var input = Array("kindly-push/chat/v1".utf8)
        DeduplicationKey.appendField(Array(chatID.utf8), to: &input)
        digest = input.withUnsafeBytes { BLAKE2b.hash($0, outputLength: 32) }
    }
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
/// delivered twice gives one banner) and the last banner of each chat (so that a new message
/// replaces it, through `replaces_id`).
///
/// Times are Unix seconds. Implementations are safe to call from several threads; the SQLite one
/// is also safe across processes.
public protocol Deduplicator: Sendable {
    /// Records `key` as shown at `time` and returns `true`, or returns `false` when it was
    /// recorded already: exactly one of several concurrent claims of one key gets `true`.
    func claim(_ key: DeduplicationKey, at time: Int64) throws(DeduplicationError) -> Bool

    /// Forgets `key`, after its banner could not be shown, so that a later delivery shows it.
    func release(_ key: DeduplicationKey) throws(DeduplicationError)

    /// The notification id of `chat`'s last banner, if one was recorded with `server` (a
    /// ``DesktopNotifier/serverIdentity``): an id given by another server means nothing here.
    func notificationID(for chat: ChatKey, server: String) throws(DeduplicationError) -> UInt32?

    /// Records `id`, given by `server`, as `chat`'s last banner, at `time`.
    func setNotificationID(_ id: UInt32, for chat: ChatKey, server: String, at time: Int64) throws(DeduplicationError)

    /// Forgets every entry recorded before `time`.
    func purge(before time: Int64) throws(DeduplicationError)
}

/// A ``Deduplicator`` in memory: for one process's lifetime, for tests, and for a run whose
/// store cannot be used.
public final class InMemoryDeduplicator: Deduplicator {
    private struct State: Sendable {
        var shown: [DeduplicationKey: Int64] = [:]
        var chats: [ChatKey: (id: UInt32, server: String, time: Int64)] = [:]
    }

    private let state = Locked(State())

    /// An empty store.
    public init() {}

    /// Records `key`; `false` when it was recorded already.
    public func claim(_ key: DeduplicationKey, at time: Int64) -> Bool {
        state.withLock { state in
            guard state.shown[key] == nil else { return false }
            state.shown[key] = time
            return true
        }
    }

    /// Forgets `key`.
    public func release(_ key: DeduplicationKey) {
        state.withLock { _ = $0.shown.removeValue(forKey: key) }
    }

    /// The id of `chat`'s last banner, when `server` gave it.
    public func notificationID(for chat: ChatKey, server: String) -> UInt32? {
        state.withLock { state in state.chats[chat].flatMap { $0.server == server ? $0.id : nil } }
    }

    /// Records `id`, given by `server`, as `chat`'s last banner.
    public func setNotificationID(_ id: UInt32, for chat: ChatKey, server: String, at time: Int64) {
        state.withLock { $0.chats[chat] = (id, server, time) }
    }

    /// Forgets what was recorded before `time`.
    public func purge(before time: Int64) {
        state.withLock { state in
            state.shown = state.shown.filter { $0.value >= time }
            state.chats = state.chats.filter { $0.value.time >= time }
        }
    }
}

internal import KindlyPushCore

/// The device side of the wire format (sections 5, 7.3 and 8.2), named as in the iOS SDK.
///
/// One reader reads versions 1, 2 and 3 (``WireVersion``). A reader is one keyring and its
/// pinned sender keys: those the keyring holds (``Keyring/pinnedSenders()``) and those given
/// here. With at least one it is in pinned mode: a version 2 or version 3 mode_auth push
/// decrypts only when its `sid` names a pinned key, and a push that cannot prove its sender
/// (version 1, version 3 mode_base) is refused (`untrusted_sender`). With none, version 1 and
/// version 3 mode_base read as before and a push with a `sid` is refused.
///
/// ```swift
/// let decryption = KindlyPushDecryption(keyring: CachingKeyring(FileKeyring(folder: folder)))
/// if KindlyPushDecryption.isKindlyNotification(userInfo),
///    let payload = decryption.decrypt(userInfo: userInfo) {
///     KindlyPushDecryption.apply(payload, to: &content)
/// }
/// ```
///
/// The keyring is asked on every push, for the push's key and for the pinned sender keys. A
/// ``FileKeyring`` answers by reading its files each time (a key file read, parsed and checked
/// per push), so a reader that serves more than one push should wrap it in ``CachingKeyring``,
/// which loads each key once and reads the pins once, as `kindly-push decrypt` does, and still
/// follows keys deleted and pins added or removed by other processes within a second.
///
/// Decrypting from many threads at once is safe: the type holds a `Sendable` keyring and the
/// pinned keys (values), and the cache of second shared secrets it shares is behind a lock.
public struct KindlyPushDecryption: Sendable {
    /// Where secret keys are looked up by each push's `kid`, and pinned sender keys by `sid`.
    public let keyring: any Keyring
    /// Sender keys pinned for this reader besides those in the keyring.
    public let pinnedSenderKeys: [SenderPublicKey]

    /// A reader of `keyring` (any thread may call it at once), which also pins
    /// `pinnedSenderKeys` (none by default).
    public init(keyring: any Keyring, pinnedSenderKeys: [SenderPublicKey] = []) {
        self.keyring = keyring
        self.pinnedSenderKeys = pinnedSenderKeys
    }

    /// Whether this reader is in pinned mode (docs/spec/wire-format.md section 7.1): it pins a sender key,
    /// here or in its keyring. A keyring whose pins cannot be read counts as pinned mode.
    public var isInPinnedMode: Bool {
        if !pinnedSenderKeys.isEmpty { return true }
        guard let pinned = try? keyring.pinnedSenders() else { return true }
        return !pinned.isEmpty
    }

    /// True exactly when the top-level key `kindly` is present and its value is a JSON object,
    /// whatever it holds. A broken Kindly push is still Kindly's.
    public static func isKindlyNotification(_ userInfo: JSONValue) -> Bool {
        SealedEnvelope.envelopes(in: userInfo).first != nil
    }

    /// The decrypted payload, or `nil` on any failure (the SDK's documented form).
    public func decrypt(userInfo: JSONValue) -> DecryptedPayload? {
        try? decryptResult(userInfo: userInfo).get()
    }

    /// ``isKindlyNotification(_:)-(JSONValue)`` for a ``NotificationContent/userInfo``, as the iOS
    /// SDK's `isKindlyNotification(content.userInfo)` is called.
    public static func isKindlyNotification(_ userInfo: JSONObject) -> Bool {
        isKindlyNotification(JSONValue.object(userInfo))
    }

    /// ``decrypt(userInfo:)-(JSONValue)`` for a ``NotificationContent/userInfo``.
    public func decrypt(userInfo: JSONObject) -> DecryptedPayload? {
        decrypt(userInfo: JSONValue.object(userInfo))
    }

    /// The decrypted payload or the reason it failed, checked in the order of sections 5, 7.3 and 8.2.
    public func decryptResult(userInfo: JSONValue) -> Result<DecryptedPayload, DecryptionFailure> {
        Result { () throws(DecryptionFailure) in
            let envelope = try SealedEnvelope(userInfo: userInfo)
            let key = try key(for: envelope.kid)
            let sender = try trustedSender(for: envelope.senderID, version: envelope.version)
            return try KindlyPushDecryption.open(envelope, with: key, sender: sender)
        }
    }

    /// Reason 5 of sections 7.3 and 8.2 for this reader: the pinned key a push's `sid` names,
    /// `nil` for a push without `sid` (version 1, version 3 mode_base) outside pinned mode.
    func trustedSender(for sid: SenderID?, version: WireVersion) throws(DecryptionFailure) -> SenderPublicKey? {
        // The keyring asked in place: no copy of it per push.
        try KindlyPushDecryption.trustedSender(for: sid, version: version, pinned: pinnedSenderKeys) {
            () throws(KeyringError) in try keyring.pinnedSenders()
        }
    }

    /// Reason 5 of section 7.3: `pinned` and the keyring's pins (`storedPins`; none without a
    /// keyring) are the reader's. The keyring is asked only when `pinned` does not decide; when
    /// it cannot say, nothing is trusted.
    static func trustedSender(
        for sid: SenderID?, version: WireVersion, pinned: [SenderPublicKey],
        storedPins: () throws(KeyringError) -> [PinnedSender] = { [] }
    ) throws(DecryptionFailure) -> SenderPublicKey? {
        if let sid, let key = pinned.first(where: { $0.sid == sid }) { return key }
        var inPinnedMode = !pinned.isEmpty
        if sid != nil || !inPinnedMode {
            let stored: [PinnedSender]
            do throws(KeyringError) {
                stored = try storedPins()
            } catch {
                throw DecryptionFailure(.untrustedSender, "the pinned sender keys cannot be read (\(error))")
            }
            if let sid, let entry = stored.first(where: { $0.sid == sid }) { return entry.publicKey }
            inPinnedMode = inPinnedMode || !stored.isEmpty
        }
        if let sid { throw DecryptionFailure(.untrustedSender, "no pinned sender key has sid \(sid)") }
        guard !inPinnedMode else {
            let push = version == .one ? "a version 1 push" : "a version \(version) push without sid (mode_base)"
            throw DecryptionFailure(.untrustedSender, "\(push) cannot prove its sender, and sender keys are pinned")
        }
        return nil
    }

    /// Reason 4: the key for `kid` from the keyring.
    func key(for kid: KeyID) throws(DecryptionFailure) -> DeviceKey {
        do throws(KeyringError) {
            return try keyring.key(for: kid)
        } catch {
            // A key file holds one key: name it and its kid, the way to see the wrong file was given.
            if case .notFound = error, let file = keyring as? KeyFileKeyring {
                throw DecryptionFailure(
                    .keyUnavailable, "the push is for kid \(kid); \(file.path) holds kid \(file.key.kid)", keyringError: error)
            }
            throw DecryptionFailure(.keyUnavailable, error.description, keyringError: error)
        }
    }

    /// Decrypts with one given key: a push whose `kid` is another key's is `key_unavailable`.
    /// `pinnedSenderKeys` are the reader's pinned sender keys (none: not in pinned mode).
    public static func decryptResult(
        userInfo: JSONValue, using key: DeviceKey, pinnedSenderKeys: [SenderPublicKey] = []
    ) -> Result<DecryptedPayload, DecryptionFailure> {
        Result { () throws(DecryptionFailure) in
            let envelope = try SealedEnvelope(userInfo: userInfo)
            guard envelope.kid == key.kid else {
                throw DecryptionFailure(
                    .keyUnavailable, "the push is for kid \(envelope.kid); the key given has kid \(key.kid)",
                    keyringError: .notFound(envelope.kid))
            }
            let sender = try trustedSender(for: envelope.senderID, version: envelope.version, pinned: pinnedSenderKeys)
            return try open(envelope, with: key, sender: sender)
        }
    }

    /// Reasons 6 and 7 of section 7.3 (5 and 6 of section 5): open the box, then check the plaintext.
    static func open(_ envelope: SealedEnvelope, with key: DeviceKey, sender: SenderPublicKey?) throws(DecryptionFailure)
        -> DecryptedPayload
    {
        let plaintext = try KindlyBox.open(envelope, with: key, sender: try binding(of: key, with: sender))
        return try plaintext.withBytes { (bytes) throws(DecryptionFailure) in try payload(plaintext: bytes) }
    }

    /// The version 2 binding of `key` and the trusted `sender` (kept in ``SenderSecretCache``), or
    /// `nil` for version 1. A low-order pinned key gives the all-zero `ss_s`: `authentication_failed`.
    static func binding(of key: DeviceKey, with sender: SenderPublicKey?) throws(DecryptionFailure) -> SenderBinding? {
        guard let sender else { return nil }
        do throws(CryptoError) {
            return try SenderSecretCache.shared.binding(device: key, sender: sender)
        } catch {
            throw KindlyBox.authenticationFailure
        }
    }

    /// The rest of reason 6: the unpadded plaintext checked against section 4.
    static func payload(plaintext: UnsafeRawBufferPointer) throws(DecryptionFailure) -> DecryptedPayload {
        switch DecryptedPayload.parse(plaintext) {
        case .success(let payload): return payload
        case .failure(let problem): throw badPlaintext(problem)
        }
    }

    /// Reason 6 for a plaintext text that is not a plaintext.
    static func badPlaintext(_ problem: DecryptedPayload.Problem) -> DecryptionFailure {
        DecryptionFailure(.badPlaintext, PlaintextError(problem).description)
    }

    /// True exactly when `kindly.decrypted` is JSON `true` or the number 1: the notification
    /// service extension decrypted this push already.
    public static func isDecrypted(userInfo: JSONValue) -> Bool {
        guard case .object(let document) = userInfo, let envelope = document[KindlyKey.envelope]?.objectValue else {
            return false
        }
        switch envelope[KindlyKey.decrypted] {
        case .bool(true)?: return true
        case .number(let number)?: return number.integerValue(in: 1...1) != nil
        default: return false
        }
    }

    /// ``isDecrypted(userInfo:)-(JSONValue)`` for a ``NotificationContent/userInfo``.
    public static func isDecrypted(userInfo: JSONObject) -> Bool {
        isDecrypted(userInfo: JSONValue.object(userInfo))
    }

    /// The push rewritten for display (section 5, apply): the alert's title and body become the
    /// decrypted ones (a string alert becomes an object; a missing `aps` or `alert` is created; an
    /// `aps` that is not an object is replaced), `kindly.decrypted` becomes `true`, and
    /// `kindly.chat_id` (and `kindly.message_id`) are set. Everything else is kept.
    public static func apply(_ payload: DecryptedPayload, toUserInfo userInfo: JSONValue) -> JSONValue {
        var document = userInfo.objectValue ?? JSONObject()
        var aps = document[APNsKey.aps]?.objectValue ?? JSONObject()
        var alert = aps[APNsKey.alert]?.objectValue ?? JSONObject()
        alert[APNsKey.title] = .string(payload.title)
        alert[APNsKey.body] = .string(payload.body)
        aps[APNsKey.alert] = .object(alert)
        document[APNsKey.aps] = .object(aps)
        var envelope = document[KindlyKey.envelope]?.objectValue ?? JSONObject()
        envelope[KindlyKey.decrypted] = true
        envelope[KindlyKey.chatID] = .string(payload.chatId)
        if let messageId = payload.messageId { envelope[KindlyKey.messageID] = .string(messageId) }
        document[KindlyKey.envelope] = .object(envelope)
        return .object(document)
    }

    /// Rewrites `content` for display, as `UNMutableNotificationContent` is rewritten on iOS:
    /// title and body become the decrypted ones and `userInfo` is marked decrypted.
    public static func apply(_ payload: DecryptedPayload, to content: inout NotificationContent) {
        content.title = payload.title
        content.body = payload.body
        content.userInfo = apply(payload, toUserInfo: .object(content.userInfo)).objectValue ?? content.userInfo
    }
}

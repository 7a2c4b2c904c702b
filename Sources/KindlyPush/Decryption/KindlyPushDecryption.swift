internal import KindlyPushCore

/// The device side of wire format v1 (section 5), named as in the iOS SDK.
///
/// ```swift
/// let decryption = KindlyPushDecryption(keyring: FileKeyring(folder: folder))
/// if KindlyPushDecryption.isKindlyNotification(userInfo),
///    let payload = decryption.decrypt(userInfo: userInfo) {
///     KindlyPushDecryption.apply(payload, to: &content)
/// }
/// ```
///
/// Decrypting from many threads at once is safe: the type holds only a `Sendable` keyring.
public struct KindlyPushDecryption: Sendable {
    /// Where secret keys are looked up by each push's `kid`.
    public let keyring: any Keyring

    /// Decryption that looks up each push's key in `keyring` (any thread may call it at once).
    public init(keyring: any Keyring) {
        self.keyring = keyring
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

    /// The decrypted payload or the reason it failed, checked in the order of section 5.
    public func decryptResult(userInfo: JSONValue) -> Result<DecryptedPayload, DecryptionFailure> {
        Result { () throws(DecryptionFailure) in
            let envelope = try SealedEnvelope(userInfo: userInfo)
            return try KindlyPushDecryption.open(envelope, with: try key(for: envelope.kid))
        }
    }

    /// Reason 4: the key for `kid` from the keyring.
    func key(for kid: KeyID) throws(DecryptionFailure) -> DeviceKey {
        do throws(KeyringError) {
            return try keyring.key(for: kid)
        } catch {
            throw DecryptionFailure(.keyUnavailable, error.description, keyringError: error)
        }
    }

    /// Decrypts with one given key: a push whose `kid` is another key's is `key_unavailable`.
    public static func decryptResult(userInfo: JSONValue, using key: DeviceKey) -> Result<DecryptedPayload, DecryptionFailure> {
        Result { () throws(DecryptionFailure) in
            let envelope = try SealedEnvelope(userInfo: userInfo)
            guard envelope.kid == key.kid else {
                throw DecryptionFailure(
                    .keyUnavailable, "no key with kid \(envelope.kid) is at hand", keyringError: .notFound(envelope.kid))
            }
            return try open(envelope, with: key)
        }
    }

    /// Reasons 5 and 6: open the box, then check the plaintext.
    static func open(_ envelope: SealedEnvelope, with key: DeviceKey) throws(DecryptionFailure) -> DecryptedPayload {
        let plaintext = try KindlyBox.open(envelope, with: key)
        return try plaintext.withBytes { (bytes) throws(DecryptionFailure) in try payload(plaintext: bytes) }
    }

    /// The rest of reason 6: the unpadded plaintext checked against section 4.
    static func payload(plaintext: UnsafeRawBufferPointer) throws(DecryptionFailure) -> DecryptedPayload {
        do throws(PlaintextError) {
            return try DecryptedPayload(plaintext: plaintext)
        } catch {
            throw DecryptionFailure(.badPlaintext, error.description)
        }
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

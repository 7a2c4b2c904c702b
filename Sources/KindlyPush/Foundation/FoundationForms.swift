public import FoundationEssentials

// The `Data` and `[AnyHashable: Any]` forms of every entry point that takes a `JSONValue`.
//
// `Data` forms read the bytes with the library's strict reader, so they keep every rule of the
// wire format, duplicate member names included; bytes that are not a JSON document are treated
// as a document that is not a JSON object (not Kindly's, `silent`).
//
// Dictionary forms convert only what the wire format reads: `kindly` (and `aps` where the kind of
// push or its alert matters), member by member, leaving out values JSON cannot hold. A host's own
// values (a `Date`, a custom class) never make a push unreadable. `JSONSerialization` has already
// dropped duplicate member names, so the duplicate rule cannot apply; pass `Data` where it must.

extension JSONValue {
    /// Reads `data` as one JSON text with the strict reader (RFC 8259; no byte-order mark, no
    /// unpaired surrogate escapes, nesting at most 512 deep, nothing after the value).
    ///
    /// - Throws: ``JSONReadError`` saying what is wrong and at which byte.
    public init(parsing data: Data) throws(JSONReadError) {
        let result: Result<JSONValue, JSONReadError> = data.withUnsafeBytes { bytes in
            Result { () throws(JSONReadError) in try JSONReader.parse(bytes) }
        }
        self = try result.get()
    }

    /// The document in `data`, or `.null` (not an object) when it is not JSON.
    static func document(_ data: Data) -> JSONValue {
        (try? JSONValue(parsing: data)) ?? .null
    }

    /// The compact UTF-8 JSON text of this value, as `seal` writes documents.
    public var compactData: Data { Data(JSONWriter.compactBytes(self)) }
}

extension KindlyPushDecryption {
    // MARK: Data

    /// ``isKindlyNotification(_:)-(JSONValue)`` for the push's bytes.
    public static func isKindlyNotification(_ userInfo: Data) -> Bool {
        isKindlyNotification(JSONValue.document(userInfo))
    }

    /// ``decrypt(userInfo:)-(JSONValue)`` for the push's bytes.
    public func decrypt(userInfo: Data) -> DecryptedPayload? {
        decrypt(userInfo: JSONValue.document(userInfo))
    }

    /// ``decryptResult(userInfo:)-(JSONValue)`` for the push's bytes; bytes that are not JSON are
    /// `not_kindly`.
    public func decryptResult(userInfo: Data) -> Result<DecryptedPayload, DecryptionFailure> {
        decryptResult(userInfo: JSONValue.document(userInfo))
    }

    /// ``isDecrypted(userInfo:)-(JSONValue)`` for the push's bytes.
    public static func isDecrypted(userInfo: Data) -> Bool {
        isDecrypted(userInfo: JSONValue.document(userInfo))
    }

    /// ``apply(_:toUserInfo:)-(_,JSONValue)`` for the push's bytes: the rewritten document as
    /// compact JSON.
    ///
    /// - Throws: ``JSONReadError`` when `userInfo` is not JSON (nothing is rewritten, nothing lost).
    public static func apply(_ payload: DecryptedPayload, toUserInfo userInfo: Data) throws(JSONReadError) -> Data {
        apply(payload, toUserInfo: try JSONValue(parsing: userInfo)).compactData
    }

    // MARK: [AnyHashable: Any]

    /// ``isKindlyNotification(_:)-(JSONValue)`` for a userInfo dictionary: true exactly when its
    /// `kindly` member is a dictionary, whatever it holds. Nothing else is looked at.
    public static func isKindlyNotification(_ userInfo: [AnyHashable: Any]) -> Bool {
        // Unwrapped first: a missing member is an `Any?` that an `is` test would look through.
        guard let envelope = userInfo[AnyHashable(KindlyKey.envelope)] else { return false }
        return envelope is [AnyHashable: Any]
    }

    /// ``decrypt(userInfo:)-(JSONValue)`` for a userInfo dictionary.
    public func decrypt(userInfo: [AnyHashable: Any]) -> DecryptedPayload? {
        try? decryptResult(userInfo: userInfo).get()
    }

    /// ``decryptResult(userInfo:)-(JSONValue)`` for a userInfo dictionary. Only `kindly` is
    /// read: the result fails only when the envelope itself cannot be read (a field missing or
    /// not a string, say), never because of another member.
    public func decryptResult(userInfo: [AnyHashable: Any]) -> Result<DecryptedPayload, DecryptionFailure> {
        decryptResult(userInfo: JSONValue.specView(of: userInfo, reading: [KindlyKey.envelope]))
    }

    /// ``isDecrypted(userInfo:)-(JSONValue)`` for a userInfo dictionary (reads `kindly.decrypted`).
    public static func isDecrypted(userInfo: [AnyHashable: Any]) -> Bool {
        isDecrypted(userInfo: JSONValue.specView(of: userInfo, reading: [KindlyKey.envelope]))
    }

    /// ``apply(_:toUserInfo:)-(_,JSONValue)`` for a userInfo dictionary. The result keeps every
    /// member that apply does not write, exactly as it was (values JSON cannot hold included):
    /// only `aps.alert.title`, `aps.alert.body`, `kindly.decrypted`, `kindly.chat_id` and
    /// `kindly.message_id` change.
    public static func apply(_ payload: DecryptedPayload, toUserInfo userInfo: [AnyHashable: Any]) -> [AnyHashable: Any] {
        var document = userInfo
        var aps = userInfo[AnyHashable(APNsKey.aps)] as? [AnyHashable: Any] ?? [:]
        var alert = aps[AnyHashable(APNsKey.alert)] as? [AnyHashable: Any] ?? [:]
        alert[AnyHashable(APNsKey.title)] = payload.title
        alert[AnyHashable(APNsKey.body)] = payload.body
        aps[AnyHashable(APNsKey.alert)] = alert
        document[AnyHashable(APNsKey.aps)] = aps
        var envelope = userInfo[AnyHashable(KindlyKey.envelope)] as? [AnyHashable: Any] ?? [:]
        envelope[AnyHashable(KindlyKey.decrypted)] = true
        envelope[AnyHashable(KindlyKey.chatID)] = payload.chatId
        if let messageId = payload.messageId { envelope[AnyHashable(KindlyKey.messageID)] = messageId }
        document[AnyHashable(KindlyKey.envelope)] = envelope
        return document
    }
}

extension PushKind {
    /// ``init(userInfo:)-(JSONValue)`` for the push's bytes (not JSON: `silent`).
    public init(userInfo: Data) {
        self.init(userInfo: JSONValue.document(userInfo))
    }

    /// ``init(userInfo:)-(JSONValue)`` for a userInfo dictionary; reads `aps` alone.
    public init(userInfo: [AnyHashable: Any]) {
        self.init(userInfo: JSONValue.specView(of: userInfo, reading: [APNsKey.aps]))
    }
}

extension KindlyPushRouter {
    /// ``route(userInfo:context:decryption:)-(JSONValue,_,_)`` for the push's bytes.
    public static func route(userInfo: Data, context: RouteContext, decryption: KindlyPushDecryption) -> RouteDecision {
        route(userInfo: JSONValue.document(userInfo), context: context, decryption: decryption)
    }

    /// ``route(userInfo:context:decryption:)-(JSONValue,_,_)`` for a userInfo dictionary; reads
    /// `aps` and `kindly` alone.
    public static func route(
        userInfo: [AnyHashable: Any], context: RouteContext, decryption: KindlyPushDecryption
    ) -> RouteDecision {
        route(
            userInfo: JSONValue.specView(of: userInfo, reading: [APNsKey.aps, KindlyKey.envelope]), context: context,
            decryption: decryption)
    }
}

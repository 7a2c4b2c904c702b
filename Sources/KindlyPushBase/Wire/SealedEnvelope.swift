internal import KindlyPushCore

/// The binary fields of a `kindly` envelope (docs/spec/wire-format.md sections 3, 7.2 and 8.1), decoded and
/// length-checked, with the envelope's ``version``: version 1 (`kid`, `epk`, `n`, `ct`), version
/// 2 (and `sid`), version 3 (`kid`, `sid` in mode_auth, `enc` kept in ``ephemeralPublicKey``, `ct`;
/// ``nonce`` empty, as HPKE derives it).
package struct SealedEnvelope: Sendable, Equatable {
    package let version: WireVersion
    package let kid: KeyID
    /// `sid`, the sender key's id: set for version 2 and version 3 mode_auth, `nil` for version 1
    /// (which ignores a `sid` field) and version 3 mode_base.
    package let senderID: SenderID?
    /// The ephemeral public key (`epk`, or HPKE's `enc` in version 3), used as RFC 7748 defines
    /// X25519 (its top bit is ignored).
    package let ephemeralPublicKey: [UInt8]
    /// `n`: 24 bytes in versions 1 and 2, empty in version 3.
    package let nonce: [UInt8]
    /// Ciphertext followed by the 16-byte tag; 16 + 64·j bytes, j ≥ 1.
    package let ciphertext: [UInt8]

    /// An envelope of `version`; `nil` takes version 2 with a `senderID` and version 1 without.
    package init(
        kid: KeyID, senderID: SenderID? = nil, ephemeralPublicKey: [UInt8], nonce: [UInt8], ciphertext: [UInt8], version: WireVersion? = nil
    ) {
        self.version = version ?? .default(hasSender: senderID != nil)
        self.kid = kid
        self.senderID = senderID
        self.ephemeralPublicKey = ephemeralPublicKey
        self.nonce = nonce
        self.ciphertext = ciphertext
    }

    /// The envelope members as the wire format writes them: `v` then base64url fields (`kid`,
    /// `sid` when there is a sender, `epk` and `n` or version 3's `enc`, `ct`).
    package var members: [JSONObject.Member] {
        var members: [JSONObject.Member] = [
            .init(key: KindlyKey.version, value: .number(JSONNumber(version.rawValue))),
            .init(key: KindlyKey.kid, value: .string(kid.base64URL)),
        ]
        if let senderID { members.append(.init(key: KindlyKey.senderID, value: .string(senderID.base64URL))) }
        members.append(.init(key: version.ephemeralKeyName, value: .string(Base64.urlEncoded(ephemeralPublicKey))))
        if version.hasNonce { members.append(.init(key: KindlyKey.nonce, value: .string(Base64.urlEncoded(nonce)))) }
        members.append(.init(key: KindlyKey.ciphertext, value: .string(Base64.urlEncoded(ciphertext))))
        return members
    }

    /// The top-level `kindly` members that are objects: a push is Kindly's exactly when there is
    /// one (reason 1 of section 5, and `isKindlyNotification`).
    package static func envelopes(in userInfo: JSONValue) -> [JSONObject] {
        userInfo.objectValue?.values(named: KindlyKey.envelope).compactMap(\.objectValue) ?? []
    }

    /// Reads the envelope of a push, checking reasons 1 to 3 of sections 5, 7.3 and 8.2 in order.
    package init(userInfo: JSONValue) throws(DecryptionFailure) {
        guard case .object(let document) = userInfo else {
            throw DecryptionFailure(.notKindly, "the push is not a JSON object")
        }
        let envelope = SealedEnvelope.envelopes(in: userInfo).first
        try SealedEnvelope.checkDuplicates(
            hasEnvelope: envelope != nil, document: document.hasDuplicateKeys, envelope: envelope?.hasDuplicateKeys ?? false)
        var buffer: [UInt8] = []
        let fields = try EnvelopeRules.read(TreeEnvelopeMembers(object: envelope!), into: &buffer)
        self.init(
            kid: KeyID(bytes: Array(buffer[fields.kid]))!, senderID: fields.senderID.map { SenderID(bytes: Array(buffer[$0]))! },
            ephemeralPublicKey: Array(buffer[fields.ephemeralKey]), nonce: Array(buffer[fields.nonce]),
            ciphertext: Array(buffer[fields.ciphertext]), version: fields.version)
    }

    /// Reason 1 and the duplicate rule (section 5), for a push that is an object: there is a
    /// `kindly` object, no top-level name occurs twice, and no name inside it.
    package static func checkDuplicates(hasEnvelope: Bool, document: Bool, envelope: Bool) throws(DecryptionFailure) {
        guard hasEnvelope else {
            throw DecryptionFailure(.notKindly, "no \"kindly\" object at the top level")
        }
        // Duplicates first: two readers must never see two different envelopes in one push.
        if document {
            throw DecryptionFailure(.malformed, "a top-level member name occurs twice")
        }
        if envelope {
            throw DecryptionFailure(.malformed, "a member name occurs twice inside \"kindly\"")
        }
    }
}

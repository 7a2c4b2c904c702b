internal import KindlyPushCore

extension KindlyPushSealer {
    /// What sealing does with a message whose push would exceed APNs' limit of 4096 bytes.
    public enum Oversize: Sendable, Equatable, CaseIterable {
        /// Refuse it with ``SealingError/payloadTooLarge(size:)``, as
        /// ``seal(_:for:mode:placeholder:)`` does.
        case refuse
        /// Seal the largest prefix of `body` that fits, cut between two `Character`s (grapheme
        /// clusters: an emoji with its modifiers, or a letter with its combining marks, is never
        /// split) and ended with "…", with `"truncated": true` in the plaintext, so that the app
        /// knows to fetch the whole message by `message_id`. When even the body "…" does not
        /// fit (a huge title or extras), seal the minimal plaintext `{"chat_id", "message_id"
        /// (when there is one), "title": "", "body": "", "truncated": true}`. A message that fits
        /// is sealed unchanged, without the flag. `seal --fit` does this.
        case truncateBody
    }

    /// Seals `payload` for `recipient` and returns the compact APNs JSON, at most 4096 bytes;
    /// `oversize` says what happens to a message that would make a larger push.
    ///
    /// ```swift
    /// let push = try KindlyPushSealer.seal(payload, for: devicePublicKey, oversize: .truncateBody)
    /// ```
    ///
    /// The size is computed, not tried: the padded length in 64-byte blocks plus the 16-byte tag,
    /// its base64url length, the JSON escaping of the body as the compact writer writes it, and
    /// the envelope and `aps` around it give the largest plaintext that fits, and the body is cut
    /// to that in one pass over its characters.
    ///
    /// - Throws: ``SealingError/payloadTooLarge(size:)`` with ``Oversize/refuse`` for a message
    ///   that does not fit, and with ``Oversize/truncateBody`` when even the minimal plaintext
    ///   does not fit (a `chat_id` or `message_id` of thousands of bytes);
    ///   ``SealingError/unusableRecipientKey`` for a low-order public key.
    public static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        mode: Mode = .visible,
        placeholder: Placeholder = .default,
        oversize: Oversize
    ) throws(SealingError) -> [UInt8] {
        try seal(payload, for: recipient, binding: nil, mode: mode, placeholder: placeholder, oversize: oversize)
    }

    /// ``seal(_:for:mode:placeholder:oversize:)`` in the wire format version `wire` (version 3:
    /// mode_auth with `sender`, mode_base without); the fitting counts that version's envelope
    /// (version 3's has `enc` and no `n`).
    public static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        wire: WireVersion,
        from sender: SenderKey? = nil,
        mode: Mode = .visible,
        placeholder: Placeholder = .default,
        oversize: Oversize
    ) throws(SealingError) -> [UInt8] {
        var binding: SenderBinding?
        if let sender { binding = try Self.binding(of: sender, for: recipient) }
        return try seal(payload, for: recipient, binding: binding, version: wire, mode: mode, placeholder: placeholder, oversize: oversize)
    }

    /// ``seal(_:for:mode:placeholder:oversize:)`` as version 2, with the sender key `sender`
    /// (docs/spec/wire-format.md section 7.2): the fitting counts the envelope's `sid`.
    public static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        from sender: SenderKey,
        mode: Mode = .visible,
        placeholder: Placeholder = .default,
        oversize: Oversize
    ) throws(SealingError) -> [UInt8] {
        try seal(
            payload, for: recipient, binding: try binding(of: sender, for: recipient), mode: mode, placeholder: placeholder,
            oversize: oversize)
    }

    /// Every version (`version` `nil`: version 2 with a binding, 1 without), with a binding
    /// computed beforehand; `maximumPayloadSize` is the platform's budget (wire-format section
    /// 9), APNs's 4096 bytes unless given.
    package static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        binding: SenderBinding?,
        version: WireVersion? = nil,
        mode: Mode,
        placeholder: Placeholder,
        oversize: Oversize,
        maximumPayloadSize: Int = WireFormat.maximumPayloadSize
    ) throws(SealingError) -> [UInt8] {
        let version = try resolved(version, sender: binding != nil)
        // `truncated`, when present, is a boolean: `DecryptedPayload` checked it when it was made.
        var message = payload
        if oversize == .truncateBody {
            let templateLength = MessageFitting.templateLength(
                for: recipient, sender: binding?.publicKey.sid, version: version, mode: mode, placeholder: placeholder)
            message = try MessageFitting.fit(
                payload, templateLength: templateLength, version: version, maximumPayloadSize: maximumPayloadSize)
        }
        return try seal(
            message, for: recipient, binding: binding, version: version, mode: mode, placeholder: placeholder,
            maximumPayloadSize: maximumPayloadSize)
    }
}

/// The size arithmetic of a sealed push (docs/spec/wire-format.md sections 2, 3 and 8.1) and the cutting of a
/// message's body to fit APNs' limit, for ``KindlyPushSealer/Oversize/truncateBody``.
///
/// A push is the compact document that ``KindlyPushSealer/apnsDocument(_:mode:placeholder:)``
/// writes. Its `epk`, `n` and `ct` (version 3: `enc` and `ct`) are base64url text, which JSON
/// never escapes, so its length is the length of the same document with those strings empty (the
/// template), plus `b64(32) + b64(24) + b64(P + 16)` (version 3: `b64(32) + b64(P + 16)`), where
/// `P` is the plaintext's padded length: the next multiple of 64 strictly above the plaintext's
/// length (at least one padding byte).
package enum MessageFitting {
    /// What ends a cut body: U+2026, three UTF-8 bytes that JSON does not escape.
    package static let ellipsis = "\u{2026}"

    /// The length of the push's document with empty `epk`, `n` and `ct` (or `enc` and `ct`).
    package static func templateLength(
        for recipient: DevicePublicKey, sender: SenderID? = nil, version: WireVersion? = nil, mode: KindlyPushSealer.Mode,
        placeholder: KindlyPushSealer.Placeholder
    ) -> Int {
        let empty = SealedEnvelope(
            kid: recipient.kid, senderID: sender, ephemeralPublicKey: [], nonce: [], ciphertext: [], version: version)
        return JSONWriter.compactBytes(KindlyPushSealer.apnsDocument(empty, mode: mode, placeholder: placeholder)).count
    }

    /// The length of a push whose template is `templateLength` bytes and whose plaintext is
    /// `plaintextLength` bytes.
    package static func documentLength(templateLength: Int, plaintextLength: Int, version: WireVersion = .one) -> Int {
        let block = WireFormat.paddingBlockSize
        let paddedLength = (plaintextLength / block + 1) * block
        return templateLength + keyAndNonceLength(version) + Base64.urlEncodedLength(of: paddedLength + XChaCha20Poly1305.tagLength)
    }

    /// The base64url length of the ephemeral key and, in versions 1 and 2, the nonce.
    package static func keyAndNonceLength(_ version: WireVersion) -> Int {
        Base64.urlEncodedLength(of: X25519.keyLength) + Base64.urlEncodedLength(of: version.nonceLength)
    }

    /// The largest plaintext length (its compact JSON text, in bytes) whose push fits in
    /// `maximumPayloadSize` bytes (APNs's 4096 unless given); negative when not even an empty
    /// plaintext fits (a huge placeholder).
    ///
    /// With `R` the room left for `ct` after the template, `epk` and `n`, the longest sealed
    /// message is `floor(3R / 4)` bytes (base64url without padding writes `ceil(4x / 3)`
    /// characters for `x` bytes), so the longest padded one is the largest multiple of 64 not
    /// above that minus the tag, and the plaintext has at most one byte less.
    package static func plaintextBudget(
        templateLength: Int, version: WireVersion = .one, maximumPayloadSize: Int = WireFormat.maximumPayloadSize
    ) -> Int {
        let room = maximumPayloadSize - templateLength - keyAndNonceLength(version)
        guard room > 0 else { return -1 }
        let sealedLength = room * 3 / 4
        let paddedLength = (sealedLength - XChaCha20Poly1305.tagLength) / WireFormat.paddingBlockSize * WireFormat.paddingBlockSize
        return paddedLength - 1
    }

    /// `payload` unchanged when its push fits; else the payload with the longest body prefix
    /// that fits (cut between `Character`s, ended with "…") and `"truncated": true`; else the
    /// minimal plaintext.
    ///
    /// - Parameters:
    ///   - templateLength: ``templateLength(for:mode:placeholder:)`` of the push.
    ///   - maximumPayloadSize: the platform's budget for the push (APNs's 4096 bytes unless given).
    /// - Throws: ``KindlyPushSealer/SealingError/payloadTooLarge(size:)`` with the size of the
    ///   push of the minimal plaintext, when even that does not fit.
    package static func fit(
        _ payload: DecryptedPayload, templateLength: Int, version: WireVersion = .one,
        maximumPayloadSize: Int = WireFormat.maximumPayloadSize
    ) throws(KindlyPushSealer.SealingError) -> DecryptedPayload {
        let budget = plaintextBudget(templateLength: templateLength, version: version, maximumPayloadSize: maximumPayloadSize)
        if JSONWriter.compactBytes(.object(payload.object)).count <= budget { return payload }

        // Everything but the body's text: the message with an empty body and the flag, which
        // replaces a `truncated` the message has (a boolean: checked before) or comes last.
        var object = payload.object
        object[KindlyKey.body] = ""
        object[KindlyKey.truncated] = true
        let room = budget - JSONWriter.compactBytes(.object(object)).count - ellipsis.utf8.count
        if room >= 0 {
            // The escaped length of a text is the sum of its bytes' escaped lengths, so one pass
            // finds the longest prefix of whole characters that fits.
            let body = payload.body
            var end = body.startIndex
            var used = 0
            for character in body {
                var cost = 0
                for byte in character.utf8 { cost += JSONWriter.escapedLength(of: byte) }
                guard used + cost <= room else { break }
                used += cost
                end = body.index(after: end)
            }
            object[KindlyKey.body] = .string(String(body[..<end]) + ellipsis)
            return try checked(object, templateLength: templateLength, version: version, maximumPayloadSize: maximumPayloadSize)
        }

        var minimal: JSONObject = [KindlyKey.chatID: .string(payload.chatId)]
        if let messageId = payload.messageId { minimal[KindlyKey.messageID] = .string(messageId) }
        minimal[KindlyKey.title] = ""
        minimal[KindlyKey.body] = ""
        minimal[KindlyKey.truncated] = true
        return try checked(minimal, templateLength: templateLength, version: version, maximumPayloadSize: maximumPayloadSize)
    }

    /// The payload of `object` after verifying that its push fits.
    private static func checked(
        _ object: JSONObject, templateLength: Int, version: WireVersion, maximumPayloadSize: Int
    ) throws(KindlyPushSealer.SealingError) -> DecryptedPayload {
        let size = documentLength(
            templateLength: templateLength, plaintextLength: JSONWriter.compactBytes(.object(object)).count, version: version)
        guard size <= maximumPayloadSize else { throw .payloadTooLarge(size: size) }
        do {
            return try DecryptedPayload(validating: object)
        } catch {
            // Not reached: the members come from a valid payload.
            throw .invalidPlaintext(error.description)
        }
    }
}

extension JSONWriter {
    /// How many bytes ``writeString(_:to:)`` writes for one byte of UTF-8 text: 2 for `"`, `\`
    /// and the control characters with a short escape, 6 for the other control characters
    /// (`\u00XX`), 1 for every other byte (a non-ASCII character's bytes are never escaped).
    package static func escapedLength(of byte: UInt8) -> Int {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x09, 0x0A, 0x0C, 0x0D: return 2
        case 0..<0x20: return 6
        default: return 1
        }
    }
}

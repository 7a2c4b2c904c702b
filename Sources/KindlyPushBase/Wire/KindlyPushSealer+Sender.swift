package import KindlyPushCore

/// The backend side of wire format versions 2 (section 7.2: pushes that prove their sender) and
/// 3 (section 8.1: standard HPKE), and the sealing core every version shares.
extension KindlyPushSealer {
    /// Seals `payload` for `recipient` as version 2 with the sender key `sender`, and returns the
    /// compact APNs JSON, at most 4096 bytes. Only devices that pinned `sender`'s public key
    /// decrypt it.
    ///
    /// This computes the second shared secret `X25519(ssk, pk)` for the one push; a backend that
    /// sends many pushes to one device keeps it (as `kindly-push seal --jsonl` does).
    public static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        from sender: SenderKey,
        mode: Mode = .visible,
        placeholder: Placeholder = .default
    ) throws(SealingError) -> [UInt8] {
        try seal(payload, for: recipient, binding: try binding(of: sender, for: recipient), mode: mode, placeholder: placeholder)
    }

    /// Seals a plaintext object read from JSON as version 2 (the `seal --sender-key-file` command's input).
    public static func seal(
        plaintext: JSONValue,
        for recipient: DevicePublicKey,
        from sender: SenderKey,
        mode: Mode = .visible,
        placeholder: Placeholder = .default
    ) throws(SealingError) -> [UInt8] {
        try seal(
            plaintext: plaintext, for: recipient, binding: try binding(of: sender, for: recipient), mode: mode, placeholder: placeholder)
    }

    /// Seals `payload` for `recipient` in the wire format version `wire` and returns the compact
    /// APNs JSON, at most 4096 bytes: ``WireVersion/one`` (no `sender`), ``WireVersion/two``
    /// (with one), or ``WireVersion/three``, standard HPKE (RFC 9180): mode_base without
    /// `sender`, mode_auth with it (wire format section 8.1).
    ///
    /// ```swift
    /// let push = try KindlyPushSealer.seal(payload, for: devicePublicKey, wire: .three, from: senderKey)
    /// ```
    ///
    /// - Throws: ``SealingError/invalidParameter(_:)`` for version 1 with a sender key or
    ///   version 2 without one; ``SealingError/payloadTooLarge(size:)``;
    ///   ``SealingError/unusableRecipientKey`` for a low-order device key.
    public static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        wire: WireVersion,
        from sender: SenderKey? = nil,
        mode: Mode = .visible,
        placeholder: Placeholder = .default
    ) throws(SealingError) -> [UInt8] {
        var binding: SenderBinding?
        if let sender { binding = try Self.binding(of: sender, for: recipient) }
        return try seal(payload, for: recipient, binding: binding, version: wire, mode: mode, placeholder: placeholder)
    }

    /// ``seal(_:for:wire:from:mode:placeholder:)`` for a plaintext object read from JSON.
    public static func seal(
        plaintext: JSONValue,
        for recipient: DevicePublicKey,
        wire: WireVersion,
        from sender: SenderKey? = nil,
        mode: Mode = .visible,
        placeholder: Placeholder = .default
    ) throws(SealingError) -> [UInt8] {
        try seal(try payload(plaintext: plaintext), for: recipient, wire: wire, from: sender, mode: mode, placeholder: placeholder)
    }

    /// Seals a plaintext object with a binding computed beforehand (`nil`: no sender) in
    /// `version` (`nil`: version 2 with a binding, 1 without).
    package static func seal(
        plaintext: JSONValue,
        for recipient: DevicePublicKey,
        binding: SenderBinding?,
        version: WireVersion? = nil,
        mode: Mode = .visible,
        placeholder: Placeholder = .default
    ) throws(SealingError) -> [UInt8] {
        try seal(
            try payload(plaintext: plaintext), for: recipient, binding: binding, version: version, mode: mode, placeholder: placeholder)
    }

    /// Every version with a binding computed beforehand: the compact APNs JSON, at most
    /// `maximumPayloadSize` bytes (the platform's budget: APNs's 4096 unless given).
    package static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        binding: SenderBinding?,
        version: WireVersion? = nil,
        mode: Mode,
        placeholder: Placeholder,
        maximumPayloadSize: Int = WireFormat.maximumPayloadSize
    ) throws(SealingError) -> [UInt8] {
        let version = try resolved(version, sender: binding != nil)
        // The message in clear: zeroed once sealed.
        var message = JSONWriter.compactBytes(.object(payload.object))
        defer { message.wipeCapacity() }
        let envelope = try sealMessage(
            message, for: recipient, sender: binding, version: version, ephemeralSecretKey: SecureBytes.random(count: X25519.keyLength),
            nonce: Sodium.randomBytes(count: version.nonceLength))
        let bytes = JSONWriter.compactBytes(apnsDocument(envelope, mode: mode, placeholder: placeholder))
        guard bytes.count <= maximumPayloadSize else { throw .payloadTooLarge(size: bytes.count) }
        return bytes
    }

    /// `version`, or the default for a seal with or without a sender; refused when the two do not
    /// go together (version 1 with a sender key, version 2 without).
    package static func resolved(_ version: WireVersion?, sender: Bool) throws(SealingError) -> WireVersion {
        let version = version ?? .default(hasSender: sender)
        guard version.allows(sender: sender) else {
            throw .invalidParameter(
                sender ? "version \(version) has no sender key: seal version 2 or 3 with one" : "version \(version) needs a sender key")
        }
        return version
    }

    /// The sender's side of the binding for one device, `X25519(ssk, pk)`: compute it once and
    /// keep it for every push to that device. A low-order device key is refused.
    package static func binding(of sender: SenderKey, for recipient: DevicePublicKey) throws(SealingError) -> SenderBinding {
        do throws(CryptoError) {
            return try SenderBinding(sender: sender, recipient: recipient)
        } catch {
            throw SealingError(error)
        }
    }

    /// Seals exactly the bytes `message` with a given ephemeral secret key and nonce, as version
    /// 1 or (with `sender`) version 2, or in `version` (version 3: HPKE, no nonce, `nonce` empty):
    /// the deterministic core, for test vectors (the seam that fixes the ephemeral key).
    package static func sealMessage(
        _ message: [UInt8],
        for recipient: DevicePublicKey,
        sender: SenderBinding?,
        version: WireVersion? = nil,
        ephemeralSecretKey: SecureBytes,
        nonce: [UInt8]
    ) throws(SealingError) -> SealedEnvelope {
        let version = try resolved(version, sender: sender != nil)
        guard ephemeralSecretKey.count == X25519.keyLength else {
            throw .invalidParameter("the ephemeral secret key must be 32 bytes")
        }
        guard nonce.count == version.nonceLength else { throw .invalidParameter("the nonce must be \(version.nonceLength) bytes") }
        do throws(CryptoError) {
            return try message.withBytes { (bytes) throws(CryptoError) in
                try KindlyBox.seal(
                    bytes, for: recipient, sender: sender, version: version, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce)
            }
        } catch {
            throw SealingError(error)
        }
    }
}

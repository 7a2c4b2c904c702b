package import KindlyPushCore

/// The backend side of wire format version 2 (section 7.2): pushes that prove their sender.
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

    /// Seals a plaintext object with a binding computed beforehand (`nil`: version 1).
    package static func seal(
        plaintext: JSONValue,
        for recipient: DevicePublicKey,
        binding: SenderBinding?,
        mode: Mode = .visible,
        placeholder: Placeholder = .default
    ) throws(SealingError) -> [UInt8] {
        guard let binding else { return try seal(plaintext: plaintext, for: recipient, mode: mode, placeholder: placeholder) }
        return try seal(try payload(plaintext: plaintext), for: recipient, binding: binding, mode: mode, placeholder: placeholder)
    }

    /// Version 2 with a binding computed beforehand: the compact APNs JSON, at most 4096 bytes.
    package static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        binding: SenderBinding,
        mode: Mode,
        placeholder: Placeholder
    ) throws(SealingError) -> [UInt8] {
        let message = JSONWriter.compactBytes(.object(payload.object))
        let envelope = try sealMessage(
            message, for: recipient, sender: binding, ephemeralSecretKey: SecureBytes.random(count: X25519.keyLength),
            nonce: Sodium.randomBytes(count: XChaCha20Poly1305.nonceLength))
        let bytes = JSONWriter.compactBytes(apnsDocument(envelope, mode: mode, placeholder: placeholder))
        guard bytes.count <= WireFormat.maximumPayloadSize else { throw .payloadTooLarge(size: bytes.count) }
        return bytes
    }

    /// The sender's side of the binding for one device, `X25519(ssk, pk)`: compute it once and
    /// keep it for every push to that device. A low-order device key is refused.
    package static func binding(of sender: SenderKey, for recipient: DevicePublicKey) throws(SealingError) -> SenderBinding {
        do throws(CryptoError) {
            return try SenderBinding(sender: sender, recipient: recipient)
        } catch .allZeroSharedSecret {
            throw .unusableRecipientKey
        } catch {
            throw .invalidParameter(error.description)
        }
    }

    /// Seals exactly the bytes `message` with a given ephemeral secret key and nonce, as version
    /// 1 or (with `sender`) version 2: the deterministic core, for test vectors.
    package static func sealMessage(
        _ message: [UInt8],
        for recipient: DevicePublicKey,
        sender: SenderBinding?,
        ephemeralSecretKey: SecureBytes,
        nonce: [UInt8]
    ) throws(SealingError) -> SealedEnvelope {
        guard ephemeralSecretKey.count == X25519.keyLength else {
            throw .invalidParameter("the ephemeral secret key must be 32 bytes")
        }
        guard nonce.count == XChaCha20Poly1305.nonceLength else { throw .invalidParameter("the nonce must be 24 bytes") }
        do throws(CryptoError) {
            return try message.withBytes { (bytes) throws(CryptoError) in
                try KindlyBox.seal(bytes, for: recipient, sender: sender, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce)
            }
        } catch .allZeroSharedSecret {
            throw .unusableRecipientKey
        } catch {
            throw .invalidParameter(error.description)
        }
    }
}

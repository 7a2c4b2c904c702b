/// The cryptographic core of wire format v1, shared by sealing and decryption:
///
///     ss  = X25519(esk, pk)                      (all zeros: refused)
///     k   = BLAKE2b-256(LABEL || ss || epk || pk)
///     aad = LABEL || kid
///     ct  = XChaCha20-Poly1305(k, n, aad, pad(m, 64))   ciphertext || 16-byte tag
///
/// The shared secret and the derived key live in ``SecureBytes`` and are wiped as soon as
/// the operation returns.
enum KindlyBox {
    /// `k = BLAKE2b(LABEL || ss || epk || pk)`, 32 bytes.
    static func deriveKey(sharedSecret: SecureBytes, ephemeralPublicKey: [UInt8], recipient: DevicePublicKey) -> SecureBytes {
        let label = WireFormat.label
        let inputLength = label.count + sharedSecret.count + ephemeralPublicKey.count + X25519.keyLength
        let input = SecureBytes(count: inputLength) { buffer in
            var offset = 0
            func append(_ bytes: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + bytes.count)]).copyMemory(from: bytes)
                offset += bytes.count
            }
            label.withUnsafeBytes(append)
            sharedSecret.withUnsafeBytes(append)
            ephemeralPublicKey.withUnsafeBytes(append)
            recipient.rawRepresentation.withUnsafeBytes(append)
        }
        return input.withUnsafeBytes { BLAKE2b.secretHash($0, outputLength: XChaCha20Poly1305.keyLength) }
    }

    /// `aad = LABEL || kid`.
    static func associatedData(for kid: KeyID) -> [UInt8] {
        WireFormat.label + kid.bytes
    }

    /// Seals `message` (the plaintext JSON text, unpadded) for `recipient` with the given
    /// ephemeral secret key and nonce.
    static func seal(
        _ message: UnsafeRawBufferPointer,
        for recipient: DevicePublicKey,
        ephemeralSecretKey: SecureBytes,
        nonce: [UInt8]
    ) throws(CryptoError) -> SealedEnvelope {
        let ephemeralPublicKey = try X25519.publicKey(for: ephemeralSecretKey)
        let sharedSecret = try recipient.rawRepresentation.withBytes { (pk) throws(CryptoError) in
            try X25519.sharedSecret(secretKey: ephemeralSecretKey, publicKey: pk)
        }
        let key = deriveKey(sharedSecret: sharedSecret, ephemeralPublicKey: ephemeralPublicKey, recipient: recipient)
        let kid = recipient.kid
        let padded = Padding.pad(message, blockSize: WireFormat.paddingBlockSize)
        let ciphertext = try padded.withBytes { (m) throws(CryptoError) in
            try nonce.withBytes { (n) throws(CryptoError) in
                try associatedData(for: kid).withBytes { (aad) throws(CryptoError) in
                    try XChaCha20Poly1305.seal(m, key: key, nonce: n, authenticating: aad)
                }
            }
        }
        return SealedEnvelope(kid: kid, ephemeralPublicKey: ephemeralPublicKey, nonce: nonce, ciphertext: ciphertext)
    }

    /// Every authentication failure looks the same to the caller: one reason, one text.
    static let authenticationFailure = DecryptionFailure(.authenticationFailed, "the push does not authenticate with this device's key")

    /// Opens `envelope` with `key` and returns the unpadded plaintext bytes
    /// (reasons 5 and 6 of section 5; the padding part of 6).
    ///
    /// A low-order ephemeral key (all-zero shared secret) does not return early: it goes on
    /// with a random key through the same derivation and AEAD check, which then fails, so that
    /// it cannot be told from a bad tag by its timing or its error.
    static func open(_ envelope: SealedEnvelope, with key: DeviceKey) throws(DecryptionFailure) -> [UInt8] {
        let computed = try? envelope.ephemeralPublicKey.withBytes { (epk) throws(CryptoError) in
            try X25519.sharedSecret(secretKey: key.secretKey.storage, publicKey: epk)
        }
        let sharedSecret = computed ?? SecureBytes.random(count: X25519.keyLength)
        let derivedKey = deriveKey(
            sharedSecret: sharedSecret, ephemeralPublicKey: envelope.ephemeralPublicKey, recipient: key.publicKey)
        var padded: [UInt8]
        do {
            padded = try envelope.ciphertext.withBytes { (ct) throws(CryptoError) in
                try envelope.nonce.withBytes { (n) throws(CryptoError) in
                    try associatedData(for: envelope.kid).withBytes { (aad) throws(CryptoError) in
                        try XChaCha20Poly1305.open(ct, key: derivedKey, nonce: n, authenticating: aad)
                    }
                }
            }
        } catch {
            throw authenticationFailure
        }
        // Refused whatever the AEAD said: a random key passing the tag is only astronomically unlikely.
        guard computed != nil else { throw authenticationFailure }
        let length: Int
        do {
            length = try padded.withBytes { (bytes) throws(CryptoError) in
                try Padding.unpaddedLength(bytes, blockSize: WireFormat.paddingBlockSize)
            }
        } catch {
            throw DecryptionFailure(.badPlaintext, "the padding is invalid")
        }
        padded.removeSubrange(length...)
        return padded
    }
}

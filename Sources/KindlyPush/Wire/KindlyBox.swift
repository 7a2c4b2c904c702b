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

    /// Opens `envelope` with `key` and returns the unpadded plaintext bytes
    /// (reasons 5 and 6 of section 5; the padding part of 6).
    static func open(_ envelope: SealedEnvelope, with key: DeviceKey) throws(DecryptionFailure) -> [UInt8] {
        let capacity = max(envelope.ciphertext.count - XChaCha20Poly1305.tagLength, 0)
        var failure: DecryptionFailure?
        let plaintext = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            initialized = 0
            do throws(DecryptionFailure) {
                initialized = try envelope.ciphertext.withBytes { (ct) throws(DecryptionFailure) in
                    try envelope.nonce.withBytes { (n) throws(DecryptionFailure) in
                        try envelope.ephemeralPublicKey.withBytes { (epk) throws(DecryptionFailure) in
                            try envelope.kid.bytes.withBytes { (kid) throws(DecryptionFailure) in
                                try open(
                                    ciphertext: ct, nonce: n, ephemeralPublicKey: epk, kid: kid, with: key,
                                    into: UnsafeMutableRawBufferPointer(buffer))
                            }
                        }
                    }
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return plaintext
    }

    /// The decryption core on raw buffers: X25519, the key derivation, the AEAD and the padding
    /// check. Writes the unpadded plaintext at the start of `plaintext` (at least
    /// `ciphertext.count - 16` bytes) and returns its length. The shared secret and the derived
    /// key live in a stack buffer that is wiped with `sodium_memzero` on every way out.
    static func open(
        ciphertext: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer,
        ephemeralPublicKey: UnsafeRawBufferPointer,
        kid: UnsafeRawBufferPointer,
        with key: DeviceKey,
        into plaintext: UnsafeMutableRawBufferPointer
    ) throws(DecryptionFailure) -> Int {
        let result = withUnsafeTemporaryAllocation(byteCount: 2 * X25519.keyLength, alignment: 16) { secrets in
            defer { SecureBytes.wipeScratch(secrets) }
            return Result { () throws(DecryptionFailure) -> Int in
                let sharedSecret = UnsafeMutableRawBufferPointer(rebasing: secrets[0..<X25519.keyLength])
                let derivedKey = UnsafeMutableRawBufferPointer(rebasing: secrets[X25519.keyLength...])
                do throws(CryptoError) {
                    try key.secretKey.withUnsafeBytes { (secret) throws(CryptoError) in
                        try X25519.sharedSecret(secretKey: secret, publicKey: ephemeralPublicKey, into: sharedSecret)
                    }
                } catch {
                    throw DecryptionFailure(.authenticationFailed, "the shared secret is all zeros (low-order ephemeral key)")
                }
                deriveKey(
                    sharedSecret: UnsafeRawBufferPointer(sharedSecret), ephemeralPublicKey: ephemeralPublicKey,
                    recipient: key.publicKey, into: derivedKey)
                let paddedLength: Int
                do throws(CryptoError) {
                    paddedLength = try withAssociatedData(kid: kid) { (aad) throws(CryptoError) in
                        try XChaCha20Poly1305.open(
                            ciphertext, key: UnsafeRawBufferPointer(derivedKey), nonce: nonce, authenticating: aad, into: plaintext)
                    }
                } catch {
                    throw DecryptionFailure(.authenticationFailed, "the authentication tag does not verify")
                }
                do throws(CryptoError) {
                    return try Padding.unpaddedLength(
                        UnsafeRawBufferPointer(rebasing: plaintext[0..<paddedLength]), blockSize: WireFormat.paddingBlockSize)
                } catch {
                    throw DecryptionFailure(.badPlaintext, "the padding is invalid")
                }
            }
        }
        return try result.get()
    }

    /// `k = BLAKE2b(LABEL || ss || epk || pk)` written into `out` (32 bytes), without copying the
    /// secret into another buffer.
    static func deriveKey(
        sharedSecret: UnsafeRawBufferPointer, ephemeralPublicKey: UnsafeRawBufferPointer, recipient: DevicePublicKey,
        into out: UnsafeMutableRawBufferPointer
    ) {
        WireFormat.label.withUnsafeBytes { label in
            recipient.rawRepresentation.withUnsafeBytes { pk in
                BLAKE2b.hash(label, sharedSecret, ephemeralPublicKey, pk, into: out)
            }
        }
    }

    /// Calls `body` with `aad = LABEL || kid` in a stack buffer.
    static func withAssociatedData<R, E: Error>(
        kid: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let label = WireFormat.label
        let result = withUnsafeTemporaryAllocation(byteCount: label.count + kid.count, alignment: 1) { aad in
            label.withUnsafeBytes { aad.copyMemory(from: $0) }
            UnsafeMutableRawBufferPointer(rebasing: aad[label.count...]).copyMemory(from: kid)
            return Result { () throws(E) in try body(UnsafeRawBufferPointer(aad)) }
        }
        return try result.get()
    }
}

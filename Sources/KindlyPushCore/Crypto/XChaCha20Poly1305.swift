internal import CSodium

/// XChaCha20-Poly1305 (IETF construction, 24-byte nonce) through libsodium's
/// `crypto_aead_xchacha20poly1305_ietf_*`.
///
/// The sealed box is the ciphertext followed by the 16-byte Poly1305 tag:
///
///     ciphertext (same length as the message) || tag (16 bytes)
package enum XChaCha20Poly1305 {
    package static let keyLength = 32
    package static let nonceLength = 24
    package static let tagLength = 16

    /// Encrypts `message` and returns ciphertext || tag.
    package static func seal(
        _ message: UnsafeRawBufferPointer,
        key: SecureBytes,
        nonce: UnsafeRawBufferPointer,
        authenticating associatedData: UnsafeRawBufferPointer
    ) throws(CryptoError) -> [UInt8] {
        _ = Sodium.ready
        try validate(key: key, nonce: nonce)
        let sealedLength = message.count + tagLength
        return key.withUnsafeBytes { keyBytes in
            [UInt8](unsafeUninitializedCapacity: sealedLength) { out, initialized in
                var written: UInt64 = 0
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    out.baseAddress!, &written,
                    message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
                    associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                    nil,
                    nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                initialized = Int(written)
            }
        }
    }

    /// Verifies the tag and returns the message, or throws ``CryptoError/authenticationFailure``.
    ///
    /// - Parameter sealed: ciphertext || 16-byte tag.
    package static func open(
        _ sealed: UnsafeRawBufferPointer,
        key: SecureBytes,
        nonce: UnsafeRawBufferPointer,
        authenticating associatedData: UnsafeRawBufferPointer
    ) throws(CryptoError) -> [UInt8] {
        _ = Sodium.ready
        try validate(key: key, nonce: nonce)
        guard sealed.count >= tagLength else { throw .authenticationFailure }
        var status: Int32 = -1
        let message = key.withUnsafeBytes { keyBytes in
            [UInt8](unsafeUninitializedCapacity: sealed.count - tagLength) { out, initialized in
                var written: UInt64 = 0
                status = crypto_aead_xchacha20poly1305_ietf_decrypt(
                    out.baseAddress, &written,
                    nil,
                    sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count),
                    associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                    nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                initialized = status == 0 ? Int(written) : 0
            }
        }
        guard status == 0 else { throw .authenticationFailure }
        return message
    }

    /// Verifies the tag and writes the message into `out` (at least `sealed.count - 16` bytes);
    /// returns its length. For callers that keep the key in a buffer of their own (32 bytes).
    package static func open(
        _ sealed: UnsafeRawBufferPointer,
        key: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer,
        authenticating associatedData: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) -> Int {
        _ = Sodium.ready
        precondition(key.count == keyLength && nonce.count == nonceLength)
        guard sealed.count >= tagLength else { throw .authenticationFailure }
        precondition(out.count >= sealed.count - tagLength)
        var written: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_decrypt(
            out.baseAddress?.assumingMemoryBound(to: UInt8.self), &written,
            nil,
            sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count),
            associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard status == 0 else { throw .authenticationFailure }
        return Int(written)
    }

    /// Encrypts `message` into `out` (at least `message.count + 16` bytes) as ciphertext || tag;
    /// returns the sealed length. For callers that keep the key in a buffer of their own (32 bytes).
    package static func seal(
        _ message: UnsafeRawBufferPointer,
        key: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer,
        authenticating associatedData: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) -> Int {
        _ = Sodium.ready
        precondition(key.count == keyLength && nonce.count == nonceLength && out.count >= message.count + tagLength)
        var written: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
            associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
            nil,
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        return Int(written)
    }

    private static func validate(key: SecureBytes, nonce: UnsafeRawBufferPointer) throws(CryptoError) {
        guard key.count == keyLength else {
            throw .invalidLength(what: "an XChaCha20-Poly1305 key", expected: keyLength, actual: key.count)
        }
        guard nonce.count == nonceLength else {
            throw .invalidLength(what: "an XChaCha20-Poly1305 nonce", expected: nonceLength, actual: nonce.count)
        }
    }
}

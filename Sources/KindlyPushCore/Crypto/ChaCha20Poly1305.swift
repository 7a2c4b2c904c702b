internal import CSodium

/// ChaCha20-Poly1305, the IETF construction with a 12-byte nonce (RFC 8439), through libsodium's
/// `crypto_aead_chacha20poly1305_ietf_*`: HPKE's AEAD `0x0003`.
///
/// The sealed box is the ciphertext followed by the 16-byte Poly1305 tag, as for
/// ``XChaCha20Poly1305``. Keys stay in the caller's buffers (wiped by the caller).
package enum ChaCha20Poly1305 {
    package static let keyLength = 32
    package static let nonceLength = 12
    package static let tagLength = 16

    /// Encrypts `message` into `out` (at least `message.count + 16` bytes) as ciphertext || tag;
    /// returns the sealed length.
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
        _ = crypto_aead_chacha20poly1305_ietf_encrypt(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
            associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
            nil,
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        return Int(written)
    }

    /// Verifies the tag and writes the message into `out` (at least `sealed.count - 16` bytes);
    /// returns its length, or throws ``CryptoError/authenticationFailure``.
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
        let status = crypto_aead_chacha20poly1305_ietf_decrypt(
            out.baseAddress?.assumingMemoryBound(to: UInt8.self), &written,
            nil,
            sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count),
            associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard status == 0 else { throw .authenticationFailure }
        return Int(written)
    }
}

internal import CSodium

/// X25519 (RFC 7748) through libsodium's `crypto_scalarmult`.
package enum X25519 {
    package static let keyLength = 32

    /// The public key for `secretKey` (`crypto_scalarmult_base`).
    package static func publicKey(for secretKey: SecureBytes) throws(CryptoError) -> [UInt8] {
        _ = Sodium.ready
        guard secretKey.count == keyLength else {
            throw .invalidLength(what: "an X25519 secret key", expected: keyLength, actual: secretKey.count)
        }
        var publicKey = [UInt8](repeating: 0, count: keyLength)
        secretKey.withUnsafeBytes { secret in
            publicKey.withUnsafeMutableBytes { out in
                _ = crypto_scalarmult_base(out.baseAddress!, secret.baseAddress!)
            }
        }
        return publicKey
    }

    /// The public key for a 32-byte secret key in a buffer of the caller's, written into `out` (32 bytes).
    package static func publicKey(secretKey: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        _ = Sodium.ready
        precondition(secretKey.count == keyLength && out.count == keyLength)
        _ = crypto_scalarmult_base(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self), secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// The shared secret `X25519(secretKey, publicKey)`.
    ///
    /// The top bit of `publicKey` is ignored, as RFC 7748 says. Throws
    /// ``CryptoError/allZeroSharedSecret`` for low-order public keys (libsodium checks this).
    package static func sharedSecret(
        secretKey: SecureBytes,
        publicKey: UnsafeRawBufferPointer
    ) throws(CryptoError) -> SecureBytes {
        _ = Sodium.ready
        guard secretKey.count == keyLength else {
            throw .invalidLength(what: "an X25519 secret key", expected: keyLength, actual: secretKey.count)
        }
        guard publicKey.count == keyLength else {
            throw .invalidLength(what: "an X25519 public key", expected: keyLength, actual: publicKey.count)
        }
        return try SecureBytes(count: keyLength) { (out) throws(CryptoError) in
            try secretKey.withUnsafeBytes { (secret) throws(CryptoError) in
                try sharedSecret(secretKey: secret, publicKey: publicKey, into: out)
            }
        }
    }

    /// The shared secret written into `out` (32 bytes), for callers that keep it in a buffer of
    /// their own and wipe it. All three buffers must be 32 bytes.
    package static func sharedSecret(
        secretKey: UnsafeRawBufferPointer,
        publicKey: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) {
        _ = Sodium.ready
        precondition(secretKey.count == keyLength && publicKey.count == keyLength && out.count == keyLength)
        let status = crypto_scalarmult(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self),
            secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self),
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard status == 0 else { throw .allZeroSharedSecret }
    }

    /// Why `publicKey` (32 bytes) cannot be a peer's key, or `nil`: a value
    /// of p = 2^255 − 19 or more, or with its top bit set (another spelling of a smaller one,
    /// such as p + 9 for the base point); the base point 9 itself, whose shared secret with a key
    /// is that key's public key; and, unless `smallOrder` is false, a point of small order (0, 1,
    /// the order-8 points: every shared secret with it is all zero, which libsodium's
    /// `crypto_scalarmult` reports).
    package static func publicKeyProblem(_ publicKey: UnsafeRawBufferPointer, smallOrder: Bool = true) -> String? {
        _ = Sodium.ready
        precondition(publicKey.count == keyLength)
        if publicKey[31] & 0x80 != 0 { return "is not canonical (its top bit is set)" }
        // Little-endian: compare from the most significant byte down with p = 0x7fff…ffed.
        let p: (Int) -> UInt8 = { $0 == 31 ? 0x7F : $0 == 0 ? 0xED : 0xFF }
        var index = 31
        while index > 0, publicKey[index] == p(index) { index -= 1 }
        if publicKey[index] >= p(index) { return "is not canonical (2^255 - 19 or more)" }
        if publicKey[0] == 9, publicKey[1...].allSatisfy({ $0 == 0 }) { return "is the curve's base point" }
        guard smallOrder else { return nil }
        // A fixed scalar: neither it nor the product is secret.
        let scalar = [UInt8](repeating: 0x2A, count: keyLength)
        var out = [UInt8](repeating: 0, count: keyLength)
        let status = crypto_scalarmult(&out, scalar, publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
        return status == 0 ? nil : "is a point of small order (every shared secret with it is all zero)"
    }
}

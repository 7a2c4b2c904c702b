/// Why a primitive refused its inputs. Messages never contain key material.
package enum CryptoError: Error, Sendable, Equatable {
    /// A key, nonce or public value had the wrong length for the primitive.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// X25519 gave the all-zero shared secret (a low-order public key).
    case allZeroSharedSecret
    /// The AEAD tag did not verify: wrong key, nonce, associated data or tampered ciphertext.
    case authenticationFailure
    /// ISO/IEC 7816-4 padding was not as `sodium_unpad` requires.
    case invalidPadding
    /// A buffer would exceed what the primitive can process.
    case messageTooLong
}

extension CryptoError: CustomStringConvertible {
    package var description: String {
        switch self {
        case .invalidLength(let what, let expected, let actual):
            return "\(what) must be \(expected) bytes, got \(actual)"
        case .allZeroSharedSecret: return "the shared secret is all zeros"
        case .authenticationFailure: return "the authentication tag does not verify"
        case .invalidPadding: return "the padding is invalid"
        case .messageTooLong: return "the message is too long"
        }
    }
}

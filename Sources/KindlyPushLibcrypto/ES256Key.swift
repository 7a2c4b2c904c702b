internal import COpenSSL
package import KindlyPushBase
package import KindlyPushCore

/// Why a PEM private key cannot sign; the text never quotes the key.
package struct AuthKeyError: Error, Sendable, CustomStringConvertible {
    package let description: String

    package init(_ description: String) { self.description = description }
}

/// A P-256 private key that signs JWTs with ES256: the APNs auth key (`AuthKey_KEYID.p8`, PKCS#8
/// PEM) and the VAPID key of Web Push (a key file's scalar).
///
/// Its only lasting copy is the 32-byte scalar in guarded ``SecureBytes`` (locked in RAM, wiped
/// when freed). OpenSSL gets it back for each signature (once per provider token or VAPID
/// token, so rarely) in a key that `EVP_PKEY_free` cleanses and frees at once.
package struct ES256Key: Sendable {
    private let scalar: SecureBytes
    /// The uncompressed public point (65 bytes): VAPID's `k`.
    package let publicKey: [UInt8]

    /// The key in `pem` (PKCS#8 or SEC 1 PEM, no pass phrase), checked: an EC private key on
    /// P-256. `path` names it in errors.
    package init(pem: SecureBytes, path: String) throws(AuthKeyError) {
        let bad = AuthKeyError("the auth key '\(path)' is not an EC P-256 private key in PEM (PKCS#8, as Apple's .p8)")
        let parsed = pem.withUnsafeBytes { (raw) -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // A key with a pass phrase is refused, never prompted for: the callback gives none.
            let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            // OpenSSL's error queue may name the PEM line it stopped at: dropped, never shown.
            ERR_clear_error()
            return key
        }
        guard let parsed, let key = try? P256.PrivateKey.adopting(parsed), let scalar = try? key.scalar() else { throw bad }
        self.scalar = scalar.guarded()
        publicKey = key.publicKey
    }

    /// The key whose scalar is `scalar` (32 bytes, big-endian), kept in guarded memory.
    package init(scalar: SecureBytes) throws(LibcryptoError) {
        let key = try P256.PrivateKey(scalar: scalar)
        self.scalar = scalar.guarded()
        publicKey = key.publicKey
    }

    /// A new key from OpenSSL's CSPRNG.
    package static func generate() throws(LibcryptoError) -> ES256Key {
        try ES256Key(scalar: P256.PrivateKey.generate().scalar())
    }

    /// Runs `body` with the 32-byte scalar (for a key file). Do not let the pointer escape.
    package func withScalar<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try scalar.withUnsafeBytes(body)
    }

    /// The ES256 signature of `message` (JWS, RFC 7518 section 3.4): SHA-256, ECDSA on P-256, and
    /// the raw `r || s`, 32 bytes each, not DER.
    package func sign(_ message: [UInt8]) throws(LibcryptoError) -> [UInt8] {
        let key = try P256.PrivateKey(scalar: scalar)
        return try message.withBytes { (bytes) throws(LibcryptoError) in try key.signES256(bytes) }
    }

    /// A compact JWS (RFC 7515) of `claims`, signed with ES256: `B64URL(header) "."
    /// B64URL(claims) "." B64URL(r || s)`, the header `{"alg":"ES256"}` followed by `headerMembers`
    /// (APNs's `kid`, VAPID's `typ`; ``JWS/compact(algorithm:headerMembers:claims:sign:)``).
    package func jwt(headerMembers: [JSONObject.Member], claims: JSONValue) throws(LibcryptoError) -> String {
        try JWS.compact(algorithm: "ES256", headerMembers: headerMembers, claims: claims) { (input) throws(LibcryptoError) in
            try sign(input)
        }
    }
}

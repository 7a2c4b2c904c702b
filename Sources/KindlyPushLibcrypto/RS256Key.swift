internal import COpenSSL
package import KindlyPushBase
package import KindlyPushCore

/// An RSA private key that signs JWTs with RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518
/// section 3.3): a Google service account's key, which signs FCM's OAuth 2.0 assertion.
///
/// Its only lasting copy is its PEM in guarded ``SecureBytes`` (locked in RAM, wiped when
/// freed). OpenSSL reads it again for each signature (once per access token, so rarely) into a
/// key that `EVP_PKEY_free` cleanses and frees at once.
package struct RS256Key: Sendable {
    private let pem: SecureBytes
    /// The smallest modulus taken, in bits (a service account key has 2048).
    package static let minimumBits = 2048

    /// The key in `pem` (PKCS#8 or PKCS#1 PEM, no pass phrase), checked: an RSA private key of
    /// at least ``minimumBits`` bits. `what` names it in errors, which never quote it.
    package init(pem: SecureBytes, what: String) throws(AuthKeyError) {
        guard let key = Self.read(pem) else { throw AuthKeyError("\(what) is not an RSA private key in PEM (PKCS#8)") }
        defer { EVP_PKEY_free(key) }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA, EVP_PKEY_get_bits(key) >= Int32(Self.minimumBits) else {
            throw AuthKeyError("\(what) is not an RSA key of \(Self.minimumBits) bits or more")
        }
        self.pem = pem.guarded()
    }

    /// OpenSSL's key of `pem`, or nil; a key with a pass phrase is refused, never prompted for.
    private static func read(_ pem: SecureBytes) -> OpaquePointer? {
        pem.withUnsafeBytes { (raw) -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            // OpenSSL's error queue may name the PEM line it stopped at: dropped, never shown.
            ERR_clear_error()
            return key
        }
    }

    /// The RS256 signature of `message`.
    package func sign(_ message: [UInt8]) throws(LibcryptoError) -> [UInt8] {
        guard let key = Self.read(pem) else { throw .failed("PEM_read_bio_PrivateKey") }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw .failed("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        try check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key), "EVP_DigestSignInit")
        var length = 0
        try check(EVP_DigestSign(context, nil, &length, message, message.count), "EVP_DigestSign")
        var signature = [UInt8](repeating: 0, count: length)
        try check(EVP_DigestSign(context, &signature, &length, message, message.count), "EVP_DigestSign")
        return Array(signature.prefix(length))
    }

    /// A compact JWS (RFC 7515) of `claims` signed with RS256, the header `{"alg":"RS256"}`
    /// followed by `headerMembers` (``JWS/compact(algorithm:headerMembers:claims:sign:)``).
    package func jwt(headerMembers: [JSONObject.Member], claims: JSONValue) throws(LibcryptoError) -> String {
        try JWS.compact(algorithm: "RS256", headerMembers: headerMembers, claims: claims) { (input) throws(LibcryptoError) in
            try sign(input)
        }
    }
}

/// JSON Web Signatures in compact form (RFC 7515), whatever signs them.
package enum JWS {
    /// `B64URL(header) "." B64URL(claims) "." B64URL(signature)`: the header `{"alg": ALGORITHM}`
    /// followed by `headerMembers`, JSON written compactly, base64url without padding, and
    /// `sign` given the first two parts.
    package static func compact(
        algorithm: String, headerMembers: [JSONObject.Member], claims: JSONValue,
        sign: ([UInt8]) throws(LibcryptoError) -> [UInt8]
    ) throws(LibcryptoError) -> String {
        let header = JSONValue.object(JSONObject([.init(key: "alg", value: .string(algorithm))] + headerMembers))
        var input = JSONWriter.compactBytes(header).withUnsafeBytes { Base64.urlEncodedBytes($0) }
        input.append(UInt8(ascii: "."))
        input += JSONWriter.compactBytes(claims).withUnsafeBytes { Base64.urlEncodedBytes($0) }
        let signature = try sign(input)
        return String(decoding: input, as: UTF8.self) + "." + Base64.urlEncoded(signature)
    }
}

internal import COpenSSL
package import KindlyPushCore

/// NIST P-256 (secp256r1, `prime256v1`) through libcrypto's EVP interface: key pairs, ECDH (for
/// Web Push, RFC 8291) and ES256 signatures (the APNs provider token, VAPID), the curve
/// libsodium does not have.
///
/// A key lives in an `EVP_PKEY`, freed (and its secret cleansed) by `EVP_PKEY_free` when its
/// last reference goes away; a scalar or a shared secret that leaves OpenSSL goes into a wiped
/// ``SecureBytes``, and the `BIGNUM`s that carry them are freed with `BN_clear_free`.
package enum P256 {
    /// An uncompressed point: `0x04 || X || Y` (SEC 1, section 2.3.3).
    package static let publicKeyLength = 65
    /// A private scalar, big-endian.
    package static let scalarLength = 32
    /// An ECDH shared secret: the X coordinate of the shared point.
    package static let sharedSecretLength = 32
    /// An ES256 signature as JOSE writes it: `r || s`, 32 bytes each (RFC 7518, section 3.4).
    package static let signatureLength = 64

    /// OpenSSL's name of the curve.
    static let groupName = "prime256v1"

    /// A C string that lives as long as the program: `OSSL_PARAM_BLD` keeps the pointers to its
    /// keys and strings until `OSSL_PARAM_BLD_to_param`, and the parameters it makes keep the
    /// keys' (a Swift `String` passed to C lives only for the call).
    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// A key pair: the private key in an `EVP_PKEY` and its uncompressed public key.
    package final class PrivateKey {
        let key: OpaquePointer
        /// The uncompressed public point (``P256/publicKeyLength`` bytes).
        package let publicKey: [UInt8]

        private init(key: OpaquePointer) throws(LibcryptoError) {
            self.key = key
            do {
                publicKey = try P256.encodedPublicKey(key)
            } catch {
                EVP_PKEY_free(key)
                throw error
            }
        }

        deinit { EVP_PKEY_free(key) }

        /// A fresh key pair from OpenSSL's CSPRNG.
        package static func generate() throws(LibcryptoError) -> PrivateKey {
            guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .failed("EVP_PKEY_CTX_new_from_name(EC)") }
            defer { EVP_PKEY_CTX_free(context) }
            try check(EVP_PKEY_keygen_init(context), "EVP_PKEY_keygen_init")
            try check(EVP_PKEY_CTX_set_group_name(context, P256.groupName), "EVP_PKEY_CTX_set_group_name")
            var key: OpaquePointer?
            try check(EVP_PKEY_generate(context, &key), "EVP_PKEY_generate")
            guard let key else { throw .failed("EVP_PKEY_generate") }
            return try PrivateKey(key: key)
        }

        /// The key pair of `scalar` (32 bytes, big-endian, from 1 to the group order less one).
        package convenience init(scalar: SecureBytes) throws(LibcryptoError) {
            guard scalar.count == P256.scalarLength else { throw LibcryptoError("a P-256 private key is 32 bytes") }
            let key = try scalar.withUnsafeBytes { (bytes) throws(LibcryptoError) -> OpaquePointer in
                let publicKey = try P256.publicKey(ofScalar: bytes)
                return try publicKey.withBytes { (point) throws(LibcryptoError) in try P256.fromData(scalar: bytes, publicKey: point) }
            }
            try self.init(key: key)
        }

        /// The key of an `EVP_PKEY` that OpenSSL parsed (a PEM file), checked to be on P-256;
        /// takes ownership of `key`.
        static func adopting(_ key: OpaquePointer) throws(LibcryptoError) -> PrivateKey {
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1,
                String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == P256.groupName
            else {
                ERR_clear_error()
                EVP_PKEY_free(key)
                throw LibcryptoError("not an EC P-256 key")
            }
            return try PrivateKey(key: key)
        }

        /// The private scalar (32 bytes, big-endian), in a wiped buffer: for a key file.
        package func scalar() throws(LibcryptoError) -> SecureBytes {
            var number: OpaquePointer?
            try check(EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &number), "EVP_PKEY_get_bn_param(priv)")
            guard let number else { throw .failed("EVP_PKEY_get_bn_param(priv)") }
            defer { BN_clear_free(number) }
            return try SecureBytes(count: P256.scalarLength) { (out) throws(LibcryptoError) in
                let written = BN_bn2binpad(number, out.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(P256.scalarLength))
                guard written == Int32(P256.scalarLength) else { throw .failed("BN_bn2binpad") }
            }
        }

        /// The ECDH shared secret with `peer` (the X coordinate of the shared point, 32 bytes),
        /// in a wiped buffer.
        package func sharedSecret(with peer: PublicKey) throws(LibcryptoError) -> SecureBytes {
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { throw .failed("EVP_PKEY_CTX_new_from_pkey") }
            defer { EVP_PKEY_CTX_free(context) }
            try check(EVP_PKEY_derive_init(context), "EVP_PKEY_derive_init")
            try check(EVP_PKEY_derive_set_peer(context, peer.key), "EVP_PKEY_derive_set_peer")
            return try SecureBytes(count: P256.sharedSecretLength) { (out) throws(LibcryptoError) in
                var length = out.count
                try check(EVP_PKEY_derive(context, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &length), "EVP_PKEY_derive")
                guard length == P256.sharedSecretLength else { throw .failed("EVP_PKEY_derive's length") }
            }
        }

        /// The ES256 signature of `message` (RFC 7518, section 3.4): SHA-256, ECDSA on P-256,
        /// written as JOSE writes it, `r || s` (64 bytes), not DER.
        package func signES256(_ message: UnsafeRawBufferPointer) throws(LibcryptoError) -> [UInt8] {
            guard let context = EVP_MD_CTX_new() else { throw .failed("EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(context) }
            var der = [UInt8](repeating: 0, count: 80)
            var derLength = der.count
            try check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key), "EVP_DigestSignInit")
            try check(
                EVP_DigestSign(context, &der, &derLength, message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count),
                "EVP_DigestSign")
            return try der.withUnsafeBufferPointer { (buffer) throws(LibcryptoError) -> [UInt8] in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                guard let signature = d2i_ECDSA_SIG(nil, &cursor, derLength) else { throw .failed("d2i_ECDSA_SIG") }
                defer { ECDSA_SIG_free(signature) }
                var out = [UInt8](repeating: 0, count: P256.signatureLength)
                let written = out.withUnsafeMutableBufferPointer { out in
                    (
                        BN_bn2binpad(ECDSA_SIG_get0_r(signature), out.baseAddress, 32),
                        BN_bn2binpad(ECDSA_SIG_get0_s(signature), out.baseAddress! + 32, 32)
                    )
                }
                guard written == (32, 32) else { throw .failed("BN_bn2binpad") }
                return out
            }
        }
    }

    /// A public key (a peer's, for ECDH, or a signer's, to verify), checked to be a point on
    /// the curve.
    ///
    /// Sendable: its `EVP_PKEY` is never changed after it is made, and OpenSSL 3 lets threads use
    /// one key at once as a peer or a verifier (each call makes a context of its own).
    package final class PublicKey: @unchecked Sendable {
        let key: OpaquePointer
        /// The uncompressed point.
        package let bytes: [UInt8]

        /// The key of an uncompressed point (65 bytes, `0x04 || X || Y`); refused when it is not
        /// one or not on the curve.
        package init(uncompressed bytes: UnsafeRawBufferPointer) throws(LibcryptoError) {
            guard bytes.count == P256.publicKeyLength, bytes[0] == 0x04 else {
                throw LibcryptoError("a P-256 public key is an uncompressed point: 65 bytes starting with 0x04")
            }
            do {
                key = try P256.publicKeyFromData(bytes)
            } catch {
                throw LibcryptoError("not a point on P-256")
            }
            self.bytes = Array(bytes)
        }

        deinit { EVP_PKEY_free(key) }

        /// Whether `signature` (JOSE's `r || s`, 64 bytes) is this key's ES256 signature of `message`.
        package func verifyES256(signature: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
            guard signature.count == P256.signatureLength, let sig = ECDSA_SIG_new() else { return false }
            defer {
                ECDSA_SIG_free(sig)
                ERR_clear_error()
            }
            guard let r = BN_bin2bn(signature, 32, nil) else { return false }
            guard let s = signature.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + 32, 32, nil) }) else {
                BN_free(r)
                return false
            }
            guard ECDSA_SIG_set0(sig, r, s) == 1 else {
                BN_free(r)
                BN_free(s)
                return false
            }
            var derPointer: UnsafeMutablePointer<UInt8>?
            let derLength = i2d_ECDSA_SIG(sig, &derPointer)
            guard derLength > 0, let derPointer else { return false }
            defer { CRYPTO_free(derPointer, #fileID, #line) }
            guard let context = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(context) }
            return EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1
                && EVP_DigestVerify(
                    context, derPointer, Int(derLength), message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count) == 1
        }
    }

    /// The uncompressed public point of `key`.
    static func encodedPublicKey(_ key: OpaquePointer) throws(LibcryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: publicKeyLength)
        var length = 0
        try check(
            EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, &out, out.count, &length), "EVP_PKEY_get_octet_string_param(pub)")
        guard length == publicKeyLength, out[0] == 0x04 else { throw .failed("the public key's encoding") }
        return out
    }

    /// `scalar`·G, uncompressed; refuses 0 and scalars not below the group order.
    static func publicKey(ofScalar scalar: UnsafeRawBufferPointer) throws(LibcryptoError) -> [UInt8] {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { throw .failed("EC_GROUP_new_by_curve_name") }
        defer { EC_GROUP_free(group) }
        guard let number = BN_secure_new() else { throw .failed("BN_secure_new") }
        defer { BN_clear_free(number) }
        guard BN_bin2bn(scalar.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(scalar.count), number) != nil else {
            throw .failed("BN_bin2bn")
        }
        guard BN_is_zero(number) == 0, BN_cmp(number, EC_GROUP_get0_order(group)) < 0 else {
            throw LibcryptoError("the P-256 private key is 0 or not below the group order")
        }
        guard let point = EC_POINT_new(group) else { throw .failed("EC_POINT_new") }
        defer { EC_POINT_clear_free(point) }
        try check(EC_POINT_mul(group, point, number, nil, nil, nil), "EC_POINT_mul")
        var out = [UInt8](repeating: 0, count: publicKeyLength)
        guard EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, nil) == publicKeyLength else {
            throw .failed("EC_POINT_point2oct")
        }
        return out
    }

    /// An `EVP_PKEY` on P-256 from an uncompressed point (OpenSSL checks that it is on the curve),
    /// with the parameters on the stack, not in a builder's allocations: Web Push's encryption
    /// parses a subscription's point per message to a new subscription.
    static func publicKeyFromData(_ point: UnsafeRawBufferPointer) throws(LibcryptoError) -> OpaquePointer {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .failed("EVP_PKEY_CTX_new_from_name(EC)") }
        defer { EVP_PKEY_CTX_free(context) }
        try check(EVP_PKEY_fromdata_init(context), "EVP_PKEY_fromdata_init")
        var key: OpaquePointer?
        let status = withUnsafeTemporaryAllocation(of: OSSL_PARAM.self, capacity: 3) { parameters in
            parameters[0] = OSSL_PARAM_construct_utf8_string(cString("group"), UnsafeMutablePointer(mutating: cString("prime256v1")), 0)
            parameters[1] = OSSL_PARAM_construct_octet_string(
                cString("pub"), UnsafeMutableRawPointer(mutating: point.baseAddress), point.count)
            parameters[2] = OSSL_PARAM_construct_end()
            return EVP_PKEY_fromdata(context, &key, kp_evp_pkey_public_key(), parameters.baseAddress)
        }
        try check(status, "EVP_PKEY_fromdata")
        guard let key else { throw .failed("EVP_PKEY_fromdata") }
        return key
    }

    /// An `EVP_PKEY` on P-256 from its parts: a key pair when `scalar` is given, else a public key
    /// (OpenSSL checks that the point is on the curve).
    static func fromData(scalar: UnsafeRawBufferPointer?, publicKey: UnsafeRawBufferPointer) throws(LibcryptoError) -> OpaquePointer {
        guard let builder = OSSL_PARAM_BLD_new() else { throw .failed("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // A secure BIGNUM: the builder then puts the scalar where OSSL_PARAM_free cleanses it.
        var number: OpaquePointer?
        defer { if let number { BN_clear_free(number) } }
        // OSSL_PKEY_PARAM_GROUP_NAME, OSSL_PKEY_PARAM_PUB_KEY and OSSL_PKEY_PARAM_PRIV_KEY, as
        // C strings of the binary.
        try check(
            OSSL_PARAM_BLD_push_utf8_string(builder, cString("group"), cString("prime256v1"), 0), "OSSL_PARAM_BLD_push_utf8_string")
        try check(
            OSSL_PARAM_BLD_push_octet_string(builder, cString("pub"), publicKey.baseAddress, publicKey.count),
            "OSSL_PARAM_BLD_push_octet_string")
        if let scalar {
            number = BN_secure_new()
            guard let number, BN_bin2bn(scalar.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(scalar.count), number) != nil else {
                throw .failed("BN_bin2bn")
            }
            try check(OSSL_PARAM_BLD_push_BN(builder, cString("priv"), number), "OSSL_PARAM_BLD_push_BN")
        }
        guard let parameters = OSSL_PARAM_BLD_to_param(builder) else { throw .failed("OSSL_PARAM_BLD_to_param") }
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .failed("EVP_PKEY_CTX_new_from_name(EC)") }
        defer { EVP_PKEY_CTX_free(context) }
        try check(EVP_PKEY_fromdata_init(context), "EVP_PKEY_fromdata_init")
        var key: OpaquePointer?
        let selection = scalar == nil ? kp_evp_pkey_public_key() : kp_evp_pkey_keypair()
        try check(EVP_PKEY_fromdata(context, &key, selection, parameters), "EVP_PKEY_fromdata")
        guard let key else { throw .failed("EVP_PKEY_fromdata") }
        return key
    }
}

internal import COpenSSL
internal import KindlyPushBase
package import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Why the auth key cannot sign; the text never quotes the key.
package struct AuthKeyError: Error, Sendable, CustomStringConvertible {
    package let description: String

    package init(_ description: String) { self.description = description }
}

/// An APNs auth key (`AuthKey_KEYID.p8`: an EC P-256 private key, PKCS#8 PEM) that signs with
/// ES256 through OpenSSL's libcrypto, the one primitive libsodium does not have.
///
/// The PEM text is the only lasting copy of the key: it lives in guarded ``SecureBytes`` (locked
/// in RAM, wiped when freed). OpenSSL parses it for each signature (once per provider token, so
/// once in 50 minutes) into a key that `EVP_PKEY_free` clears and frees at once.
package struct ES256Key: Sendable {
    private let pem: SecureBytes
    /// The key file's path, for messages.
    private let path: String

    /// The key in `pem`, checked: an EC private key on P-256. `path` names it in errors.
    package init(pem: SecureBytes, path: String) throws(AuthKeyError) {
        self.pem = pem.guarded()
        self.path = path
        _ = try withKey(path: path) { _ in () }
    }

    /// Runs `body` with the parsed key, freed (and its secret cleared) right after.
    private func withKey<R>(path: String, _ body: (OpaquePointer) throws(AuthKeyError) -> R) throws(AuthKeyError) -> R {
        let bad = AuthKeyError("the auth key '\(path)' is not an EC P-256 private key in PEM (PKCS#8, as Apple's .p8)")
        return try pem.withUnsafeBytes { (raw) throws(AuthKeyError) -> R in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { throw AuthKeyError("out of memory") }
            defer { BIO_free(bio) }
            // A key with a pass phrase is refused, never prompted for: the callback gives none.
            let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            // OpenSSL's error queue may name the PEM line it stopped at: dropped, never shown.
            ERR_clear_error()
            guard let key else { throw bad }
            defer { EVP_PKEY_free(key) }
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1,
                String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
            else { throw bad }
            return try body(key)
        }
    }

    /// The ES256 signature of `message` (JWS, RFC 7518 section 3.4): SHA-256, ECDSA on P-256, and
    /// the raw `r || s`, 32 bytes each, not DER.
    package func sign(_ message: [UInt8]) throws(AuthKeyError) -> [UInt8] {
        try withKey(path: path) { (key) throws(AuthKeyError) -> [UInt8] in
            let failed = AuthKeyError("the auth key '\(path)' cannot sign (OpenSSL)")
            guard let context = EVP_MD_CTX_new() else { throw failed }
            defer { EVP_MD_CTX_free(context) }
            var der = [UInt8](repeating: 0, count: 80)
            var derLength = der.count
            let signed = message.withUnsafeBytes { raw in
                EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1
                    && EVP_DigestSign(context, &der, &derLength, raw.bindMemory(to: UInt8.self).baseAddress, raw.count) == 1
            }
            ERR_clear_error()
            guard signed else { throw failed }
            let raw = der.withUnsafeBufferPointer { buffer -> [UInt8]? in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                guard let signature = d2i_ECDSA_SIG(nil, &cursor, derLength) else { return nil }
                defer { ECDSA_SIG_free(signature) }
                var out = [UInt8](repeating: 0, count: 64)
                let ok = out.withUnsafeMutableBufferPointer { out in
                    BN_bn2binpad(ECDSA_SIG_get0_r(signature), out.baseAddress, 32) == 32
                        && BN_bn2binpad(ECDSA_SIG_get0_s(signature), out.baseAddress! + 32, 32) == 32
                }
                return ok ? out : nil
            }
            guard let raw else { throw failed }
            return raw
        }
    }
}

/// The clock of the provider token and of `--expiration`: the system's, or for tests the Unix
/// time written in the file of `SendOptions.testClockVariable` (`KINDLY_PUSH_TEST_CLOCK_FILE`), read at every look.
package struct SendClock: Sendable {
    package let file: String?

    package init(file: String?) { self.file = file }

    /// Unix time in seconds.
    package func now() -> Int {
        if let file, let seconds = Self.read(file) { return seconds }
        return time(nil)
    }

    private static func read(_ path: String) -> Int? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = Glibc.read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return Int(String(decoding: buffer[0..<count], as: UTF8.self).trimmingASCIIWhitespace())
    }
}

extension String {
    fileprivate func trimmingASCIIWhitespace() -> String {
        let bytes = utf8.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }
        let trimmed = bytes.reversed().drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }
        return String(decoding: trimmed.reversed(), as: UTF8.self)
    }
}

/// The provider token of APNs's token-based authentication: a JWT whose header is
/// `{"alg":"ES256","kid":KEY_ID}` and whose claims are `{"iss":TEAM_ID,"iat":SECONDS}`, signed
/// with ES256 and written as base64url without padding.
///
/// APNs refuses a token older than an hour (403 `ExpiredProviderToken`) and one renewed more often
/// than every 20 minutes (429 `TooManyProviderTokenUpdates`), so the token is renewed when it is
/// ``refreshAge`` old, and once more when APNs calls it expired (``renew(replacing:)``).
package struct ProviderToken: Sendable {
    /// A token is renewed when it is this old: between APNs's 20 and 60 minutes.
    package static let refreshAge = 50 * 60
    /// APNs answers 429 `TooManyProviderTokenUpdates` to tokens renewed more often than this.
    package static let shortestRenewal = 20 * 60

    private let key: ES256Key
    private let keyID: String
    private let teamID: String
    package let clock: SendClock
    /// `authorization: bearer JWT`, the request header.
    package private(set) var header = ""
    /// The `iat` of the current token.
    package private(set) var issuedAt = 0
    /// Counts the tokens made: a refusal names the one it refused.
    package private(set) var generation = 0

    package init(key: ES256Key, keyID: String, teamID: String, clock: SendClock) throws(AuthKeyError) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
        try make()
    }

    /// Renews the token when it is ``refreshAge`` old.
    package mutating func refreshIfDue() throws(AuthKeyError) {
        if clock.now() - issuedAt >= Self.refreshAge { try make() }
    }

    /// APNs answered `ExpiredProviderToken` to a request that carried token `generation`: whether
    /// a newer token may carry it again. A later token already replaced the refused one (every
    /// request in flight with the old token gets the same answer: the token is renewed once), or
    /// the refused one is renewed now, unless it is younger than ``shortestRenewal``: APNs takes
    /// no faster renewal, and a token it calls expired that young means a clock that is off (the
    /// host's or APNs's), which a new token would not mend; the push keeps its 403.
    package mutating func renew(replacing generation: Int) throws(AuthKeyError) -> Bool {
        guard generation == self.generation else { return true }
        guard clock.now() - issuedAt >= Self.shortestRenewal else { return false }
        try make()
        return true
    }

    private mutating func make() throws(AuthKeyError) {
        let now = clock.now()
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyID)]
        let claims: JSONValue = ["iss": .string(teamID), "iat": .number(JSONNumber(now))]
        var input = JSONWriter.compactBytes(header).withUnsafeBytes { Base64.urlEncodedBytes($0) }
        input.append(UInt8(ascii: "."))
        input += JSONWriter.compactBytes(claims).withUnsafeBytes { Base64.urlEncodedBytes($0) }
        let signature = try key.sign(input)
        self.header = "authorization: bearer " + String(decoding: input, as: UTF8.self) + "." + Base64.urlEncoded(signature)
        issuedAt = now
        generation += 1
    }
}

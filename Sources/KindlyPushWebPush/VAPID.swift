package import KindlyPushBase
internal import KindlyPushCore
package import KindlyPushLibcrypto

/// VAPID (RFC 8292): the `Authorization` header that identifies the application server to a
/// push service, `vapid t=JWT, k=PUBLIC_KEY` (wire-format.md section 9.4).
package enum VAPID {
    /// How long a token is good for: 12 hours (RFC 8292 allows at most 24).
    package static let lifetime = 12 * 3600

    /// `vapid t=JWT, k=B64URL(public key)` for a push to `endpoint`, made at Unix time `now`: an
    /// ES256 JWT `{"aud": the endpoint's origin, "exp": now + 12 h, "sub": subject}` signed with
    /// `key`, and `k` its uncompressed public key, both in unpadded base64url.
    package static func authorization(endpoint: String, subject: String, key: ES256Key, now: Int) throws(WebPushError) -> String {
        let audience = try origin(of: endpoint)
        guard subject.utf8.starts(with: "mailto:".utf8) || subject.utf8.starts(with: "https:".utf8) else {
            throw .keys("the VAPID subject is a mailto: or https: URL")
        }
        let claims: JSONValue = ["aud": .string(audience), "exp": .number(JSONNumber(now + lifetime)), "sub": .string(subject)]
        let token: String
        do throws(LibcryptoError) {
            token = try key.jwt(headerMembers: [.init(key: "typ", value: "JWT")], claims: claims)
        } catch {
            throw .libcrypto(error)
        }
        return "vapid t=\(token), k=\(Base64.urlEncoded(key.publicKey))"
    }

    /// Whether `text` is a VAPID public key as the header's `k` and `vapid-keygen` give it: the
    /// unpadded base64url (87 characters) of an uncompressed point on P-256.
    package static func isPublicKey(_ text: String) -> Bool {
        guard text.utf8.count == 87, let point = try? Base64.decode(text) else { return false }
        return point.withUnsafeBytes { bytes in (try? P256.PublicKey(uncompressed: bytes)) != nil }
    }

    /// The origin of an `https://` (or `http://`, for a test server) URL as RFC 6454 serializes
    /// it: the scheme and host in lower case, then the port unless it is the scheme's default.
    /// Refuses a URL with a user or password, or no host.
    package static func origin(of url: String) throws(WebPushError) -> String {
        let bad = WebPushError.keys("the endpoint is not an https:// URL with a host")
        let lowered = String(decoding: url.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        let scheme: String
        let defaultPort: String
        if lowered.utf8.starts(with: "https://".utf8) {
            (scheme, defaultPort) = ("https", "443")
        } else if lowered.utf8.starts(with: "http://".utf8) {
            (scheme, defaultPort) = ("http", "80")
        } else {
            throw bad
        }
        let rest = lowered.utf8.dropFirst(scheme.utf8.count + 3)
        let authority = rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { throw bad }
        var host = Substring(authority)
        var port: Substring?
        if let colon = host.utf8.lastIndex(of: UInt8(ascii: ":")), !host.utf8[colon...].contains(UInt8(ascii: "]")) {
            port = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw bad }
        if let port {
            guard !port.isEmpty, port.utf8.count <= 5, port.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { throw bad }
            if port != defaultPort { return "\(scheme)://\(host):\(port)" }
        }
        return "\(scheme)://\(host)"
    }
}

/// A VAPID key file: the JSON object `{"public_key": B64URL, "secret_key": B64URL}`, the
/// uncompressed P-256 public key (65 bytes: `applicationServerKey`) and its private scalar (32
/// bytes), in unpadded base64url, mode 0600; written atomically and never replaced, read with
/// the same checks as a key file (the file's mode and owner; the two members agree).
package enum VAPIDKeyFile {
    /// Writes `key` to a new file at `path` (0600, atomically). An existing file is never replaced.
    package static func write(_ key: ES256Key, to path: String) throws(PrivateFileError) {
        let publicKey = key.publicKey.withUnsafeBytes { Base64.urlEncoded($0) }
        let contents = JSONWriter.secretObject(
            before: [.init(key: "public_key", value: .string(publicKey))], secretMember: "secret_key", secretCount: P256.scalarLength
        ) { slot in
            key.withScalar { Base64.urlEncode($0, into: slot) }
        }
        try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in try PrivateFile.write(bytes, to: path) }
    }

    /// Reads and checks the VAPID key file at `path`.
    package static func read(_ path: String) throws(PrivateFileError) -> ES256Key {
        try PrivateFile.read(path) { (bytes, path) throws(PrivateFileError) in try parse(bytes, path: path) }
    }

    /// Parses and checks VAPID key file text (`path` names it in errors): the secret key is
    /// decoded straight into a wiped buffer, and the public key must be its.
    package static func parse(_ bytes: UnsafeRawBufferPointer, path: String) throws(PrivateFileError) -> ES256Key {
        func malformed(_ reason: String) -> PrivateFileError { .malformed(path: path, reason: reason) }
        let parsed: (object: JSONObject, secretRange: Range<Int>?)
        do {
            parsed = try JSONReader.parseObject(bytes, withSecretMember: "secret_key")
        } catch {
            throw malformed("not a VAPID key file (\(error))")
        }
        guard !parsed.object.hasDuplicateKeys else { throw malformed("a member occurs twice") }
        guard parsed.object["kid"] == nil, parsed.object["sid"] == nil else {
            throw malformed("a Kindly key file, not a VAPID key file (kindly-push vapid-keygen writes those)")
        }
        guard let secretRange = parsed.secretRange else { throw malformed("no \"secret_key\" string") }
        let scalar: SecureBytes
        do {
            scalar = try Base64.decodeSecret(UnsafeRawBufferPointer(rebasing: bytes[secretRange]))
        } catch {
            throw malformed("the secret key is not canonical base64")
        }
        guard scalar.count == P256.scalarLength, let key = try? ES256Key(scalar: scalar) else {
            throw malformed("the secret key is not a P-256 private key (32 bytes)")
        }
        guard let publicText = parsed.object["public_key"]?.stringValue else { throw malformed("no \"public_key\" string") }
        guard let publicKey = try? Base64.decode(publicText), publicKey == key.publicKey else {
            throw malformed("the public key is not the secret key's (65 bytes, uncompressed)")
        }
        return key
    }
}

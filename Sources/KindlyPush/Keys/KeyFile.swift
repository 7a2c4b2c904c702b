internal import KindlyPushCore

/// A key file (cli.md): the JSON object `{"kid": B64, "public_key": B64, "secret_key": B64}`
/// in base64url, mode 0600.
///
/// The secret key is decoded straight from the file's bytes into a wiped buffer and encoded
/// straight into one; it never becomes a `String`. Reading checks that the three fields agree
/// (the public key is the secret key's, the kid is the public key's).
public enum KeyFile {
    static let secretKeyMember = "secret_key"

    /// Reads and checks the key file at `path`.
    public static func read(_ path: String) throws(PrivateFileError) -> DeviceKey {
        let contents = try PrivateFile.read(path)
        return try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in
            try parse(bytes, path: path).key
        }
    }

    /// Parses and checks key-file text (`path` names it in errors); `object` is the file's
    /// object with the secret key's value replaced by `null`, for keyring metadata. Public so
    /// that the fuzz targets reach it.
    package static func parse(
        _ bytes: UnsafeRawBufferPointer, path: String
    ) throws(PrivateFileError) -> (key: DeviceKey, object: JSONObject) {
        func malformed(_ reason: String) -> PrivateFileError { .malformed(path: path, reason: reason) }
        let parsed: (object: JSONObject, secretRanges: [String: Range<Int>])
        do {
            parsed = try JSONReader.parseObject(bytes, withSecretMembers: [secretKeyMember])
        } catch {
            throw malformed("not a key file (\(error))")
        }
        guard !parsed.object.hasDuplicateKeys else { throw malformed("a member occurs twice") }
        guard let secretRange = parsed.secretRanges[secretKeyMember] else {
            throw malformed("no \"secret_key\" string")
        }
        let secretBytes: SecureBytes
        do {
            secretBytes = try Base64.decodeSecret(UnsafeRawBufferPointer(rebasing: bytes[secretRange]))
        } catch {
            throw malformed("the secret key is not canonical base64")
        }
        guard let secretKey = try? DeviceSecretKey(secretBytes) else { throw malformed("the secret key is not 32 bytes") }
        let key = DeviceKey(secretKey: secretKey)
        guard let publicText = parsed.object["public_key"]?.stringValue else { throw malformed("no \"public_key\" string") }
        guard let publicKey = try? DevicePublicKey(base64: publicText) else { throw malformed("the public key is not 32 bytes of base64") }
        guard publicKey == key.publicKey else { throw malformed("the public key does not belong to the secret key") }
        guard let kidText = parsed.object["kid"]?.stringValue else { throw malformed("no \"kid\" string") }
        guard let kid = KeyID(base64: kidText) else { throw malformed("the kid is not 8 bytes of base64") }
        guard kid == key.kid else { throw malformed("the kid is not the public key's") }
        return (key, parsed.object)
    }

    /// Writes `key` to a new file at `path` (0600, atomically). An existing file is never replaced.
    public static func write(_ key: DeviceKey, to path: String) throws(PrivateFileError) {
        let contents = serialize(key, extra: [])
        try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in
            try PrivateFile.write(bytes, to: path)
        }
    }

    /// The key-file text of `key`, followed by `extra` members, in a wiped buffer.
    static func serialize(_ key: DeviceKey, extra: [JSONObject.Member]) -> SecureBytes {
        var head: [UInt8] = []
        JSONWriter.write(
            .object(
                JSONObject([
                    .init(key: "kid", value: .string(key.kid.base64URL)),
                    .init(key: "public_key", value: .string(key.publicKey.base64URL)),
                ])), to: &head)
        head.removeLast()  // the closing brace: the secret member follows
        var tail: [UInt8] = []
        for member in extra {
            tail.append(UInt8(ascii: ","))
            JSONWriter.writeString(member.key, to: &tail)
            tail.append(UInt8(ascii: ":"))
            JSONWriter.write(member.value, to: &tail)
        }
        tail.append(contentsOf: "}\n".utf8)
        let prefix = Array(",\"secret_key\":\"".utf8)
        let secretLength = Base64.urlEncodedLength(of: X25519.keyLength)
        let total = head.count + prefix.count + secretLength + 1 + tail.count
        return SecureBytes(count: total) { out in
            var offset = 0
            func append(_ bytes: [UInt8]) {
                for byte in bytes {
                    out[offset] = byte
                    offset += 1
                }
            }
            append(head)
            append(prefix)
            key.secretKey.withUnsafeBytes { secret in
                Base64.urlEncode(secret, into: UnsafeMutableRawBufferPointer(rebasing: out[offset..<(offset + secretLength)]))
            }
            offset += secretLength
            append([UInt8(ascii: "\"")])
            append(tail)
        }
    }
}

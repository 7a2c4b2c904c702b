internal import KindlyPushCore

/// A key file (docs/spec/streams.md): the JSON object `{"kid": B64, "public_key": B64, "secret_key": B64}`
/// in base64url, mode 0600.
///
/// The secret key is decoded straight from the file's bytes into a wiped buffer and encoded
/// straight into one; it never becomes a `String`. Reading checks that the three fields agree
/// (the public key is the secret key's, the kid is the public key's).
public enum KeyFile {
    /// Reads and checks the key file at `path`.
    public static func read(_ path: String) throws(PrivateFileError) -> DeviceKey {
        try PrivateFile.read(path) { (bytes, path) throws(PrivateFileError) in try parse(bytes, path: path).key }
    }

    /// Parses and checks key-file text (`path` names it in errors); `object` is the file's
    /// object with the secret key's value replaced by `null`, for keyring metadata. A sender key file (it has `sid`) is refused.
    package static func parse(
        _ bytes: UnsafeRawBufferPointer, path: String
    ) throws(PrivateFileError) -> (key: DeviceKey, object: JSONObject) {
        let parsed = try KeyPairFile.parse(bytes, path: path, kind: .device)
        return (DeviceKey(secretKey: try! DeviceSecretKey(parsed.secret)), parsed.object)
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
        KeyPairFile.serialize(
            kind: .device, id: key.kid.base64URL, publicKey: key.publicKey.base64URL, secret: key.secretKey.storage, extra: extra)
    }
}

/// What a key file and a sender key file (docs/spec/streams.md) share: the object `{ID, "public_key",
/// "secret_key"}` in base64url, where ID is `kid` for a device key and `sid` for a sender key,
/// the three members agree, and neither kind is accepted where the other is expected.
enum KeyPairFile {
    static let secretKeyMember = "secret_key"

    enum Kind {
        case device
        case sender

        /// The id member, `kid` or `sid`.
        var idMember: String { self == .device ? "kid" : "sid" }
        /// The other kind's id member: a file that has it is the other kind.
        var otherIDMember: String { self == .device ? "sid" : "kid" }
        var refusal: String {
            self == .device
                ? "a sender key file (it has \"sid\"), not a device key file" : "a device key file (it has \"kid\"), not a sender key file"
        }
    }

    /// Parses and checks the text of a key file of `kind`: the secret key (decoded straight from
    /// the bytes into a wiped buffer), and the object with the secret's value replaced by `null`.
    static func parse(
        _ bytes: UnsafeRawBufferPointer, path: String, kind: Kind
    ) throws(PrivateFileError) -> (secret: SecureBytes, object: JSONObject) {
        func malformed(_ reason: String) -> PrivateFileError { .malformed(path: path, reason: reason) }
        let parsed: (object: JSONObject, secretRange: Range<Int>?)
        do {
            parsed = try JSONReader.parseObject(bytes, withSecretMember: secretKeyMember)
        } catch {
            throw malformed("not a key file (\(error))")
        }
        guard !parsed.object.hasDuplicateKeys else { throw malformed("a member occurs twice") }
        guard parsed.object[kind.otherIDMember] == nil else { throw malformed(kind.refusal) }
        guard let secretRange = parsed.secretRange else {
            throw malformed("no \"secret_key\" string")
        }
        let secret: SecureBytes
        do {
            secret = try Base64.decodeSecret(UnsafeRawBufferPointer(rebasing: bytes[secretRange]))
        } catch {
            throw malformed("the secret key is not canonical base64")
        }
        guard secret.count == X25519.keyLength, let derived = try? X25519.publicKey(for: secret) else {
            throw malformed("the secret key is not 32 bytes")
        }
        guard let publicText = parsed.object["public_key"]?.stringValue else { throw malformed("no \"public_key\" string") }
        guard let publicKey = try? Base64.decode(publicText), publicKey.count == X25519.keyLength else {
            throw malformed("the public key is not 32 bytes of base64")
        }
        guard publicKey == derived else { throw malformed("the public key does not belong to the secret key") }
        let id = kind.idMember
        guard let idText = parsed.object[id]?.stringValue else { throw malformed("no \"\(id)\" string") }
        guard let idBytes = try? Base64.decode(idText), idBytes.count == KeyID.length else {
            throw malformed("the \(id) is not 8 bytes of base64")
        }
        guard idBytes == publicKey.withUnsafeBytes({ BLAKE2b.hash($0, outputLength: KeyID.length) }) else {
            throw malformed("the \(id) is not the public key's")
        }
        return (secret, parsed.object)
    }

    /// The text of a key file of `kind`, followed by `extra` members, in a wiped buffer: the
    /// secret is encoded straight into it.
    static func serialize(kind: Kind, id: String, publicKey: String, secret: SecureBytes, extra: [JSONObject.Member]) -> SecureBytes {
        JSONWriter.secretObject(
            before: [.init(key: kind.idMember, value: .string(id)), .init(key: "public_key", value: .string(publicKey))],
            secretMember: "secret_key", secret: secret, after: extra)
    }
}

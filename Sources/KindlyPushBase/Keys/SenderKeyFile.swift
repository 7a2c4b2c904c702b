internal import KindlyPushCore

/// A sender key file (docs/spec/streams.md): the JSON object `{"sid": B64, "public_key": B64, "secret_key": B64}`
/// in base64url, mode 0600: a key file with `sid` in place of `kid`. A device key file is never
/// accepted as a sender key file, nor the reverse.
///
/// It is read and written by the same code as ``KeyFile``: the secret key is decoded straight
/// from the file's bytes into a wiped buffer and encoded straight into one, the file is refused
/// when group or others can read it, and it is written atomically and never replaced.
public enum SenderKeyFile {
    /// Reads and checks the sender key file at `path`.
    public static func read(_ path: String) throws(PrivateFileError) -> SenderKey {
        try PrivateFile.read(path) { (bytes, path) throws(PrivateFileError) in try parse(bytes, path: path).key }
    }

    /// Parses and checks sender-key-file text (`path` names it in errors): the three members
    /// agree (the public key is the secret key's, the sid is the public key's); `object` is the
    /// file's object with the secret key's value replaced by `null`.
    package static func parse(
        _ bytes: UnsafeRawBufferPointer, path: String
    ) throws(PrivateFileError) -> (key: SenderKey, object: JSONObject) {
        let parsed = try KeyPairFile.parse(bytes, path: path, kind: .sender)
        return (try! SenderKey(secretKey: parsed.secret), parsed.object)
    }

    /// Writes `key` to a new file at `path` (0600, atomically). An existing file is never replaced.
    public static func write(_ key: SenderKey, to path: String) throws(PrivateFileError) {
        let contents = KeyPairFile.serialize(
            kind: .sender, id: key.sid.base64URL, publicKey: key.publicKey.base64URL, secret: key.secretKey, extra: [])
        try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in
            try PrivateFile.write(bytes, to: path)
        }
    }
}

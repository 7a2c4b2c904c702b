internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushLibcrypto
internal import KindlyPushWebPush

#if canImport(Glibc)
    import Glibc
#endif

/// The device's UnifiedPush registration and Web Push keys (wire-format.md section 9.1): a P-256
/// key pair and a 16-byte auth secret, a second key never derived from the Kindly key, with the
/// registration's token and distributor. Kept in the file keyring's folder, in
/// `unifiedpush/registration.json` (0600, in a 0700 folder), as the JSON object `{"token",
/// "distributor", "p256dh": B64URL, "secret_key": B64URL}` where `secret_key` is the private
/// scalar (32 bytes) then the auth secret (16 bytes); the secrets never become a `String`.
struct UnifiedPushKeys {
    let token: String
    let distributor: String
    let privateKey: P256.PrivateKey
    let auth: SecureBytes

    /// The uncompressed public key, `p256dh`.
    var p256dh: [UInt8] { privateKey.publicKey }

    /// The file's path for this environment: beside the file keyring's keys.
    static func path(_ environment: CommandEnvironment) throws(CodedError) -> String {
        try KeyringChoice.fileFolder(environment) + "/unifiedpush/registration.json"
    }

    /// New keys from OpenSSL's and libsodium's CSPRNGs, with a new token (16 random bytes, base64url).
    static func generate(distributor: String) throws(CodedError) -> UnifiedPushKeys {
        let key: P256.PrivateKey
        do throws(LibcryptoError) {
            key = try P256.PrivateKey.generate()
        } catch {
            throw CodedError(.io, "cannot make a P-256 key pair: \(error)")
        }
        let token = Base64.urlEncoded(Sodium.randomBytes(count: 16))
        return UnifiedPushKeys(
            token: token, distributor: distributor, privateKey: key, auth: SecureBytes.random(count: WebPushSubscriptionKeys.authLength))
    }

    /// The keys at `path`; `nil` when there is no file.
    static func read(_ path: String) throws(CodedError) -> UnifiedPushKeys? {
        let contents: SecureBytes
        do throws(PrivateFileError) {
            contents = try PrivateFile.read(path)
        } catch {
            if case .missing = error { return nil }
            throw CodedError(.io, error.description)
        }
        return try contents.withUnsafeBytes { (bytes) throws(CodedError) in try parse(bytes, path: path) }
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer, path: String) throws(CodedError) -> UnifiedPushKeys {
        func malformed(_ reason: String) -> CodedError { CodedError(.io, "\(path): \(reason)") }
        let parsed: (object: JSONObject, secretRange: Range<Int>?)
        do {
            parsed = try JSONReader.parseObject(bytes, withSecretMember: "secret_key")
        } catch {
            throw malformed("not a UnifiedPush registration (\(error))")
        }
        guard let token = parsed.object["token"]?.stringValue, let distributor = parsed.object["distributor"]?.stringValue,
            let secretRange = parsed.secretRange
        else { throw malformed("a UnifiedPush registration has \"token\", \"distributor\" and \"secret_key\"") }
        let secret: SecureBytes
        do {
            secret = try Base64.decodeSecret(UnsafeRawBufferPointer(rebasing: bytes[secretRange]))
        } catch {
            throw malformed("the secret key is not canonical base64")
        }
        guard secret.count == P256.scalarLength + WebPushSubscriptionKeys.authLength else {
            throw malformed("the secret key is not 48 bytes (a P-256 scalar and an auth secret)")
        }
        let scalar = secret.withUnsafeBytes { SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<P256.scalarLength])) }
        let auth = secret.withUnsafeBytes { SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[P256.scalarLength...])) }
        let key: P256.PrivateKey
        do throws(LibcryptoError) {
            key = try P256.PrivateKey(scalar: scalar)
        } catch {
            throw malformed("the secret key is not a P-256 private key")
        }
        guard let publicText = parsed.object["p256dh"]?.stringValue, let point = try? Base64.decode(publicText), point == key.publicKey
        else { throw malformed("p256dh is not the secret key's public key") }
        return UnifiedPushKeys(token: token, distributor: distributor, privateKey: key, auth: auth)
    }

    /// Writes the keys to `path` (0600, atomically), in place of what is there.
    func write(to path: String) throws(CodedError) {
        var head: [UInt8] = []
        let object: JSONValue = [
            "token": .string(token), "distributor": .string(distributor), "p256dh": .string(Base64.urlEncoded(p256dh)),
        ]
        JSONWriter.write(object, to: &head)
        head.removeLast()  // the closing brace: the secret member follows
        head += Array(",\"secret_key\":\"".utf8)
        let tail = Array("\"}\n".utf8)
        let scalar: SecureBytes
        do throws(LibcryptoError) {
            scalar = try privateKey.scalar()
        } catch {
            throw CodedError(.io, "cannot read the P-256 key: \(error)")
        }
        let secret = SecureBytes(count: P256.scalarLength + auth.count) { out in
            scalar.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[..<P256.scalarLength]).copyMemory(from: $0) }
            auth.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[P256.scalarLength...]).copyMemory(from: $0) }
        }
        let secretLength = Base64.urlEncodedLength(of: secret.count)
        let contents = SecureBytes(count: head.count + secretLength + tail.count) { out in
            out.copyBytes(from: head)
            secret.withUnsafeBytes {
                Base64.urlEncode($0, into: UnsafeMutableRawBufferPointer(rebasing: out[head.count..<(head.count + secretLength)]))
            }
            UnsafeMutableRawBufferPointer(rebasing: out[(head.count + secretLength)...]).copyBytes(from: tail)
        }
        do throws(PrivateFileError) {
            try PrivateFile.makePrivateFolder(PrivateFile.folderName(of: path))
            UnifiedPushKeys.delete(path)
            try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in try PrivateFile.write(bytes, to: path) }
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// Forgets the keys at `path`: the file is removed.
    static func delete(_ path: String) {
        unlink(path)
        PrivateFile.syncFolder(PrivateFile.folderName(of: path))
    }

    /// The plaintext of an RFC 8291 message for these keys, in a wiped buffer.
    func decrypt(_ message: SecureBytes) throws(WebPushError) -> SecureBytes {
        try message.withUnsafeBytes { (bytes) throws(WebPushError) in
            try WebPushEncryption.decrypt(bytes, privateKey: privateKey, auth: auth)
        }
    }
}

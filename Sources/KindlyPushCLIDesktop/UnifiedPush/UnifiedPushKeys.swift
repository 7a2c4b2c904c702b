internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushLibcrypto
internal import KindlyPushSecretService
internal import KindlyPushWebPush

#if canImport(Glibc)
    import Glibc
#endif

/// The device's UnifiedPush registration and Web Push keys (wire-format.md section 9.1): a P-256
/// key pair and a 16-byte auth secret, a second key never derived from the Kindly key, with the
/// registration's token and distributor. Kept beside the device's keys (``UnifiedPushStore``)
/// as the JSON object `{"token", "distributor", "p256dh": B64URL, "secret_key": B64URL}` where
/// `secret_key` is the private scalar (32 bytes) then the auth secret (16 bytes); the secrets
/// never become a `String`.
struct UnifiedPushKeys {
    let token: String
    let distributor: String
    let privateKey: P256.PrivateKey
    let auth: SecureBytes

    /// The uncompressed public key, `p256dh`.
    var p256dh: [UInt8] { privateKey.publicKey }

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
        return try parse(contents, path: path)
    }

    /// The keys of a registration document; `path` names where it was read, in errors.
    static func parse(_ contents: SecureBytes, path: String) throws(CodedError) -> UnifiedPushKeys {
        try contents.withUnsafeBytes { (bytes) throws(CodedError) in try parse(bytes, path: path) }
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
        let contents = try document()
        do throws(PrivateFileError) {
            try PrivateFile.makePrivateFolder(PrivateFile.folderName(of: path))
            UnifiedPushKeys.delete(path)
            try contents.withUnsafeBytes { (bytes) throws(PrivateFileError) in try PrivateFile.write(bytes, to: path) }
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// The registration document, in wiped memory.
    func document() throws(CodedError) -> SecureBytes {
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
        return JSONWriter.secretObject(
            before: [
                .init(key: "token", value: .string(token)), .init(key: "distributor", value: .string(distributor)),
                .init(key: "p256dh", value: .string(Base64.urlEncoded(p256dh))),
            ],
            secretMember: "secret_key", secret: secret)
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

/// Where the device's UnifiedPush registration is kept: beside its Kindly key, in the keyring
/// that holds it. In the Secret Service, one item of its own schema
/// (`SecretServiceKeyring.storeUnifiedPushRegistration`); otherwise in the file keyring's folder,
/// `unifiedpush/registration.json` (0600, in a 0700 folder).
enum UnifiedPushStore {
    case file(String)
    case secretService(SecretServiceKeyring)

    /// The store beside `keyring`, the keyring the command's keyring options name.
    static func beside(_ keyring: any Keyring, environment: CommandEnvironment) throws(CodedError) -> UnifiedPushStore {
        let holder = (keyring as? CachingKeyring)?.base ?? keyring
        if let secretService = holder as? SecretServiceKeyring { return .secretService(secretService) }
        return .file(try KeyringChoice.fileFolder(environment) + "/unifiedpush/registration.json")
    }

    /// Where it is, for messages.
    var place: String {
        switch self {
        case .file(let path): path
        case .secretService(let keyring): "the Secret Service (\(keyring.collection))"
        }
    }

    /// The keys kept; `nil` when there are none.
    func read() throws(CodedError) -> UnifiedPushKeys? {
        switch self {
        case .file(let path):
            return try UnifiedPushKeys.read(path)
        case .secretService(let keyring):
            let document: SecureBytes?
            do throws(KeyringError) {
                document = try keyring.unifiedPushRegistration()
            } catch {
                throw CodedError(.io, "cannot read the UnifiedPush registration: \(error)")
            }
            return try document.map { (document) throws(CodedError) in try UnifiedPushKeys.parse(document, path: place) }
        }
    }

    /// Keeps `keys`, in place of any before them.
    func write(_ keys: UnifiedPushKeys) throws(CodedError) {
        switch self {
        case .file(let path):
            try keys.write(to: path)
        case .secretService(let keyring):
            let document = try keys.document()
            do throws(KeyringError) {
                try keyring.storeUnifiedPushRegistration(document, token: keys.token, distributor: keys.distributor)
            } catch {
                throw CodedError(.io, "cannot store the UnifiedPush registration: \(error)")
            }
        }
    }

    /// Forgets the keys (none kept: nothing to do).
    func delete() throws(CodedError) {
        switch self {
        case .file(let path):
            UnifiedPushKeys.delete(path)
        case .secretService(let keyring):
            do throws(KeyringError) {
                try keyring.deleteUnifiedPushRegistration()
            } catch {
                throw CodedError(.io, "cannot delete the UnifiedPush registration: \(error)")
            }
        }
    }
}

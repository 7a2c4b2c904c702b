package import KindlyPushCore

/// A device key's id: `BLAKE2b(pk)` with an 8-byte digest length (docs/spec/wire-format.md section 1).
public struct KeyID: Sendable, Hashable, CustomStringConvertible {
    /// A kid is 8 bytes (BLAKE2b with an 8-byte digest length).
    public static let length = 8

    /// The 8 bytes.
    public let bytes: [UInt8]

    /// A key id from its 8 bytes; `nil` for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == KeyID.length else { return nil }
        self.bytes = bytes
    }

    /// A key id from canonical base64 or base64url text.
    public init?(base64 text: String) {
        guard let bytes = try? Base64.decode(text) else { return nil }
        self.init(bytes: bytes)
    }

    /// The id of `publicKey`.
    public init(of publicKey: DevicePublicKey) {
        self.bytes = publicKey.rawRepresentation.withUnsafeBytes { BLAKE2b.hash($0, outputLength: KeyID.length) }
    }

    /// base64url without padding, as the wire format writes it.
    public var base64URL: String { Base64.urlEncoded(bytes) }

    public var description: String { base64URL }
}

/// A device's X25519 public key (32 bytes).
public struct DevicePublicKey: Sendable, Hashable, CustomStringConvertible {
    /// The 32 bytes.
    public let rawRepresentation: [UInt8]

    /// A public key from its 32 bytes.
    ///
    /// - Throws: ``KeyDecodingError/wrongLength(_:)`` unless `rawRepresentation` is 32 bytes.
    public init(rawRepresentation: [UInt8]) throws(KeyDecodingError) {
        guard rawRepresentation.count == X25519.keyLength else { throw .wrongLength("public key") }
        self.rawRepresentation = rawRepresentation
    }

    /// A public key from canonical base64 or base64url text.
    public init(base64 text: String) throws(KeyDecodingError) {
        guard let bytes = try? Base64.decode(text) else { throw .notBase64("public key") }
        guard let key = try? DevicePublicKey(rawRepresentation: bytes) else { throw .wrongLength("public key") }
        self = key
    }

    /// Its key id.
    public var kid: KeyID { KeyID(of: self) }

    /// base64url without padding.
    public var base64URL: String { Base64.urlEncoded(rawRepresentation) }

    public var description: String { base64URL }

    /// Why nothing may be sealed for the key, or `nil` (``X25519/publicKeyProblem(_:smallOrder:)``):
    /// sealed for the base point, a push is open to anybody who reads its ephemeral key. A point
    /// of small order is the sealer's to refuse (``SealingError/unusableRecipientKey``), as before.
    package var unusableReason: String? {
        rawRepresentation.withUnsafeBytes { X25519.publicKeyProblem($0, smallOrder: false) }.map { "the device public key \($0)" }
    }
}

/// Why text did not hold a key. Never carries the text itself.
public enum KeyDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not canonical base64 or base64url; the value says which key.
    case notBase64(String)
    /// The text decodes to the wrong number of bytes; the value says which key.
    case wrongLength(String)

    public var description: String {
        switch self {
        case .notBase64(let what): return "the \(what) is not canonical base64"
        case .wrongLength(let what): return "the \(what) has the wrong length"
        }
    }
}

/// A device's X25519 secret key. Its bytes are reachable only inside the library,
/// compare in constant time, and are wiped when the last copy goes away.
public struct DeviceSecretKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    package let storage: SecureBytes

    /// A secret key from a secure buffer of 32 bytes. A key lives as long as the keyring or
    /// cache that holds it, so it is kept in guarded storage (locked in RAM, out of core dumps).
    package init(_ bytes: SecureBytes) throws(CryptoError) {
        guard bytes.count == X25519.keyLength else {
            throw .invalidLength(what: "an X25519 secret key", expected: X25519.keyLength, actual: bytes.count)
        }
        self.storage = bytes.guarded()
    }

    /// A secret key from its base64url (or standard base64) text, as a key file holds it.
    ///
    /// The decoded bytes go straight into a buffer that is wiped when the key goes away; no
    /// intermediate copy is left behind. The error never quotes the text.
    ///
    /// ```swift
    /// let secret = try DeviceSecretKey(base64: secretFromMyVault)
    /// let keyring = InMemoryKeyring(keys: [DeviceKey(secretKey: secret)])
    /// ```
    ///
    /// - Throws: ``KeyDecodingError/notBase64(_:)`` for text that is not canonical base64,
    ///   ``KeyDecodingError/wrongLength(_:)`` unless it decodes to 32 bytes.
    public init(base64 text: String) throws(KeyDecodingError) {
        let bytes: SecureBytes
        do {
            bytes = try text.withUTF8Bytes { (raw) throws(Base64.DecodingError) in try Base64.decodeSecret(raw) }
        } catch {
            throw .notBase64("secret key")
        }
        guard let key = try? DeviceSecretKey(bytes) else { throw .wrongLength("secret key") }
        self = key
    }

    /// Calls `body` with the 32 secret bytes. Do not let them escape.
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try storage.withUnsafeBytes(body)
    }

    public var description: String { "DeviceSecretKey(redacted)" }
    public var debugDescription: String { description }
}

/// A device key pair (docs/spec/wire-format.md section 1) with its key id.
public struct DeviceKey: Sendable, CustomStringConvertible {
    /// The secret half (never printed, compared in constant time).
    public let secretKey: DeviceSecretKey
    /// The public half, derived from the secret key.
    public let publicKey: DevicePublicKey
    /// The key id of the public key.
    public let kid: KeyID

    /// The key pair of `secretKey`; the public key is derived, so the two always match.
    public init(secretKey: DeviceSecretKey) {
        self.secretKey = secretKey
        // Cannot fail: DeviceSecretKey guarantees 32 bytes.
        let raw = (try? X25519.publicKey(for: secretKey.storage)) ?? []
        self.publicKey = try! DevicePublicKey(rawRepresentation: raw)
        self.kid = KeyID(of: publicKey)
    }

    /// A fresh key pair from the CSPRNG (`crypto_box_keypair`'s construction).
    public static func generate() -> DeviceKey {
        DeviceKey(secretKey: try! DeviceSecretKey(SecureBytes.random(count: X25519.keyLength)))
    }

    public var description: String { "DeviceKey(kid: \(kid), public key: \(publicKey))" }
}

package import KindlyPushCore

/// A sender key's id: `BLAKE2b(spk)` with an 8-byte digest length (docs/spec/wire-format.md section 7.1), as
/// ``KeyID`` is a device key's.
public struct SenderID: Sendable, Hashable, CustomStringConvertible {
    /// 8 bytes.
    public static let length = 8

    /// The 8 bytes.
    public let bytes: [UInt8]

    /// A sender id from its 8 bytes; `nil` for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == SenderID.length else { return nil }
        self.bytes = bytes
    }

    /// A sender id from canonical base64 or base64url text.
    public init?(base64 text: String) {
        guard let bytes = try? Base64.decode(text) else { return nil }
        self.init(bytes: bytes)
    }

    /// The id of the 32 bytes of a sender public key, as they are (a key with its top bit set is
    /// another key, with another id).
    package init(ofPublicKey raw: UnsafeRawBufferPointer) {
        bytes = BLAKE2b.hash(raw, outputLength: SenderID.length)
    }

    /// base64url without padding, as the wire format writes it.
    public var base64URL: String { Base64.urlEncoded(bytes) }

    /// The base64url text.
    public var description: String { base64URL }
}

/// A sender's X25519 public key (32 bytes), the key a device pins (docs/spec/wire-format.md section 7.1).
///
/// Any 32 bytes are a pinned key: they are hashed as they are for the ``sid`` and the key
/// schedule, and a key that can never authenticate (a low-order point) still puts the reader in
/// pinned mode; its pushes fail as `authentication_failed`.
public struct SenderPublicKey: Sendable, Hashable, CustomStringConvertible {
    /// The 32 bytes.
    public let rawRepresentation: [UInt8]
    /// `BLAKE2b(spk)`, 8 bytes.
    public let sid: SenderID

    /// A sender public key from its 32 bytes.
    ///
    /// - Throws: ``KeyDecodingError/wrongLength(_:)`` unless `rawRepresentation` is 32 bytes.
    public init(rawRepresentation: [UInt8]) throws(KeyDecodingError) {
        guard rawRepresentation.count == X25519.keyLength else { throw .wrongLength("sender public key") }
        self.rawRepresentation = rawRepresentation
        self.sid = rawRepresentation.withUnsafeBytes { SenderID(ofPublicKey: $0) }
    }

    /// A sender public key from canonical base64 or base64url text.
    public init(base64 text: String) throws(KeyDecodingError) {
        guard let bytes = try? Base64.decode(text) else { throw .notBase64("sender public key") }
        try self.init(rawRepresentation: bytes)
    }

    /// base64url without padding.
    public var base64URL: String { Base64.urlEncoded(rawRepresentation) }

    /// The base64url text.
    public var description: String { base64URL }

    /// Why the key cannot be pinned, or `nil` (``X25519/publicKeyProblem(_:)``): with the base
    /// point pinned, anybody can seal a mode_auth push the reader trusts.
    package var unusableReason: String? {
        rawRepresentation.withUnsafeBytes { X25519.publicKeyProblem($0) }.map { "the sender public key \($0)" }
    }
}

/// A backend's sender key pair (docs/spec/wire-format.md section 7.1): pushes sealed with it (version 2)
/// decrypt only on devices that pinned its public key.
///
/// The secret key lives in a buffer that is wiped when the last copy goes away; it is never
/// printed or described.
///
/// ```swift
/// let sender = try SenderKeyFile.read("/etc/kindly/sender.json")   // or SenderKey(base64: fromVault)
/// let push = try KindlyPushSealer.seal(payload, for: devicePublicKey, from: sender)
/// ```
public struct SenderKey: Sendable, CustomStringConvertible {
    /// The 32-byte secret key `ssk`.
    package let secretKey: SecureBytes
    /// `spk`, the key devices pin.
    public let publicKey: SenderPublicKey

    /// Its id, `BLAKE2b(spk)`.
    public var sid: SenderID { publicKey.sid }

    /// The key pair of a 32-byte secret key; the public key is derived, so the two always match.
    /// The key lives for a whole run, so it is kept in guarded storage (locked, out of core dumps).
    package init(secretKey: SecureBytes) throws(CryptoError) {
        let raw = try X25519.publicKey(for: secretKey)
        self.secretKey = secretKey.guarded()
        self.publicKey = try! SenderPublicKey(rawRepresentation: raw)
    }

    /// The key pair of a secret key given as base64url (or standard base64) text, as a sender key
    /// file holds it. The decoded bytes go straight into a wiped buffer; the error never quotes
    /// the text.
    ///
    /// - Throws: ``KeyDecodingError/notBase64(_:)`` or ``KeyDecodingError/wrongLength(_:)``.
    public init(base64 text: String) throws(KeyDecodingError) {
        let secret: DeviceSecretKey
        do {
            secret = try DeviceSecretKey(base64: text)
        } catch .notBase64 {
            throw .notBase64("sender secret key")
        } catch {
            throw .wrongLength("sender secret key")
        }
        self = try! SenderKey(secretKey: secret.storage)
    }

    /// A fresh key pair from the CSPRNG.
    public static func generate() -> SenderKey {
        try! SenderKey(secretKey: SecureBytes.random(count: X25519.keyLength))
    }

    /// The sid and the public key, never the secret key.
    public var description: String { "SenderKey(sid: \(sid), public key: \(publicKey))" }
}

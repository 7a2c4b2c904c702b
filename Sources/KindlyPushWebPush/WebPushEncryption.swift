internal import KindlyPushBase
package import KindlyPushCore
package import KindlyPushLibcrypto

/// A Web Push subscription's keys (RFC 8291 section 2; wire-format.md section 9.1): the user
/// agent's P-256 public key (`p256dh`) and its 16-byte authentication secret (`auth`), both
/// base64url in the W3C `PushSubscription` JSON.
package struct WebPushSubscriptionKeys: Sendable {
    /// The uncompressed point `ua_public` (65 bytes).
    package var p256dh: [UInt8] { point.bytes }
    /// `auth_secret` (16 bytes), in a wiped buffer.
    package let auth: SecureBytes
    /// The point, parsed (and checked on the curve) once: every message to the subscription
    /// derives with it.
    let point: P256.PublicKey

    /// The length of `auth_secret`.
    package static let authLength = 16

    /// The keys from their bytes: `p256dh` must be a point on P-256 (65 bytes, uncompressed),
    /// `auth` 16 bytes.
    package init(p256dh: [UInt8], auth: SecureBytes) throws(WebPushError) {
        guard auth.count == Self.authLength else { throw .keys("the auth secret is not 16 bytes") }
        do {
            point = try p256dh.withBytes { (bytes) throws(LibcryptoError) in try P256.PublicKey(uncompressed: bytes) }
        } catch {
            throw .keys("p256dh is not an uncompressed P-256 point (\(error))")
        }
        self.auth = auth
    }

    /// The keys from the subscription's base64url text (padded or not, as browsers give them).
    package init(p256dh: String, auth: String) throws(WebPushError) {
        let point: [UInt8]
        let secret: SecureBytes
        do throws(Base64.DecodingError) {
            point = try Base64.decode(p256dh)
        } catch {
            throw .keys("p256dh is not base64url: it \(error)")
        }
        do throws(Base64.DecodingError) {
            secret = try auth.withUTF8Bytes { (text) throws(Base64.DecodingError) in try Base64.decodeSecret(text) }
        } catch {
            throw .keys("auth is not base64url: it \(error)")
        }
        try self.init(p256dh: point, auth: secret)
    }
}

/// Why Web Push keys or a message were refused; never quotes a secret.
package enum WebPushError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The subscription's keys or the receiver's are not what RFC 8291 takes.
    case keys(String)
    /// A message that cannot be read (RFC 8188's header, RFC 8291's one record): why.
    case malformed(String)
    /// The record does not decrypt with these keys (wrong keys, or bytes changed).
    case authentication
    /// The plaintext is over the budget (wire-format.md section 9.4).
    case tooLong(Int)
    /// libcrypto failed.
    case libcrypto(LibcryptoError)

    package var description: String {
        switch self {
        case .keys(let reason): "Web Push keys: \(reason)"
        case .malformed(let reason): "not an aes128gcm Web Push message: \(reason)"
        case .authentication: "the Web Push message does not decrypt with these keys (wrong keys, or changed bytes)"
        case .tooLong(let count):
            "the plaintext is \(count) bytes, over Web Push's \(WebPushEncryption.maximumPlaintextLength) (a 4096-byte body)"
        case .libcrypto(let error): error.description
        }
    }
}

/// RFC 8291's message encryption for Web Push with the `aes128gcm` content coding of RFC 8188,
/// as wire-format.md section 9.4 has it: a fresh ephemeral P-256 key and 16-byte salt per
/// message, one record of record size 4096, the key id the ephemeral public key, the padding
/// delimiter 0x02 and no padding.
///
/// HKDF-SHA256 is libsodium's HMAC (``HMACSHA256``); P-256 and AES-128-GCM are libcrypto's
/// (``P256``, ``AES128GCM``). Every key between the ECDH secret and the content key lives in
/// stack buffers wiped before returning.
package enum WebPushEncryption {
    /// The salt's length.
    package static let saltLength = 16
    /// The record size written in the header (`rs`).
    package static let recordSize = 4096
    /// The header: salt (16), rs (4), idlen (1) and the key id, the 65-byte `as_public`.
    package static let headerLength = saltLength + 4 + 1 + P256.publicKeyLength
    /// The longest body wire-format.md section 9.4 sends: 4096 bytes, RFC 8030's minimum that
    /// every push service takes.
    package static let maximumBodyLength = 4096
    /// The budget of the plaintext (the Kindly document): the body less the header (86), the
    /// tag (16) and the delimiter (1), 3993 bytes.
    package static let maximumPlaintextLength = maximumBodyLength - headerLength - AES128GCM.tagLength - 1

    /// `plaintext` encrypted for `subscription` with a fresh ephemeral key and salt: the
    /// message body, header and one record.
    package static func encrypt(_ plaintext: UnsafeRawBufferPointer, for subscription: WebPushSubscriptionKeys) throws(WebPushError)
        -> [UInt8]
    {
        let ephemeral: P256.PrivateKey
        do throws(LibcryptoError) {
            ephemeral = try P256.PrivateKey.generate()
        } catch {
            throw .libcrypto(error)
        }
        let salt = Sodium.randomBytes(count: saltLength)
        return try encrypt(plaintext, for: subscription, salt: salt, ephemeralKey: ephemeral)
    }

    /// The deterministic encryption under the fresh `salt` (16 bytes) and `ephemeralKey`
    /// (`as_private`) that ``encrypt(_:for:)`` draws: for tests against fixed vectors. Never
    /// reuse either.
    package static func encrypt(
        _ plaintext: UnsafeRawBufferPointer, for subscription: WebPushSubscriptionKeys, salt: [UInt8], ephemeralKey: P256.PrivateKey
    ) throws(WebPushError) -> [UInt8] {
        precondition(salt.count == saltLength, "the salt is 16 bytes")
        guard plaintext.count <= maximumPlaintextLength else { throw .tooLong(plaintext.count) }
        let secret: SecureBytes
        do throws(LibcryptoError) {
            secret = try ephemeralKey.sharedSecret(with: subscription.point)
        } catch {
            throw .libcrypto(error)
        }
        var message = [UInt8]()
        message.reserveCapacity(headerLength + plaintext.count + 1 + AES128GCM.tagLength)
        message += salt
        message += [
            UInt8(recordSize >> 24 & 0xFF), UInt8(recordSize >> 16 & 0xFF), UInt8(recordSize >> 8 & 0xFF), UInt8(recordSize & 0xFF),
        ]
        message.append(UInt8(P256.publicKeyLength))
        message += ephemeralKey.publicKey
        // The record: the plaintext and its delimiter, sealed in place, the tag after them.
        let recordStart = message.count
        message.append(contentsOf: UnsafeRawBufferPointer(rebasing: plaintext[...]))
        message.append(0x02)
        message += [UInt8](repeating: 0, count: AES128GCM.tagLength)
        let result: Result<Void, LibcryptoError> = message.withUnsafeMutableBytes { out in
            withContentKeys(
                secret: secret, auth: subscription.auth, userAgentPublic: subscription.p256dh, serverPublic: ephemeralKey.publicKey,
                salt: salt
            ) { key, nonce in
                let record = UnsafeMutableRawBufferPointer(rebasing: out[recordStart...])
                let padded = UnsafeRawBufferPointer(rebasing: record[..<(record.count - AES128GCM.tagLength)])
                return Result { () throws(LibcryptoError) in
                    try AES128GCM.seal(
                        key: UnsafeRawBufferPointer(key), nonce: UnsafeRawBufferPointer(nonce), plaintext: padded, into: record)
                }
            }
        }
        if case .failure(let error) = result {
            message.withUnsafeMutableBytes { SecureBytes.wipeScratch($0) }
            throw .libcrypto(error)
        }
        return message
    }

    /// The plaintext of `message` for the user agent whose private key is `privateKey`
    /// (`ua_private`) and authentication secret `auth`, in a wiped buffer.
    ///
    /// Refuses (``WebPushError/malformed(_:)``, with the reason) a header shorter than 21 bytes,
    /// a record size under 18, a key id that is not a 65-byte uncompressed point on P-256, a body
    /// of more than one record (RFC 8291 section 4 allows one) or with no room for a tag and a
    /// delimiter, and a record whose padding does not end in the last record's delimiter 0x02
    /// (zeros after it are padding); ``WebPushError/authentication`` when the record does not
    /// decrypt.
    package static func decrypt(
        _ message: UnsafeRawBufferPointer, privateKey: P256.PrivateKey, auth: SecureBytes
    ) throws(WebPushError) -> SecureBytes {
        guard auth.count == WebPushSubscriptionKeys.authLength else { throw .keys("the auth secret is not 16 bytes") }
        let fixedHeader = saltLength + 4 + 1
        guard message.count >= fixedHeader else {
            throw .malformed("\(message.count) bytes, shorter than the 21-byte header (salt, record size, key id length)")
        }
        let salt = [UInt8](message[0..<saltLength])
        let recordSize = message[16...19].reduce(0) { $0 << 8 | Int($1) }
        guard recordSize >= 18 else { throw .malformed("the record size is \(recordSize), under RFC 8188's 18") }
        let idLength = Int(message[20])
        guard idLength == P256.publicKeyLength else {
            throw .malformed("the key id is \(idLength) bytes, not the sender's 65-byte public key")
        }
        guard message.count >= fixedHeader + idLength else { throw .malformed("the message ends inside the key id") }
        let serverPublic = [UInt8](message[fixedHeader..<(fixedHeader + idLength)])
        let record = UnsafeRawBufferPointer(rebasing: message[(fixedHeader + idLength)...])
        guard record.count <= recordSize else {
            throw .malformed("more than one record (\(record.count) bytes past the header, record size \(recordSize)): RFC 8291 allows one")
        }
        guard record.count >= AES128GCM.tagLength + 1 else {
            throw .malformed("the record is \(record.count) bytes, too short for a tag and a delimiter")
        }
        let peer: P256.PublicKey
        do throws(LibcryptoError) {
            peer = try serverPublic.withBytes { (bytes) throws(LibcryptoError) in try P256.PublicKey(uncompressed: bytes) }
        } catch {
            throw .malformed("the key id is not a point on P-256")
        }
        let secret: SecureBytes
        do throws(LibcryptoError) {
            secret = try privateKey.sharedSecret(with: peer)
        } catch {
            throw .libcrypto(error)
        }
        let opened: Result<SecureBytes?, LibcryptoError> = withContentKeys(
            secret: secret, auth: auth, userAgentPublic: privateKey.publicKey, serverPublic: serverPublic, salt: salt
        ) { key, nonce in
            Result { () throws(LibcryptoError) in
                try AES128GCM.open(key: UnsafeRawBufferPointer(key), nonce: UnsafeRawBufferPointer(nonce), sealed: record)
            }
        }
        let padded: SecureBytes
        switch opened {
        case .failure(let error): throw .libcrypto(error)
        case .success(nil): throw .authentication
        case .success(let plaintext?): padded = plaintext
        }
        // RFC 8188 section 2: the plaintext, the delimiter, then zeros.
        let end = padded.withUnsafeBytes { bytes -> (Int, UInt8)? in
            guard let last = bytes.lastIndex(where: { $0 != 0 }) else { return nil }
            return (last, bytes[last])
        }
        guard let (delimiter, value) = end else { throw .malformed("the record has no padding delimiter") }
        guard value == 0x02 else {
            throw .malformed(
                value == 0x01
                    ? "the record's delimiter 0x01 says more records follow: RFC 8291 allows one"
                    : "the record's padding delimiter is not 0x02")
        }
        return padded.withUnsafeBytes { SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<delimiter])) }
    }

    /// RFC 8291 section 3.4's key schedule, then RFC 8188 section 2.2's and 2.3's: runs `body`
    /// with the content encryption key (16 bytes) and the nonce (12 bytes), in a stack buffer
    /// wiped after, as every intermediate key is.
    ///
    ///     PRK_key = HMAC-SHA-256(auth_secret, ecdh_secret)
    ///     IKM     = HMAC-SHA-256(PRK_key, "WebPush: info" || 0x00 || ua_public || as_public || 0x01)
    ///     PRK     = HMAC-SHA-256(salt, IKM)
    ///     CEK     = HMAC-SHA-256(PRK, "Content-Encoding: aes128gcm" || 0x00 || 0x01)[0..15]
    ///     NONCE   = HMAC-SHA-256(PRK, "Content-Encoding: nonce" || 0x00 || 0x01)[0..11]
    static func withContentKeys<R>(
        secret: SecureBytes, auth: SecureBytes, userAgentPublic: [UInt8], serverPublic: [UInt8], salt: [UInt8],
        _ body: (UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer) -> R
    ) -> R {
        withUnsafeTemporaryAllocation(byteCount: 32 * 3 + AES128GCM.keyLength + AES128GCM.nonceLength, alignment: 16) { scratch in
            defer { SecureBytes.wipeScratch(scratch) }
            let keyPRK = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<32])
            let ikm = UnsafeMutableRawBufferPointer(rebasing: scratch[32..<64])
            let prk = UnsafeMutableRawBufferPointer(rebasing: scratch[64..<96])
            let key = UnsafeMutableRawBufferPointer(rebasing: scratch[96..<112])
            let nonce = UnsafeMutableRawBufferPointer(rebasing: scratch[112..<124])
            auth.withUnsafeBytes { auth in
                secret.withUnsafeBytes { secret in HMACSHA256.extract(salt: auth, into: keyPRK) { $0.append(secret) } }
            }
            HMACSHA256.withState(key: UnsafeRawBufferPointer(keyPRK)) { state in
                HMACSHA256.expand(prkState: state, into: ikm) { info in
                    info.append("WebPush: info\0")
                    userAgentPublic.withUnsafeBytes { info.append($0) }
                    serverPublic.withUnsafeBytes { info.append($0) }
                }
            }
            salt.withUnsafeBytes { salt in HMACSHA256.extract(salt: salt, into: prk) { $0.append(UnsafeRawBufferPointer(ikm)) } }
            HMACSHA256.withState(key: UnsafeRawBufferPointer(prk)) { state in
                HMACSHA256.expand(prkState: state, into: key) { $0.append("Content-Encoding: aes128gcm\0") }
                HMACSHA256.expand(prkState: state, into: nonce) { $0.append("Content-Encoding: nonce\0") }
            }
            return body(key, nonce)
        }
    }
}

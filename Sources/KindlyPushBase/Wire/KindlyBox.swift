package import KindlyPushCore

/// The cryptographic core of the wire format, shared by sealing and decryption:
///
///     ss  = X25519(esk, pk)                      (all zeros: refused)
///     k   = BLAKE2b-256(LABEL || ss || epk || pk)
///     aad = LABEL || kid
///     ct  = XChaCha20-Poly1305(k, n, aad, pad(m, 64))   ciphertext || 16-byte tag
///
/// and for version 2 (section 7.2), given a ``SenderBinding`` (the sender's public key and the
/// second shared secret `ss_s`, computed once per device and sender and kept):
///
///     k   = BLAKE2b-256(LABEL2 || ss_e || ss_s || epk || pk || spk)
///     aad = LABEL2 || kid || sid
///
/// The shared secret and the derived key live in a stack buffer that is wiped with
/// `sodium_memzero` (``SecureBytes/wipeScratch(_:)``) as soon as the operation returns, the
/// BLAKE2b state likewise; the ephemeral secret key is a ``SecureBytes`` or, on the fast path,
/// another wiped stack buffer.
package enum KindlyBox {
    /// Seals `message` (the plaintext JSON text, unpadded) for `recipient` with the given
    /// ephemeral secret key and nonce: version 1, or version 2 with `sender`; or with `version`
    /// ``WireVersion/three``, HPKE mode_base, or mode_auth with `sender` (the nonce is empty then).
    package static func seal(
        _ message: UnsafeRawBufferPointer,
        for recipient: DevicePublicKey,
        sender: SenderBinding? = nil,
        version: WireVersion? = nil,
        ephemeralSecretKey: SecureBytes,
        nonce: [UInt8]
    ) throws(CryptoError) -> SealedEnvelope {
        let version = version ?? .default(hasSender: sender != nil)
        guard ephemeralSecretKey.count == X25519.keyLength else {
            throw .invalidLength(what: "an X25519 secret key", expected: X25519.keyLength, actual: ephemeralSecretKey.count)
        }
        let kid = recipient.kid
        let paddedLength = (message.count / WireFormat.paddingBlockSize + 1) * WireFormat.paddingBlockSize
        var ephemeralPublicKey = [UInt8](repeating: 0, count: X25519.keyLength)
        var padded = [UInt8](repeating: 0, count: paddedLength)
        var ciphertext = [UInt8](repeating: 0, count: paddedLength + XChaCha20Poly1305.tagLength)
        try ephemeralSecretKey.withUnsafeBytes { (esk) throws(CryptoError) in
            try nonce.withBytes { (n) throws(CryptoError) in
                try kid.bytes.withBytes { (kidBytes) throws(CryptoError) in
                    try ephemeralPublicKey.withMutableBytes { (epk) throws(CryptoError) in
                        try padded.withMutableBytes { (padded) throws(CryptoError) in
                            try ciphertext.withMutableBytes { (sealed) throws(CryptoError) in
                                _ = try seal(
                                    message, for: recipient, kid: kidBytes, sender: sender, version: version, ephemeralSecretKey: esk,
                                    nonce: n, ephemeralPublicKey: epk, padded: padded, into: sealed)
                            }
                        }
                    }
                }
            }
        }
        return SealedEnvelope(
            kid: kid, senderID: sender?.publicKey.sid, ephemeralPublicKey: ephemeralPublicKey, nonce: version.hasNonce ? nonce : [],
            ciphertext: ciphertext, version: version)
    }

    /// The sealing core on raw buffers: writes `epk` (32 bytes; HPKE's `enc` in version 3) and
    /// `ct` (the padded length + 16 bytes, returned) for `message`, using `padded` (at least the
    /// padded length) as scratch. The shared secret and the derived key live in a stack buffer
    /// wiped on every way out. Version 3 (``HPKEBox``) takes no nonce.
    package static func seal(
        _ message: UnsafeRawBufferPointer,
        for recipient: DevicePublicKey,
        kid: UnsafeRawBufferPointer,
        sender: SenderBinding? = nil,
        version: WireVersion? = nil,
        ephemeralSecretKey: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer,
        ephemeralPublicKey: UnsafeMutableRawBufferPointer,
        padded: UnsafeMutableRawBufferPointer,
        into sealed: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) -> Int {
        if version == .three {
            return try HPKEBox.seal(
                message, for: recipient, kid: kid, sender: sender, ephemeralSecretKey: ephemeralSecretKey,
                encapsulatedKey: ephemeralPublicKey, padded: padded, into: sealed)
        }
        guard nonce.count == XChaCha20Poly1305.nonceLength else {
            throw .invalidLength(what: "an XChaCha20-Poly1305 nonce", expected: XChaCha20Poly1305.nonceLength, actual: nonce.count)
        }
        X25519.publicKey(secretKey: ephemeralSecretKey, into: ephemeralPublicKey)
        let result = withUnsafeTemporaryAllocation(byteCount: 2 * X25519.keyLength, alignment: 16) { secrets in
            defer { SecureBytes.wipeScratch(secrets) }
            return Result { () throws(CryptoError) -> Int in
                let sharedSecret = UnsafeMutableRawBufferPointer(rebasing: secrets[0..<X25519.keyLength])
                let derivedKey = UnsafeMutableRawBufferPointer(rebasing: secrets[X25519.keyLength...])
                try recipient.rawRepresentation.withBytes { (pk) throws(CryptoError) in
                    try X25519.sharedSecret(secretKey: ephemeralSecretKey, publicKey: pk, into: sharedSecret)
                }
                deriveKey(
                    sharedSecret: UnsafeRawBufferPointer(sharedSecret), ephemeralPublicKey: UnsafeRawBufferPointer(ephemeralPublicKey),
                    recipient: recipient, sender: sender, into: derivedKey)
                let paddedLength = Padding.pad(message, blockSize: WireFormat.paddingBlockSize, into: padded)
                return withAssociatedData(kid: kid, sender: sender) { aad in
                    XChaCha20Poly1305.seal(
                        UnsafeRawBufferPointer(rebasing: padded[0..<paddedLength]), key: UnsafeRawBufferPointer(derivedKey), nonce: nonce,
                        authenticating: aad, into: sealed)
                }
            }
        }
        return try result.get()
    }

    /// Opens `envelope` with `key` (and for version 2 the binding of the sender its `sid` names)
    /// and returns the unpadded plaintext bytes (reasons 5 and 6 of section 5, 6 and 7 of
    /// section 7.3; the padding part of the last).
    package static func open(
        _ envelope: SealedEnvelope, with key: DeviceKey, sender: SenderBinding? = nil
    ) throws(DecryptionFailure) -> [UInt8] {
        let capacity = max(envelope.ciphertext.count - XChaCha20Poly1305.tagLength, 0)
        var failure: DecryptionFailure?
        let plaintext = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            initialized = 0
            do throws(DecryptionFailure) {
                initialized = try envelope.ciphertext.withBytes { (ct) throws(DecryptionFailure) in
                    try envelope.nonce.withBytes { (n) throws(DecryptionFailure) in
                        try envelope.ephemeralPublicKey.withBytes { (epk) throws(DecryptionFailure) in
                            try envelope.kid.bytes.withBytes { (kid) throws(DecryptionFailure) in
                                try open(
                                    ciphertext: ct, nonce: n, ephemeralPublicKey: epk, kid: kid, with: key, sender: sender,
                                    version: envelope.version, into: UnsafeMutableRawBufferPointer(buffer))
                            }
                        }
                    }
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return plaintext
    }

    /// Every authentication failure looks the same to the caller: one reason, one text.
    package static let authenticationFailure = DecryptionFailure(
        .authenticationFailed, "the push does not authenticate with this device's key")

    /// The decryption core on raw buffers: X25519, the key derivation, the AEAD and the padding
    /// check. Writes the unpadded plaintext at the start of `plaintext` (at least
    /// `ciphertext.count - 16` bytes) and returns its length. The shared secret and the derived
    /// key live in a stack buffer that is wiped with `sodium_memzero` on every way out.
    /// Version 3 goes to ``HPKEBox`` (and ignores `nonce`).
    package static func open(
        ciphertext: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer,
        ephemeralPublicKey: UnsafeRawBufferPointer,
        kid: UnsafeRawBufferPointer,
        with key: DeviceKey,
        sender: SenderBinding? = nil,
        version: WireVersion? = nil,
        into plaintext: UnsafeMutableRawBufferPointer
    ) throws(DecryptionFailure) -> Int {
        if version == .three {
            return try HPKEBox.open(
                ciphertext: ciphertext, encapsulatedKey: ephemeralPublicKey, kid: kid, with: key, sender: sender, into: plaintext)
        }
        let result = withUnsafeTemporaryAllocation(byteCount: 2 * X25519.keyLength, alignment: 16) { secrets in
            defer { SecureBytes.wipeScratch(secrets) }
            return Result { () throws(DecryptionFailure) -> Int in
                let sharedSecret = UnsafeMutableRawBufferPointer(rebasing: secrets[0..<X25519.keyLength])
                let derivedKey = UnsafeMutableRawBufferPointer(rebasing: secrets[X25519.keyLength...])
                // A low-order ephemeral key does not return early: it goes on with a random key
                // through the same derivation and AEAD check, so that neither its timing nor its
                // error tells it from a bad tag.
                var isLowOrder = false
                do throws(CryptoError) {
                    try key.secretKey.withUnsafeBytes { (secret) throws(CryptoError) in
                        try X25519.sharedSecret(secretKey: secret, publicKey: ephemeralPublicKey, into: sharedSecret)
                    }
                } catch {
                    isLowOrder = true
                    Sodium.fillRandom(sharedSecret)
                }
                deriveKey(
                    sharedSecret: UnsafeRawBufferPointer(sharedSecret), ephemeralPublicKey: ephemeralPublicKey,
                    recipient: key.publicKey, sender: sender, into: derivedKey)
                let paddedLength: Int
                do throws(CryptoError) {
                    paddedLength = try withAssociatedData(kid: kid, sender: sender) { (aad) throws(CryptoError) in
                        try XChaCha20Poly1305.open(
                            ciphertext, key: UnsafeRawBufferPointer(derivedKey), nonce: nonce, authenticating: aad, into: plaintext)
                    }
                } catch {
                    throw authenticationFailure
                }
                // Refused whatever the AEAD said: a random key passing the tag is only astronomically unlikely.
                guard !isLowOrder else { throw authenticationFailure }
                return try unpaddedLength(plaintext, paddedLength: paddedLength)
            }
        }
        return try result.get()
    }

    /// The padding part of reason 6 (section 5): the length of the message in the first
    /// `paddedLength` bytes of `plaintext`, as `sodium_unpad` with block size 64 judges it.
    package static func unpaddedLength(_ plaintext: UnsafeMutableRawBufferPointer, paddedLength: Int) throws(DecryptionFailure) -> Int {
        do throws(CryptoError) {
            return try Padding.unpaddedLength(
                UnsafeRawBufferPointer(rebasing: plaintext[0..<paddedLength]), blockSize: WireFormat.paddingBlockSize)
        } catch {
            throw DecryptionFailure(.badPlaintext, "the padding is invalid")
        }
    }

    /// `k = BLAKE2b(LABEL || ss || epk || pk)` written into `out` (32 bytes), without copying the
    /// secret into another buffer; for version 2 `k = BLAKE2b(LABEL2 || ss_e || ss_s || epk || pk || spk)`.
    package static func deriveKey(
        sharedSecret: UnsafeRawBufferPointer, ephemeralPublicKey: UnsafeRawBufferPointer, recipient: DevicePublicKey,
        sender: SenderBinding? = nil, into out: UnsafeMutableRawBufferPointer
    ) {
        recipient.rawRepresentation.withUnsafeBytes { pk in
            guard let sender else {
                BLAKE2b.hash(WireFormat.bytes(WireFormat.label), sharedSecret, ephemeralPublicKey, pk, into: out)
                return
            }
            sender.sharedSecret.withUnsafeBytes { senderSecret in
                sender.publicKey.rawRepresentation.withUnsafeBytes { spk in
                    BLAKE2b.hash(WireFormat.bytes(WireFormat.label2), sharedSecret, senderSecret, ephemeralPublicKey, pk, spk, into: out)
                }
            }
        }
    }

    /// Calls `body` with `aad = LABEL || kid` in a stack buffer, or for version 2 `LABEL2 || kid || sid`.
    package static func withAssociatedData<R, E: Error>(
        kid: UnsafeRawBufferPointer, sender: SenderBinding? = nil, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try withAssociatedData(label: sender == nil ? WireFormat.label : WireFormat.label2, kid: kid, sender: sender, body)
    }

    /// Calls `body` with `aad = label || kid` (`|| sid` with a `sender`) in a stack buffer.
    package static func withAssociatedData<R, E: Error>(
        label: StaticString, kid: UnsafeRawBufferPointer, sender: SenderBinding?, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let sid = sender?.publicKey.sid.bytes ?? []
        let label = WireFormat.bytes(label)
        let result = withUnsafeTemporaryAllocation(byteCount: label.count + kid.count + sid.count, alignment: 1) { aad in
            aad.copyMemory(from: label)
            UnsafeMutableRawBufferPointer(rebasing: aad[label.count..<(label.count + kid.count)]).copyMemory(from: kid)
            if !sid.isEmpty {
                sid.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: aad[(label.count + kid.count)...]).copyMemory(from: $0) }
            }
            return Result { () throws(E) in try body(UnsafeRawBufferPointer(aad)) }
        }
        return try result.get()
    }
}

/// What version 2 adds to the box for one device and one sender (docs/spec/wire-format.md section 7.2): the
/// sender's public key `spk` (its `sid` goes into the associated data) and the second shared
/// secret `ss_s = X25519(ssk, pk) = X25519(sk, spk)`, in wiped memory. It is the same for every
/// push from that sender to that device, so it is computed once and kept (``SenderSecretCache``
/// on the device, ``PushSealer`` on the backend): version 2 costs no more X25519 per push than
/// version 1.
package final class SenderBinding: Sendable {
    /// `spk`, as the device pinned it or as the sender's own.
    package let publicKey: SenderPublicKey
    /// `ss_s`, 32 bytes, never all zeros.
    package let sharedSecret: SecureBytes

    /// The device's side: `X25519(sk, spk)`. Throws ``CryptoError/allZeroSharedSecret`` for a
    /// low-order pinned key.
    package init(device key: DeviceKey, sender: SenderPublicKey) throws(CryptoError) {
        publicKey = sender
        // Kept for the run: in guarded storage (locked, out of core dumps).
        sharedSecret = try sender.rawRepresentation.withBytes { (spk) throws(CryptoError) in
            try X25519.sharedSecret(secretKey: key.secretKey.storage, publicKey: spk)
        }.guarded()
    }

    /// The backend's side: `X25519(ssk, pk)`. Throws ``CryptoError/allZeroSharedSecret`` for a
    /// low-order device key.
    package init(sender: SenderKey, recipient: DevicePublicKey) throws(CryptoError) {
        publicKey = sender.publicKey
        sharedSecret = try recipient.rawRepresentation.withBytes { (pk) throws(CryptoError) in
            try X25519.sharedSecret(secretKey: sender.secretKey, publicKey: pk)
        }.guarded()
    }
}

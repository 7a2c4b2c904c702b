package import KindlyPushCore

/// The cryptographic core of wire format version 3 (section 8), standard HPKE (RFC 9180,
/// ``HPKE``) with the cipher suite DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305:
///
///     info = LABEL3
///     aad  = LABEL3 || kid                 mode_base
///     aad  = LABEL3 || kid || sid          mode_auth
///     enc, ct = SealBase(pkR, info, aad, pad(m, 64))  /  SealAuth(pkR, info, aad, pad(m, 64), skS)
///
/// The key-schedule context of each mode depends only on constants (`psk_id_hash` of the empty
/// PSK id, `info_hash` of `LABEL3`): computed once per process. mode_auth's second
/// Diffie-Hellman result, `DH(skS, pkR) = DH(skR, pkS)`, is version 2's `ss_s`: the same
/// ``SenderBinding``, computed once per device and sender and kept (``SenderSecretCache``), so a
/// device pays one X25519 per push in both modes.
package enum HPKEBox {
    /// `key_schedule_context` of mode_base with `info = LABEL3`.
    package static let baseContext: [UInt8] = HPKE.keyScheduleContext(mode: .base, info: WireFormat.bytes(WireFormat.label3))
    /// `key_schedule_context` of mode_auth with `info = LABEL3`.
    package static let authContext: [UInt8] = HPKE.keyScheduleContext(mode: .auth, info: WireFormat.bytes(WireFormat.label3))

    /// Seals `message` (unpadded) for `recipient`, mode_auth with `sender`, with the ephemeral
    /// secret key `skE` given: writes `enc` (32 bytes) and `ct` (the padded length + 16, returned),
    /// using `padded` as scratch.
    package static func seal(
        _ message: UnsafeRawBufferPointer,
        for recipient: DevicePublicKey,
        kid: UnsafeRawBufferPointer,
        sender: SenderBinding?,
        ephemeralSecretKey: UnsafeRawBufferPointer,
        encapsulatedKey: UnsafeMutableRawBufferPointer,
        padded: UnsafeMutableRawBufferPointer,
        into sealed: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) -> Int {
        let paddedLength = Padding.pad(message, blockSize: WireFormat.paddingBlockSize, into: padded)
        let paddedMessage = UnsafeRawBufferPointer(rebasing: padded[0..<paddedLength])
        return try withParts(kid: kid, sender: sender) { (aad, context, senderParts) throws(CryptoError) in
            try recipient.rawRepresentation.withBytes { (pkR) throws(CryptoError) in
                try HPKE.seal(
                    paddedMessage, aad: aad, context: context, recipient: pkR, ephemeralSecretKey: ephemeralSecretKey, sender: senderParts,
                    encapsulatedKey: encapsulatedKey, into: sealed)
            }
        }
    }

    /// Opens a version 3 `ct` with `key` (mode_auth with the binding of the sender its `sid`
    /// names) and returns the unpadded length of the plaintext written into `plaintext`: reasons
    /// 6 and the padding part of 7 of sections 7.3 and 8.2. An all-zero `DH(sk, enc)` is
    /// `authentication_failed`, indistinguishable from a bad tag.
    package static func open(
        ciphertext: UnsafeRawBufferPointer,
        encapsulatedKey: UnsafeRawBufferPointer,
        kid: UnsafeRawBufferPointer,
        with key: DeviceKey,
        sender: SenderBinding?,
        into plaintext: UnsafeMutableRawBufferPointer
    ) throws(DecryptionFailure) -> Int {
        let paddedLength: Int
        do throws(CryptoError) {
            paddedLength = try withParts(kid: kid, sender: sender) { (aad, context, senderParts) throws(CryptoError) in
                try key.publicKey.rawRepresentation.withBytes { (pkR) throws(CryptoError) in
                    try key.secretKey.withUnsafeBytes { (skR) throws(CryptoError) in
                        try HPKE.open(
                            ciphertext, aad: aad, context: context, encapsulatedKey: encapsulatedKey, recipientSecretKey: skR,
                            recipient: pkR,
                            sender: senderParts, into: plaintext)
                    }
                }
            }
        } catch {
            throw KindlyBox.authenticationFailure
        }
        return try KindlyBox.unpaddedLength(plaintext, paddedLength: paddedLength)
    }

    /// Calls `body` with the associated data, the mode's constant context and, for mode_auth,
    /// the sender's `pkS` and kept `DH(skR, pkS)`.
    private static func withParts<R>(
        kid: UnsafeRawBufferPointer, sender: SenderBinding?,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, (publicKey: UnsafeRawBufferPointer, sharedSecret: UnsafeRawBufferPointer)?)
            throws(CryptoError) -> R
    ) throws(CryptoError) -> R {
        try KindlyBox.withAssociatedData(label: WireFormat.label3, kid: kid, sender: sender) { (aad) throws(CryptoError) in
            guard let sender else {
                return try baseContext.withBytes { (context) throws(CryptoError) in try body(aad, context, nil) }
            }
            return try authContext.withBytes { (context) throws(CryptoError) in
                try sender.publicKey.rawRepresentation.withBytes { (pkS) throws(CryptoError) in
                    try sender.sharedSecret.withUnsafeBytes { (secret) throws(CryptoError) in try body(aad, context, (pkS, secret)) }
                }
            }
        }
    }
}

/// Hybrid Public Key Encryption (RFC 9180) for one cipher suite, on libsodium's primitives:
/// KEM `0x0020` DHKEM(X25519, HKDF-SHA256) over ``X25519``, KDF `0x0001` HKDF-SHA256 over
/// ``HMACSHA256``, AEAD `0x0003` ChaCha20-Poly1305 over ``ChaCha20Poly1305``; modes mode_base
/// (`0x00`) and mode_auth (`0x02`), with the empty PSK.
///
/// The layers follow the RFC, as swift-crypto's `HPKE` does: `LabeledExtract`/`LabeledExpand`
/// (section 4), DHKEM's `ExtractAndExpand` (section 4.1), the key schedule (section 5.1) and the
/// nonce of a sequence number (section 5.2). ``seal(_:aad:context:recipient:ephemeralSecretKey:sender:encapsulatedKey:into:)``
/// and ``open(_:aad:context:encapsulatedKey:recipientSecretKey:recipient:sender:into:)`` are the
/// single-shot `SealBase`/`SealAuth` and `OpenBase`/`OpenAuth` (section 6.1, sequence number 0)
/// on raw buffers; ``Context`` is the whole context, for checking against the RFC's vectors.
///
/// Every secret intermediate (the Diffie-Hellman results, `eae_prk`, `shared_secret`, `secret`,
/// `key`, `base_nonce`) lives in a stack buffer wiped with ``SecureBytes/wipeScratch(_:)`` on
/// every way out, or in a ``SecureBytes``. The values that depend only on constants (the mode,
/// `psk_id_hash` and `info_hash`, which make `key_schedule_context`) are public and computed
/// once by the caller (``keyScheduleContext(mode:info:)``).
package enum HPKE {
    /// The two modes used here (RFC 9180 section 5, table 1).
    package enum Mode: UInt8, Sendable {
        /// Anybody who knows the recipient's public key can seal.
        case base = 0x00
        /// The sender's static key pair takes part: only its holder can seal.
        case auth = 0x02
    }

    /// `Nenc` and `Npk` of DHKEM(X25519, HKDF-SHA256): `enc` is the ephemeral public key.
    package static let encapsulatedKeyLength = 32
    /// `Nsecret`.
    package static let sharedSecretLength = 32
    /// `Nk` and `Nn` of ChaCha20-Poly1305.
    package static let keyLength = ChaCha20Poly1305.keyLength
    package static let nonceLength = ChaCha20Poly1305.nonceLength
    package static let tagLength = ChaCha20Poly1305.tagLength

    // The labels and suite IDs are static strings, constants in the binary: no lazy start and
    // no reference count on the way through every HMAC of every push.

    /// `"HPKE-v1"`, the prefix of every labeled input.
    private static let versionLabel: StaticString = "HPKE-v1"
    /// `suite_id` of the KEM: `"KEM" || I2OSP(kem_id, 2)`.
    package static let kemSuiteID: StaticString = "KEM\u{00}\u{20}"
    /// `suite_id` of the key schedule: `"HPKE" || I2OSP(kem_id, 2) || I2OSP(kdf_id, 2) || I2OSP(aead_id, 2)`.
    package static let suiteID: StaticString = "HPKE\u{00}\u{20}\u{00}\u{01}\u{00}\u{03}"

    private static let eaePRKLabel: StaticString = "eae_prk"
    private static let sharedSecretLabel: StaticString = "shared_secret"
    private static let pskIDHashLabel: StaticString = "psk_id_hash"
    private static let infoHashLabel: StaticString = "info_hash"
    private static let secretLabel: StaticString = "secret"
    private static let keyLabel: StaticString = "key"
    private static let baseNonceLabel: StaticString = "base_nonce"
    private static let exporterLabel: StaticString = "exp"

    // MARK: Section 4: labeled HKDF

    /// `LabeledExtract(salt, label, ikm) = Extract(salt, "HPKE-v1" || suite_id || label || ikm)`,
    /// with `ikm` fed in parts; writes 32 bytes.
    package static func labeledExtract(
        suiteID: StaticString, salt: UnsafeRawBufferPointer, label: StaticString, into out: UnsafeMutableRawBufferPointer,
        ikm: (HMACSHA256.Message) -> Void = { _ in }
    ) {
        HMACSHA256.extract(salt: salt, into: out) { message in
            message.append(versionLabel)
            message.append(suiteID)
            message.append(label)
            ikm(message)
        }
    }

    /// `LabeledExpand(prk, label, info, L) = Expand(prk, I2OSP(L, 2) || "HPKE-v1" || suite_id ||
    /// label || info, L)` for `L = out.count` ≤ 32, with `info` fed in parts.
    package static func labeledExpand(
        suiteID: StaticString, prk: UnsafeRawBufferPointer, label: StaticString, into out: UnsafeMutableRawBufferPointer,
        info: (HMACSHA256.Message) -> Void
    ) {
        HMACSHA256.withState(key: prk) { state in
            labeledExpand(suiteID: suiteID, prkState: state, label: label, into: out, info: info)
        }
    }

    /// ``labeledExpand(suiteID:prk:label:into:info:)`` from the HMAC state keyed with the PRK
    /// (``HMACSHA256/withState(key:_:)``), for several expansions of one PRK.
    package static func labeledExpand(
        suiteID: StaticString, prkState: UnsafeRawBufferPointer, label: StaticString, into out: UnsafeMutableRawBufferPointer,
        info: (HMACSHA256.Message) -> Void
    ) {
        HMACSHA256.expand(prkState: prkState, into: out) { message in
            withUnsafeBytes(of: UInt16(out.count).bigEndian) { message.append($0) }
            message.append(versionLabel)
            message.append(suiteID)
            message.append(label)
            info(message)
        }
    }

    // MARK: Section 4.1: DHKEM(X25519, HKDF-SHA256)

    /// `ExtractAndExpand(dh, kem_context)`: `eae_prk = LabeledExtract("", "eae_prk", dh)`, then
    /// `shared_secret = LabeledExpand(eae_prk, "shared_secret", kem_context, 32)`, where `dh` is
    /// `ephemeral` (mode_base) or `ephemeral || sender` (mode_auth) and `kem_context = enc || pkR`
    /// (`|| pkS` in mode_auth). Writes 32 bytes into `sharedSecret`; `eae_prk` is wiped.
    package static func extractAndExpand(
        ephemeral: UnsafeRawBufferPointer, sender: (publicKey: UnsafeRawBufferPointer, sharedSecret: UnsafeRawBufferPointer)?,
        encapsulatedKey enc: UnsafeRawBufferPointer, recipient pkR: UnsafeRawBufferPointer, into sharedSecret: UnsafeMutableRawBufferPointer
    ) {
        precondition(sharedSecret.count == sharedSecretLength)
        withUnsafeTemporaryAllocation(byteCount: HMACSHA256.outputLength, alignment: 16) { prk in
            defer { SecureBytes.wipeScratch(prk) }
            labeledExtract(suiteID: kemSuiteID, salt: UnsafeRawBufferPointer(start: nil, count: 0), label: eaePRKLabel, into: prk) {
                message in
                message.append(ephemeral)
                if let sender { message.append(sender.sharedSecret) }
            }
            labeledExpand(suiteID: kemSuiteID, prk: UnsafeRawBufferPointer(prk), label: sharedSecretLabel, into: sharedSecret) {
                message in
                message.append(enc)
                message.append(pkR)
                if let sender { message.append(sender.publicKey) }
            }
        }
    }

    // MARK: Section 5.1: the key schedule

    /// `key_schedule_context = mode || psk_id_hash || info_hash` with the empty PSK id: public,
    /// and constant for a mode and an `info`, so computed once.
    package static func keyScheduleContext(mode: Mode, info: UnsafeRawBufferPointer) -> [UInt8] {
        var context = [UInt8](repeating: 0, count: 1 + 2 * HMACSHA256.outputLength)
        context.withUnsafeMutableBytes { out in
            out[0] = mode.rawValue
            let none = UnsafeRawBufferPointer(start: nil, count: 0)
            labeledExtract(
                suiteID: suiteID, salt: none, label: pskIDHashLabel, into: UnsafeMutableRawBufferPointer(rebasing: out[1..<33]))
            labeledExtract(suiteID: suiteID, salt: none, label: infoHashLabel, into: UnsafeMutableRawBufferPointer(rebasing: out[33...])) {
                $0.append(info)
            }
        }
        return context
    }

    /// The key schedule after the context: `secret = LabeledExtract(shared_secret, "secret", psk)`
    /// with the empty PSK, then `key`, `base_nonce` and (when asked) `exporter_secret` expanded
    /// from it with `context`. `secret` is wiped unless `secretOut` asks for a copy (tests).
    package static func keySchedule(
        sharedSecret: UnsafeRawBufferPointer, context: UnsafeRawBufferPointer, key: UnsafeMutableRawBufferPointer,
        baseNonce: UnsafeMutableRawBufferPointer, exporterSecret: UnsafeMutableRawBufferPointer? = nil,
        secretOut: UnsafeMutableRawBufferPointer? = nil
    ) {
        precondition(key.count == keyLength && baseNonce.count == nonceLength)
        withUnsafeTemporaryAllocation(byteCount: HMACSHA256.outputLength, alignment: 16) { secret in
            defer { SecureBytes.wipeScratch(secret) }
            labeledExtract(suiteID: suiteID, salt: sharedSecret, label: secretLabel, into: secret)
            let prk = UnsafeRawBufferPointer(secret)
            // One keyed state for the expansions of `secret`: its pads are hashed once.
            HMACSHA256.withState(key: prk) { state in
                labeledExpand(suiteID: suiteID, prkState: state, label: keyLabel, into: key) { $0.append(context) }
                labeledExpand(suiteID: suiteID, prkState: state, label: baseNonceLabel, into: baseNonce) { $0.append(context) }
                if let exporterSecret {
                    labeledExpand(suiteID: suiteID, prkState: state, label: exporterLabel, into: exporterSecret) { $0.append(context) }
                }
            }
            secretOut?.copyMemory(from: prk)
        }
    }

    /// Section 5.2: the nonce of sequence number `sequenceNumber`, `base_nonce XOR I2OSP(seq, Nn)`.
    package static func nonce(base: UnsafeRawBufferPointer, sequenceNumber: UInt64, into out: UnsafeMutableRawBufferPointer) {
        precondition(base.count == nonceLength && out.count == nonceLength)
        out.copyMemory(from: base)
        withUnsafeBytes(of: sequenceNumber.bigEndian) { sequence in
            for index in 0..<8 { out[nonceLength - 8 + index] ^= sequence[index] }
        }
    }

    // MARK: Section 6.1: single-shot

    /// `SealBase(pkR, info, aad, pt)` (no `sender`) or `SealAuth(pkR, info, aad, pt, skS)` with the
    /// ephemeral secret key `skE` given (the caller draws it fresh, `GenerateKeyPair`): writes `enc`
    /// (32 bytes) and `ct || tag` (`message.count + 16` bytes, returned) into `sealed`.
    ///
    /// - Parameters:
    ///   - context: ``keyScheduleContext(mode:info:)`` for the mode (`sender` given: mode_auth).
    ///   - sender: `pkS` and `DH(skS, pkR)`, computed once per recipient by the caller.
    /// - Throws: ``CryptoError/allZeroSharedSecret`` when `DH(skE, pkR)` is all zeros.
    package static func seal(
        _ message: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, context: UnsafeRawBufferPointer,
        recipient pkR: UnsafeRawBufferPointer,
        ephemeralSecretKey skE: UnsafeRawBufferPointer, sender: (publicKey: UnsafeRawBufferPointer, sharedSecret: UnsafeRawBufferPointer)?,
        encapsulatedKey enc: UnsafeMutableRawBufferPointer, into sealed: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) -> Int {
        X25519.publicKey(secretKey: skE, into: enc)
        return try withKeys { (dh, sharedSecret, key, nonce) throws(CryptoError) -> Int in
            try X25519.sharedSecret(secretKey: skE, publicKey: pkR, into: dh)
            extractAndExpand(
                ephemeral: UnsafeRawBufferPointer(dh), sender: sender, encapsulatedKey: UnsafeRawBufferPointer(enc), recipient: pkR,
                into: sharedSecret)
            keySchedule(sharedSecret: UnsafeRawBufferPointer(sharedSecret), context: context, key: key, baseNonce: nonce)
            return ChaCha20Poly1305.seal(
                message, key: UnsafeRawBufferPointer(key), nonce: UnsafeRawBufferPointer(nonce), authenticating: aad, into: sealed)
        }
    }

    /// `OpenBase(enc, skR, info, aad, ct)` (no `sender`) or `OpenAuth(enc, skR, info, aad, ct, pkS)`:
    /// writes the message into `plaintext` (at least `sealed.count - 16` bytes) and returns its length.
    ///
    /// An `enc` whose `DH(skR, enc)` is all zeros does not return early: the schedule and the AEAD
    /// run with a random value in its place, so that neither timing nor error tells it from a bad
    /// tag, and it is refused whatever the AEAD said.
    ///
    /// - Parameters:
    ///   - sender: `pkS` and `DH(skR, pkS)` (the same for every push from that sender: the caller keeps it).
    /// - Throws: ``CryptoError/authenticationFailure`` when the tag does not verify or a DH is all zeros.
    package static func open(
        _ sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, context: UnsafeRawBufferPointer,
        encapsulatedKey enc: UnsafeRawBufferPointer, recipientSecretKey skR: UnsafeRawBufferPointer, recipient pkR: UnsafeRawBufferPointer,
        sender: (publicKey: UnsafeRawBufferPointer, sharedSecret: UnsafeRawBufferPointer)?, into plaintext: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) -> Int {
        try withKeys { (dh, sharedSecret, key, nonce) throws(CryptoError) -> Int in
            var isLowOrder = false
            do throws(CryptoError) {
                try X25519.sharedSecret(secretKey: skR, publicKey: enc, into: dh)
            } catch {
                isLowOrder = true
                Sodium.fillRandom(dh)
            }
            extractAndExpand(
                ephemeral: UnsafeRawBufferPointer(dh), sender: sender, encapsulatedKey: enc, recipient: pkR, into: sharedSecret)
            keySchedule(sharedSecret: UnsafeRawBufferPointer(sharedSecret), context: context, key: key, baseNonce: nonce)
            let length = try ChaCha20Poly1305.open(
                sealed, key: UnsafeRawBufferPointer(key), nonce: UnsafeRawBufferPointer(nonce), authenticating: aad, into: plaintext)
            guard !isLowOrder else { throw .authenticationFailure }
            return length
        }
    }

    /// Runs `body` with four stack buffers for the secrets of one operation, `dh`, `shared_secret`,
    /// `key` and `base_nonce` (which is also the nonce of sequence number 0), wiped on every way out.
    private static func withKeys<R>(
        _ body: (UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer)
            throws(CryptoError) -> R
    ) throws(CryptoError) -> R {
        let result = withUnsafeTemporaryAllocation(byteCount: 32 + 32 + keyLength + nonceLength, alignment: 16) { secrets in
            defer { SecureBytes.wipeScratch(secrets) }
            return Result { () throws(CryptoError) -> R in
                try body(
                    UnsafeMutableRawBufferPointer(rebasing: secrets[0..<32]), UnsafeMutableRawBufferPointer(rebasing: secrets[32..<64]),
                    UnsafeMutableRawBufferPointer(rebasing: secrets[64..<(64 + keyLength)]),
                    UnsafeMutableRawBufferPointer(rebasing: secrets[(64 + keyLength)...]))
            }
        }
        return try result.get()
    }
}

extension HPKE {
    /// A whole HPKE context (section 5.1), for checking this layer against RFC 9180's vectors at
    /// every sequence number; pushes use the single-shot functions. Its secrets are ``SecureBytes``.
    package struct Context: Sendable {
        /// `shared_secret`, the KEM's output.
        package let sharedSecret: SecureBytes
        /// `secret`, the key schedule's PRK.
        package let secret: SecureBytes
        package let key: SecureBytes
        package let baseNonce: SecureBytes
        package let exporterSecret: SecureBytes

        /// The schedule of `sharedSecret` with `context` (``keyScheduleContext(mode:info:)``).
        package init(sharedSecret: SecureBytes, context: [UInt8]) {
            self.sharedSecret = sharedSecret
            var key = SecureBytes(count: 0) { _ in }
            var baseNonce = key
            var exporterSecret = key
            secret = SecureBytes(count: HMACSHA256.outputLength) { secretOut in
                key = SecureBytes(count: keyLength) { keyOut in
                    baseNonce = SecureBytes(count: nonceLength) { nonceOut in
                        exporterSecret = SecureBytes(count: HMACSHA256.outputLength) { exporterOut in
                            sharedSecret.withUnsafeBytes { shared in
                                context.withUnsafeBytes { context in
                                    HPKE.keySchedule(
                                        sharedSecret: shared, context: context, key: keyOut, baseNonce: nonceOut,
                                        exporterSecret: exporterOut,
                                        secretOut: secretOut)
                                }
                            }
                        }
                    }
                }
            }
            self.key = key
            self.baseNonce = baseNonce
            self.exporterSecret = exporterSecret
        }

        /// `ContextS.Seal(aad, pt)` at sequence number `sequenceNumber`: ciphertext || tag.
        package func seal(_ message: [UInt8], aad: [UInt8], sequenceNumber: UInt64) -> [UInt8] {
            var sealed = [UInt8](repeating: 0, count: message.count + tagLength)
            withNonce(sequenceNumber) { nonce in
                key.withUnsafeBytes { key in
                    message.withUnsafeBytes { message in
                        aad.withUnsafeBytes { aad in
                            sealed.withUnsafeMutableBytes { out in
                                _ = ChaCha20Poly1305.seal(message, key: key, nonce: nonce, authenticating: aad, into: out)
                            }
                        }
                    }
                }
            }
            return sealed
        }

        /// `ContextR.Open(aad, ct)` at sequence number `sequenceNumber`.
        package func open(_ sealed: [UInt8], aad: [UInt8], sequenceNumber: UInt64) throws(CryptoError) -> [UInt8] {
            guard sealed.count >= tagLength else { throw .authenticationFailure }
            var message = [UInt8](repeating: 0, count: sealed.count - tagLength)
            try withNonce(sequenceNumber) { (nonce) throws(CryptoError) in
                try key.withUnsafeBytes { (key) throws(CryptoError) in
                    try sealed.withBytes { (sealed) throws(CryptoError) in
                        try aad.withBytes { (aad) throws(CryptoError) in
                            try message.withMutableBytes { (out) throws(CryptoError) in
                                _ = try ChaCha20Poly1305.open(sealed, key: key, nonce: nonce, authenticating: aad, into: out)
                            }
                        }
                    }
                }
            }
            return message
        }

        private func withNonce<E: Error>(_ sequenceNumber: UInt64, _ body: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
            var nonce = [UInt8](repeating: 0, count: nonceLength)
            defer { nonce.withUnsafeMutableBytes { SecureBytes.wipeScratch($0) } }
            nonce.withUnsafeMutableBytes { out in
                baseNonce.withUnsafeBytes { HPKE.nonce(base: $0, sequenceNumber: sequenceNumber, into: out) }
            }
            try nonce.withBytes { (nonce) throws(E) in try body(nonce) }
        }
    }

    /// `SetupBaseS` / `SetupAuthS` (section 5.1.1, 5.1.3) with a given ephemeral secret key (the
    /// seam that fixes it, for the RFC's vectors): `enc` and the sender's context.
    package static func setupSender(
        recipient pkR: [UInt8], info: [UInt8], ephemeralSecretKey skE: SecureBytes, senderSecretKey skS: SecureBytes? = nil
    ) throws(CryptoError) -> (encapsulatedKey: [UInt8], context: Context) {
        let enc = try X25519.publicKey(for: skE)
        let dhE = try pkR.withBytes { (pk) throws(CryptoError) in try X25519.sharedSecret(secretKey: skE, publicKey: pk) }
        var pkS: [UInt8]?
        var dhS: SecureBytes?
        if let skS {
            pkS = try X25519.publicKey(for: skS)
            dhS = try pkR.withBytes { (pk) throws(CryptoError) in try X25519.sharedSecret(secretKey: skS, publicKey: pk) }
        }
        let shared = sharedSecret(dhE: dhE, sender: pkS.map { ($0, dhS!) }, enc: enc, pkR: pkR)
        return (enc, Context(sharedSecret: shared, context: contextOf(pkS, info: info)))
    }

    /// `SetupBaseR` / `SetupAuthR`: the recipient's context for `enc`.
    package static func setupRecipient(
        encapsulatedKey enc: [UInt8], recipientSecretKey skR: SecureBytes, info: [UInt8], senderPublicKey pkS: [UInt8]? = nil
    ) throws(CryptoError) -> Context {
        let pkR = try X25519.publicKey(for: skR)
        let dhE = try enc.withBytes { (pk) throws(CryptoError) in try X25519.sharedSecret(secretKey: skR, publicKey: pk) }
        var dhS: SecureBytes?
        if let pkS {
            dhS = try pkS.withBytes { (pk) throws(CryptoError) in try X25519.sharedSecret(secretKey: skR, publicKey: pk) }
        }
        let shared = sharedSecret(dhE: dhE, sender: pkS.map { ($0, dhS!) }, enc: enc, pkR: pkR)
        return Context(sharedSecret: shared, context: contextOf(pkS, info: info))
    }

    private static func contextOf(_ pkS: [UInt8]?, info: [UInt8]) -> [UInt8] {
        info.withUnsafeBytes { keyScheduleContext(mode: pkS == nil ? .base : .auth, info: $0) }
    }

    private static func sharedSecret(dhE: SecureBytes, sender: ([UInt8], SecureBytes)?, enc: [UInt8], pkR: [UInt8]) -> SecureBytes {
        SecureBytes(count: sharedSecretLength) { out in
            dhE.withUnsafeBytes { dhE in
                enc.withUnsafeBytes { enc in
                    pkR.withUnsafeBytes { pkR in
                        guard let (pkS, dhS) = sender else {
                            extractAndExpand(ephemeral: dhE, sender: nil, encapsulatedKey: enc, recipient: pkR, into: out)
                            return
                        }
                        pkS.withUnsafeBytes { pkS in
                            dhS.withUnsafeBytes { dhS in
                                extractAndExpand(ephemeral: dhE, sender: (pkS, dhS), encapsulatedKey: enc, recipient: pkR, into: out)
                            }
                        }
                    }
                }
            }
        }
    }
}

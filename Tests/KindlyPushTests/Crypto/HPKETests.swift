import KindlyPush
import KindlyPushCore
import Testing

/// RFC 9180's own test vectors for DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20Poly1305
/// (appendix A.2.1 mode_base, A.2.3 mode_auth; TestVectors/hpke/) through the HPKE layer, with
/// the ephemeral key fixed through the `package` seam: every listed value is reproduced.
@Suite("HPKE (RFC 9180 vectors)", .offThePool)
struct HPKETests {
    struct Encryption: Sendable {
        let sequenceNumber: UInt64
        let plaintext, aad, nonce, ciphertext: [UInt8]
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let mode: Int
        let info, skEm, pkEm, skRm, pkRm, enc, sharedSecret, context, secret, key, baseNonce, exporterSecret: [UInt8]
        let skSm, pkSm: [UInt8]?
        let encryptions: [Encryption]
        var testDescription: String { "mode \(mode)" }
    }

    static let cases: [Case] = {
        guard let file = try? Resources.json("hpke/rfc9180-x25519-sha256-chachapoly.json") else { return [] }
        return file.arrayValue.map { entry in
            func hex(_ name: String) -> [UInt8] { bytes(hex: entry[name]!.stringValue!) }
            return Case(
                mode: Int(entry["mode"]!.numberValue!.literal)!, info: hex("info"), skEm: hex("skEm"), pkEm: hex("pkEm"), skRm: hex("skRm"),
                pkRm: hex("pkRm"), enc: hex("enc"), sharedSecret: hex("shared_secret"), context: hex("key_schedule_context"),
                secret: hex("secret"), key: hex("key"), baseNonce: hex("base_nonce"), exporterSecret: hex("exporter_secret"),
                skSm: entry["skSm"].map { _ in hex("skSm") }, pkSm: entry["pkSm"].map { _ in hex("pkSm") },
                encryptions: entry["encryptions"]!.arrayValue.map { item in
                    func hex(_ name: String) -> [UInt8] { bytes(hex: item[name]!.stringValue!) }
                    return Encryption(
                        sequenceNumber: UInt64(item["sequence number"]!.numberValue!.literal)!, plaintext: hex("pt"), aad: hex("aad"),
                        nonce: hex("nonce"), ciphertext: hex("ct"))
                })
        }
    }()

    static func secure(_ bytes: [UInt8]) -> SecureBytes { bytes.withUnsafeBytes { SecureBytes(copying: $0) } }
    static func array(_ secret: SecureBytes) -> [UInt8] { secret.withUnsafeBytes { Array($0) } }

    @Test("the RFC file holds mode_base and mode_auth, each with six encryptions")
    func fileIsComplete() {
        #expect(Self.cases.map(\.mode) == [0, 2])
        #expect(Self.cases.allSatisfy { $0.encryptions.map(\.sequenceNumber) == [0, 1, 2, 4, 255, 256] })
        #expect(Self.cases[1].skSm != nil && Self.cases[1].pkSm != nil)
    }

    @Test("the sender's setup gives the RFC's enc, shared secret, key schedule and every encryption", arguments: cases)
    func sender(_ test: Case) throws {
        #expect(try X25519.publicKey(for: Self.secure(test.skRm)) == test.pkRm)
        let (enc, context) = try HPKE.setupSender(
            recipient: test.pkRm, info: test.info, ephemeralSecretKey: Self.secure(test.skEm), senderSecretKey: test.skSm.map(Self.secure))
        #expect(enc == test.enc && enc == test.pkEm)
        let mode: HPKE.Mode = test.mode == 0 ? .base : .auth
        #expect(test.info.withUnsafeBytes { HPKE.keyScheduleContext(mode: mode, info: $0) } == test.context)
        #expect(Self.array(context.sharedSecret) == test.sharedSecret)
        #expect(Self.array(context.secret) == test.secret)
        #expect(Self.array(context.key) == test.key)
        #expect(Self.array(context.baseNonce) == test.baseNonce)
        #expect(Self.array(context.exporterSecret) == test.exporterSecret)
        for encryption in test.encryptions {
            var nonce = [UInt8](repeating: 0, count: HPKE.nonceLength)
            nonce.withUnsafeMutableBytes { out in
                test.baseNonce.withUnsafeBytes { HPKE.nonce(base: $0, sequenceNumber: encryption.sequenceNumber, into: out) }
            }
            #expect(nonce == encryption.nonce, "nonce of sequence number \(encryption.sequenceNumber)")
            #expect(
                context.seal(encryption.plaintext, aad: encryption.aad, sequenceNumber: encryption.sequenceNumber) == encryption.ciphertext,
                "ct of sequence number \(encryption.sequenceNumber)")
        }
    }

    @Test("the recipient's setup gives the same schedule and opens every encryption, and no other", arguments: cases)
    func recipient(_ test: Case) throws {
        let context = try HPKE.setupRecipient(
            encapsulatedKey: test.enc, recipientSecretKey: Self.secure(test.skRm), info: test.info, senderPublicKey: test.pkSm)
        #expect(Self.array(context.sharedSecret) == test.sharedSecret)
        #expect(Self.array(context.key) == test.key)
        #expect(Self.array(context.baseNonce) == test.baseNonce)
        for encryption in test.encryptions {
            #expect(
                try context.open(encryption.ciphertext, aad: encryption.aad, sequenceNumber: encryption.sequenceNumber)
                    == encryption.plaintext)
            #expect(throws: CryptoError.authenticationFailure) {
                try context.open(encryption.ciphertext, aad: encryption.aad, sequenceNumber: encryption.sequenceNumber + 1)
            }
        }
    }

    @Test("the single-shot seal and open (what pushes use) give the RFC's sequence-number-0 ciphertext", arguments: cases)
    func singleShot(_ test: Case) throws {
        let first = try #require(test.encryptions.first { $0.sequenceNumber == 0 })
        let mode: HPKE.Mode = test.mode == 0 ? .base : .auth
        let context = test.info.withUnsafeBytes { HPKE.keyScheduleContext(mode: mode, info: $0) }
        // DH(skS, pkR) for the sender, DH(skR, pkS) for the recipient: the same value, kept per sender.
        let senderSecret = try test.skSm.map { skS in
            try test.pkRm.withUnsafeBytes { try X25519.sharedSecret(secretKey: Self.secure(skS), publicKey: $0) }
        }
        var enc = [UInt8](repeating: 0, count: HPKE.encapsulatedKeyLength)
        var sealed = [UInt8](repeating: 0, count: first.plaintext.count + HPKE.tagLength)
        let skE = Self.secure(test.skEm)
        let written = try withSender(test.pkSm, senderSecret) { sender in
            try first.plaintext.withUnsafeBytes { message in
                try first.aad.withUnsafeBytes { aad in
                    try context.withUnsafeBytes { context in
                        try test.pkRm.withUnsafeBytes { pkR in
                            try skE.withUnsafeBytes { skE in
                                try enc.withUnsafeMutableBytes { enc in
                                    try sealed.withUnsafeMutableBytes { out in
                                        try HPKE.seal(
                                            message, aad: aad, context: context, recipient: pkR, ephemeralSecretKey: skE, sender: sender,
                                            encapsulatedKey: enc, into: out)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(written == first.ciphertext.count && sealed == first.ciphertext && enc == test.enc)
        var opened = [UInt8](repeating: 0, count: sealed.count)
        let skR = Self.secure(test.skRm)
        let length = try withSender(test.pkSm, senderSecret) { sender in
            try sealed.withUnsafeBytes { sealed in
                try first.aad.withUnsafeBytes { aad in
                    try context.withUnsafeBytes { context in
                        try test.enc.withUnsafeBytes { enc in
                            try test.pkRm.withUnsafeBytes { pkR in
                                try skR.withUnsafeBytes { skR in
                                    try opened.withUnsafeMutableBytes { out in
                                        try HPKE.open(
                                            sealed, aad: aad, context: context, encapsulatedKey: enc, recipientSecretKey: skR,
                                            recipient: pkR,
                                            sender: sender, into: out)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(Array(opened[0..<length]) == first.plaintext)
    }

    @Test("an enc of a low-order point (all-zero DH) is refused as an authentication failure")
    func lowOrderEncapsulatedKey() throws {
        let test = try #require(Self.cases.first)
        let context = test.info.withUnsafeBytes { HPKE.keyScheduleContext(mode: .base, info: $0) }
        let lowOrder = [UInt8](repeating: 0, count: 32)
        let sealed = test.encryptions[0].ciphertext
        var out = [UInt8](repeating: 0, count: sealed.count)
        let skR = Self.secure(test.skRm)
        #expect(throws: CryptoError.authenticationFailure) {
            try sealed.withUnsafeBytes { sealed in
                try context.withUnsafeBytes { context in
                    try lowOrder.withUnsafeBytes { enc in
                        try test.pkRm.withUnsafeBytes { pkR in
                            try skR.withUnsafeBytes { skR in
                                try out.withUnsafeMutableBytes { out in
                                    try HPKE.open(
                                        sealed, aad: UnsafeRawBufferPointer(start: nil, count: 0), context: context, encapsulatedKey: enc,
                                        recipientSecretKey: skR, recipient: pkR, sender: nil, into: out)
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    private func withSender<R>(
        _ pkS: [UInt8]?, _ secret: SecureBytes?,
        _ body: ((publicKey: UnsafeRawBufferPointer, sharedSecret: UnsafeRawBufferPointer)?) throws -> R
    ) throws -> R {
        guard let pkS, let secret else { return try body(nil) }
        return try pkS.withUnsafeBytes { pkS in try secret.withUnsafeBytes { try body((pkS, $0)) } }
    }
}

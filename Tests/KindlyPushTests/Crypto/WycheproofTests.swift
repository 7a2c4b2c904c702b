import KindlyPush
import KindlyPushCore
import Testing

/// Project Wycheproof's X25519 and XChaCha20-Poly1305 vectors (TestVectors/wycheproof/) run
/// against the crypto layer.
@Suite("Wycheproof", .offThePool)
struct WycheproofTests {
    struct X25519Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let comment: String
        let result: String
        let privateKey: [UInt8]
        let publicKey: [UInt8]
        let shared: [UInt8]
        var testDescription: String { "tcId \(id) (\(result)): \(comment)" }
    }

    struct AEADCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let comment: String
        let result: String
        let key, nonce, aad, message, ciphertext, tag: [UInt8]
        var testDescription: String { "tcId \(id) (\(result)): \(comment)" }
    }

    static let x25519Cases: [X25519Case] = {
        guard let file = try? Resources.json("wycheproof/x25519_test.json") else { return [] }
        return file["testGroups"]!.arrayValue.flatMap { group in
            group["tests"]!.arrayValue.map { test in
                X25519Case(
                    id: Int(test["tcId"]!.numberValue!.literal)!, comment: test["comment"]!.stringValue!,
                    result: test["result"]!.stringValue!, privateKey: bytes(hex: test["private"]!.stringValue!),
                    publicKey: bytes(hex: test["public"]!.stringValue!), shared: bytes(hex: test["shared"]!.stringValue!))
            }
        }
    }()

    static let aeadCases = cases(inFile: "wycheproof/xchacha20_poly1305_test.json")

    /// The cases of a Wycheproof AEAD file (AeadTest schema).
    static func cases(inFile name: String) -> [AEADCase] {
        guard let file = try? Resources.json(name) else { return [] }
        return file["testGroups"]!.arrayValue.flatMap { group in
            group["tests"]!.arrayValue.map { test in
                AEADCase(
                    id: Int(test["tcId"]!.numberValue!.literal)!, comment: test["comment"]!.stringValue!,
                    result: test["result"]!.stringValue!, key: bytes(hex: test["key"]!.stringValue!),
                    nonce: bytes(hex: test["iv"]!.stringValue!), aad: bytes(hex: test["aad"]!.stringValue!),
                    message: bytes(hex: test["msg"]!.stringValue!), ciphertext: bytes(hex: test["ct"]!.stringValue!),
                    tag: bytes(hex: test["tag"]!.stringValue!))
            }
        }
    }

    static let ietfCases = cases(inFile: "wycheproof/chacha20_poly1305_test.json")

    @Test("the Wycheproof files are there and complete")
    func filesAreComplete() {
        #expect(Self.x25519Cases.count == 518)
        #expect(Self.aeadCases.count == 315)
        #expect(Self.ietfCases.count == 325)
        #expect(Self.x25519Cases.contains { $0.shared.allSatisfy { $0 == 0 } })
    }

    @Test("X25519 gives Wycheproof's shared secret, and refuses an all-zero one", arguments: x25519Cases)
    func x25519(_ test: X25519Case) throws {
        let secret = test.privateKey.withUnsafeBytes { SecureBytes(copying: $0) }
        let outcome = test.publicKey.withUnsafeBytes { publicKey in
            Result { () throws(CryptoError) in try X25519.sharedSecret(secretKey: secret, publicKey: publicKey) }
        }
        if test.shared.allSatisfy({ $0 == 0 }) {
            #expect(throws: CryptoError.allZeroSharedSecret) { try outcome.get() }
        } else {
            #expect(test.result == "valid" || test.result == "acceptable")
            let shared = try outcome.get()
            shared.withUnsafeBytes { #expect(Array($0) == test.shared) }
        }
    }

    @Test("XChaCha20-Poly1305 seals and opens valid cases and rejects invalid ones", arguments: aeadCases)
    func xchacha(_ test: AEADCase) throws {
        let key = test.key.withUnsafeBytes { SecureBytes(copying: $0) }
        let sealed = test.ciphertext + test.tag
        let opened = sealed.withUnsafeBytes { box in
            test.nonce.withUnsafeBytes { nonce in
                test.aad.withUnsafeBytes { aad in
                    Result { () throws(CryptoError) in try XChaCha20Poly1305.open(box, key: key, nonce: nonce, authenticating: aad) }
                }
            }
        }
        switch test.result {
        case "valid":
            #expect(try opened.get() == test.message)
            let resealed = try test.message.withUnsafeBytes { message in
                try test.nonce.withUnsafeBytes { nonce in
                    try test.aad.withUnsafeBytes { aad in
                        try XChaCha20Poly1305.seal(message, key: key, nonce: nonce, authenticating: aad)
                    }
                }
            }
            #expect(resealed == sealed)
        default:
            #expect(throws: CryptoError.self) { try opened.get() }
        }
    }

    @Test("ChaCha20-Poly1305 (IETF, HPKE's AEAD) seals and opens valid cases and rejects invalid ones", arguments: ietfCases)
    func chacha(_ test: AEADCase) throws {
        // The wrapper takes 12-byte nonces only (a precondition): other sizes are invalid cases.
        guard test.nonce.count == ChaCha20Poly1305.nonceLength, test.key.count == ChaCha20Poly1305.keyLength else {
            #expect(test.result == "invalid")
            return
        }
        let sealed = test.ciphertext + test.tag
        var out = [UInt8](repeating: 0, count: sealed.count)
        let opened = sealed.withUnsafeBytes { box in
            test.key.withUnsafeBytes { key in
                test.nonce.withUnsafeBytes { nonce in
                    test.aad.withUnsafeBytes { aad in
                        out.withUnsafeMutableBytes { out in
                            Result { () throws(CryptoError) in
                                try ChaCha20Poly1305.open(box, key: key, nonce: nonce, authenticating: aad, into: out)
                            }
                        }
                    }
                }
            }
        }
        switch test.result {
        case "valid":
            #expect(Array(out[0..<(try opened.get())]) == test.message)
            var resealed = [UInt8](repeating: 0, count: test.message.count + ChaCha20Poly1305.tagLength)
            test.message.withUnsafeBytes { message in
                test.key.withUnsafeBytes { key in
                    test.nonce.withUnsafeBytes { nonce in
                        test.aad.withUnsafeBytes { aad in
                            resealed.withUnsafeMutableBytes { out in
                                _ = ChaCha20Poly1305.seal(message, key: key, nonce: nonce, authenticating: aad, into: out)
                            }
                        }
                    }
                }
            }
            #expect(resealed == sealed)
        default:
            #expect(throws: CryptoError.self) { try opened.get() }
        }
    }
}

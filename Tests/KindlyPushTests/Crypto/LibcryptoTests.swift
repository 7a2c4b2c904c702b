import KindlyPushCore
import KindlyPushLibcrypto
import Testing

/// The primitives that come from libcrypto: P-256 keys, ECDH and ES256, AES-128-GCM.
@Suite("libcrypto's primitives: P-256 and AES-128-GCM", .offThePool)
struct LibcryptoTests {
    @Test("a P-256 key pair survives its scalar, and ECDH gives both sides one secret")
    func keysAndECDH() throws {
        let alice = try P256.PrivateKey.generate()
        let bob = try P256.PrivateKey.generate()
        #expect(alice.publicKey.count == 65 && alice.publicKey[0] == 0x04)
        let again = try P256.PrivateKey(scalar: alice.scalar())
        #expect(again.publicKey == alice.publicKey)
        let one = try alice.sharedSecret(with: bob.publicKey.withUnsafeBytes { try P256.PublicKey(uncompressed: $0) })
        let two = try bob.sharedSecret(with: alice.publicKey.withUnsafeBytes { try P256.PublicKey(uncompressed: $0) })
        #expect(one == two && one.count == 32)
    }

    @Test("a scalar of 0, of the group order or of the wrong length is refused, as a point off the curve")
    func badKeys() {
        let order: [UInt8] = try! Base64.decode("_____wAAAAD__________7zm-q2nF56E87nKwvxjJVE")
        for scalar in [[UInt8](repeating: 0, count: 32), order, [UInt8](repeating: 1, count: 31)] {
            #expect(throws: LibcryptoError.self) { try P256.PrivateKey(scalar: scalar.withUnsafeBytes { SecureBytes(copying: $0) }) }
        }
        var point = [UInt8](repeating: 0, count: 65)
        point[0] = 0x04
        point[64] = 1
        #expect(throws: LibcryptoError.self) { try point.withUnsafeBytes { try P256.PublicKey(uncompressed: $0) } }
    }

    @Test("AES-128-GCM opens what it sealed, and nothing with one bit changed")
    func aesGCM() throws {
        let key = [UInt8](repeating: 7, count: 16)
        let nonce = [UInt8](repeating: 9, count: 12)
        for length in [0, 1, 15, 16, 17, 4000] {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 31) }
            let sealed = try key.withUnsafeBytes { k in
                try nonce.withUnsafeBytes { n in try plaintext.withUnsafeBytes { try AES128GCM.seal(key: k, nonce: n, plaintext: $0) } }
            }
            #expect(sealed.count == length + 16)
            func open(_ bytes: [UInt8]) throws -> [UInt8]? {
                try key.withUnsafeBytes { k in
                    try nonce.withUnsafeBytes { n in try bytes.withUnsafeBytes { try AES128GCM.open(key: k, nonce: n, sealed: $0) } }
                }.map { $0.withUnsafeBytes { Array($0) } }
            }
            #expect(try open(sealed) == plaintext)
            var changed = sealed
            changed[changed.count / 2] ^= 1
            #expect(try open(changed) == nil)
        }
    }

    @Test("an ES256 signature is 64 bytes, r || s, and verifies with the public key only for its message")
    func es256() throws {
        let key = try P256.PrivateKey.generate()
        let message = Array("header.claims".utf8)
        let signature = try message.withUnsafeBytes { try key.signES256($0) }
        #expect(signature.count == 64)
        let publicKey = try key.publicKey.withUnsafeBytes { try P256.PublicKey(uncompressed: $0) }
        #expect(message.withUnsafeBytes { publicKey.verifyES256(signature: signature, message: $0) })
        #expect(!Array("header.claimz".utf8).withUnsafeBytes { publicKey.verifyES256(signature: signature, message: $0) })
    }
}

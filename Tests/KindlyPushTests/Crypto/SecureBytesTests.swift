import KindlyPushTesting
import KindlyPushVectors
import Testing

@testable import KindlyPush
@testable import KindlyPushCore

/// Collects what the wipe hook sees, from any thread.
final class WipeRecorder: Sendable {
    let buffers = Locked<[[UInt8]]>([])

    func record(_ buffer: UnsafeRawBufferPointer) {
        let copy = Array(buffer)
        buffers.withLock { $0.append(copy) }
    }

    /// Installs the hook for the duration of `body`, for this thread's wipes only.
    func observing(_ body: () throws -> Void) rethrows {
        try SecureBytes.withWipeObserver({ [self] in record($0) }, body)
    }
}

@Suite("Secret buffers", .offThePool)
struct SecureBytesTests {
    @Test("a secret buffer is wiped before its memory is freed")
    func wipesOnRelease() {
        let recorder = WipeRecorder()
        recorder.observing {
            let secret = SecureBytes(count: 37) { $0.initializeMemory(as: UInt8.self, repeating: 0xA5) }
            secret.withUnsafeBytes { #expect($0.allSatisfy { $0 == 0xA5 }) }
        }
        let mine = recorder.buffers.withLock { $0 }.filter { $0.count >= 37 }
        #expect(!mine.isEmpty)
        #expect(mine.allSatisfy { $0.allSatisfy { $0 == 0 } })
    }

    @Test("derived keys and shared secrets are wiped after decryption")
    func decryptionWipesIntermediates() throws {
        let key = DeviceKey.generate()
        let sealed = try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c", title: "t", body: "b"), for: key.publicKey)
        let document = try JSONReader.parse(sealed)
        let recorder = WipeRecorder()
        try recorder.observing {
            _ = try KindlyPushDecryption.decryptResult(userInfo: document, using: key).get()
        }
        let wiped = recorder.buffers.withLock { $0 }
        // The stack buffer of the shared secret and the derived key (64 bytes), and the BLAKE2b
        // state that hashed the secret, at least.
        #expect(wiped.count >= 2)
        #expect(wiped.contains { $0.count == 64 })
        #expect(wiped.allSatisfy { $0.allSatisfy { $0 == 0 } })
    }

    @Test("the fast path wipes the same intermediates")
    func fastPathWipesIntermediates() throws {
        let key = DeviceKey.generate()
        let sealed = try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c", title: "t", body: "b"), for: key.publicKey)
        var decryptor = PushDecryptor(KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])))
        var output: [UInt8] = []
        let recorder = WipeRecorder()
        recorder.observing {
            #expect(sealed.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) } == .decrypted)
        }
        let wiped = recorder.buffers.withLock { $0 }
        #expect(wiped.count >= 2)
        #expect(wiped.contains { $0.count == 64 })
        #expect(wiped.allSatisfy { $0.allSatisfy { $0 == 0 } })
    }

    @Test("secrets never show in descriptions")
    func descriptionsAreRedacted() {
        let key = DeviceKey.generate()
        let secretHex = key.secretKey.withUnsafeBytes { $0.map { String($0, radix: 16) }.joined() }
        let secretBase64 = key.secretKey.withUnsafeBytes { Base64.urlEncoded($0) }
        for text in [
            "\(key)", String(reflecting: key), "\(key.secretKey)", String(reflecting: key.secretKey), "\(key.secretKey.storage)",
        ] {
            #expect(!text.contains(secretBase64))
            #expect(!text.contains(secretHex))
        }
    }

    @Test("equal secrets compare equal, in constant time")
    func comparesInConstantTime() {
        let a = SecureBytes(count: 4) { $0.copyBytes(from: [1, 2, 3, 4]) }
        let b = SecureBytes(count: 4) { $0.copyBytes(from: [1, 2, 3, 4]) }
        let c = SecureBytes(count: 4) { $0.copyBytes(from: [1, 2, 3, 5]) }
        #expect(a == b)
        #expect(a != c)
    }
}

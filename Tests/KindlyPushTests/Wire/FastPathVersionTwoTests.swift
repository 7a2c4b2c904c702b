import Foundation
import KindlyPushTesting
import Testing

@testable import KindlyPush
@testable import KindlyPushCore

extension FastPathTests {
    @Test("version 2 and pinned mode: whatever the fast path decides on mutated pushes, the general path decides the same")
    func versionTwoMutations() throws {
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()
        let other = SenderKey.generate()
        let readers = [
            KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key], pinnedSenders: [sender.publicKey])),
            KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]), pinnedSenderKeys: [other.publicKey, sender.publicKey]),
            KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])),
        ]
        var decryptors = readers.map(PushDecryptor.init)
        var generator = SeededGenerator(seed: 23)
        var pushes: [[UInt8]] = []
        for (index, text) in ["Anna", "", "a \"q\" \\ b\nc", "Привет 🍜"].enumerated() {
            let payload = try DecryptedPayload(
                chatId: "c-\(index)", title: text, body: text, messageId: index % 2 == 0 ? "m" : nil,
                extras: index == 3 ? ["truncated": true] : [:])
            pushes.append(try KindlyPushSealer.seal(payload, for: key.publicKey, from: sender))
            pushes.append(try KindlyPushSealer.seal(payload, for: key.publicKey, from: other))
            pushes.append(try KindlyPushSealer.seal(payload, for: key.publicKey))
        }
        // Every reader decides every well-formed push, as the general path does.
        for push in pushes {
            for index in decryptors.indices { Self.check(push, &decryptors[index]) }
        }
        let insertions: [[UInt8]] = [
            Array("\"v\":2,".utf8), Array("\"v\":1,".utf8), Array("\"sid\":\"AAAAAAAAAAA\",".utf8), Array("\"sid\":1,".utf8),
            Array("\"sid\":\"\\u0041\",".utf8), Array("2".utf8), Array("1".utf8), Array("true".utf8), [0x22], [0x2C], [0x7D], [0x80],
        ]
        for _ in 0..<15000 {
            var bytes = pushes.randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 1...2, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(contentsOf: insertions.randomElement(using: &generator)!, at: position)
                default: bytes[position] = bytes[Int.random(in: 0..<bytes.count, using: &generator)]
                }
            }
            let index = Int.random(in: 0..<decryptors.count, using: &generator)
            Self.check(bytes, &decryptors[index])
        }
    }
}

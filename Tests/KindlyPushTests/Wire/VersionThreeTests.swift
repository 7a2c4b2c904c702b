import Foundation
import KindlyPushTesting
import Testing

@testable import KindlyPush
@testable import KindlyPushBase
@testable import KindlyPushCore

/// Wire format version 3 (section 8) through the library: sealing in both modes, one reader for
/// three versions, the pinned-mode rules, the fast paths, the size arithmetic and the kept secrets.
@Suite("Wire format version 3 (HPKE)", .offThePool)
struct VersionThreeTests {
    static let payload = try! DecryptedPayload(chatId: "c-1", title: "Anna", body: "Hi!")

    @Test("seal(wire: .three) writes kid, enc, ct (and sid in mode_auth), and one reader opens v1, v2 and v3")
    func sealAndReadAllVersions() throws {
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()
        let base = try JSONReader.parse(KindlyPushSealer.seal(Self.payload, for: key.publicKey, wire: .three))
        let auth = try JSONReader.parse(KindlyPushSealer.seal(Self.payload, for: key.publicKey, wire: .three, from: sender))
        #expect(base["kindly"]?.objectValue?.keys == ["v", "kid", "enc", "ct"])
        #expect(auth["kindly"]?.objectValue?.keys == ["v", "kid", "sid", "enc", "ct"])
        #expect(base["kindly"]?["v"] == 3 && auth["kindly"]?["v"] == 3)
        #expect(auth["kindly"]?["sid"] == .string(sender.publicKey.sid.base64URL))
        let v1 = try JSONReader.parse(KindlyPushSealer.seal(Self.payload, for: key.publicKey))
        let v2 = try JSONReader.parse(KindlyPushSealer.seal(Self.payload, for: key.publicKey, from: sender))
        let unpinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        let pinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key], pinnedSenders: [sender.publicKey]))
        #expect(try unpinned.decryptResult(userInfo: v1).get() == Self.payload)
        #expect(try unpinned.decryptResult(userInfo: base).get() == Self.payload)
        #expect(try pinned.decryptResult(userInfo: v2).get() == Self.payload)
        #expect(try pinned.decryptResult(userInfo: auth).get() == Self.payload)
        // Pinned mode: only version 2 and version 3 mode_auth from a pinned sender.
        for push in [v1, base] { #expect(Self.reason(pinned, push) == .untrustedSender) }
        for push in [v2, auth] { #expect(Self.reason(unpinned, push) == .untrustedSender) }
        let stranger = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key], pinnedSenders: [SenderKey.generate().publicKey]))
        #expect(Self.reason(stranger, auth) == .untrustedSender)
        // A stripped sid: untrusted in pinned mode, a failing tag outside it.
        var stripped = auth.objectValue!
        var envelope = stripped["kindly"]!.objectValue!
        envelope["sid"] = nil
        stripped["kindly"] = .object(envelope)
        #expect(Self.reason(pinned, .object(stripped)) == .untrustedSender)
        #expect(Self.reason(unpinned, .object(stripped)) == .authenticationFailed)
    }

    @Test("a version the caller names must fit the sender key: 1 has none, 2 needs one")
    func versionAndSenderMustAgree() throws {
        let key = DeviceKey.generate()
        #expect(throws: KindlyPushSealer.SealingError.self) {
            try KindlyPushSealer.seal(Self.payload, for: key.publicKey, wire: .one, from: SenderKey.generate())
        }
        #expect(throws: KindlyPushSealer.SealingError.self) { try KindlyPushSealer.seal(Self.payload, for: key.publicKey, wire: .two) }
        let v1 = try JSONReader.parse(KindlyPushSealer.seal(Self.payload, for: key.publicKey, wire: .one))
        #expect(v1["kindly"]?["v"] == 1)
        let v2 = try JSONReader.parse(KindlyPushSealer.seal(Self.payload, for: key.publicKey, wire: .two, from: SenderKey.generate()))
        #expect(v2["kindly"]?["v"] == 2)
        #expect(throws: KindlyPushSealer.SealingError.unusableRecipientKey) {
            try KindlyPushSealer.seal(Self.payload, for: DevicePublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32)), wire: .three)
        }
    }

    @Test("mode_auth keeps DH(sk, spk) in the sender secret cache: one X25519 per push, as version 2")
    func authUsesTheCache() throws {
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()
        let push = try JSONReader.parse(KindlyPushSealer.seal(Self.payload, for: key.publicKey, wire: .three, from: sender))
        #expect(!SenderSecretCache.shared.contains(kid: key.kid, sid: sender.publicKey.sid))
        let reader = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]), pinnedSenderKeys: [sender.publicKey])
        #expect(try reader.decryptResult(userInfo: push).get() == Self.payload)
        #expect(SenderSecretCache.shared.contains(kid: key.kid, sid: sender.publicKey.sid))
        SenderSecretCache.shared.evict(sid: sender.publicKey.sid)
    }

    @Test("HPKE's constant key-schedule contexts are computed once, and are RFC 9180's mode || psk_id_hash || info_hash")
    func constantContexts() {
        #expect(HPKEBox.baseContext.count == 65 && HPKEBox.baseContext[0] == 0x00)
        #expect(HPKEBox.authContext.count == 65 && HPKEBox.authContext[0] == 0x02)
        #expect(HPKEBox.baseContext[1...] == HPKEBox.authContext[1...])
    }

    @Test("every secret intermediate of an HPKE open is wiped: the scratch buffers are zero after")
    func intermediatesAreWiped() throws {
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()
        let push = try JSONReader.parse(KindlyPushSealer.seal(Self.payload, for: key.publicKey, wire: .three, from: sender))
        let reader = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]), pinnedSenderKeys: [sender.publicKey])
        _ = reader.decryptResult(userInfo: push)  // the cache holds the sender's secret now
        let wiped = Locked<[[UInt8]]>([])
        let record: @Sendable (UnsafeRawBufferPointer) -> Void = { buffer in wiped.withLock { $0.append(Array(buffer)) } }
        let result = SecureBytes.withWipeObserver(record) { reader.decryptResult(userInfo: push) }
        #expect(try result.get() == Self.payload)
        let buffers = wiped.withLock { $0 }
        // dh | shared_secret | key | base_nonce, eae_prk, secret, and every HMAC state.
        #expect(buffers.contains { $0.count == 32 + 32 + 32 + 12 })
        #expect(buffers.count >= 8)
        #expect(buffers.allSatisfy { $0.allSatisfy { $0 == 0 } })
    }

    @Test("the fast paths read and write version 3: PushDecryptor decides it, PushSealer seals it")
    func fastPaths() throws {
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()
        let pinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key], pinnedSenders: [sender.publicKey]))
        let unpinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        let text = JSONWriter.compactBytes(.object(Self.payload.object))
        for binding in [nil, try KindlyPushSealer.binding(of: sender, for: key.publicKey)] {
            var sealer = PushSealer(recipient: key.publicKey, sender: binding, version: .three)
            var push: [UInt8] = []
            #expect(text.withUnsafeBytes { sealer.seal(plaintext: $0, appendingTo: &push) } == .sealed)
            let document = try JSONReader.parse(push)
            #expect(document["kindly"]?["v"] == 3)
            #expect(
                document["kindly"]?.objectValue?.keys == (binding == nil ? ["v", "kid", "enc", "ct"] : ["v", "kid", "sid", "enc", "ct"]))
            var decryptor = PushDecryptor(binding == nil ? unpinned : pinned)
            var output: [UInt8] = []
            #expect(push.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) } == .decrypted)
            #expect(output == text)
            var other = PushDecryptor(binding == nil ? pinned : unpinned)
            output = []
            guard case .failed(let failure) = push.withUnsafeBytes({ other.decrypt($0, appendingTo: &output) }) else {
                Issue.record("the other reader did not refuse the push")
                continue
            }
            #expect(failure.reason == .untrustedSender)
        }
    }

    @Test("version 3 and pinned mode: whatever the fast path decides on mutated pushes, the general path decides the same")
    func mutations() throws {
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()
        let readers = [
            KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key], pinnedSenders: [sender.publicKey])),
            KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])),
        ]
        var decryptors = readers.map(PushDecryptor.init)
        var generator = SeededGenerator(seed: 31)
        var pushes: [[UInt8]] = []
        for (index, text) in ["Anna", "", "a \"q\" \\ b\nc", "Привет 🍜"].enumerated() {
            let payload = try DecryptedPayload(chatId: "c-\(index)", title: text, body: text)
            pushes.append(try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .three, from: sender))
            pushes.append(try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .three))
            pushes.append(try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .two, from: sender))
        }
        for push in pushes {
            for index in decryptors.indices { FastPathTests.check(push, &decryptors[index]) }
        }
        let insertions: [[UInt8]] = [
            Array("\"v\":3,".utf8), Array("\"v\":2,".utf8), Array("\"v\":1,".utf8), Array("\"sid\":\"AAAAAAAAAAA\",".utf8),
            Array("\"sid\":null,".utf8), Array("\"enc\":\"AAAA\",".utf8), Array("\"epk\":1,".utf8), Array("\"n\":\"\",".utf8),
            Array("3".utf8), [0x22], [0x2C], [0x7D],
        ]
        for _ in 0..<10000 {
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
            FastPathTests.check(bytes, &decryptors[index])
        }
    }

    @Test("--fit arithmetic for version 3 (enc, no n): the cut push fits 4096 bytes and one more block would not")
    func fitting() throws {
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()
        let body = String(repeating: "é👍🏽 ", count: 2_000)
        let payload = try DecryptedPayload(chatId: "c", title: "t", body: body)
        for from in [nil, sender] {
            let push = try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .three, from: from, oversize: .truncateBody)
            #expect(push.count <= WireFormat.maximumPayloadSize)
            #expect(push.count > WireFormat.maximumPayloadSize - 4 * 64 / 3 - 4)  // within one padded block of the limit
            let reader = KindlyPushDecryption(
                keyring: InMemoryKeyring(keys: [key]), pinnedSenderKeys: from.map { [$0.publicKey] } ?? [])
            let opened = try reader.decryptResult(userInfo: JSONReader.parse(push)).get()
            #expect(opened.object["truncated"] == true)
            let template = MessageFitting.templateLength(
                for: key.publicKey, sender: from?.publicKey.sid, version: .three, mode: .visible, placeholder: .default)
            let budget = MessageFitting.plaintextBudget(templateLength: template, version: .three)
            #expect(MessageFitting.documentLength(templateLength: template, plaintextLength: budget, version: .three) <= 4096)
            #expect(MessageFitting.documentLength(templateLength: template, plaintextLength: budget + 1, version: .three) > 4096)
        }
    }

    static func reason(_ reader: KindlyPushDecryption, _ push: JSONValue) -> DecryptionFailure.Reason? {
        guard case .failure(let failure) = reader.decryptResult(userInfo: push) else { return nil }
        return failure.reason
    }
}

import Foundation
import KindlyPushTesting
import Testing

@testable import KindlyPush
@testable import KindlyPushCore

/// Wire format version 2 (section 7) through the library: sealing with a sender key, reading both
/// versions in and out of pinned mode, the cached second shared secret, routing in pinned mode.
@Suite("Version 2: sender keys and pinning", .offThePool)
struct VersionTwoTests {
    let device = DeviceKey.generate()
    let sender = SenderKey.generate()
    static let payload = try! DecryptedPayload(chatId: "c-2", title: "Bank", body: "Your code is 1234", messageId: "m-2")

    func push(from sender: SenderKey? = nil, mode: KindlyPushSealer.Mode = .visible) throws -> JSONValue {
        let bytes =
            if let sender {
                try KindlyPushSealer.seal(Self.payload, for: device.publicKey, from: sender, mode: mode)
            } else {
                try KindlyPushSealer.seal(Self.payload, for: device.publicKey, mode: mode)
            }
        return try JSONReader.parse(bytes)
    }

    static func reason(_ result: Result<DecryptedPayload, DecryptionFailure>) -> DecryptionFailure.Reason? {
        if case .failure(let failure) = result { return failure.reason }
        return nil
    }

    @Test("a version 2 push decrypts exactly for readers that pin its sender; version 1 is refused in pinned mode")
    func pinning() throws {
        let v2 = try push(from: sender)
        let v1 = try push()
        let stranger = SenderKey.generate()
        let unpinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device]))
        let pinnedInKeyring = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device], pinnedSenders: [sender.publicKey]))
        let pinnedHere = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device]), pinnedSenderKeys: [sender.publicKey])
        let pinnedStranger = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device], pinnedSenders: [stranger.publicKey]))

        #expect(try unpinned.decryptResult(userInfo: v1).get() == Self.payload)
        #expect(Self.reason(unpinned.decryptResult(userInfo: v2)) == .untrustedSender)
        for reader in [pinnedInKeyring, pinnedHere] {
            #expect(try reader.decryptResult(userInfo: v2).get() == Self.payload)
            #expect(Self.reason(reader.decryptResult(userInfo: v1)) == .untrustedSender)
            #expect(reader.isInPinnedMode)
        }
        #expect(!unpinned.isInPinnedMode)
        #expect(Self.reason(pinnedStranger.decryptResult(userInfo: v2)) == .untrustedSender)
        #expect(Self.reason(pinnedStranger.decryptResult(userInfo: v1)) == .untrustedSender)
        // The single-key form reads the same way.
        #expect(
            try KindlyPushDecryption.decryptResult(userInfo: v2, using: device, pinnedSenderKeys: [sender.publicKey]).get() == Self.payload)
        #expect(Self.reason(KindlyPushDecryption.decryptResult(userInfo: v2, using: device)) == .untrustedSender)
        #expect(
            Self.reason(KindlyPushDecryption.decryptResult(userInfo: v1, using: device, pinnedSenderKeys: [sender.publicKey]))
                == .untrustedSender)
        // The failure says which rule refused it, never a secret.
        let failure = try #require(unpinned.decryptResult(userInfo: v2).failure)
        #expect(failure.description == "untrusted_sender: no pinned sender key has sid \(sender.sid)")
        let downgrade = try #require(pinnedHere.decryptResult(userInfo: v1).failure)
        #expect(downgrade.description == "untrusted_sender: a version 1 push cannot prove its sender, and sender keys are pinned")
    }

    @Test("the reasons come in the order of section 7.3: key_unavailable before untrusted_sender before authentication_failed")
    func reasonOrder() throws {
        let v2 = try push(from: sender)
        let noKey = KindlyPushDecryption(keyring: InMemoryKeyring(), pinnedSenderKeys: [])
        #expect(Self.reason(noKey.decryptResult(userInfo: v2)) == .keyUnavailable)
        let tampered = TestPushes.editing(v2, "kindly") { envelope in
            var ct = try! Base64.decode(envelope["ct"]!.stringValue!)
            ct[0] ^= 1
            envelope["ct"] = .string(Base64.urlEncoded(ct))
        }
        let unpinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device]))
        #expect(Self.reason(unpinned.decryptResult(userInfo: tampered)) == .untrustedSender)
        let pinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device], pinnedSenders: [sender.publicKey]))
        #expect(Self.reason(pinned.decryptResult(userInfo: tampered)) == .authenticationFailed)
        // A version 2 push relabelled version 1 (its sid ignored) and the reverse do not authenticate.
        let relabelled = TestPushes.editing(v2, "kindly") { $0["v"] = 1 }
        #expect(Self.reason(unpinned.decryptResult(userInfo: relabelled)) == .authenticationFailed)
        let v1 = try push()
        let upgraded = TestPushes.editing(v1, "kindly") { envelope in
            envelope["v"] = 2
            envelope["sid"] = .string(sender.sid.base64URL)
        }
        #expect(Self.reason(pinned.decryptResult(userInfo: upgraded)) == .authenticationFailed)
        // Version 2 without a sid is malformed; version 1 ignores any sid.
        #expect(Self.reason(pinned.decryptResult(userInfo: TestPushes.editing(v2, "kindly") { $0["sid"] = nil })) == .malformed)
        #expect(Self.reason(unpinned.decryptResult(userInfo: TestPushes.editing(v1, "kindly") { $0["sid"] = [1, 2] })) == nil)
    }

    @Test("a version 2 envelope is v 2 with sid after kid; the rest is version 1's")
    func envelopeShape() throws {
        for mode in KindlyPushSealer.Mode.allCases {
            let document = try push(from: sender, mode: mode)
            let envelope = try #require(document["kindly"]?.objectValue)
            #expect(envelope.keys == ["v", "kid", "sid", "epk", "n", "ct"])
            #expect(envelope["v"] == 2)
            #expect(envelope["sid"] == .string(sender.sid.base64URL))
            #expect(envelope["kid"] == .string(device.kid.base64URL))
            #expect(document["aps"] == (try push(mode: mode))["aps"])
        }
        #expect(sender.sid.bytes == sender.publicKey.rawRepresentation.withUnsafeBytes { BLAKE2b.hash($0, outputLength: 8) })
    }

    @Test("sealing version 2 to a low-order device key is refused")
    func lowOrderRecipient() throws {
        for point in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            let recipient = try DevicePublicKey(rawRepresentation: point)
            #expect(throws: KindlyPushSealer.SealingError.unusableRecipientKey) {
                try KindlyPushSealer.seal(Self.payload, for: recipient, from: sender)
            }
        }
    }

    @Test("a low-order pinned key keeps the reader in pinned mode, and a push naming it fails authentication")
    func lowOrderPin() throws {
        let zero = try SenderPublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        let reader = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device], pinnedSenders: [zero]))
        #expect(reader.isInPinnedMode)
        #expect(Self.reason(reader.decryptResult(userInfo: try push())) == .untrustedSender)
        let naming = TestPushes.editing(try push(from: sender), "kindly") { $0["sid"] = .string(zero.sid.base64URL) }
        #expect(Self.reason(reader.decryptResult(userInfo: naming)) == .authenticationFailed)
        // It does not stop another pinned key.
        let both = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device], pinnedSenders: [zero, sender.publicKey]))
        #expect(try both.decryptResult(userInfo: try push(from: sender)).get() == Self.payload)
    }

    @Test("pinned keys are bytes: the same key with its top bit set is another sid")
    func topBit() throws {
        var raw = sender.publicKey.rawRepresentation
        raw[31] ^= 0x80
        let flipped = try SenderPublicKey(rawRepresentation: raw)
        #expect(flipped.sid != sender.sid)
        let reader = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device]), pinnedSenderKeys: [flipped])
        #expect(Self.reason(reader.decryptResult(userInfo: try push(from: sender))) == .untrustedSender)
    }

    @Test("the second shared secret is computed once per device and sender key, kept in wiped memory, and dropped when either is deleted")
    func cachedSecret() throws {
        let keyring = InMemoryKeyring(keys: [device], pinnedSenders: [sender.publicKey])
        let reader = KindlyPushDecryption(keyring: keyring)
        let v2 = try push(from: sender)
        let cache = SenderSecretCache.shared
        #expect(!cache.contains(kid: device.kid, sid: sender.sid))
        #expect(reader.decrypt(userInfo: v2) == Self.payload)
        #expect(cache.contains(kid: device.kid, sid: sender.sid))
        do {
            // The same buffer comes back: no second X25519.
            let first = try cache.binding(device: device, sender: sender.publicKey)
            let second = try cache.binding(device: device, sender: sender.publicKey)
            #expect(first.sharedSecret.storage === second.sharedSecret.storage)
            // It is X25519(sk, spk), and X25519(ssk, pk) on the sender's side.
            let expected = try SenderBinding(sender: sender, recipient: device.publicKey)
            #expect(first.sharedSecret == expected.sharedSecret)
            var decryptor = PushDecryptor(reader)
            var output: [UInt8] = []
            let bytes = JSONWriter.compactBytes(v2)
            #expect(bytes.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) } == .decrypted)
            #expect(try cache.binding(device: device, sender: sender.publicKey).sharedSecret.storage === first.sharedSecret.storage)
        }

        // Unpinning drops it, and its buffer is wiped when the last copy goes.
        let recorder = WipeRecorder()
        try recorder.observing {
            var held: SenderBinding? = try cache.binding(device: device, sender: sender.publicKey)
            try keyring.unpinSender(sender.sid)
            #expect(!cache.contains(kid: device.kid, sid: sender.sid))
            #expect(held != nil)
            held = nil
        }
        #expect(recorder.buffers.withLock { $0 }.contains { $0.count >= 32 && $0.allSatisfy { $0 == 0 } })
        #expect(Self.reason(reader.decryptResult(userInfo: v2)) == .untrustedSender)

        // Deleting the device key drops it too.
        try keyring.pinSender(sender.publicKey, label: "again")
        #expect(reader.decrypt(userInfo: v2) == Self.payload)
        #expect(cache.contains(kid: device.kid, sid: sender.sid))
        try keyring.delete(device.kid)
        #expect(!cache.contains(kid: device.kid, sid: sender.sid))
        #expect(Self.reason(reader.decryptResult(userInfo: v2)) == .keyUnavailable)
    }

    @Test(
        "a stream's reader reuses the last push's binding only while the keyring trusts its sender, and lets it go on a refusal",
        arguments: [WireVersion.two, .three])
    func streamBinding(_ version: WireVersion) throws {
        let keyring = InMemoryKeyring(keys: [device], pinnedSenders: [sender.publicKey])
        var decryptor = PushDecryptor(KindlyPushDecryption(keyring: keyring))
        // Version 2, or version 3 mode_auth: the same binding (`DH(sk, spk)`).
        let bytes = try KindlyPushSealer.seal(Self.payload, for: device.publicKey, wire: version, from: sender)
        var output: [UInt8] = []
        func decrypt() -> PushDecryptor.Outcome {
            output.removeAll()
            return bytes.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) }
        }
        #expect(decrypt() == .decrypted)
        #expect(decrypt() == .decrypted)
        #expect(output == JSONWriter.compactBytes(.object(Self.payload.object)))
        let recorder = WipeRecorder()
        try recorder.observing {
            try keyring.unpinSender(sender.sid)
            // Refused (reason 5) with the last push's binding at hand; the reader lets its copy
            // go, so that the secret, evicted from the cache, is wiped now and not at the run's end.
            guard case .failed(let failure) = decrypt() else {
                Issue.record("a push from an unpinned sender decrypted")
                return
            }
            #expect(failure.reason == .untrustedSender)
        }
        #expect(recorder.buffers.withLock { $0 }.contains { $0.count >= 32 && $0.allSatisfy { $0 == 0 } })
        try keyring.pinSender(sender.publicKey, label: "again")
        #expect(decrypt() == .decrypted)
    }

    @Test(
        "a stream's reader keeps the last binding for its device only: one sender's pushes to two of the keyring's devices, alternated, all decrypt",
        arguments: [WireVersion.two, .three])
    func streamBindingPerDevice(_ version: WireVersion) throws {
        let other = DeviceKey.generate()
        let keyring = InMemoryKeyring(keys: [device, other], pinnedSenders: [sender.publicKey])
        var decryptor = PushDecryptor(KindlyPushDecryption(keyring: keyring))
        // The same sender, so the same trusted key: only the device tells the two bindings apart.
        let pushes = try [device, other, other, device].map {
            try KindlyPushSealer.seal(Self.payload, for: $0.publicKey, wire: version, from: sender)
        }
        for bytes in pushes {
            var output: [UInt8] = []
            #expect(bytes.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) } == .decrypted)
            #expect(output == JSONWriter.compactBytes(.object(Self.payload.object)))
        }
    }

    @Test("the file and caching keyrings drop the kept secret on delete and unpin as well")
    func cachedSecretFileKeyring() throws {
        let folder = try TemporaryFolder()
        let file = FileKeyring(folder: folder.path + "/keys")
        try file.store(device, label: "d")
        try file.pinSender(sender.publicKey, label: "s")
        let v2 = try push(from: sender)
        for keyring in [file, CachingKeyring(file)] as [any Keyring] {
            #expect(KindlyPushDecryption(keyring: keyring).decrypt(userInfo: v2) == Self.payload)
            #expect(SenderSecretCache.shared.contains(kid: device.kid, sid: sender.sid))
            try keyring.unpinSender(sender.sid)
            #expect(!SenderSecretCache.shared.contains(kid: device.kid, sid: sender.sid))
            try keyring.pinSender(sender.publicKey, label: "s")
            #expect(KindlyPushDecryption(keyring: keyring).decrypt(userInfo: v2) == Self.payload)
            try keyring.delete(device.kid)
            #expect(!SenderSecretCache.shared.contains(kid: device.kid, sid: sender.sid))
            try keyring.store(device, label: "d")
        }
    }

    @Test("a keyring whose pins cannot be read trusts nothing")
    func unreadablePins() throws {
        let keyring = ControllableKeyring(keys: [device])
        let v1 = try push()
        let reader = KindlyPushDecryption(keyring: CachingKeyring(keyring))
        _ = try reader.keyring.key(for: device.kid)
        keyring.failure = .io("broken")
        // The device key is cached, the pins are not: a version 1 push is refused, not read as outside pinned mode.
        #expect(try reader.keyring.key(for: device.kid).kid == device.kid)
        #expect(Self.reason(reader.decryptResult(userInfo: v1)) == .untrustedSender)
        #expect(reader.isInPinnedMode)
    }

    @Test("the fast sealer writes what the general sealer writes for version 2, for the same ephemeral key and nonce")
    func fastSealing() throws {
        let binding = try KindlyPushSealer.binding(of: sender, for: device.publicKey)
        for mode in KindlyPushSealer.Mode.allCases {
            var sealer = PushSealer(recipient: device.publicKey, sender: binding, mode: mode)
            for body in ["", "Hi", String(repeating: "é", count: 500), String(repeating: "x", count: 2900)] {
                let text = JSONWriter.compactBytes(.object(try DecryptedPayload(chatId: "c", title: "t", body: body).object))
                let ephemeral = SecureBytes.random(count: 32)
                let nonce = Sodium.randomBytes(count: 24)
                var output: [UInt8] = []
                let outcome = text.withUnsafeBytes {
                    sealer.seal(plaintext: $0, ephemeralSecretKey: ephemeral, nonce: nonce, appendingTo: &output)
                }
                let envelope = try KindlyPushSealer.sealMessage(
                    text, for: device.publicKey, sender: binding, ephemeralSecretKey: ephemeral, nonce: nonce)
                let document = JSONWriter.compactBytes(KindlyPushSealer.apnsDocument(envelope, mode: mode))
                if document.count <= WireFormat.maximumPayloadSize {
                    #expect(outcome == .sealed)
                    #expect(output == document)
                    let reader = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device]), pinnedSenderKeys: [sender.publicKey])
                    #expect(try reader.decryptResult(userInfo: try JSONReader.parse(output)).get().body == body)
                } else {
                    #expect(outcome == .failed(.payloadTooLarge(size: document.count)))
                    #expect(output.isEmpty)
                }
            }
        }
    }

    @Test("in pinned mode the decrypted mark proves nothing: a marked push that does not decrypt is routed as its reason says")
    func routingInPinnedMode() throws {
        let forged = TestPushes.editing(
            TestPushes.editing(try push(), "kindly") { envelope in
                envelope["decrypted"] = true
                envelope["chat_id"] = "attacker"
            }, "aps"
        ) { $0["alert"] = ["title": "Your bank", "body": "Log in at evil.example"] }
        let context = RouteContext(appState: .foreground, hasExtension: true)
        let unpinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device]))
        let trusted = KindlyPushRouter.route(userInfo: forged, context: context, decryption: unpinned)
        #expect(trusted.presentation == .banner)
        #expect(trusted.chatId == "attacker")

        let pinned = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [device], pinnedSenders: [sender.publicKey]))
        let refused = KindlyPushRouter.route(userInfo: forged, context: context, decryption: pinned)
        #expect(
            refused.json.compactText
                == #"{"kindly":true,"kind":"visible","presentation":"placeholder","presenter":"system","delegate_consulted":false,"reason":"untrusted_sender"}"#
        )
        // A version 2 push from the pinned sender, marked by the extension, decrypts again and shows.
        let applied = KindlyPushDecryption.apply(Self.payload, toUserInfo: try push(from: sender))
        let shown = KindlyPushRouter.route(userInfo: applied, context: context, decryption: pinned)
        #expect(shown.presentation == .banner)
        #expect(shown.chatId == "c-2")
        #expect(shown.reason == nil)
        // The resolution decrypted it now rather than reading the mark.
        #expect(KindlyPushRouter.resolve(userInfo: applied, decryption: pinned) == .decrypted(Self.payload))
        #expect(KindlyPushRouter.resolve(userInfo: applied, decryption: unpinned) != .decrypted(Self.payload))
    }
}

extension Result {
    /// The failure, when there is one.
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}

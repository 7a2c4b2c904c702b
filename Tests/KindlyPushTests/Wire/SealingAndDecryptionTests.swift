import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

@Suite("Sealing and decryption", .offThePool)
struct SealingAndDecryptionTests {
    let key = DeviceKey.generate()

    func sealed(_ payload: DecryptedPayload, mode: KindlyPushSealer.Mode = .visible) throws -> JSONValue {
        try JSONReader.parse(try KindlyPushSealer.seal(payload, for: key.publicKey, mode: mode))
    }

    @Test("a sealed push decrypts to its payload through a keyring, in both modes", arguments: KindlyPushSealer.Mode.allCases)
    func roundTrip(_ mode: KindlyPushSealer.Mode) throws {
        let payload = try DecryptedPayload(
            chatId: "c-1", title: "Anna 👋", body: "Hi! / \"quoted\"", messageId: "m-9", sentAt: 1_700_000_000,
            extras: ["thread": ["depth": 2, "tags": ["a", nil]]])
        let push = try sealed(payload, mode: mode)
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        let decrypted = try #require(decryption.decrypt(userInfo: push))
        #expect(decrypted == payload)
        #expect(decrypted.extras["thread"]?["depth"] == 2)
        #expect(KindlyPushDecryption.isKindlyNotification(push))
        #expect(!KindlyPushDecryption.isDecrypted(userInfo: push))
        switch mode {
        case .visible:
            #expect(
                push["aps"] == [
                    "alert": ["title": "New message", "body": "Open the app to read it"], "mutable-content": 1, "sound": "default",
                ])
        case .silent:
            #expect(push["aps"] == ["content-available": 1])
        }
    }

    @Test("the sealed payload is compact, unescaped, and its envelope fields have the wire lengths")
    func payloadShape() throws {
        let bytes = try KindlyPushSealer.seal(
            try DecryptedPayload(chatId: "c", title: "t", body: "b"), for: key.publicKey, placeholder: .init(title: "é/", body: "x"))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("\": ") && !text.contains(", ") && !text.contains("\n") && text.contains("é/"))
        let envelope = try #require(try JSONReader.parse(bytes)["kindly"]?.objectValue)
        #expect(envelope.keys == ["v", "kid", "epk", "n", "ct"])
        #expect(try Base64.decode(envelope["kid"]!.stringValue!) == key.kid.bytes)
        #expect(try Base64.decode(envelope["epk"]!.stringValue!).count == 32)
        #expect(try Base64.decode(envelope["n"]!.stringValue!).count == 24)
        #expect(try Base64.decode(envelope["ct"]!.stringValue!).count == 64 + 16)
    }

    @Test("two seals of the same message differ (fresh ephemeral key and nonce)")
    func sealsAreRandomised() throws {
        let payload = try DecryptedPayload(chatId: "c", title: "t", body: "b")
        #expect(try KindlyPushSealer.seal(payload, for: key.publicKey) != KindlyPushSealer.seal(payload, for: key.publicKey))
    }

    @Test("sealing refuses a payload over 4096 bytes and accepts one just under")
    func sizeLimit() throws {
        // The largest body that fits, found by halving: 2,000 bytes fit, 4,096 cannot (and
        // sealing either fits or refuses, whatever the length between).
        func fits(_ length: Int) -> Bool {
            (try? KindlyPushSealer.seal(
                try DecryptedPayload(chatId: "c", title: "t", body: String(repeating: "x", count: length)), for: key.publicKey)) != nil
        }
        var length = 2_000
        var tooLong = 4_096
        #expect(fits(length) && !fits(tooLong))
        while tooLong - length > 1 {
            let middle = (length + tooLong) / 2
            if fits(middle) { length = middle } else { tooLong = middle }
        }
        #expect(!fits(length + 1))
        let fitting = try KindlyPushSealer.seal(
            try DecryptedPayload(chatId: "c", title: "t", body: String(repeating: "x", count: length)), for: key.publicKey)
        #expect(fitting.count <= 4096 && fitting.count > 4096 - 100)
        #expect(throws: KindlyPushSealer.SealingError.self) {
            try KindlyPushSealer.seal(
                try DecryptedPayload(chatId: "c", title: "t", body: String(repeating: "x", count: length + 64)), for: key.publicKey)
        }
    }

    @Test("sealing refuses a low-order device key instead of sealing with an all-zero secret")
    func lowOrderRecipient() throws {
        let lowOrder = try DevicePublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        #expect(throws: KindlyPushSealer.SealingError.unusableRecipientKey) {
            try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c", title: "t", body: "b"), for: lowOrder)
        }
    }

    @Test(
        "plaintexts that break section 4 are refused when sealing",
        arguments: [
            #"{"title":"t","body":"b"}"#, #"{"chat_id":"","title":"t","body":"b"}"#, #"{"chat_id":1,"title":"t","body":"b"}"#,
            #"{"chat_id":"c","title":null,"body":"b"}"#, #"{"chat_id":"c","title":"t"}"#,
            #"{"chat_id":"c","title":"t","body":"b","sent_at":1.5}"#,
            #"{"chat_id":"c","title":"t","body":"b","sent_at":-1}"#, #"{"chat_id":"c","title":"t","body":"b","sent_at":9007199254740992}"#,
            #"{"chat_id":"c","title":"t","body":"b","message_id":7}"#, #"{"chat_id":"c","title":"t","body":"b","x":{"a":1,"a":2}}"#,
            #"["chat_id"]"#,
        ])
    func invalidPlaintexts(_ text: String) throws {
        let plaintext = try JSONValue(parsing: text)
        #expect(throws: KindlyPushSealer.SealingError.self) { try KindlyPushSealer.seal(plaintext: plaintext, for: key.publicKey) }
    }

    @Test("a locked keyring gives key_unavailable, and the same push decrypts once it is unlocked")
    func lockedKeyring() throws {
        let keyring = InMemoryKeyring(keys: [key])
        let push = try sealed(try DecryptedPayload(chatId: "c", title: "t", body: "b"))
        keyring.isLocked = true
        let decryption = KindlyPushDecryption(keyring: keyring)
        #expect(throws: DecryptionFailure.self) { try decryption.decryptResult(userInfo: push).get() }
        #expect(decryption.decryptResult(userInfo: push).failureReason == .keyUnavailable)
        keyring.isLocked = false
        #expect(decryption.decrypt(userInfo: push) != nil)
    }

    @Test("with several keys each push finds its own (rotation), until its key is deleted")
    func rotation() throws {
        let newer = DeviceKey.generate()
        let keyring = InMemoryKeyring(keys: [key, newer])
        let old = try sealed(try DecryptedPayload(chatId: "old", title: "t", body: "b"))
        let new = try JSONReader.parse(
            try KindlyPushSealer.seal(try DecryptedPayload(chatId: "new", title: "t", body: "b"), for: newer.publicKey))
        let decryption = KindlyPushDecryption(keyring: keyring)
        #expect(decryption.decrypt(userInfo: old)?.chatId == "old")
        #expect(decryption.decrypt(userInfo: new)?.chatId == "new")
        try keyring.delete(key.kid)
        #expect(decryption.decryptResult(userInfo: old).failureReason == .keyUnavailable)
        #expect(decryption.decrypt(userInfo: new)?.chatId == "new")
    }

    @Test("apply rewrites the alert, marks the push decrypted and keeps everything else")
    func apply() throws {
        let payload = try DecryptedPayload(chatId: "c-7", title: "Anna", body: "Hi", messageId: "m-1")
        var push = try sealed(payload).objectValue!
        push["other"] = ["keep": true]
        push["aps"] = ["alert": "a string alert", "badge": 3]
        let applied = KindlyPushDecryption.apply(payload, toUserInfo: .object(push))
        #expect(applied["aps"] == ["alert": ["title": "Anna", "body": "Hi"], "badge": 3])
        #expect(applied["other"] == ["keep": true])
        let envelope = try #require(applied["kindly"]?.objectValue)
        #expect(envelope["decrypted"] == true)
        #expect(envelope["chat_id"] == "c-7")
        #expect(envelope["message_id"] == "m-1")
        #expect(envelope["ct"] == push["kindly"]?["ct"])
        #expect(KindlyPushDecryption.isDecrypted(userInfo: applied))

        var content = NotificationContent(userInfo: .object(push))
        #expect(content.body == "a string alert")
        #expect(content.badge == JSONNumber(3))
        KindlyPushDecryption.apply(payload, to: &content)
        #expect(content.title == "Anna" && content.body == "Hi")
        #expect(KindlyPushDecryption.isDecrypted(userInfo: .object(content.userInfo)))
    }

    @Test(
        "apply creates a missing aps, and replaces an aps that is not an object",
        arguments: [nil, JSONValue.string("x"), JSONValue.array([])])
    func applyCreatesAps(_ aps: JSONValue?) throws {
        let payload = try DecryptedPayload(chatId: "c", title: "T", body: "B")
        var push: JSONObject = ["kindly": ["v": 1]]
        if let aps { push["aps"] = aps }
        #expect(KindlyPushDecryption.apply(payload, toUserInfo: .object(push))["aps"] == ["alert": ["title": "T", "body": "B"]])
    }

    @Test(
        "isDecrypted is true exactly for true or the number 1",
        arguments: [
            ("true", true), ("1", true), ("1.0", true), ("\"true\"", false), ("0", false), ("false", false), ("null", false), ("2", false),
        ])
    func isDecrypted(_ value: String, _ expected: Bool) throws {
        let push = try JSONValue(parsing: #"{"kindly":{"decrypted":\#(value)}}"#)
        #expect(KindlyPushDecryption.isDecrypted(userInfo: push) == expected)
    }

    @Test(
        "isKindlyNotification is true exactly when a top-level kindly is an object",
        arguments: [
            (#"{"kindly":{}}"#, true), (#"{"kindly":[]}"#, false), (#"{"kindly":null}"#, false), (#"{"kindly":"x"}"#, false),
            (#"{"aps":{"kindly":{}}}"#, false), (#"{"kindly":1,"kindly":{}}"#, true), (#"{}"#, false),
        ])
    func isKindly(_ text: String, _ expected: Bool) throws {
        #expect(KindlyPushDecryption.isKindlyNotification(try JSONValue(parsing: text)) == expected)
    }

    @Test("the userInfo dictionary overloads match the JSON ones")
    func foundationParity() throws {
        let payload = try DecryptedPayload(chatId: "c", title: "t", body: "b", sentAt: 5)
        let push = try sealed(payload)
        let userInfo = try #require(push.foundationValue as? [AnyHashable: Any])
        #expect(KindlyPushDecryption.isKindlyNotification(userInfo))
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        #expect(decryption.decrypt(userInfo: userInfo) == payload)
        let applied = KindlyPushDecryption.apply(payload, toUserInfo: userInfo)
        #expect(KindlyPushDecryption.isDecrypted(userInfo: applied))
    }

    @Test("a caching keyring loads each kid once per run, not once per push, and asks again once a failure is old")
    func keysLoadedOncePerKid() throws {
        let other = DeviceKey.generate()
        let base = InMemoryKeyring(keys: [key, other])
        let clock = ManualClock()
        let decryption = KindlyPushDecryption(
            keyring: CachingKeyring(base, failureLifetime: .seconds(3), retryInterval: .seconds(3), clock: clock))
        let pushes = try (0..<50).map { index in
            try JSONReader.parse(
                try KindlyPushSealer.seal(
                    try DecryptedPayload(chatId: "c", title: "t", body: "b"), for: index % 2 == 0 ? key.publicKey : other.publicKey))
        }
        for push in pushes { #expect(decryption.decrypt(userInfo: push) != nil) }
        #expect(base.lookupCount == 2)
        let unknown = try JSONReader.parse(
            try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c", title: "t", body: "b"), for: DeviceKey.generate().publicKey))
        _ = decryption.decrypt(userInfo: unknown)
        _ = decryption.decrypt(userInfo: unknown)
        #expect(base.lookupCount == 3)
        clock.advance(by: .seconds(3))
        _ = decryption.decrypt(userInfo: unknown)
        #expect(base.lookupCount == 4)
    }

    @Test("decrypting from many threads at once with one shared keyring is safe and correct")
    func concurrentDecryption() async throws {
        let keyring = CachingKeyring(InMemoryKeyring(keys: [key]))
        let decryption = KindlyPushDecryption(keyring: keyring)
        let pushes = try (0..<64).map { try sealed(try DecryptedPayload(chatId: "c\($0)", title: "t", body: "b")) }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for (index, push) in pushes.enumerated() {
                group.addTask { decryption.decrypt(userInfo: push)?.chatId == "c\(index)" }
            }
            for try await ok in group { #expect(ok) }
        }
    }
}

extension SealingAndDecryptionTests {
    @Test("every authentication failure looks the same: a low-order key, a bad tag, a wrong nonce")
    func authenticationFailuresAreIndistinguishable() throws {
        let push = try sealed(try DecryptedPayload(chatId: "c", title: "t", body: "b")).objectValue!
        func variant(_ field: String, _ bytes: [UInt8]) -> JSONValue {
            var document = push
            var envelope = document["kindly"]!.objectValue!
            envelope[field] = .string(Base64.urlEncoded(bytes))
            document["kindly"] = .object(envelope)
            return .object(document)
        }
        var ct = try Base64.decode(push["kindly"]!.objectValue!["ct"]!.stringValue!)
        ct[ct.count - 1] ^= 1
        let failures = [
            variant("epk", [UInt8](repeating: 0, count: 32)), variant("epk", [1] + [UInt8](repeating: 0, count: 31)), variant("ct", ct),
            variant("n", [UInt8](repeating: 9, count: 24)),
        ].map { KindlyPushDecryption.decryptResult(userInfo: $0, using: key) }
        let first = try #require(failures.first)
        #expect(first.failureReason == .authenticationFailed)
        for failure in failures {
            guard case .failure(let a) = failure, case .failure(let b) = first else {
                Issue.record("decrypted")
                continue
            }
            #expect(a == b)
        }
    }

    @Test("eight threads decrypting at once through one shared file keyring all get their own payloads")
    func eightThreadsShareOneKeyring() throws {
        let folder = NSTemporaryDirectory() + "kindly-threads-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let keys = (0..<4).map { _ in DeviceKey.generate() }
        let fileKeyring = FileKeyring(folder: folder)
        for key in keys { try fileKeyring.store(key, label: "k") }
        let decryption = KindlyPushDecryption(keyring: CachingKeyring(fileKeyring))
        let pushes = try (0..<64).map { index in
            try JSONReader.parse(
                try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c\(index)", title: "t", body: "b"), for: keys[index % 4].publicKey))
        }
        let failures = Locked(0)
        let done = DispatchGroup()
        for worker in 0..<8 {
            done.enter()
            // Real threads, not tasks: the eight run at once whatever the test pool's width.
            Thread.detachNewThread {
                for round in 0..<16 {
                    let index = (worker * 16 + round) % pushes.count
                    if decryption.decrypt(userInfo: pushes[index])?.chatId != "c\(index)" { failures.withLock { $0 += 1 } }
                }
                done.leave()
            }
        }
        done.wait()
        #expect(failures.withLock { $0 } == 0)
    }
}

extension Result where Failure == DecryptionFailure {
    var failureReason: DecryptionFailure.Reason? {
        if case .failure(let failure) = self { return failure.reason }
        return nil
    }
}

import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

/// A service that records what `customize` was given, and marks the content it customized.
final class RecordingService: KindlyNotificationService {
    let customized = Recorder<DecryptedPayload?>()

    override func customize(_ content: inout NotificationContent, payload: DecryptedPayload?) {
        customized.record(payload)
        content.threadIdentifier = payload?.chatId ?? "undecrypted"
    }
}

/// A service in the iOS SDK's shape: `customize` on the reference content, and a
/// stored property it updates (no word added).
final class ReferenceCustomizingService: KindlyNotificationServiceExtension {
    var customizedCount = 0
    let seen = Recorder<String>()

    override func customize(_ content: MutableNotificationContent, payload: DecryptedPayload?) {
        customizedCount += 1
        seen.record("reference: \(content.title)")
        content.categoryIdentifier = "kindly-message"
        if let payload { content.threadIdentifier = payload.chatId }
    }

    override func customize(_ content: inout NotificationContent, payload: DecryptedPayload?) {
        seen.record("value: \(content.categoryIdentifier)")
    }
}

@Suite("The notification service extension", .offThePool)
struct KindlyNotificationServiceTests {
    static let key = DeviceKey.generate()

    static func content(_ kind: PushKind = .visible) throws -> NotificationContent {
        NotificationContent(userInfo: try TestPushes.sealed(kind, for: key))
    }

    @Test("A push that decrypts is delivered once, decrypted, marked decrypted and customized with its payload")
    func decrypts() async throws {
        let keyring = InMemoryKeyring(keys: [Self.key])
        let service = RecordingService(
            decryption: KindlyPushDecryption(keyring: keyring), deadline: .seconds(1), logger: .disabled)
        let original = try Self.content()
        let delivered = Recorder<NotificationContent>()
        service.didReceive(original) { delivered.record($0) }
        await delivered.wait()
        // Past the deadline too (a second is ample to decrypt, even on a loaded machine): the
        // deadline must not deliver a second time.
        try await Task.sleep(for: .milliseconds(1300))
        #expect(delivered.all.count == 1)
        let content = try #require(delivered.all.first)
        #expect(content.title == "Anna")
        #expect(content.body == "Hi!")
        #expect(content.threadIdentifier == "c-1")
        #expect(KindlyPushDecryption.isDecrypted(userInfo: .object(content.userInfo)))
        #expect(content.userInfo["kindly"]?.objectValue?["chat_id"] == "c-1")
        #expect(service.customized.all == [TestPushes.payload])
        #expect(keyring.lookupCount == 1)
    }

    @Test("A push that does not decrypt is delivered once with the placeholder; customize gets no payload")
    func fails() async throws {
        let logs = LogRecorder()
        let service = RecordingService(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring()), deadline: .seconds(1), logger: logs.logger)
        let original = try Self.content()
        let delivered = Recorder<NotificationContent>()
        service.didReceive(original) { delivered.record($0) }
        await delivered.wait()
        try await Task.sleep(for: .milliseconds(1300))
        #expect(delivered.all.count == 1)
        var expected = original
        expected.threadIdentifier = "undecrypted"
        #expect(delivered.all.first == expected)
        #expect(delivered.all.first?.title == "New message")
        #expect(service.customized.all == [nil])
        #expect(logs.messages.contains { $0.contains("key_unavailable") })
    }

    @Test("The base service delivers the placeholder exactly as it came when decryption fails")
    func baseServiceLeavesPlaceholderUnchanged() async throws {
        let service = KindlyNotificationService(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring()), deadline: .seconds(5), logger: .disabled)
        let original = try Self.content()
        let delivered = Recorder<NotificationContent>()
        service.didReceive(original) { delivered.record($0) }
        await delivered.wait()
        #expect(delivered.all == [original])
    }

    @Test("A keyring that blocks past the deadline: the placeholder is delivered once at the deadline, and the late result is discarded")
    func keyringBlocksPastDeadline() async throws {
        let keyring = ControllableKeyring.blocking(keys: [Self.key])
        let logs = LogRecorder()
        let service = RecordingService(
            decryption: KindlyPushDecryption(keyring: keyring), deadline: .milliseconds(200), logger: logs.logger)
        let original = try Self.content()
        let delivered = Recorder<NotificationContent>()
        let start = ContinuousClock.now
        service.didReceive(original) { delivered.record($0) }
        await delivered.wait()
        let elapsed = try #require(delivered.firstArrival) - start
        #expect(delivered.all == [original])
        #expect(elapsed >= .milliseconds(200))
        #expect(elapsed < hangCap)
        #expect(keyring.lookupsStarted == 1)
        // The blocked look-up now returns a key that would decrypt: it must not deliver again.
        keyring.release()
        try await Task.sleep(for: .milliseconds(300))
        #expect(delivered.all == [original])
        #expect(service.customized.all.isEmpty)
        #expect(logs.messages.contains { $0.contains("discarded") })
    }

    @Test("A deadline of zero hands over the placeholder at once")
    func zeroDeadline() async throws {
        let keyring = ControllableKeyring.blocking(keys: [Self.key])
        let service = KindlyNotificationService(decryption: KindlyPushDecryption(keyring: keyring), deadline: .zero, logger: .disabled)
        let original = try Self.content()
        let delivered = Recorder<NotificationContent>()
        service.didReceive(original) { delivered.record($0) }
        await delivered.wait(timeout: hangCap)
        #expect(delivered.all == [original])
        keyring.release()
    }

    @Test("serviceExtensionTimeWillExpire delivers the content unchanged, once, even when called twice and when decryption ends later")
    func expiry() async throws {
        let keyring = ControllableKeyring.blocking(keys: [Self.key])
        let service = RecordingService(decryption: KindlyPushDecryption(keyring: keyring), deadline: .seconds(30), logger: .disabled)
        let original = try Self.content()
        let delivered = Recorder<NotificationContent>()
        service.didReceive(original) { delivered.record($0) }
        // Wait until decryption is under way and blocked.
        while keyring.lookupsStarted == 0 { try await Task.sleep(for: .milliseconds(5)) }
        service.serviceExtensionTimeWillExpire()
        service.serviceExtensionTimeWillExpire()
        #expect(delivered.all == [original])
        keyring.release()
        try await Task.sleep(for: .milliseconds(300))
        #expect(delivered.all == [original])
        #expect(service.customized.all.isEmpty)
    }

    @Test("serviceExtensionTimeWillExpire after delivery does nothing")
    func expiryAfterDelivery() async throws {
        let service = KindlyNotificationService(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])), deadline: .seconds(30), logger: .disabled)
        let delivered = Recorder<NotificationContent>()
        service.didReceive(try Self.content()) { delivered.record($0) }
        await delivered.wait()
        service.serviceExtensionTimeWillExpire()
        #expect(delivered.all.count == 1)
        #expect(delivered.all.first?.body == "Hi!")
    }

    @Test("A push that is not Kindly's, or one already marked decrypted, is handed back unchanged at once, with no key look-up")
    func notForDecryption() throws {
        let keyring = InMemoryKeyring(keys: [Self.key])
        let service = RecordingService(decryption: KindlyPushDecryption(keyring: keyring), logger: .disabled)
        let applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: try TestPushes.sealed(.visible, for: Self.key))
        for userInfo in [TestPushes.foreign(.visible), applied] {
            let content = NotificationContent(userInfo: userInfo)
            let delivered = Recorder<NotificationContent>()
            service.didReceive(content) { delivered.record($0) }
            #expect(delivered.all == [content])
        }
        #expect(keyring.lookupCount == 0)
        #expect(service.customized.all.isEmpty)
    }

    @Test("Many pushes at once are each delivered exactly once")
    func concurrentPushes() async throws {
        let service = KindlyNotificationService(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])), deadline: .seconds(10), logger: .disabled)
        let delivered = Recorder<NotificationContent>()
        for _ in 0..<20 {
            service.didReceive(try Self.content()) { delivered.record($0) }
        }
        await delivered.wait(forCount: 20)
        try await Task.sleep(for: .milliseconds(100))
        #expect(delivered.all.count == 20)
        #expect(delivered.all.allSatisfy { $0.body == "Hi!" })
    }

    @Test("customize in the iOS SDK's form changes the content in place, before the inout form, one push at a time")
    func referenceCustomize() async throws {
        let service = ReferenceCustomizingService(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])), deadline: .seconds(10), logger: .disabled)
        let delivered = Recorder<NotificationContent>()
        for _ in 0..<20 {
            service.didReceive(try Self.content()) { delivered.record($0) }
        }
        await delivered.wait(forCount: 20)
        #expect(delivered.all.count == 20)
        #expect(delivered.all.allSatisfy { $0.threadIdentifier == "c-1" && $0.categoryIdentifier == "kindly-message" })
        #expect(service.customizedCount == 20)
        #expect(service.seen.all.prefix(2) == ["reference: Anna", "value: kindly-message"])
    }

    @Test("apply(_:to:) rewrites a MutableNotificationContent in place, as on iOS")
    func applyToReference() throws {
        let original = try Self.content()
        let content = MutableNotificationContent(original)
        let payload = try #require(KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])).decrypt(userInfo: content.userInfo))
        KindlyPushDecryption.apply(payload, to: content)
        #expect(content.title == "Anna")
        #expect(content.body == "Hi!")
        #expect(KindlyPushDecryption.isDecrypted(userInfo: content.userInfo))
        #expect((content.userInfo["kindly"] as? [AnyHashable: Any])?["chat_id"] as? String == "c-1")
        var value = original
        KindlyPushDecryption.apply(payload, to: &value)
        #expect(content.content == value)
        #expect(original.title != "Anna")  // the value given is copied, not changed
        let rebuilt = NotificationContent(userInfo: content.userInfo)
        #expect(rebuilt.title == "Anna" && rebuilt.body == "Hi!" && rebuilt.sound == value.sound)
    }

    @Test("The default deadline leaves a margin below the system's 30 seconds")
    func defaultDeadline() {
        #expect(KindlyNotificationService.defaultDeadline < .seconds(30))
        #expect(KindlyNotificationService.defaultDeadline >= .seconds(20))
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

/// A delegate written as the iOS documentation shows it.
final class SuppressingDelegate: KindlyNotificationDelegate, Sendable {
    let asked = Locked(0)
    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        asked.withLock { $0 += 1 }
        return false
    }
}

/// The iOS SDK's names and registration lifecycle, and the process-wide defaults (serialized:
/// the tests set the default keyring and the environment).
@Suite("iOS parity", .serialized, .offThePool)
struct IOSParityTests {
    static let key = DeviceKey.generate()

    @Test("a delegate declared shouldHandleNotification(notification:) is asked and suppresses the banner")
    func delegateSuppresses() throws {
        let push = try TestPushes.sealed(.visible, for: Self.key)
        let delegate = SuppressingDelegate()
        let decision = KindlyPushRouter.route(
            userInfo: push, context: RouteContext(appState: .foreground, delegate: delegate),
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])))
        #expect(decision.presentation == .none)
        #expect(decision.delegateConsulted)
        #expect(delegate.asked.withLock { $0 } == 1)
        #expect(
            ClosureNotificationDelegate.allowAll.shouldHandleNotification(
                notification: ExternalNotification(
                    id: "c", title: "t", body: "b", userInfo: push)))
    }

    @Test("registration(forAPNSDeviceToken:) creates a key only when none is stored, then reuses the newest")
    func registrationReusesKey() throws {
        let keyring = InMemoryKeyring()
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: keyring), hasExtension: true, openChat: { _ in })
        let first = try handler.registration(forAPNSDeviceToken: Data([0xAB, 0xCD]))
        #expect(try keyring.list().count == 1)
        #expect(first.token == "abcd")
        #expect(first.pushMode == .alert)  // automatic, with a declared decrypting presenter
        let second = try handler.registration(forAPNSDeviceToken: "00FF")
        #expect(second.publicKey == first.publicKey)
        #expect(second.token == "00ff")
        #expect(try keyring.list().count == 1)
        // The newest stored key wins once there are several.
        let newer = DeviceKey.generate()
        try keyring.store(newer, label: "rotated")
        #expect(try handler.registration(forAPNSDeviceToken: Data([1])).publicKey == newer.publicKey)
        handler.notificationMode = .silent
        #expect(try handler.registration(forAPNSDeviceToken: Data([1])).pushMode == .silent)
    }

    @Test("registration(forAPNSDeviceToken:) with bad text fails before touching the keyring; a locked keyring is typed")
    func registrationErrors() {
        let keyring = ControllableKeyring()
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: keyring), hasExtension: false, openChat: { _ in })
        #expect(throws: RegistrationError.self) { try handler.registration(forAPNSDeviceToken: "xyz") }
        #expect((try? keyring.list())?.isEmpty == true)
        keyring.failure = .locked("test")
        #expect(throws: KeyringError.locked("test")) { try handler.registration(forAPNSDeviceToken: Data([1])) }
    }

    @Test("iOS names: isDecrypted(_:), the nested DecryptedPayload, notificationResponseReceived, the extension class")
    func names() throws {
        let push = try TestPushes.sealed(.visible, for: Self.key)
        let applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: push)
        #expect(KindlyPushDecryption.isDecrypted(applied))
        #expect(!KindlyPushDecryption.isDecrypted(push))
        // A content's userInfo, as iOS code passes `content.userInfo`.
        #expect(KindlyPushDecryption.isDecrypted(try #require(applied.objectValue)))
        #expect(!KindlyPushDecryption.isDecrypted(try #require(push.objectValue)))
        let payload: KindlyPushDecryption.DecryptedPayload = TestPushes.payload
        #expect(payload.chatId == "c-1")
        let opened = Locked<[String]>([])
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])), hasExtension: true,
            openChat: { chat in opened.withLock { $0.append(chat) } })
        handler.start()
        handler.setAppState(.foreground)
        #expect(handler.notificationResponseReceived(push).isConsumed)
        #expect(opened.withLock { $0 } == ["c-1"])
        let service: KindlyNotificationServiceExtension = KindlyNotificationService(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring()))
        #expect(service.deadline == KindlyNotificationService.defaultDeadline)
    }

    @Test("the static decrypt(userInfo:) reads the default file keyring of the environment")
    func staticDecrypt() throws {
        let folder = try TemporaryFolder()
        setenv("KINDLY_PUSH_KEYRING_DIR", folder.path + "/keys", 1)
        defer { unsetenv("KINDLY_PUSH_KEYRING_DIR") }
        try FileKeyring(folder: folder.path + "/keys").store(Self.key, label: "static")
        let push = try TestPushes.sealed(.visible, for: Self.key)
        let userInfo = try #require(try JSONSerialization.jsonObject(with: push.compactData) as? [AnyHashable: Any])
        #expect(KindlyPushDecryption.decrypt(userInfo: userInfo) == TestPushes.payload)
    }

    /// The empty extension of the iOS documentation.
    final class NotificationService: KindlyNotificationServiceExtension {}

    @Test("the process's default keyring serves the static decrypt(userInfo:), standard and the empty extension's init()")
    func defaultKeyring() async throws {
        let key = DeviceKey.generate()
        let push = try TestPushes.sealed(.visible, for: key)
        let userInfo = try #require(try JSONSerialization.jsonObject(with: push.compactData) as? [AnyHashable: Any])
        // The default keyring is the process's: set only inside withDefaultKeyring, one test at a time.
        await withDefaultKeyring(InMemoryKeyring(keys: [key])) {
            #expect(KindlyPushDecryption.decrypt(userInfo: userInfo) == TestPushes.payload)
            #expect(KindlyPushDecryption.standard.decrypt(userInfo: push) == TestPushes.payload)

            let service = NotificationService()
            #expect(service.deadline == KindlyNotificationService.defaultDeadline)
            let delivered = Recorder<NotificationContent>()
            service.didReceive(NotificationContent(userInfo: push)) { delivered.record($0) }
            await delivered.wait()
            #expect(delivered.all.map(\.title) == ["Anna"])

            KindlyPushDecryption.defaultKeyring = nil
            #expect(KindlyPushDecryption.decrypt(userInfo: userInfo) == nil)  // back to the file keyring, which lacks it
        }
    }
}

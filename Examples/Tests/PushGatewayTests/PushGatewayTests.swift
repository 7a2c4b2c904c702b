import Foundation
import KindlyPush
import KindlyPushTesting
import PushGateway
import Testing

/// The gateway, tested as a team that depends on KindlyPush would test it: real sealing and
/// decryption through the public API, the test doubles of KindlyPushTesting for the keyring.
@Suite("A service built on the public API")
struct PushGatewayTests {
    static let key = DeviceKey.generate()

    @Test("a sealed push decrypts into a banner in the foreground")
    func banner() throws {
        let push = try PushGateway.seal(chatId: "c-7", title: "Anna", body: "Lunch?", for: Self.key.publicKey)
        #expect(push.count <= 4096)
        let gateway = PushGateway(keyring: InMemoryKeyring(keys: [Self.key]))
        let outcome = gateway.handle(push)
        #expect(outcome.decision.presentation == .banner)
        #expect(outcome.decision.chatId == "c-7")
        #expect(outcome.decision.body == "Lunch?")
        #expect(outcome.failure == nil)
    }

    @Test("a key file keyring decrypts what was sealed for its key")
    func keyFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("device.json").path
        try KeyFile.write(Self.key, to: path)
        let gateway = try PushGateway(keyFile: path)
        let push = try PushGateway.seal(chatId: "c-1", title: "t", body: "b", for: Self.key.publicKey)
        #expect(gateway.handle(push).decision.presentation == .banner)
    }

    @Test("a locked keyring gives key_unavailable with a typed, retryable cause and a placeholder")
    func lockedKeyring() throws {
        let keyring = ControllableKeyring(keys: [Self.key])
        keyring.failure = .locked("screen locked")
        let push = try PushGateway.seal(chatId: "c-1", title: "t", body: "b", for: Self.key.publicKey)
        let outcome = PushGateway(keyring: keyring).handle(push)
        #expect(outcome.failure?.reason == .keyUnavailable)
        #expect(outcome.failure?.keyringError == .locked("screen locked"))
        #expect(outcome.retryLater)
        #expect(outcome.decision.presentation == .placeholder)
        #expect(outcome.decision.reason == .keyUnavailable)
        // The outcome logs as JSON with the spec's names.
        let logged = String(decoding: try JSONEncoder().encode(outcome), as: UTF8.self)
        #expect(logged.contains("\"key_unavailable\""))
    }

    @Test("rewriting a userInfo dictionary keeps the host's own values")
    func rewrite() throws {
        let push = try PushGateway.seal(chatId: "c-1", title: "Anna", body: "Hi", for: Self.key.publicKey)
        var userInfo = try #require(try JSONSerialization.jsonObject(with: push) as? [AnyHashable: Any])
        let received = Date()
        userInfo["received_at"] = received
        let gateway = PushGateway(keyring: InMemoryKeyring(keys: [Self.key]))
        let rewritten = try #require(gateway.rewrite(userInfo))
        #expect(rewritten["received_at"] as? Date == received)
        #expect(KindlyPushDecryption.isDecrypted(rewritten))
    }

    @Test("a delegate declared as the iOS documentation shows suppresses the banner")
    func delegate() throws {
        final class Quiet: KindlyNotificationDelegate {
            func shouldHandleNotification(notification: ExternalNotification) -> Bool { false }
        }
        let push = try PushGateway.seal(chatId: "c-1", title: "t", body: "b", for: Self.key.publicKey)
        let decision = KindlyPushRouter.route(
            userInfo: push, context: RouteContext(appState: .foreground, delegate: Quiet()),
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])))
        #expect(decision.presentation == .none)
        #expect(decision.delegateConsulted)
    }

    @Test("the notification service extension logs nothing unless the host asks (no standard error)")
    func quietByDefault() async throws {
        let unreadable = NotificationContent(userInfo: ["kindly": ["v": 1]])
        // Default logger: nothing may reach standard error (tools/examples fails this run when a
        // `kindly-push:` line appears). Wait until the service has delivered, so that whatever it
        // would log has been written before the test ends.
        let quiet = LogRecorder()
        KindlyNotificationService(decryption: KindlyPushDecryption(keyring: InMemoryKeyring()))
            .didReceive(unreadable) { _ in quiet.logger.log(.info, "delivered") }
        // An injected logger sees the warning the default kept quiet.
        let recorder = LogRecorder()
        KindlyNotificationService(decryption: KindlyPushDecryption(keyring: InMemoryKeyring()), logger: recorder.logger)
            .didReceive(unreadable) { _ in recorder.logger.log(.info, "delivered") }
        for _ in 0..<500 where quiet.messages.isEmpty || !recorder.messages.contains("delivered") {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(quiet.messages == ["delivered"])
        #expect(recorder.messages.contains { $0.contains("malformed") })
    }

    @Test("registering reuses the stored key")
    func registration() throws {
        let keyring = InMemoryKeyring(keys: [Self.key])
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: keyring), hasExtension: true, openChat: { _ in })
        let registration = try handler.registration(forAPNSDeviceToken: Data([0xCA, 0xFE]))
        #expect(registration.publicKey == Self.key.publicKey)
        #expect(try keyring.list().count == 1)
    }
}

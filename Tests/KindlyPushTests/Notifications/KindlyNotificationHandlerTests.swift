import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

@Suite("The app side: foreground presentation and the silent path", .offThePool)
struct KindlyNotificationHandlerTests {
    static let key = DeviceKey.generate()

    struct Fixture {
        let keyring: InMemoryKeyring
        let posted = Recorder<NotificationContent>()
        let delegate: CountingDelegate
        let handler: KindlyNotificationHandler

        init(keys: [DeviceKey] = [KindlyNotificationHandlerTests.key], hasExtension: Bool = true, allow: Bool = true) {
            keyring = InMemoryKeyring(keys: keys)
            delegate = CountingDelegate(answer: allow)
            let posted = posted
            handler = KindlyNotificationHandler(
                decryption: KindlyPushDecryption(keyring: keyring), hasExtension: hasExtension, logger: .disabled,
                openChat: { _ in }, postBanner: { posted.record($0) })
            handler.delegate = delegate
            handler.setAppState(.foreground)
        }
    }

    @Test("willPresent passes another provider's push through with banner and sound, untouched", arguments: PushKind.allCases)
    func willPresentForeign(kind: PushKind) {
        let fixture = Fixture()
        let result = fixture.handler.notificationWillPresent(NotificationContent(userInfo: TestPushes.foreign(kind)))
        #expect(result.decision == .notKindly(kind: kind))
        #expect(result.options == .bannerAndSound)
        #expect(result.postedBanner == nil)
        #expect(fixture.posted.all.isEmpty)
        #expect(fixture.delegate.notifications.isEmpty)
        #expect(fixture.keyring.lookupCount == 0)
    }

    @Test("willPresent of a push the app decrypts itself posts the SDK's own decrypted banner and hides the placeholder")
    func willPresentDecryptsItself() throws {
        let fixture = Fixture()
        let content = NotificationContent(userInfo: try TestPushes.sealed(.visible, for: Self.key))
        let result = fixture.handler.notificationWillPresent(content)
        #expect(result.decision.presentation == .banner)
        #expect(result.decision.presenter == .sdk)
        #expect(result.options == [])
        let banner = try #require(result.postedBanner)
        #expect(banner.title == "Anna")
        #expect(banner.body == "Hi!")
        #expect(banner.userInfo["kindly"]?.objectValue?["chat_id"] == "c-1")
        #expect(fixture.posted.all == [banner])
        #expect(fixture.delegate.notifications.count == 1)
        #expect(fixture.keyring.lookupCount == 1)
    }

    @Test("willPresent of content the extension decrypted lets the system present it, without decrypting again")
    func willPresentMarked() throws {
        let fixture = Fixture()
        let applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: try TestPushes.sealed(.visible, for: Self.key))
        let result = fixture.handler.notificationWillPresent(NotificationContent(userInfo: applied))
        #expect(result.decision.presentation == .banner)
        #expect(result.decision.chatId == "c-1")
        #expect(result.options == .bannerAndSound)
        #expect(result.postedBanner == nil)
        #expect(fixture.keyring.lookupCount == 0)
        #expect(fixture.delegate.notifications.map(\.id) == ["c-1"])
    }

    @Test("willPresent on the chat screen presents nothing, but still asks the delegate once")
    func willPresentOnChat() throws {
        let fixture = Fixture()
        fixture.handler.screen = .chat
        let result = fixture.handler.notificationWillPresent(NotificationContent(userInfo: try TestPushes.sealed(.visible, for: Self.key)))
        #expect(result.decision.presentation == DisplayRules.Presentation.none)
        #expect(result.options == [])
        #expect(fixture.posted.all.isEmpty)
        #expect(fixture.delegate.notifications.count == 1)
    }

    @Test("willPresent with a suppressing delegate presents nothing")
    func willPresentSuppressed() throws {
        let fixture = Fixture(allow: false)
        let result = fixture.handler.notificationWillPresent(NotificationContent(userInfo: try TestPushes.sealed(.plain, for: Self.key)))
        #expect(result.decision.presentation == DisplayRules.Presentation.none)
        #expect(result.decision.delegateConsulted)
        #expect(result.options == [])
        #expect(fixture.posted.all.isEmpty)
    }

    @Test("willPresent of a push that does not decrypt shows the placeholder and never asks the delegate")
    func willPresentUndecryptable() throws {
        let fixture = Fixture(keys: [])
        let content = NotificationContent(userInfo: try TestPushes.sealed(.visible, for: Self.key))
        let result = fixture.handler.notificationWillPresent(content)
        #expect(result.decision.presentation == .placeholder)
        #expect(result.decision.reason == .keyUnavailable)
        #expect(result.options == .bannerAndSound)
        #expect(fixture.delegate.notifications.isEmpty)
    }

    @Test("The completion-handler form calls its handler exactly once with the options")
    func completionHandler() throws {
        let fixture = Fixture()
        let options = Recorder<PresentationOptions>()
        fixture.handler.notificationWillPresent(NotificationContent(userInfo: TestPushes.foreign(.plain))) { options.record($0) }
        #expect(options.all == [.bannerAndSound])
    }

    @Test("Without a delegate every decrypted push is allowed")
    func noDelegate() throws {
        let fixture = Fixture()
        fixture.handler.delegate = nil
        let result = fixture.handler.notificationWillPresent(NotificationContent(userInfo: try TestPushes.sealed(.visible, for: Self.key)))
        #expect(result.decision.presentation == .banner)
        #expect(result.decision.delegateConsulted)
        #expect(fixture.delegate.notifications.isEmpty)
    }

    @Test(
        "The silent path posts a decrypted banner in the background and in the foreground",
        arguments: [DisplayRules.AppState.background, .foreground])
    func silentBanner(appState: DisplayRules.AppState) throws {
        let fixture = Fixture()
        fixture.handler.setAppState(appState)
        let decision = try #require(fixture.handler.notificationReceived(try TestPushes.sealed(.silent, for: Self.key)))
        #expect(decision.presentation == .banner)
        #expect(decision.presenter == .sdk)
        #expect(decision.delegateConsulted)
        #expect(fixture.posted.all.map(\.body) == ["Hi!"])
        #expect(fixture.posted.all.first?.userInfo["kindly"]?.objectValue?["chat_id"] == "c-1")
        #expect(fixture.delegate.notifications.count == 1)
    }

    @Test("The silent path shows nothing for a silent push that does not decrypt, and does not ask the delegate")
    func silentUndecryptable() throws {
        let fixture = Fixture(keys: [])
        fixture.handler.setAppState(.background)
        let decision = try #require(fixture.handler.notificationReceived(try TestPushes.sealed(.silent, for: Self.key)))
        #expect(decision.presentation == DisplayRules.Presentation.none)
        #expect(decision.reason == .keyUnavailable)
        #expect(fixture.posted.all.isEmpty)
        #expect(fixture.delegate.notifications.isEmpty)
    }

    @Test(
        "The silent path leaves a Kindly push with an alert to the alert path: no decryption, no delegate",
        arguments: [PushKind.visible, .plain])
    func silentPathIgnoresAlerts(kind: PushKind) throws {
        let fixture = Fixture()
        #expect(fixture.handler.notificationReceived(try TestPushes.sealed(kind, for: Self.key)) == nil)
        #expect(fixture.keyring.lookupCount == 0)
        #expect(fixture.delegate.notifications.isEmpty)
        #expect(fixture.posted.all.isEmpty)
    }

    @Test("The silent path passes another provider's push through", arguments: PushKind.allCases)
    func silentPathForeign(kind: PushKind) {
        let fixture = Fixture()
        #expect(fixture.handler.notificationReceived(TestPushes.foreign(kind)) == .notKindly(kind: kind))
        #expect(fixture.keyring.lookupCount == 0)
    }

    @Test(
        "The silent path with no postBanner given: a banner the rule decides is not dropped silently, it is logged once"
    )
    func silentBannerWithoutPresenter() throws {
        let logs = LogRecorder()
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])), hasExtension: true, logger: logs.logger,
            openChat: { _ in })
        for _ in 0..<3 {
            let decision = try #require(handler.notificationReceived(try TestPushes.sealed(.silent, for: Self.key)))
            #expect(decision.presentation == .banner)
        }
        let warnings = logs.messages.filter { $0.contains("postBanner") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("no postBanner is set") == true)

        // The foreground path's own banner is the same banner: the same one line covers it.
        handler.setAppState(.foreground)
        let visible = NotificationContent(userInfo: try TestPushes.sealed(.visible, for: Self.key))
        #expect(handler.notificationWillPresent(visible).options == [])
        #expect(logs.messages.filter { $0.contains("postBanner") }.count == 1)
    }
}

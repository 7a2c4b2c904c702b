import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

@Suite("Taps on notifications", .offThePool)
struct NotificationTapTests {
    static let key = DeviceKey.generate()

    /// A handler with a manual clock, recording the chats it opens and its log lines.
    struct Fixture {
        let clock = ManualClock()
        let logs = LogRecorder()
        let opened = Recorder<String>()
        let keyring: InMemoryKeyring
        let handler: KindlyNotificationHandler

        init(keys: [DeviceKey] = [NotificationTapTests.key]) {
            keyring = InMemoryKeyring(keys: keys)
            let opened = opened
            handler = KindlyNotificationHandler(
                decryption: KindlyPushDecryption(keyring: keyring), hasExtension: true, clock: clock, logger: logs.logger,
                openChat: { opened.record($0) })
        }
    }

    static func push() throws -> JSONValue { try TestPushes.sealed(.visible, for: key) }

    @Test("A tap before start() is replayed when start() runs within 60 s, with the app active", arguments: [0, 1, 30, 59, 60])
    func replayedWithinWindow(seconds: Int) throws {
        let fixture = Fixture()
        #expect(fixture.handler.notificationTapped(try Self.push()) == .deferred)
        fixture.clock.advance(by: .seconds(seconds))
        fixture.handler.setAppState(.foreground)
        #expect(fixture.opened.all.isEmpty)
        fixture.handler.start()
        #expect(fixture.opened.all == ["c-1"])
        #expect(fixture.logs.messages.isEmpty)
    }

    @Test("A tap exactly 60 s old is still replayed; 60 s and a millisecond is dropped")
    func boundary() throws {
        let exactly = Fixture()
        exactly.handler.notificationTapped(try Self.push())
        exactly.clock.advance(by: .seconds(60))
        exactly.handler.setAppState(.foreground)
        exactly.handler.start()
        #expect(exactly.opened.all == ["c-1"])

        let later = Fixture()
        later.handler.notificationTapped(try Self.push())
        later.clock.advance(by: .seconds(60) + .milliseconds(1))
        later.handler.setAppState(.foreground)
        later.handler.start()
        #expect(later.opened.all.isEmpty)
    }

    @Test("A tap older than 60 s when start() runs is dropped with a log line", arguments: [61, 120, 3600])
    func droppedAfterWindow(seconds: Int) throws {
        let fixture = Fixture()
        fixture.handler.notificationTapped(try Self.push())
        fixture.clock.advance(by: .seconds(seconds))
        fixture.handler.setAppState(.foreground)
        fixture.handler.start()
        #expect(fixture.opened.all.isEmpty)
        #expect(fixture.logs.messages.count == 1)
        #expect(fixture.logs.messages.first?.contains("dropped a notification tap") == true)
        // Dropped for good: later activations do not bring it back.
        fixture.handler.setAppState(.background)
        fixture.handler.setAppState(.foreground)
        #expect(fixture.opened.all.isEmpty)
    }

    @Test("A tap replayed at 59 s opens the chat; at 61 s it is dropped with a log line")
    func issueExample() throws {
        let at59 = Fixture()
        at59.handler.setAppState(.foreground)
        at59.handler.notificationTapped(try Self.push())
        at59.clock.advance(by: .seconds(59))
        at59.handler.start()
        #expect(at59.opened.all == ["c-1"])
        #expect(at59.logs.messages.isEmpty)

        let at61 = Fixture()
        at61.handler.setAppState(.foreground)
        at61.handler.notificationTapped(try Self.push())
        at61.clock.advance(by: .seconds(61))
        at61.handler.start()
        #expect(at61.opened.all.isEmpty)
        #expect(at61.logs.messages.count == 1)
    }

    @Test("The age is taken when start() runs: a tap admitted then waits for the app to become active")
    func waitsForActivation() throws {
        let fixture = Fixture()
        fixture.handler.notificationTapped(try Self.push())
        fixture.clock.advance(by: .seconds(30))
        fixture.handler.start()
        #expect(fixture.opened.all.isEmpty)
        fixture.clock.advance(by: .seconds(60))
        fixture.handler.setAppState(.foreground)
        #expect(fixture.opened.all == ["c-1"])
        // Replayed once only.
        fixture.handler.setAppState(.background)
        fixture.handler.setAppState(.foreground)
        fixture.handler.start()
        #expect(fixture.opened.all == ["c-1"])
    }

    @Test("A tap after start() with the app active opens the chat at once")
    func afterStart() throws {
        let fixture = Fixture()
        fixture.handler.start()
        fixture.handler.setAppState(.foreground)
        #expect(fixture.handler.notificationTapped(try Self.push()) == .opened(chatId: "c-1"))
        #expect(fixture.opened.all == ["c-1"])
    }

    @Test("A tap after start() while the app is not yet active opens the chat when it becomes active")
    func afterStartInactive() throws {
        let fixture = Fixture()
        fixture.handler.start()
        #expect(fixture.handler.notificationTapped(try Self.push()) == .deferred)
        #expect(fixture.opened.all.isEmpty)
        fixture.handler.setAppState(.foreground)
        #expect(fixture.opened.all == ["c-1"])
    }

    @Test("A tap on a push that is not Kindly's is never consumed nor remembered", arguments: PushKind.allCases)
    func notKindly(kind: PushKind) {
        let fixture = Fixture()
        let outcome = fixture.handler.notificationTapped(TestPushes.foreign(kind))
        #expect(outcome == .notKindly)
        #expect(!outcome.isConsumed)
        fixture.handler.setAppState(.foreground)
        fixture.handler.start()
        #expect(fixture.handler.notificationTapped(TestPushes.foreign(kind)) == .notKindly)
        #expect(fixture.opened.all.isEmpty)
        #expect(fixture.keyring.lookupCount == 0)
    }

    @Test("With openChatOnNotificationTap off a Kindly tap is consumed but never opens a chat")
    func disabled() throws {
        let fixture = Fixture()
        #expect(fixture.handler.openChatOnNotificationTap)
        fixture.handler.openChatOnNotificationTap = false
        let before = fixture.handler.notificationTapped(try Self.push())
        #expect(before == .disabled)
        #expect(before.isConsumed)
        fixture.handler.setAppState(.foreground)
        fixture.handler.start()
        #expect(fixture.handler.notificationTapped(try Self.push()) == .disabled)
        #expect(fixture.opened.all.isEmpty)
    }

    @Test("Turning openChatOnNotificationTap off before the replay cancels a remembered tap")
    func disabledBeforeReplay() throws {
        let fixture = Fixture()
        fixture.handler.notificationTapped(try Self.push())
        fixture.handler.openChatOnNotificationTap = false
        fixture.handler.setAppState(.foreground)
        fixture.handler.start()
        #expect(fixture.opened.all.isEmpty)
    }

    @Test("Only the latest tap before start() is replayed")
    func latestTapWins() throws {
        let fixture = Fixture()
        let other = try DecryptedPayload(chatId: "c-2", title: "Ben", body: "Yo")
        fixture.handler.notificationTapped(try Self.push())
        fixture.clock.advance(by: .seconds(10))
        fixture.handler.notificationTapped(try TestPushes.sealed(.visible, for: Self.key, payload: other))
        fixture.clock.advance(by: .seconds(55))
        fixture.handler.setAppState(.foreground)
        fixture.handler.start()
        #expect(fixture.opened.all == ["c-2"])
    }

    @Test("A tap on content the extension decrypted opens kindly.chat_id without decrypting")
    func markedDecrypted() throws {
        let fixture = Fixture()
        let applied = TestPushes.editing(KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: try Self.push()), "kindly") {
            $0["chat_id"] = "c-marked"
        }
        fixture.handler.start()
        fixture.handler.setAppState(.foreground)
        #expect(fixture.handler.notificationTapped(applied) == .opened(chatId: "c-marked"))
        #expect(fixture.keyring.lookupCount == 0)
    }

    @Test("A tap on a placeholder opens the app with no chat, as on iOS, now or once start() has run")
    func placeholderOpensApp() throws {
        let logs = LogRecorder()
        let opened = Recorder<String>()
        let apps = Recorder<Bool>()
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring()), hasExtension: true, logger: logs.logger,
            openChat: { opened.record($0) }, openApp: { apps.record(true) })
        // Before start(): remembered, and the app is opened when the tap is replayed.
        #expect(handler.notificationTapped(try Self.push()) == .deferred)
        #expect(apps.all.isEmpty)
        handler.start()
        handler.setAppState(.foreground)
        #expect(apps.all.count == 1)
        // Started and active: at once.
        #expect(handler.notificationTapped(try Self.push()) == .noChat)
        #expect(apps.all.count == 2)
        #expect(opened.all.isEmpty)
        // A host that presents notifications itself opens the app on its own: not twice.
        #expect(handler.deviceTapped(try Self.push(), chatId: nil) == .openApp(chatId: nil))
        #expect(apps.all.count == 2)
        #expect(!logs.messages.contains { $0.contains("openApp") })
    }

    @Test("A tap on a placeholder with no openApp given says once that the app was not brought up")
    func placeholderWithoutOpenApp() throws {
        let fixture = Fixture(keys: [])
        fixture.handler.start()
        fixture.handler.setAppState(.foreground)
        #expect(fixture.handler.notificationTapped(try Self.push()) == .noChat)
        #expect(fixture.handler.notificationTapped(try Self.push()) == .noChat)
        #expect(fixture.logs.messages.filter { $0.contains("no openApp is set") }.count == 1)
    }

    @Test("A tap on a Kindly push that does not decrypt is consumed, opens nothing, and is logged")
    func undecryptable() throws {
        let fixture = Fixture(keys: [])
        fixture.handler.start()
        fixture.handler.setAppState(.foreground)
        let outcome = fixture.handler.notificationTapped(try Self.push())
        #expect(outcome == .noChat)
        #expect(outcome.isConsumed)
        #expect(fixture.opened.all.isEmpty)
        #expect(fixture.logs.messages.contains { $0.contains("key_unavailable") })
    }
}

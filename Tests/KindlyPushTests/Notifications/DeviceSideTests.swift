import KindlyPush
import KindlyPushCore
import Testing

@Suite("The device side of a desktop: cleaned text, the chat on screen, taps", .offThePool)
struct DeviceSideTests {
    @Test("banner text loses NUL, escape sequences, C0/C1 controls and bidi overrides; a body keeps its lines")
    func cleaned() {
        #expect(NotificationText.cleaned("a\u{0}b") == "ab")
        #expect(NotificationText.cleaned("\u{1B}[1;31mred\u{1B}[0m") == "red")
        #expect(NotificationText.cleaned("x\u{1B}]8;;http://e\u{1B}\\y") == "xy")
        #expect(NotificationText.cleaned("a\u{7}\u{8}\u{7F}\u{85}\u{9B}b") == "ab")
        #expect(NotificationText.cleaned("\u{202E}evil\u{202C} \u{2066}x\u{2069}") == "evil x")
        #expect(NotificationText.cleaned("one\ntwo\tthree\r") == "one two three ")
        #expect(NotificationText.cleaned("one\ntwo", keepsLines: true) == "one\ntwo")
        #expect(NotificationText.cleaned("plain ünïcödé 👋 \u{200D}") == "plain ünïcödé 👋 \u{200D}")
        #expect(NotificationText.isUsableChatID("c-1"))
        #expect(!NotificationText.isUsableChatID("c\u{0}1"))
        #expect(!NotificationText.isUsableChatID("c\n1"))
        #expect(!NotificationText.isUsableChatID("\u{202E}1-c"))
        #expect(!NotificationText.isUsableChatID(""))
    }

    @Test(
        "the screen with a chat id: a decrypted push for another chat is `other`, one for that chat `chat`, one that does not decrypt `chat`"
    )
    func chatOnScreen() {
        let message = DisplayMessage(chatId: "c-1", title: "t", body: "b")
        func decide(_ chat: String?, kind: PushKind, decrypts: Bool) -> DisplayRules.Presentation {
            var input = DisplayInput(
                kind: kind, hasExtension: true, appState: .foreground, screen: .chat, decryption: decrypts ? .decrypted(message) : .failed)
            input.chatOnScreen = chat
            return DisplayRules.decide(input).presentation
        }
        #expect(decide("c-1", kind: .visible, decrypts: true) == .none)
        #expect(decide("c-2", kind: .visible, decrypts: true) == .banner)
        #expect(decide("c-2", kind: .silent, decrypts: true) == .banner)
        #expect(decide("c-2", kind: .visible, decrypts: false) == .none)
        #expect(decide(nil, kind: .visible, decrypts: true) == .none)
    }

    @Test("a tap the host must launch the app for: the banner's chat when deferred, none for a placeholder or with taps off")
    func deviceTaps() throws {
        let key = DeviceKey.generate()
        let opened = Locked<[String]>([])
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])), hasExtension: true,
            openChat: { chat in opened.withLock { $0.append(chat) } })
        let push = try JSONValue(
            parsing: String(
                decoding: try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c-7", title: "t", body: "b"), for: key.publicKey),
                as: UTF8.self))
        handler.setAppState(.killed, chatOnScreen: nil)
        let presentation = handler.devicePresentation(for: push)
        #expect(presentation.chatToOpen == "c-7")
        #expect(handler.deviceTapped(push, chatId: presentation.chatToOpen) == .openApp(chatId: "c-7"))
        #expect(opened.withLock { $0 } == [])
        handler.setAppState(.foreground, chatOnScreen: "c-1")
        handler.start()
        #expect(opened.withLock { $0 } == ["c-7"])  // the remembered tap, replayed
        #expect(handler.deviceTapped(push, chatId: "c-7") == .opened(chatId: "c-7"))
        let stranger = try JSONValue(
            parsing: String(
                decoding: try KindlyPushSealer.seal(
                    try DecryptedPayload(chatId: "c-8", title: "t", body: "b"), for: DeviceKey.generate().publicKey), as: UTF8.self))
        #expect(handler.deviceTapped(stranger, chatId: nil) == .openApp(chatId: nil))
        handler.openChatOnNotificationTap = false
        #expect(handler.deviceTapped(push, chatId: "c-7") == .openApp(chatId: nil))
    }
}

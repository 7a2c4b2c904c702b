import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushDesktop
import Testing

/// The desktop of tools/with-desktop (dunst on Xvfb on a private bus), for the library's tests.
enum Desktop {
    static let variables = ProcessInfo.processInfo.environment
    static var isRunning: Bool { variables["KINDLY_PUSH_TEST_DESKTOP"] == "1" }
    static var busAddress: String? { variables["DBUS_SESSION_BUS_ADDRESS"] }
    static let control = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tools/desktop-control").path

    /// Runs tools/desktop-control and returns its output lines.
    static func control(_ arguments: [String]) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [control] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "desktop-control \(arguments) failed") }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// The (summary, body, category) of each notification dunst received whose text holds `marker`.
    static func shown(_ marker: String) throws -> [(summary: String, body: String, category: String)] {
        try control(["shown", marker]).map { line in
            let entry = try JSONValue(parsing: line)
            return (entry["summary"]?.stringValue ?? "", entry["body"]?.stringValue ?? "", entry["category"]?.stringValue ?? "")
        }
    }

    /// As the CLI tests' DesktopSession.exclusive: one test at a time looks at and clicks dunst.
    static func exclusive<Result>(_ body: () async throws -> Result) async throws -> Result {
        let lockPath = (variables["KINDLY_PUSH_TEST_DESKTOP_DIR"] ?? NSTemporaryDirectory()) + "/tests.lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failure(description: "cannot open \(lockPath)") }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 { try await Task.sleep(for: .milliseconds(50)) }
        _ = try control(["shown", "\u{1}nothing"])
        return try await body()
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }
}

/// A presenter on a handler in `state` (and `screen`), as `notify` makes one.
func makePresenter(
    _ state: DisplayRules.AppState, screen: DisplayRules.Screen = .other, chatOnScreen: String? = nil, decryption: KindlyPushDecryption,
    store: (any Deduplicator)?, options: DesktopPresenter.Options = .init()
) -> DesktopPresenter {
    let handler = KindlyNotificationHandler(decryption: decryption, hasExtension: true, openChat: { _ in })
    handler.setAppState(state, chatOnScreen: chatOnScreen)
    if screen == .chat, chatOnScreen == nil { handler.screen = .chat }
    return DesktopPresenter(handler: handler, store: store, options: options)
}

@Suite(
    "DesktopNotifier against dunst", .serialized, .enabled(if: Desktop.isRunning, "no notification server: run under tools/with-desktop"),
    .offThePool)
struct DesktopNotifierTests {
    let marker = "L\(UInt32.random(in: 0...UInt32.max))"

    @Test("capabilities and server information come from the server")
    func serverFacts() throws {
        let notifier = try DesktopNotifier()
        #expect(notifier.capabilities.isSuperset(of: ["actions", "body", "body-markup"]))
        #expect(notifier.readsBodyMarkup && notifier.offersActions)
        let information = try notifier.serverInformation()
        #expect(information.name == "dunst")
        #expect(information.specificationVersion == "1.2")
        // The bus's id and dunst's unique name: the same for every client while dunst runs.
        #expect(notifier.serverIdentity.contains("/:"))
        #expect(try DesktopNotifier().serverIdentity == notifier.serverIdentity)
    }

    @Test("notify posts escaped text and hints; a click and a close come back as events of that id")
    func notifyAndEvents() async throws {
        try await Desktop.exclusive {
            let notifier = try DesktopNotifier()
            let id = try notifier.notify(
                .init(
                    appName: "Kindly", summary: "Title \(marker)", body: "a < b && c > d",
                    actions: [.init(key: "default", label: "Open chat")],
                    category: "im.received"))
            #expect(id > 0)
            #expect(notifier.takeEvents() == [])
            _ = try Desktop.control(["click"])
            #expect(notifier.waitForEvents(timeout: .seconds(10)) == [.actionInvoked(id: id, key: "default")])

            try notifier.close(id)
            #expect(notifier.waitForEvents(timeout: .seconds(10)) == [.closed(id: id, reason: 3)])
            let shown = try Desktop.shown(marker)
            try #require(shown.count == 1)
            #expect(shown[0].body == "a &lt; b &amp;&amp; c &gt; d")
            #expect(shown[0].category == "im.received")

            // replaces_id: the same id, one notification.
            let replaced = try notifier.notify(.init(appName: "Kindly", summary: "Title \(marker)", body: "second", replacesID: id))
            #expect(replaced == id)
        }
    }

    @Test("the presenter shows a banner per chat, replaces it, and maps a click to the chat")
    func presenter() async throws {
        try await Desktop.exclusive {
            let key = DeviceKey.generate()
            let presenter = makePresenter(
                .background, decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])), store: InMemoryDeduplicator())
            let notifier = try DesktopNotifier()
            let first = try presenter.present(
                userInfo: try sealedPush(for: key, chat: "chat-\(marker)", title: "T \(marker)", body: "one"), with: notifier, at: 1)
            let second = try presenter.present(
                userInfo: try sealedPush(for: key, chat: "chat-\(marker)", title: "T \(marker)", body: "two"), with: notifier, at: 2)
            guard case .shown(let id, .banner) = first else {
                Issue.record("\(first)")
                return
            }
            #expect(second == .shown(id: id, presentation: .banner))
            _ = try Desktop.control(["click"])
            let events = notifier.waitForEvents(timeout: .seconds(10))
            #expect(events.compactMap { presenter.tap(for: $0)?.chatId } == ["chat-\(marker)"])
            #expect(try Desktop.shown(marker).map(\.body) == ["two"])
        }
    }

    @Test("a banner customized with an image attachment reaches the server with its image-path, shown as dunst shows images")
    func imageAttachment() async throws {
        let folder = try TemporaryFolder()
        // A 2 × 2 red PNG, for dunst to load.
        let png: [UInt8] = [
            137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 2, 0, 0, 0, 2, 8, 2, 0, 0, 0, 253, 212, 154, 115, 0,
            0, 0, 16, 73, 68, 65, 84, 120, 156, 99, 248, 207, 192, 0, 68, 12, 16, 10, 0, 31, 238, 3, 253, 139, 95, 20, 212, 0, 0, 0, 0,
            73, 69, 78, 68, 174, 66, 96, 130,
        ]
        let imagePath = folder.path + "/photo.png"
        try Data(png).write(to: URL(fileURLWithPath: imagePath))
        let attachment = try NotificationAttachment(identifier: "photo", path: imagePath)
        try await Desktop.exclusive {
            let key = DeviceKey.generate()
            var options = DesktopPresenter.Options()
            options.customize = { content in
                content.title += " (with a photo)"
                content.attachments.append(attachment)
            }
            let presenter = makePresenter(
                .background, decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])), store: InMemoryDeduplicator(),
                options: options)
            let outcome = try presenter.present(
                userInfo: try sealedPush(for: key, chat: "chat-\(marker)", title: "T \(marker)", body: "look"), with: try DesktopNotifier(),
                at: 1)
            guard case .shown(_, .banner) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            let shown = try Desktop.control(["shown", marker]).map { try JSONValue(parsing: $0) }
            try #require(shown.count == 1)
            #expect(shown[0]["summary"]?.stringValue == "T \(marker) (with a photo)")
            #expect(shown[0]["body"]?.stringValue == "look")
            #expect(shown[0]["icon_path"]?.stringValue == imagePath)
        }
    }
}

@Suite("DesktopNotifier without a server", .offThePool)
struct DesktopNotifierOfflineTests {
    // A connection that waited instead of failing would reach the time limit, not a bound that
    // the machine's load decides.
    @Test("no bus at the address: unreachable, no wait", .timeLimit(.minutes(1)))
    func noBus() {
        #expect(throws: DesktopNotifierError.self) { try DesktopNotifier(busAddress: "unix:path=/nonexistent/bus") }
    }

    @Test("markup is escaped: & < > and nothing else")
    func escaping() {
        #expect(DesktopNotifier.escapingMarkup(#"<a href="x">Tom & "Jerry"</a>"#) == #"&lt;a href="x"&gt;Tom &amp; "Jerry"&lt;/a&gt;"#)
        #expect(DesktopNotifier.escapingMarkup("plain ünïcödé 👋") == "plain ünïcödé 👋")
        #expect(DesktopNotifier.escapingMarkup("&amp;") == "&amp;amp;")
    }

    @Test("the presenter's plans: banner, placeholder (the push's alert, or the defaults), nothing, passthrough")
    func plans() throws {
        let key = DeviceKey.generate()
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))
        let background = makePresenter(.background, decryption: decryption, store: nil, options: .init(appName: "App", desktopEntry: "app"))
        let banner = background.plan(userInfo: try sealedPush(for: key, chat: "c-9", title: "Anna", body: "Hi", messageID: "m"))
        #expect(banner.decision.presentation == .banner)
        #expect(
            banner.notification
                == .init(
                    appName: "App", summary: "Anna", body: "Hi", actions: [.init(key: "default", label: "Open chat")],
                    category: "im.received",
                    desktopEntry: "app"))

        let stranger = background.plan(userInfo: try sealedPush(title: "Secret", body: "Secret"))
        #expect(stranger.decision.presentation == .placeholder)
        #expect(stranger.notification?.summary == "New message")
        #expect(stranger.notification?.body == "Open the app to read it")
        // A tap on a placeholder opens the app: it carries the open action too.
        #expect(stranger.notification?.actions == [.init(key: "default", label: "Open chat")])

        var alertless = try sealedPush(title: "Secret", body: "Secret").objectValue!
        alertless["aps"] = ["alert": "Custom text", "mutable-content": 1]
        let custom = background.plan(userInfo: .object(alertless))
        #expect(custom.notification?.summary == "")
        #expect(custom.notification?.body == "Custom text")

        let inChat = makePresenter(.foreground, screen: .chat, decryption: decryption, store: nil)
        #expect(inChat.plan(userInfo: try sealedPush(for: key)).outcomeWithoutNotifier == .nothing)
        #expect(inChat.plan(userInfo: ["aps": ["alert": "x"]]).outcomeWithoutNotifier == .notKindly)
        let passing = makePresenter(.background, decryption: decryption, store: nil, options: .init(showsPassthrough: true))
        #expect(passing.plan(userInfo: ["aps": ["alert": "x"]]).notification?.body == "x")
        #expect(passing.plan(userInfo: ["aps": ["content-available": 1]]).outcomeWithoutNotifier == .nothing)
    }

    @Test(
        "customize changes decrypted banners only, in every wire version: its text cleaned, its first image the banner's image-path",
        arguments: WireSealing.allCases)
    func customizedPlans(_ sealing: WireSealing) throws {
        let folder = try TemporaryFolder()
        for name in ["ring.mp3", "photo.png"] { try Data([1]).write(to: URL(fileURLWithPath: folder.path + "/" + name)) }
        let ring = try NotificationAttachment(identifier: "ring", path: folder.path + "/ring.mp3")
        let photo = try NotificationAttachment(identifier: "photo", path: folder.path + "/photo.png")
        let key = DeviceKey.generate()
        let seen = Locked<[String]>([])
        var options = DesktopPresenter.Options()
        options.customize = { content in
            seen.withLock { $0.append(content.threadIdentifier) }
            content.body += "\u{1B}]0;title\u{7}"
            content.attachments += [ring, photo]
        }
        let presenter = makePresenter(
            .background, decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]), pinnedSenderKeys: sealing.pins),
            store: nil, options: options)
        let payload = try DecryptedPayload(chatId: "c-9", title: "Anna", body: "Hi")
        let banner = try #require(presenter.plan(userInfo: try sealing.seal(payload, for: key, placeholder: .default)).notification)
        #expect(banner.summary == "Anna")
        #expect(banner.body.hasPrefix("Hi") && !banner.body.contains("\u{1B}"))
        #expect(banner.imagePath == photo.path)
        // A push sealed for another device is a placeholder: not customized, no image.
        let stranger = try sealing.seal(payload, for: .generate(), placeholder: .default)
        let placeholder = try #require(presenter.plan(userInfo: stranger).notification)
        #expect(placeholder.imagePath == nil)
        #expect(seen.withLock { $0 } == ["c-9"])
    }
}

import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A host's UI base class: not final, not `Sendable` (it stands in for `UIViewController`).
class HostScreen {
    var title = "Chats"
}

/// A delegate as the iOS documentation writes one: a subclass of the host's screen class, with
/// plain mutable state and no lock. It reports each answer's count through a `Sendable` closure
/// (the test cannot keep a reference: the handler owns it).
class ChatListScreen: HostScreen, KindlyNotificationDelegate {
    var chatOnScreen: String?
    var asked = 0
    let report: @Sendable (Int) -> Void

    init(chatOnScreen: String?, report: @escaping @Sendable (Int) -> Void) {
        self.chatOnScreen = chatOnScreen
        self.report = report
    }

    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        // A read-modify-write with a yield in between: two threads inside at once lose a count.
        let count = asked
        sched_yield()
        asked = count + 1
        report(asked)
        return notification.id != chatOnScreen
    }
}

/// Marks Dispatch's main queue, where the main actor runs (on Linux not the main thread, which
/// `dispatchMain()` parks).
let mainQueueMark: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

/// A view controller on the main actor as the delegate, written as the iOS SDK's push guide
/// writes it: no word added. It records whether each answer ran on the main queue.
@MainActor
final class MainActorScreen {
    var isShowingCustomInbox = false
    var customInbox: [ExternalNotification] = []
    var askedOnMainThread: [Bool] = []
}

extension MainActorScreen: KindlyNotificationDelegate {
    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        askedOnMainThread.append(DispatchQueue.getSpecific(key: mainQueueMark) == true)
        if isShowingCustomInbox {
            customInbox.append(notification)
            return false
        }
        return true
    }
}

/// The iOS-parity items that need no process-wide setting (those that do: `IOSParityTests`).
@Suite("Porting from iOS", .offThePool)
struct IOSPortingTests {
    static let key = DeviceKey.generate()

    static func handler(
        keys: [DeviceKey] = [IOSPortingTests.key], logger: KindlyLogger = .disabled, opened: Recorder<String>? = nil,
        posted: Recorder<NotificationContent>? = nil
    ) -> KindlyNotificationHandler {
        KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: keys)), hasExtension: true, logger: logger,
            openChat: { opened?.record($0) }, postBanner: { posted?.record($0) })
    }

    static func dictionary(_ value: JSONValue) throws -> [AnyHashable: Any] {
        try #require(try JSONSerialization.jsonObject(with: value.compactData) as? [AnyHashable: Any])
    }

    // MARK: 1. A delegate on a non-final class

    @Test("a non-final class delegate is asked and decides; the handler asks it one call at a time from many threads")
    func nonFinalDelegate() async throws {
        let answers = Recorder<Int>()
        let handler = Self.handler()
        handler.setDelegate(ChatListScreen(chatOnScreen: "c-1", report: { answers.record($0) }))
        handler.setAppState(.background)
        let mine = try TestPushes.sealed(.silent, for: Self.key)
        let other = try TestPushes.sealed(
            .silent, for: Self.key, payload: try DecryptedPayload(chatId: "c-2", title: "Ben", body: "Yo"))
        #expect(handler.notificationReceived(mine)?.presentation == DisplayRules.Presentation.none)
        #expect(handler.notificationReceived(other)?.presentation == .banner)
        #expect(handler.delegate != nil)

        let threads = 8
        let pushesPerThread = 25
        let done = Recorder<Int>()
        for thread in 0..<threads {
            Thread {
                for _ in 0..<pushesPerThread { _ = handler.notificationReceived(other) }
                done.record(thread)
            }.start()
        }
        await done.wait(forCount: threads, timeout: .seconds(60))
        #expect(done.all.count == threads)
        // Serialized: every count from 1 to the total was reported once, none twice.
        let total = 2 + threads * pushesPerThread
        #expect(answers.all.sorted() == Array(1...total))
        handler.setDelegate(nil)
        #expect(handler.delegate == nil)
        #expect(handler.notificationReceived(mine)?.presentation == .banner)
    }

    @Test("a delegate that delivers a push to the handler from inside its answer does not deadlock")
    func reentrantDelegate() throws {
        final class Reentrant: KindlyNotificationDelegate {
            let handler: KindlyNotificationHandler
            let push: JSONValue
            var depth = 0
            init(handler: KindlyNotificationHandler, push: JSONValue) {
                self.handler = handler
                self.push = push
            }
            func shouldHandleNotification(notification: ExternalNotification) -> Bool {
                depth += 1
                if depth == 1 { _ = handler.notificationReceived(push) }
                return true
            }
        }
        let handler = Self.handler()
        let push = try TestPushes.sealed(.silent, for: Self.key)
        handler.setDelegate(Reentrant(handler: handler, push: push))
        #expect(handler.notificationReceived(push)?.presentation == .banner)
    }

    // MARK: 3. [AnyHashable: Any]

    @Test("notificationReceived and notificationResponseReceived take userInfo dictionaries; the delegate reads one")
    func dictionaryForms() throws {
        let seen = Recorder<String>()
        let opened = Recorder<String>()
        let posted = Recorder<NotificationContent>()
        let handler = Self.handler(opened: opened, posted: posted)
        handler.delegate = ClosureNotificationDelegate { notification in
            let userInfo = notification.userInfo
            let kindly = userInfo["kindly"] as? [AnyHashable: Any]
            let app = userInfo["app"] as? [AnyHashable: Any]
            seen.record("\(kindly?["v"] as? Int ?? -1) \(app?["screen"] as? String ?? "-") \(userInfo["when"] == nil)")
            return true
        }
        handler.setAppState(.background)
        var userInfo = try Self.dictionary(try TestPushes.sealed(.silent, for: Self.key))
        userInfo["app"] = ["screen": "inbox"]
        userInfo["when"] = Date()  // a value JSON cannot hold: left out, never an error
        let decision = try #require(handler.notificationReceived(userInfo))
        #expect(decision.presentation == .banner)
        #expect(posted.all.map(\.title) == ["Anna"])
        #expect(seen.all == ["1 inbox true"])
        #expect(handler.notificationReceived(["aps": ["content-available": 1]]) == .notKindly(kind: .silent))

        handler.start()
        handler.setAppState(.foreground)
        #expect(handler.notificationResponseReceived(userInfo) == .opened(chatId: "c-1"))
        #expect(opened.all == ["c-1"])
        #expect(handler.notificationResponseReceived(["aps": ["alert": "Sale"]]) == .notKindly)

        let notification = ExternalNotification(id: "c-1", title: "T", body: "B", userInfo: ["kindly": ["v": 1]])
        #expect(notification.userInfoJSON == ["kindly": ["v": 1]])
    }

    // MARK: 5. setAPNSDeviceToken

    @Test("setAPNSDeviceToken sends the registration through the sink set once; without a sink or a key it logs")
    func setAPNSDeviceTokenSends() throws {
        let log = LogRecorder()
        let keyring = ControllableKeyring()
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: keyring), hasExtension: true, logger: log.logger, openChat: { _ in })
        handler.setAPNSDeviceToken(Data([0xAB, 0xCD]))
        #expect(log.entries.map(\.level) == [.error])
        #expect(log.messages.first?.contains("no sendRegistration") == true)

        let sent = Recorder<Registration>()
        handler.sendRegistration = { sent.record($0) }
        handler.setAPNSDeviceToken(Data([0xAB, 0xCD]))
        handler.setAPNSDeviceToken("00FF")
        let registrations = sent.all
        #expect(registrations.map(\.token) == ["abcd", "00ff"])
        #expect(registrations.map(\.pushMode) == [.alert, .alert])  // automatic, with a declared presenter
        #expect(registrations.map(\.publicKey.kid) == [try keyring.list()[0].kid, try keyring.list()[0].kid])

        handler.setAPNSDeviceToken("xyz")
        keyring.failure = .locked("test")
        handler.setAPNSDeviceToken(Data([1]))
        #expect(sent.all.count == 2)
        #expect(log.entries.map(\.level) == [.error, .error, .error])
        #expect(log.messages[1].contains("hexadecimal"))
        #expect(log.messages[2].contains("locked"))
    }

    // MARK: 6. DecryptedPayload equality

    @Test("DecryptedPayload is equal, and hashes alike, whatever the member order; a JSONEncoder round trip is equal")
    func payloadEqualityIgnoresOrder() throws {
        let extras: JSONObject = [
            "zeta": ["b": 2, "a": [1, ["y": true, "x": "z"]], "c": .null], "alpha": 15, "mid": "text",
        ]
        let payload = try DecryptedPayload(
            chatId: "c-1", title: "Anna", body: "Hi!", messageId: "m-1", sentAt: 1_700_000_000, extras: extras)

        func reversed(_ value: JSONValue) -> JSONValue {
            switch value {
            case .object(let object):
                return .object(JSONObject(object.members.reversed().map { .init(key: $0.key, value: reversed($0.value)) }))
            case .array(let elements): return .array(elements.map(reversed))
            default: return value
            }
        }
        let reordered = try DecryptedPayload(validating: try #require(reversed(.object(payload.object)).objectValue))
        #expect(reordered.object.keys != payload.object.keys)
        #expect(reordered == payload)
        #expect(reordered.hashValue == payload.hashValue)
        #expect(Set([payload, reordered]).count == 1)

        let decoded = try JSONDecoder().decode(DecryptedPayload.self, from: JSONEncoder().encode(payload))
        #expect(decoded == payload)
        #expect(decoded.hashValue == payload.hashValue)

        // Still a value comparison: a changed extra, or an array in another order, is not equal.
        let changed = try DecryptedPayload(
            chatId: "c-1", title: "Anna", body: "Hi!", messageId: "m-1", sentAt: 1_700_000_000,
            extras: ["zeta": ["b": 2, "a": [1, ["y": true, "x": "z"]], "c": .null], "alpha": 15, "mid": "other"])
        #expect(changed != payload)
        let arrayOrder = try DecryptedPayload(chatId: "c-1", title: "T", body: "B", extras: ["list": [1, 2]])
        #expect(arrayOrder != (try DecryptedPayload(chatId: "c-1", title: "T", body: "B", extras: ["list": [2, 1]])))
    }

    // MARK: A notification, and a delegate that implements nothing

    @Test("notificationReceived takes a notification, as the iOS SDK's does; a delegate that implements nothing allows")
    func notificationFormAndDefaultDelegate() throws {
        final class AppCoordinator: KindlyNotificationDelegate {}
        let posted = Recorder<NotificationContent>()
        let handler = Self.handler(posted: posted)
        handler.setDelegate(AppCoordinator())
        let push = try TestPushes.sealed(.silent, for: Self.key)
        let decision = try #require(handler.notificationReceived(NotificationContent(userInfo: push)))
        #expect(decision.presentation == .banner)
        #expect(decision == handler.notificationReceived(push))
        #expect(posted.all.count == 2)
        #expect(posted.all.first?.title == "Anna")
        let foreign = NotificationContent(userInfo: TestPushes.foreign(.silent))
        #expect(handler.notificationReceived(foreign) == .notKindly(kind: .silent))
        // A tap, with the tapped notification (the response's `notification` on iOS).
        handler.start()
        handler.setAppState(.foreground)
        let tapped = NotificationContent(userInfo: try TestPushes.sealed(.visible, for: Self.key))
        #expect(handler.notificationResponseReceived(tapped) == .opened(chatId: "c-1"))
    }

    @Test("a delegate that answers with the default, a misspelled one too, is allowed and logged once at info")
    func defaultAnswerLogged() throws {
        struct Misspelled: KindlyNotificationDelegate {
            func shouldHandleNotification(_ notification: ExternalNotification) -> Bool { false }
        }
        let logs = LogRecorder()
        let handler = Self.handler(logger: logs.logger)
        handler.delegate = Misspelled()
        let push = try TestPushes.sealed(.silent, for: Self.key)
        #expect(handler.notificationReceived(push)?.presentation == .banner)
        #expect(handler.notificationReceived(push)?.presentation == .banner)
        let lines = logs.entries.filter { $0.message.contains("does not implement shouldHandleNotification") }
        #expect(lines.map(\.level) == [.info])

        let quiet = LogRecorder()
        let implemented = Self.handler(logger: quiet.logger)
        implemented.delegate = ClosureNotificationDelegate { _ in false }
        #expect(implemented.notificationReceived(push)?.presentation == DisplayRules.Presentation.none)
        #expect(quiet.messages.isEmpty)
    }

    @MainActor
    @Test("a main-actor delegate set with delegate = self is asked when pushes come from the main actor")
    func mainActorDelegate() throws {
        let posted = Recorder<NotificationContent>()
        let handler = Self.handler(posted: posted)
        let screen = MainActorScreen()
        handler.delegate = screen
        let push = try TestPushes.sealed(.silent, for: Self.key)
        #expect(handler.notificationReceived(push)?.presentation == .banner)
        screen.isShowingCustomInbox = true
        #expect(handler.notificationReceived(push)?.presentation == DisplayRules.Presentation.none)
        #expect(screen.customInbox.map(\.title) == ["Anna"])
        #expect(screen.askedOnMainThread == [true, true])
        #expect(posted.all.count == 1)
    }

    @Test("a main-actor delegate is asked on the main actor when pushes are delivered from other threads, and decides")
    func mainActorDelegateFromOtherThreads() async throws {
        let posted = Recorder<NotificationContent>()
        let handler = Self.handler(posted: posted)
        let screen = await MainActor.run {
            let screen = MainActorScreen()
            screen.isShowingCustomInbox = true
            handler.delegate = screen
            return screen
        }
        let push = try TestPushes.sealed(.silent, for: Self.key)
        let threads = 4
        let pushesPerThread = 5
        let presentations = Recorder<DisplayRules.Presentation?>()
        for _ in 0..<threads {
            Thread {
                for _ in 0..<pushesPerThread { presentations.record(handler.notificationReceived(push)?.presentation) }
            }.start()
        }
        await presentations.wait(forCount: threads * pushesPerThread, timeout: hangCap)
        #expect(presentations.all == Array(repeating: DisplayRules.Presentation.none, count: threads * pushesPerThread))
        let (asked, inbox) = await MainActor.run { (screen.askedOnMainThread, screen.customInbox.count) }
        #expect(asked == Array(repeating: true, count: threads * pushesPerThread))
        #expect(inbox == threads * pushesPerThread)
        #expect(posted.all.isEmpty)
    }

    // MARK: 7. The dropped tap, with default settings

    @Test(
        "a tap older than 60 s when start() runs is logged to the system log with default settings",
        .enabled(if: SystemLogListener.canListen, "needs root and no syslog daemon owning /dev/log"))
    func droppedTapLoggedByDefault() throws {
        let listener = try SystemLogListener()
        let clock = ManualClock()
        let opened = Recorder<String>()
        // No logger given: the handler's default.
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])), hasExtension: true, clock: clock,
            openChat: { opened.record($0) })
        #expect(handler.notificationTapped(try TestPushes.sealed(.visible, for: Self.key)) == .deferred)
        clock.advance(by: .seconds(61))
        handler.start()
        handler.setAppState(.foreground)
        #expect(opened.all.isEmpty)
        let line = listener.firstLine(containing: "dropped a notification tap", timeout: hangCap)
        #expect(line?.contains("kindly-push: warning: dropped a notification tap made 61.0 seconds before start()") == true)
        #expect(line?.hasPrefix("<12>") == true)  // facility user (8) + warning (4)
    }
}

/// A datagram socket bound at `/dev/log`, where `syslog(3)` sends, standing in for the syslog
/// daemon of a container that has none; removed when the test ends.
final class SystemLogListener {
    static let path = "/dev/log"
    private let socket: Int32

    /// Root, and nothing at `/dev/log` (a real daemon's socket is never replaced).
    static var canListen: Bool { getuid() == 0 && access(path, F_OK) != 0 }

    init() throws {
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in Self.path.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            close(socket)
            throw POSIXError(.EADDRINUSE)
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(socket)
        unlink(Self.path)
    }

    /// The first datagram that contains `text`, or `nil` when none came within `timeout`.
    func firstLine(containing text: String, timeout: Duration) -> String? {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let line = String(decoding: buffer[0..<count], as: UTF8.self)
            if line.contains(text) { return line }
        }
        return nil
    }
}

internal import CProcessGuard
internal import KindlyPushCore

/// A decrypted Kindly push as the host's delegate sees it, named as in the iOS SDK.
public struct ExternalNotification: Sendable, Equatable {
    /// The decrypted chat id (from the payload, or from `kindly.chat_id` when the extension
    /// decrypted the push already).
    public let id: String
    /// The decrypted banner title.
    public let title: String
    /// The decrypted banner text.
    public let body: String
    /// The chat message's id, when the backend sent one.
    public let messageId: String?
    /// The push exactly as the app received it (still sealed, or as the extension rewrote it).
    /// The `KindlyPush` module gives it as a userInfo dictionary under this name, as on iOS;
    /// ``userInfoJSON`` is this value under a name it does not shadow.
    public let userInfo: JSONValue

    /// `userInfo` as a `JSONValue`, in every module (in `KindlyPush`, `userInfo` is the dictionary).
    public var userInfoJSON: JSONValue { userInfo }

    /// A notification with these fields.
    public init(id: String, title: String, body: String, messageId: String? = nil, userInfo: JSONValue) {
        self.id = id
        self.title = title
        self.body = body
        self.messageId = messageId
        self.userInfo = userInfo
    }

    /// The notification for `message`, received as `userInfo`.
    public init(_ message: DisplayMessage, userInfo: JSONValue) {
        self.init(id: message.chatId, title: message.title, body: message.body, messageId: message.messageId, userInfo: userInfo)
    }
}

/// Lets the host decide, for each decrypted Kindly push, whether the SDK presents it.
///
/// The SDK asks exactly once for every Kindly push that the app process has in decrypted form
/// (in the foreground every kind, in the background silent pushes), whatever the screen, before
/// the display rule is applied. It never asks for a push that did not decrypt (there is nothing
/// to show the host but ciphertext), and the notification service extension never asks (the
/// host's delegate does not live in the extension's process).
///
/// Any type can be a delegate, as on iOS: a struct, a final class, a main-actor class such as a
/// view controller (`extension ViewController: KindlyNotificationDelegate`, as the iOS SDK's push
/// guide writes it), or a non-final class whose superclass is not `Sendable` (`class
/// ChatViewController: ChatScreen, KindlyNotificationDelegate`).
///
/// ## Where the delegate is asked
///
/// The requirement is the main actor's, as UIKit asks every delegate on the main thread: the
/// handler asks on the main actor, at once when the push is delivered on the main thread, and
/// otherwise by handing the question to the main actor and waiting for its answer (a push
/// delivered from a transport's thread). So a host that sets a delegate of its own runs the main
/// actor: an async `main`, `dispatchMain()` or `RunLoop.main`, as a Swift app on Linux does. In a
/// process whose main actor does not answer (its main thread blocked, or in a GLib main loop that
/// does not drain Dispatch's main queue) the handler waits
/// ``KindlyNotificationHandler/mainActorWait`` at most, logs an error that says so, and allows
/// the push. A ``ClosureNotificationDelegate`` is asked on the thread that delivered the push:
/// it needs no main actor.
///
/// The handler takes what it is given in one of two ways, and the compiler checks both:
///
/// - ``KindlyNotificationHandler/setDelegate(_:)`` takes any delegate as `sending`: the handler
///   owns it from then on (the caller keeps no reference it could use from another thread) and
///   asks it one call at a time.
/// - ``KindlyNotificationHandler/delegate`` takes a `Sendable` delegate: a main-actor class, or
///   a ``ClosureNotificationDelegate``.
///
/// Answer quickly and do not block: the push waits for the answer.
public protocol KindlyNotificationDelegate {
    /// `true` (allow) lets the SDK present the push; `false` (suppress) means the host shows it
    /// its own way, or not at all.
    ///
    /// As in the iOS SDK, the requirement has a default implementation that returns `true`, so a
    /// type that only observes other events conforms with nothing to write
    /// (`final class AppCoordinator: KindlyNotificationDelegate {}`). The price: a method spelled
    /// slightly differently (`shouldHandleNotification(_:)`, say) is a method of its own, the
    /// default answers instead, and every banner shows. Spell it exactly
    /// `shouldHandleNotification(notification:)` (the handler logs once, at `info`, when the
    /// default answered, which finds such a method). For a delegate without a type of its own, use
    /// ``ClosureNotificationDelegate``.
    @MainActor func shouldHandleNotification(notification: ExternalNotification) -> Bool
}

extension KindlyNotificationDelegate {
    /// The iOS SDK's default: `true`, every push is presented (subject to the display rule). A
    /// handler whose delegate answers with it says so once, at `info` (a misspelled method is
    /// easier to find with that line).
    nonisolated public func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        DefaultDelegateAnswer.used?.withLock { $0 = true }
        return true
    }
}

/// Whether the default `shouldHandleNotification` answered, while a handler asks its delegate.
enum DefaultDelegateAnswer {
    @TaskLocal static var used: Locked<Bool>?
}

/// A delegate that answers on whatever thread asks it: it needs no main actor (a closure
/// delegate), or it reaches the one its own delegate needs (the handler's wrappers).
protocol AnswersOnAnyThread: Sendable {
    func answerOnAnyThread(_ notification: ExternalNotification) -> Bool
}

/// Asking a delegate where it can answer: see "Where the delegate is asked" in
/// ``KindlyNotificationDelegate``.
package enum DelegateQuestion {
    /// How long a push delivered off the main thread waits for a main-actor delegate's answer
    /// before it is allowed (the main actor does not run in this process, or is blocked).
    static let mainActorWait: Duration = .seconds(10)
    /// `delegate`'s answer for `notification`, asked on the main actor unless it answers on any
    /// thread; `true` (logged, each time) when the main actor does not answer within `wait`.
    package static func ask(
        _ delegate: any KindlyNotificationDelegate & Sendable, _ notification: ExternalNotification,
        logger: KindlyLogger = .default, wait: Duration = mainActorWait
    ) -> Bool {
        if let anywhere = delegate as? any AnswersOnAnyThread { return anywhere.answerOnAnyThread(notification) }
        if isOnMainActor {
            return MainActor.assumeIsolated { delegate.shouldHandleNotification(notification: notification) }
        }
        // The answer and its signal outlive a wait that gave up: a late answer is dropped.
        let answer = Locked<Bool?>(nil)
        let answered = Semaphore()
        // The default answer's watch goes along to the main actor.
        let watch = DefaultDelegateAnswer.used
        Task { @MainActor in
            let decided = DefaultDelegateAnswer.$used.withValue(watch) { delegate.shouldHandleNotification(notification: notification) }
            answer.withLock { $0 = decided }
            answered.signal()
        }
        if answered.wait(upTo: wait), let decided = answer.withLock({ $0 }) { return decided }
        logger.log(
            .error,
            "the delegate is asked on the main actor, which did not answer within \(wait.messageText): the push was allowed; run the main actor (an async main, dispatchMain() or RunLoop.main), or set a ClosureNotificationDelegate, which answers on any thread"
        )
        return true
    }

    /// Whether the caller runs on the main actor (Dispatch's main queue; see `kp_on_main_queue`).
    package static var isOnMainActor: Bool { kp_on_main_queue() != 0 }
}

/// A handler's delegate, watched for the default answer: `defaulted` is called when it answered.
struct DefaultWatchingDelegate: KindlyNotificationDelegate, AnswersOnAnyThread {
    let delegate: any KindlyNotificationDelegate & Sendable
    let logger: KindlyLogger
    let defaulted: @Sendable () -> Void

    nonisolated func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        answerOnAnyThread(notification)
    }

    func answerOnAnyThread(_ notification: ExternalNotification) -> Bool {
        let used = Locked(false)
        let answer = DefaultDelegateAnswer.$used.withValue(used) {
            DelegateQuestion.ask(delegate, notification, logger: logger)
        }
        if used.withLock({ $0 }) { defaulted() }
        return answer
    }
}

/// A delegate of any type, owned: it was handed over as `sending`, so no other isolation domain
/// holds it, and it is only ever called with `gate` held, one call at a time, on the main actor.
/// That is what makes the unchecked conformance true (the pattern of the standard library's
/// `Mutex`). The gate is recursive, so a delegate that delivers another push from inside its
/// answer does not deadlock.
final class OwnedNotificationDelegate: KindlyNotificationDelegate, @unchecked Sendable {
    private let owned: any KindlyNotificationDelegate
    private let gate = Locked((), recursive: true)

    init(_ delegate: sending any KindlyNotificationDelegate) {
        owned = delegate
    }

    @MainActor func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        gate.whileLocked { owned.shouldHandleNotification(notification: notification) }
    }
}

/// A delegate made from a closure, for hosts and tests that need no type of their own.
///
/// ```swift
/// handler.delegate = ClosureNotificationDelegate { notification in
///     notification.id != chatOnScreen   // suppress banners for the chat being read
/// }
/// ```
public struct ClosureNotificationDelegate: KindlyNotificationDelegate, Sendable {
    private let decide: @Sendable (ExternalNotification) -> Bool

    /// A delegate that answers with `decide`.
    public init(_ decide: @escaping @Sendable (ExternalNotification) -> Bool) {
        self.decide = decide
    }

    /// A delegate that allows every push (what the SDK does when no delegate is set).
    public static let allowAll = ClosureNotificationDelegate { _ in true }

    /// The closure's answer, on the thread that asks (a closure delegate needs no main actor).
    nonisolated public func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        decide(notification)
    }
}

extension ClosureNotificationDelegate: AnswersOnAnyThread {
    func answerOnAnyThread(_ notification: ExternalNotification) -> Bool { decide(notification) }
}

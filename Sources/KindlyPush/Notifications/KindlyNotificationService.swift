import Dispatch
import Foundation
internal import KindlyPushCore

/// The notification service extension's base type, standing in for the iOS SDK's subclass of
/// `UNNotificationServiceExtension`: it decrypts a visible Kindly push and hands the system the
/// decrypted content, or the content unchanged (the backend's placeholder) when it cannot.
///
/// ```swift
/// final class NotificationService: KindlyNotificationServiceExtension {}
///
/// final class ThreadedNotificationService: KindlyNotificationService {
///     override func customize(_ content: inout NotificationContent, payload: DecryptedPayload?) {
///         if let payload { content.threadIdentifier = payload.chatId }
///     }
/// }
/// ```
///
/// ``init()`` reads the keys from ``KindlyPushDecryption/standard`` (the process's default
/// keyring), as the iOS SDK's extension reads the shared keychain, so the empty subclass above is
/// a whole extension; a subclass inherits it and the other initializer.
///
/// For every ``didReceive(_:withContentHandler:)`` the content handler is called exactly once:
/// with the decrypted (and customized) content, or with the content unchanged when decryption
/// fails, when ``deadline`` passes first, or when ``serviceExtensionTimeWillExpire()`` is called
/// first. Decryption runs on a thread of its own, so a keyring that is slow or hangs cannot delay
/// delivery past the deadline; a result that arrives later is discarded.
///
/// ## Threads, and a subclass's state
///
/// The service is made and called from any thread, as the system calls an extension. A subclass
/// keeps state as an iOS one does, in a stored `var`, with no word added: the service calls the
/// two forms of `customize(_:payload:)` for one push at a time (a lock of its own, held across
/// both), so state that only `customize` touches is never touched by two threads at once. State
/// that an override of ``didReceive(_:withContentHandler:)`` or
/// ``serviceExtensionTimeWillExpire()`` shares with `customize` is the subclass's to guard, as on
/// iOS. The class is not `Sendable` (neither is `UNNotificationServiceExtension`): hand a service
/// to another thread with `sending`, or keep it where it was made.
///
/// The extension never consults the host's `shouldHandleNotification`: that delegate lives in
/// the app process.
open class KindlyNotificationService {
    /// The system gives an extension about 30 seconds before it kills it; the default deadline
    /// leaves 3 seconds of margin so that the placeholder is handed over before that.
    public static let defaultDeadline: Duration = .seconds(27)

    /// How pushes are decrypted (the keyring the extension shares with the app).
    public let decryption: KindlyPushDecryption
    /// How long after ``didReceive(_:withContentHandler:)`` the content is handed over unchanged
    /// if decryption has not finished.
    public let deadline: Duration
    /// Where the service logs; by default ``KindlyLogger/default`` (warnings and errors to the
    /// system log, unless the host set another).
    public let logger: KindlyLogger

    /// The deliveries whose content handler has not been called yet.
    private let pending = Locked<[Delivery]>([])
    /// Held while `customize` runs, so that it runs for one push at a time.
    private let customizing = Locked((), recursive: true)
    /// Serves the deadlines. A private serial queue always gets a thread of its own, so the
    /// deadline fires even when decryption threads are blocked.
    private let timerQueue = DispatchQueue(label: "kindly-push.notification-service.deadline")

    /// A service that decrypts with `decryption`, hands content over by `deadline` at the
    /// latest, and logs to `logger` (``KindlyLogger/default`` as it is now, unless given).
    public init(
        decryption: KindlyPushDecryption, deadline: Duration = KindlyNotificationService.defaultDeadline,
        logger: KindlyLogger = .default
    ) {
        self.decryption = decryption
        self.deadline = deadline
        self.logger = logger
    }

    /// The service as the system makes an extension: the keys of ``KindlyPushDecryption/standard``
    /// (the process's default keyring, read now), the default deadline, ``KindlyLogger/default``.
    /// A subclass that declares no initializer of its own inherits it; it is designated, as the
    /// iOS SDK's `override public init()` is, so a subclass may override it (`override init()`)
    /// and call `super.init()`.
    public init() {
        self.decryption = .standard
        self.deadline = KindlyNotificationService.defaultDeadline
        self.logger = .default
    }

    /// Override to change the content before it is shown: called once per push with the content
    /// already decrypted and `payload`, or with the content unchanged and `payload` `nil` when
    /// decryption failed. It is not called when the deadline passed first, nor for a push that is
    /// not Kindly's or that is marked decrypted already. It runs on the service's decryption
    /// thread, inside the deadline: a slow `customize` also ends in the placeholder. The default
    /// changes nothing.
    open func customize(_ content: inout NotificationContent, payload: DecryptedPayload?) {}

    /// The iOS SDK's form of the `inout` `customize(_:payload:)`, for code ported
    /// from it (`UNMutableNotificationContent` becomes ``MutableNotificationContent``): change
    /// `content` in place. Called at the same moments, just before the `inout` form, and with
    /// the same content. The default changes nothing.
    ///
    /// The service calls the two forms for one push at a time (a lock of its own, held across
    /// both), so a stored property that only `customize` touches is never touched by two threads
    /// at once.
    open func customize(_ content: MutableNotificationContent, payload: DecryptedPayload?) {}

    /// Decrypts the push of `content` and calls `contentHandler` exactly once (see the type's
    /// documentation). A push that is not Kindly's, or that is already marked decrypted, is
    /// handed back unchanged at once. A subclass that also serves another provider can override
    /// this, check `KindlyPushDecryption.isKindlyNotification`, and call `super` for Kindly's.
    ///
    /// As on iOS, `contentHandler` is called once, and not necessarily on the thread that called
    /// this: from the decryption's thread, the deadline's, or the caller of
    /// ``serviceExtensionTimeWillExpire()``. It is declared as UIKit declares it (not
    /// `@Sendable`), so an override can pass its own handler on to `super`; what the handler
    /// captures is the host's to keep safe from another thread, as on iOS.
    open func didReceive(
        _ content: NotificationContent, withContentHandler contentHandler: @escaping (NotificationContent) -> Void
    ) {
        let userInfo = JSONValue.object(content.userInfo)
        guard KindlyPushDecryption.isKindlyNotification(userInfo), !KindlyPushDecryption.isDecrypted(userInfo: userInfo) else {
            contentHandler(content)
            return
        }
        let delivery = Delivery(original: content, handler: ContentHandler(contentHandler))
        pending.withLock { $0.append(delivery) }
        let service = ServiceReference(self)
        let deadline = deadline

        timerQueue.asyncAfter(deadline: .now() + KindlyNotificationService.dispatchInterval(deadline)) {
            if service.object.finish(delivery, with: delivery.original) {
                service.object.logger.log(.warning, "decryption did not finish within \(deadline): delivered the placeholder")
            }
        }
        // A thread per push, not a task or a global queue: a keyring that hangs must not take a
        // thread that the deadline or other work needs.
        let worker = Thread {
            let service = service.object
            let logger = service.logger
            let decryption = service.decryption
            let result = decryption.decryptResult(userInfo: userInfo)
            guard !delivery.isDone else {
                logger.log(.info, "decryption finished after the content was delivered: its result was discarded")
                return
            }
            var updated = delivery.original
            let payload: DecryptedPayload?
            switch result {
            case .success(let decrypted):
                KindlyPushDecryption.apply(decrypted, to: &updated)
                payload = decrypted
            case .failure(let failure):
                logger.log(.warning, "a Kindly push did not decrypt (\(failure.reason.code)): delivered the placeholder")
                payload = nil
            }
            updated = service.customized(updated, payload: payload)
            if !service.finish(delivery, with: updated) {
                logger.log(.info, "decryption finished after the content was delivered: its result was discarded")
            }
        }
        worker.name = "kindly-push.notification-service.decrypt"
        worker.start()
    }

    /// `content` after both forms of `customize`, one push at a time.
    private func customized(_ content: NotificationContent, payload: DecryptedPayload?) -> NotificationContent {
        customizing.whileLocked {
            let reference = MutableNotificationContent(content)
            customize(reference, payload: payload)
            var updated = reference.content
            customize(&updated, payload: payload)
            return updated
        }
    }

    /// The system is about to kill the extension: every push not yet delivered is handed over
    /// unchanged, once.
    open func serviceExtensionTimeWillExpire() {
        let deliveries = pending.withLock { $0 }
        for delivery in deliveries where finish(delivery, with: delivery.original) {
            logger.log(.warning, "the extension's time expired before decryption finished: delivered the placeholder")
        }
    }

    /// Calls the delivery's handler with `content` unless it was called already; true when it
    /// did. The once-gate is the delivery's own lock, so the deadline, expiry and the decryption
    /// thread can race without a second call.
    private func finish(_ delivery: Delivery, with content: NotificationContent) -> Bool {
        guard delivery.claim() else { return false }
        pending.withLock { deliveries in deliveries.removeAll { $0 === delivery } }
        delivery.handler.call(content)
        return true
    }

    /// `duration` for Dispatch: a deadline of zero or less fires at once.
    static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        guard duration > .zero else { return .nanoseconds(0) }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow else { return .never }
        return .nanoseconds(Int(clamping: nanoseconds.partialValue + attoseconds / 1_000_000_000))
    }

    /// The service, for the threads it starts for one push: the deadline's and the decryption's.
    /// Unchecked, and true: what those threads use of the service is its own `let`s (locks and
    /// `Sendable` values) and `customize`, which they call under the `customizing` lock, one
    /// push at a time; a subclass's state that only `customize` touches is never touched by two
    /// threads at once.
    private struct ServiceReference: @unchecked Sendable {
        let object: KindlyNotificationService
        init(_ object: KindlyNotificationService) { self.object = object }
    }

    /// The host's content handler, declared as UIKit declares it: called once, from whichever of
    /// the service's threads finishes the delivery first (the once-gate is ``Delivery/claim()``).
    /// Unchecked, as UIKit's is: the system calls an extension's handler from a queue of its own,
    /// and what the handler captures is the host's to keep safe from another thread.
    private struct ContentHandler: @unchecked Sendable {
        let call: (NotificationContent) -> Void
        init(_ call: @escaping (NotificationContent) -> Void) { self.call = call }
    }

    /// One push being served: its original content, its handler, and whether the handler ran.
    private final class Delivery: Sendable {
        let original: NotificationContent
        let handler: ContentHandler
        private let done = Locked(false)

        init(original: NotificationContent, handler: ContentHandler) {
            self.original = original
            self.handler = handler
        }

        var isDone: Bool { done.withLock { $0 } }

        /// Marks the delivery done; true for the one caller that got there first.
        func claim() -> Bool {
            done.withLock { done in
                if done { return false }
                done = true
                return true
            }
        }
    }
}

/// The iOS SDK's name for the notification service extension's base class.
public typealias KindlyNotificationServiceExtension = KindlyNotificationService

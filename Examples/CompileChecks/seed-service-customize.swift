// Compiles: `customize(_:payload:)` overridden as the iOS SDK's class reference declares it, and
// a stored property of the subclass updated in it (tools/examples). Seed
// (class reference, KindlyNotificationServiceExtension):
//   open func customize(_ content: UNMutableNotificationContent, payload: KindlyPushDecryption.DecryptedPayload?)
// `UNMutableNotificationContent` becomes `MutableNotificationContent`. The stored `var` takes
// one word, `nonisolated(unsafe)` (see "Porting from iOS"): the base class is main-actor
// isolated and `customize` is not; the service calls `customize` for one push at a time.
import KindlyPush

final class NotificationService: KindlyNotificationServiceExtension {
    nonisolated(unsafe) var customized = 0

    override func customize(_ content: MutableNotificationContent, payload: KindlyPushDecryption.DecryptedPayload?) {
        customized += 1
        content.categoryIdentifier = "kindly-message"
        if let payload {
            content.threadIdentifier = payload.chatId
        }
    }
}

// Compiles: `customize(_:payload:)` overridden as the iOS SDK's class reference declares it, and
// a stored property of the subclass updated in it (tools/examples). Seed
// (class reference, KindlyNotificationServiceExtension):
//   open func customize(_ content: UNMutableNotificationContent, payload: KindlyPushDecryption.DecryptedPayload?)
// `UNMutableNotificationContent` becomes `MutableNotificationContent`. The stored `var` takes no
// word: the service calls `customize` for one push at a time, under a lock of its own.
import KindlyPush

final class NotificationService: KindlyNotificationServiceExtension {
    var customized = 0

    override func customize(_ content: MutableNotificationContent, payload: KindlyPushDecryption.DecryptedPayload?) {
        customized += 1
        content.categoryIdentifier = "kindly-message"
        if let payload {
            content.threadIdentifier = payload.chatId
        }
    }
}

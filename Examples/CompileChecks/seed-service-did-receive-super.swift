// Compiles: a service subclass that overrides `didReceive`, serves another provider's pushes and
// calls `super` with the content handler for Kindly's, as the iOS SDK's class reference declares
// it (tools/examples). Seed (class reference,
// KindlyNotificationServiceExtension):
//   override open func didReceive(_ request: UNNotificationRequest,
//       withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void)
// `UNNotificationRequest` and `UNNotificationContent` become `NotificationContent`; no word
// added (the handler is declared as UIKit declares it, not `@Sendable`).
import KindlyPush

enum OtherProvider {
    static func didReceive(_ content: NotificationContent, _ contentHandler: @escaping (NotificationContent) -> Void) {
        contentHandler(content)
    }
}

final class NotificationService: KindlyNotificationServiceExtension {
    override func didReceive(
        _ request: NotificationContent, withContentHandler contentHandler: @escaping (NotificationContent) -> Void
    ) {
        guard KindlyPushDecryption.isKindlyNotification(request.userInfo) else {
            OtherProvider.didReceive(request, contentHandler)
            return
        }
        super.didReceive(request, withContentHandler: contentHandler)
    }
}

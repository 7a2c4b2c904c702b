// Compiles: a host's own notification-center delegate on the main actor forwarding `willPresent`
// and its UIKit-style completion handler, as the iOS SDK's push guide writes it (tools/examples).
// Seeds (push guide, "your own delegate"; class reference, KindlySDK):
//   call kindlysdk notificationwillpresent(notification, completionhandler ) for kindly
//   notifications from willpresent so the sdk's display rule applies
//   class func notificationWillPresent(_ notification: UNNotification,
//       completionHandler: @escaping (UNNotificationPresentationOptions) -> Void)
// `UNNotification` becomes `NotificationContent`, `UNNotificationPresentationOptions`
// `PresentationOptions`; the delegate method stands in for
// `userNotificationCenter(_:willPresent:withCompletionHandler:)`.
import KindlyPush

@MainActor
final class AppDelegate {
    let handler = KindlyNotificationHandler(decryption: .standard, hasExtension: true, openChat: { _ in })

    func userNotificationCenter(
        willPresent notification: NotificationContent,
        withCompletionHandler completionHandler: @escaping (PresentationOptions) -> Void
    ) {
        if KindlyPushDecryption.isKindlyNotification(notification.userInfo) {
            handler.notificationWillPresent(notification, completionHandler: completionHandler)
        } else {
            completionHandler([.banner, .sound])
        }
    }
}

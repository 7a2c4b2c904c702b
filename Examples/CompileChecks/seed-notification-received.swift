// Compiles: a notification handed to the handler as a notification, not as its userInfo, as the
// iOS SDK's class reference and push guide declare it (tools/examples). Seeds
// (class reference, KindlySDK; push guide, "push notifications in handover"):
//   class func notificationReceived(_ notification: UNNotification)
//   kindlysdk notificationreceived( notification unnotification)
// `UNNotification` becomes `NotificationContent`.
import KindlyPush

final class AppDelegate {
    let handler = KindlyNotificationHandler(decryption: .standard, hasExtension: true, openChat: { _ in })

    func userNotificationCenter(willPresent notification: NotificationContent) {
        handler.notificationReceived(notification)
    }

    // Seed (class reference, KindlySDK): class func notificationResponseReceived(_ response: UNNotificationResponse)
    func userNotificationCenter(didReceive response: NotificationContent) {
        handler.notificationResponseReceived(response)
    }

    func application(didReceiveRemoteNotification userInfo: [AnyHashable: Any]) {
        if KindlyPushDecryption.isKindlyNotification(userInfo) {
            handler.notificationReceived(userInfo)
        }
    }
}

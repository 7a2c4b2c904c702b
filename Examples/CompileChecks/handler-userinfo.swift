// Compiles: the app delegate's notification callbacks as the iOS documentation writes them,
// with the userInfo dictionaries UIKit gives (tools/examples). The methods stand in for
// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)` and
// `userNotificationCenter(_:didReceive:withCompletionHandler:)`.
import KindlyPush

struct ChatScreenDelegate: KindlyNotificationDelegate {
    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        let kindly = notification.userInfo["kindly"] as? [AnyHashable: Any]
        return kindly?["chat_id"] as? String != "c-on-screen"
    }
}

final class AppDelegate {
    let handler = KindlyNotificationHandler(decryption: .standard, hasExtension: true, openChat: { _ in })

    func applicationDidFinishLaunching() {
        handler.delegate = ChatScreenDelegate()
        handler.start()
    }

    func application(didReceiveRemoteNotification userInfo: [AnyHashable: Any]) {
        if KindlyPushDecryption.isKindlyNotification(userInfo) {
            handler.notificationReceived(userInfo)
        }
    }

    func userNotificationCenter(didReceive userInfo: [AnyHashable: Any]) {
        handler.notificationResponseReceived(userInfo)
    }

    func decryptInPlace(_ userInfo: [AnyHashable: Any]) -> [AnyHashable: Any] {
        guard let payload = KindlyPushDecryption.decrypt(userInfo: userInfo) else { return userInfo }
        return KindlyPushDecryption.apply(payload, toUserInfo: userInfo)
    }
}

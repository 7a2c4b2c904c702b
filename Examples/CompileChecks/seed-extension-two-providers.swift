// Compiles: a host's own notification service extension that serves two providers, as the iOS
// SDK's class reference describes it (tools/examples). Seed (class reference,
// KindlyNotificationServiceExtension):
//   Hosts that already have their own extension for another provider keep it and call
//   `KindlyPushDecryption.decrypt(userInfo:)` plus `KindlyPushDecryption.apply(_:to:)` themselves.
// and (push guide, "api"):
//   public static func isKindlyNotification(_ userInfo: [AnyHashable: Any]) -> Bool
//   public static func decrypt(userInfo: [AnyHashable: Any]) -> DecryptedPayload?
// `UNNotificationServiceExtension` is the host's own class here; `request.content` is a
// `NotificationContent`, and its `mutableCopy()` a `MutableNotificationContent`.
import KindlyPush

enum OtherProvider {
    static func didReceive(_ content: NotificationContent, _ contentHandler: @escaping (NotificationContent) -> Void) {
        contentHandler(content)
    }
}

final class NotificationService {
    func didReceive(_ request: NotificationContent, withContentHandler contentHandler: @escaping (NotificationContent) -> Void) {
        let content = MutableNotificationContent(request)
        guard KindlyPushDecryption.isKindlyNotification(content.userInfo) else {
            OtherProvider.didReceive(request, contentHandler)
            return
        }
        if let payload = KindlyPushDecryption.decrypt(userInfo: content.userInfo) {
            KindlyPushDecryption.apply(payload, to: content)
        }
        contentHandler(content.content)
    }

    // The same with the value type: its `userInfo` is taken as it is.
    func didReceive(value request: NotificationContent, withContentHandler contentHandler: @escaping (NotificationContent) -> Void) {
        var content = request
        if KindlyPushDecryption.isKindlyNotification(content.userInfo),
            let payload = KindlyPushDecryption.decrypt(userInfo: content.userInfo)
        {
            KindlyPushDecryption.apply(payload, to: &content)
        }
        contentHandler(content)
    }
}

// Content built from the dictionary a provider's SDK hands over.
func content(from userInfo: [AnyHashable: Any]) -> NotificationContent {
    NotificationContent(userInfo: userInfo)
}

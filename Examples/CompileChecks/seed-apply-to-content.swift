// Compiles: `apply(_:to:)` on content held by reference, as the iOS SDK's push guide declares it
// (tools/examples). Seed (push guide, "api"):
//   public static func apply(_ payload: DecryptedPayload, to content: UNMutableNotificationContent)
// `UNMutableNotificationContent` becomes `MutableNotificationContent`; the value type's
// `apply(payload, to: &content)` stays beside it.
import KindlyPush

func rewrite(_ content: MutableNotificationContent) {
    if let payload = KindlyPushDecryption.decrypt(userInfo: content.userInfo) {
        KindlyPushDecryption.apply(payload, to: content)
    }
}

func rewrite(value: NotificationContent) -> NotificationContent {
    var content = value
    if let payload = KindlyPushDecryption.decrypt(userInfo: content.userInfo) {
        KindlyPushDecryption.apply(payload, to: &content)
    }
    return content
}

// Compiles: the notification service extension as the iOS documentation writes it, an empty
// subclass, with no initializer and no `@unchecked Sendable` of its own (tools/examples).
import KindlyPush

final class NotificationService: KindlyNotificationServiceExtension {}

final class ThreadedNotificationService: KindlyNotificationServiceExtension {
    override func customize(_ content: inout NotificationContent, payload: DecryptedPayload?) {
        if let payload { content.threadIdentifier = payload.chatId }
    }
}

func makeExtensions() -> [any Sendable] {
    [NotificationService(), ThreadedNotificationService()]
}

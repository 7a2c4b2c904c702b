// Compiles: the notification service extension as the iOS documentation writes it, an empty
// subclass, with no initializer (tools/examples); and a service handed to another thread as a
// host's transport does, with `sending` checked by the compiler and no word added. Like
// `UNNotificationServiceExtension`, the class is not `Sendable`.
import KindlyPush

final class NotificationService: KindlyNotificationServiceExtension {}

final class ThreadedNotificationService: KindlyNotificationServiceExtension {
    override func customize(_ content: inout NotificationContent, payload: DecryptedPayload?) {
        if let payload { content.threadIdentifier = payload.chatId }
    }
}

func serve(_ content: NotificationContent, deliver: @escaping @Sendable (NotificationContent) -> Void) {
    let service = ThreadedNotificationService()
    Task.detached { service.didReceive(content, withContentHandler: deliver) }
}

let extensions = [NotificationService(), ThreadedNotificationService()]

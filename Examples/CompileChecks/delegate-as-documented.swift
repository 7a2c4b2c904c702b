// Compiles: the delegate as the iOS documentation writes it (tools/examples, the control).
import KindlyPush

struct ChatScreenDelegate: KindlyNotificationDelegate {
    func shouldHandleNotification(notification: ExternalNotification) -> Bool { false }
}

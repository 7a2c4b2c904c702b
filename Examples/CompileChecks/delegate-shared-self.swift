// Must not compile: handing the handler a non-Sendable delegate that the caller keeps using.
// The handler asks its delegate on the thread that delivered the push, so `self` would be used
// from two threads; `setDelegate` takes its delegate as `sending`, and the compiler refuses this
// (tools/examples checks the error). Strict concurrency stays honest.
import KindlyPush

class ViewController {}

class ChatListViewController: ViewController, KindlyNotificationDelegate {
    var chatOnScreen: String?

    func install(on handler: KindlyNotificationHandler) {
        handler.setDelegate(self)
        chatOnScreen = "c-1"
    }

    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        notification.id != chatOnScreen
    }
}

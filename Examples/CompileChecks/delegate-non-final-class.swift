// Compiles: a delegate on a non-final class whose superclass is not Sendable, as the iOS
// documentation writes it on a view controller (tools/examples). `ViewController` stands in for
// UIKit's `UIViewController`, which Linux does not have.
import KindlyPush

class ViewController {
    func viewDidLoad() {}
}

class ChatListViewController: ViewController, KindlyNotificationDelegate {
    var chatOnScreen: String?

    override func viewDidLoad() {
        super.viewDidLoad()
    }

    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        notification.id != chatOnScreen
    }
}

class ArchiveViewController: ChatListViewController {
    override func shouldHandleNotification(notification: ExternalNotification) -> Bool { false }
}

func install(on handler: KindlyNotificationHandler) {
    handler.setDelegate(ChatListViewController())
    handler.setDelegate(ArchiveViewController())
}

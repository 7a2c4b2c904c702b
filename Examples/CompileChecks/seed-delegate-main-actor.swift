// Compiles: a view controller on the main actor that sets itself as the delegate and conforms in
// an extension, exactly as the iOS SDK's push guide writes it, no word added (tools/examples).
// Seed (push guide, "implementation"):
//   1. set the delegate: KindlySDK.delegate = self
//   2. conform to KindlyChatClientDelegate: extension ViewController: KindlyChatClientDelegate {
//      func shouldHandleNotification(notification: ExternalNotification) -> Bool { ... } }
// `UIViewController` becomes a `@MainActor` class. The requirement is the main actor's, and the
// handler asks it there, from whatever thread delivered the push (IOSPortingTests delivers from
// another thread).
import KindlyPush

@MainActor
class ViewController {
    let handler = KindlyNotificationHandler(decryption: .standard, hasExtension: true, openChat: { _ in })
    var isShowingCustomInbox = false
    var customInbox: [ExternalNotification] = []

    func viewDidLoad() {
        handler.delegate = self
    }
}

extension ViewController: KindlyNotificationDelegate {
    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        if isShowingCustomInbox {
            customInbox.append(notification)
            return false
        }
        return true
    }
}

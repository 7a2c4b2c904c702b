// Must not compile: seed-delegate-main-actor.swift without `@preconcurrency` on the conformance,
// exactly as the iOS SDK's push guide writes it (tools/examples checks the
// error). Swift 6 refuses a main-actor method as the answer to a requirement the handler calls
// on the thread that delivered the push; the word is the one-line change "Porting from iOS" names.
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

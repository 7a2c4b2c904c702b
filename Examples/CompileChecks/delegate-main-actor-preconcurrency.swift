// Compiles: the main-actor delegate as earlier releases documented it, with `@preconcurrency` on
// the conformance (tools/examples): code written for them keeps compiling, and the word is no
// longer needed (seed-delegate-main-actor.swift is the seed without it).
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

extension ViewController: @preconcurrency KindlyNotificationDelegate {
    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        if isShowingCustomInbox {
            customInbox.append(notification)
            return false
        }
        return true
    }
}

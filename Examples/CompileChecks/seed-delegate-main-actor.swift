// Compiles: a view controller on the main actor that sets itself as the delegate and conforms in
// an extension, as the iOS SDK's push guide writes it (tools/examples). Seed
// (push guide, "implementation"):
//   1. set the delegate: KindlySDK.delegate = self
//   2. conform to KindlyChatClientDelegate: extension ViewController: KindlyChatClientDelegate {
//      func shouldHandleNotification(notification: ExternalNotification) -> Bool { ... } }
// `UIViewController` becomes a `@MainActor` class. One word more than on iOS, `@preconcurrency`
// on the conformance (see "Porting from iOS"): the handler asks its delegate on the thread that
// delivered the push, and Swift 6 will not let a main-actor method answer a nonisolated
// requirement unchecked. With it the host forwards pushes from the main actor, as UIKit does,
// and a call from another thread stops at a runtime check instead of racing.
// seed-delegate-main-actor-unmarked.swift is the same without the word, which must not compile.
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

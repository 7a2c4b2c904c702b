// Must not compile: a near-miss of the requirement's label. With a default implementation it
// would compile into a delegate that is never asked, and every banner would show
// (tools/examples checks the error).
import KindlyPush

struct ChatScreenDelegate: KindlyNotificationDelegate {
    func shouldHandleNotification(_ notification: ExternalNotification) -> Bool { false }
}

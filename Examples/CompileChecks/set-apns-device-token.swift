// Compiles: registering the APNs device token as the iOS documentation writes it: no `try`, no
// returned registration; where registrations go is set once (tools/examples). The method stands
// in for `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
import Foundation
import KindlyPush

final class AppDelegate {
    let handler = KindlyNotificationHandler(decryption: .standard, hasExtension: true, openChat: { _ in })

    init(send: @escaping @Sendable (Data) -> Void) {
        handler.sendRegistration = { registration in send(registration.json.compactData) }
    }

    func application(didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        handler.setAPNSDeviceToken(deviceToken)
    }
}

// Compiles: a notification service subclass that overrides the designated initializer, as the
// iOS SDK's class reference declares it (tools/examples). Seed (class
// reference, KindlyNotificationServiceExtension):
//   | `init()` | `override public init()` | |
import KindlyPush

final class NotificationService: KindlyNotificationServiceExtension {
    let startedAt: ContinuousClock.Instant

    override init() {
        startedAt = .now
        super.init()
    }
}

func makeExtension() -> NotificationService {
    NotificationService()
}

// Compiles: a delegate that implements nothing, as the iOS SDK's push guide allows it
// (tools/examples). Seed (push guide, "notes"):
//   the method has a default implementation that returns true, so you only need to implement it
//   if you want to observe or intercept notifications
import KindlyPush

final class AppCoordinator: KindlyNotificationDelegate {}

func install(on handler: KindlyNotificationHandler) {
    handler.setDelegate(AppCoordinator())
}

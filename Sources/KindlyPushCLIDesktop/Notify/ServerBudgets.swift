internal import KindlyPushCLI
internal import KindlyPushSecretService

/// How long the desktop's servers have for each call, and the test suite's hooks that set
/// another budget: a test of what a server stores or shows must not depend on how soon a loaded
/// machine schedules that server. The hooks are `KINDLY_PUSH_TEST_*` variables (the manual page
/// says that nothing else may set them); the budgets' own tests run without them.
extension CommandEnvironment {
    /// The notification server's budget: `fallback`, or `KINDLY_PUSH_TEST_NOTIFICATION_BUDGET_MS`
    /// (a call that runs out is kept and retried, and a server that answered late then shows
    /// that push twice).
    func notificationServerBudget(default fallback: Duration) -> Duration {
        milliseconds("KINDLY_PUSH_TEST_NOTIFICATION_BUDGET_MS") ?? fallback
    }

    /// The Secret Service's budget for each keyring operation: the library's 1.5 s, or
    /// `KINDLY_PUSH_TEST_SECRET_SERVICE_BUDGET_MS`.
    var secretServiceBudget: Duration {
        milliseconds("KINDLY_PUSH_TEST_SECRET_SERVICE_BUDGET_MS") ?? SecretServiceKeyring.defaultTimeout
    }

    private func milliseconds(_ name: String) -> Duration? {
        self[name].flatMap { Int($0) }.flatMap { $0 > 0 ? .milliseconds($0) : nil }
    }
}

import Foundation
import Testing

/// What the Secret Service tests know about their surroundings.
enum SecretServiceTestEnvironment {
    /// tools/with-secret-service sets this when a private gnome-keyring is running on the session bus.
    static let isRunning = ProcessInfo.processInfo.environment["KINDLY_PUSH_TEST_SECRET_SERVICE"] == "1"
    /// In CI the Secret Service tests must run, never be skipped.
    static let isRequired = ProcessInfo.processInfo.environment["CI"] == "true"
    static let skipReason: Comment = "needs a real Secret Service: run the tests under tools/with-secret-service"
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only beside a real Secret Service (tools/with-secret-service); elsewhere it
    /// is reported as skipped, by name. In CI a separate test fails instead (see
    /// `SecretServiceKeyringHarnessTests`), so that a CI run without the service cannot pass quietly.
    static var needsSecretService: Self {
        .enabled(if: SecretServiceTestEnvironment.isRunning, SecretServiceTestEnvironment.skipReason)
    }
}

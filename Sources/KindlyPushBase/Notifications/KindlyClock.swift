internal import KindlyPushCore

/// Where the notification code reads the time, so that tests can set it exactly.
///
/// Only intervals matter (how long ago a tap was), so the time is a monotonic instant: a
/// change of the wall clock cannot make a tap look younger or older than it is.
public protocol KindlyClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }
}

/// The real monotonic clock.
public struct SystemKindlyClock: KindlyClock {
    /// The system's monotonic clock.
    public init() {}

    public var now: ContinuousClock.Instant { ContinuousClock.now }
}

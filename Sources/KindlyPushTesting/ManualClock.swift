public import KindlyPush
internal import KindlyPushCore

/// A `KindlyClock` that moves only when the test says, so that tap ages and deadlines are exact.
///
/// ```swift
/// let clock = ManualClock()
/// let handler = KindlyNotificationHandler(decryption: decryption, clock: clock)
/// clock.advance(by: .seconds(61))   // a tap is now too old to replay
/// ```
public final class ManualClock: KindlyClock {
    private let base = ContinuousClock.now
    private let offset = Locked(Duration.zero)

    /// A clock that stands at the moment it was made until ``advance(by:)`` moves it.
    public init() {}

    /// The current instant: the creation time plus every ``advance(by:)`` so far.
    public var now: ContinuousClock.Instant { base + offset.withLock { $0 } }

    /// Moves the clock forward by `duration`.
    public func advance(by duration: Duration) {
        offset.withLock { $0 += duration }
    }
}

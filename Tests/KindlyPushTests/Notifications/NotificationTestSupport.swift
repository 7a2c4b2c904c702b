import Dispatch
import KindlyPush
import KindlyPushCore
import KindlyPushTesting

/// Collects what a callback was called with.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Locked<[(value: Value, at: ContinuousClock.Instant)]>([])

    /// Records `value` with the time it arrived, so that timing is measured where the value was
    /// delivered, not when a busy test pool next ran the waiting test.
    func record(_ value: Value) {
        let now = ContinuousClock.now
        values.withLock { $0.append((value, now)) }
    }

    var all: [Value] { values.withLock { $0.map(\.value) } }

    /// When the first value arrived.
    var firstArrival: ContinuousClock.Instant? { values.withLock { $0.first?.at } }

    /// Waits (polling) until at least `count` values arrived or `timeout` passed.
    func wait(forCount count: Int = 1, timeout: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + timeout
        while all.count < count, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

extension ControllableKeyring {
    /// A keyring holding `keys` whose look-ups block until ``release()``: a Secret Service that
    /// does not answer.
    static func blocking(keys: [DeviceKey]) -> ControllableKeyring {
        let keyring = ControllableKeyring(keys: keys)
        keyring.blocksLookups = true
        return keyring
    }
}

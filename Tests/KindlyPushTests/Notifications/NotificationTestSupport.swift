import Dispatch
import KindlyPush
import KindlyPushTesting

/// A clock that moves only when the test says, so that tap ages are exact.
final class ManualClock: KindlyClock {
    private let base = ContinuousClock.now
    private let offset = Locked(Duration.zero)

    var now: ContinuousClock.Instant { base + offset.withLock { $0 } }

    func advance(by duration: Duration) {
        offset.withLock { $0 += duration }
    }
}

/// Collects log lines.
final class LogRecorder: Sendable {
    private let lines = Locked<[(KindlyLogLevel, String)]>([])

    var logger: KindlyLogger {
        KindlyLogger { level, message in self.lines.withLock { $0.append((level, message)) } }
    }

    var messages: [String] { lines.withLock { $0.map(\.1) } }
}

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

/// A keyring whose look-ups block until the test releases them, then answer from an inner
/// in-memory keyring: a keyring that hangs (a Secret Service that does not answer).
final class BlockingKeyring: Keyring {
    let name = "blocking"
    let inner: InMemoryKeyring
    private let gate = DispatchSemaphore(value: 0)
    private let started = Locked(0)

    init(keys: [DeviceKey]) {
        inner = InMemoryKeyring(keys: keys)
    }

    /// How many look-ups have begun (and are blocked until ``release()``).
    var lookupsStarted: Int { started.withLock { $0 } }

    /// Lets one blocked look-up (now or later) go on.
    func release() {
        gate.signal()
    }

    func store(_ key: DeviceKey, label: String) throws(KeyringError) { try inner.store(key, label: label) }

    func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        started.withLock { $0 += 1 }
        gate.wait()
        return try inner.key(for: kid)
    }

    func list() throws(KeyringError) -> [KeyringEntry] { try inner.list() }

    func delete(_ kid: KeyID) throws(KeyringError) { try inner.delete(kid) }
}

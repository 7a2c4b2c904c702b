import Foundation
import Testing

/// Runs every test of a suite on threads of its own instead of Swift's cooperative pool, a
/// bounded number of tests at a time.
///
/// The pool has one thread per core: two on CI's machine. A test that waits synchronously (a
/// child process, a socket, a `usleep` loop, a lock) holds one of them for as long as it waits,
/// and two such tests leave no thread for any other test's tasks, nor for the library's own
/// tasks that a test is timing: tests then measure the machine's load instead of the code.
/// Under this trait a test's body and every child task it starts run on ``OwnThreadExecutor``,
/// which never makes a job wait behind a blocked one. The width the pool gave for free is kept
/// by ``TestSlots``: at most twice as many tests as cores run at once (every test would start at
/// once otherwise, hundreds of processes on two cores). The rule is checked, not remembered:
/// `tools/test-rules` refuses a suite of Tests/ without this trait.
///
/// Every top-level suite of the four test targets carries it (`@Suite("…", .offThePool)`); nested
/// suites inherit it. Each test case takes its slot: a suite holds none while its tests run.
struct OffThePool: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await TestSlots.shared.take()
        defer { TestSlots.shared.give() }
        let started = ContinuousClock.now
        defer {
            if Self.printsTimes { print("test time: \(ContinuousClock.now - started) \(test.displayName ?? test.name)") }
        }
        try await withTaskExecutorPreference(OwnThreadExecutor.shared) { try await function() }
    }

    /// `KINDLY_PUSH_TEST_TIMES=1`: each test case prints the time it ran, its slot's wait left
    /// out (Swift Testing's own figure counts from the test's start, the wait included).
    static let printsTimes = ProcessInfo.processInfo.environment["KINDLY_PUSH_TEST_TIMES"] == "1"
}

extension Trait where Self == OffThePool {
    /// The suite's tests, and the tasks they start, run on threads of their own (``OffThePool``).
    static var offThePool: Self { Self() }
}

/// How many tests run at once: twice the cores (`KINDLY_PUSH_TEST_SLOTS` sets another number).
/// A test waiting for a slot waits as a suspended task, holding no thread.
final class TestSlots: @unchecked Sendable {
    static let shared = TestSlots(
        count: ProcessInfo.processInfo.environment["KINDLY_PUSH_TEST_SLOTS"].flatMap { Int($0) }
            ?? 2 * ProcessInfo.processInfo.activeProcessorCount)

    private let lock = NSLock()
    /// Guarded by `lock`.
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = max(1, count) }

    func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if free > 0 {
                free -= 1
                lock.unlock()
                continuation.resume()
            } else {
                waiting.append(continuation)
                lock.unlock()
            }
        }
    }

    func give() {
        lock.lock()
        if waiting.isEmpty {
            free += 1
            lock.unlock()
        } else {
            let next = waiting.removeFirst()
            lock.unlock()
            next.resume()
        }
    }
}

/// A task executor with a thread for every job that has none free: a job never waits behind
/// another that blocks. Threads idle for 30 s end.
final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = OwnThreadExecutor()

    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var idle = 0

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // Every waiting job has a thread: an idle one woken for it, or a new one.
        let startThread = idle < jobs.count - next
        if !startThread { condition.signal() }
        condition.unlock()
        if startThread {
            let thread = Thread { [self] in work() }
            thread.name = "test (off the pool)"
            thread.start()
        }
    }

    private func work() {
        let executor = asUnownedTaskExecutor()
        condition.lock()
        while true {
            if next < jobs.count {
                let job = jobs[next]
                next += 1
                if next == jobs.count {
                    jobs.removeAll(keepingCapacity: true)
                    next = 0
                }
                condition.unlock()
                job.runSynchronously(on: executor)
                condition.lock()
                continue
            }
            idle += 1
            let woken = condition.wait(until: Date().addingTimeInterval(30))
            idle -= 1
            if !woken && next == jobs.count { break }
        }
        condition.unlock()
    }
}

/// The bound of a wait that only a hang reaches: 10 s, far above any budget the code under test
/// promises (its own time-outs are 0.3 to 2 s) and under D-Bus's default time-out (25 s), which a
/// call made without its budget would wait. The only duration a verdict may compare with
/// (`tools/test-rules`): a machine loaded by other tests stays far under it.
let hangCap: Duration = .seconds(10)

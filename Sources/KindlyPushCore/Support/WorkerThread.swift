#if canImport(Glibc)
    import Glibc
#endif

// Why pthreads and not Dispatch: these are all that `kindly-push --jobs` needs, and the command
// line must start without libswiftDispatch and Synchronization mapped (a one-shot
// `decrypt` pays for every library it loads, about 0.25 MB of resident memory for those two).

/// A counting semaphore on a POSIX `sem_t`.
package final class Semaphore: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>

    package init(value: UInt32 = 0) {
        semaphore = .allocate(capacity: 1)
        semaphore.initialize(to: sem_t())
        sem_init(semaphore, 0, value)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    package func signal() { sem_post(semaphore) }

    /// Waits until the count is above zero, then takes one; a signal that interrupts the wait
    /// does not end it.
    package func wait() {
        // Another failure (EINVAL) cannot happen on a semaphore this class made.
        _ = try? nothingOrErrno { sem_wait(semaphore) }
    }

    /// Waits as ``wait()`` does, for `bound` at most: true when it took one, false when `bound`
    /// passed first. The bound is read on the wall clock (`sem_timedwait`; glibc's
    /// `sem_clockwait` is not in Swift's Glibc module), so setting the clock moves it.
    package func wait(upTo bound: Duration) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let (seconds, attoseconds) = bound.components
        let nanoseconds = deadline.tv_nsec + Int(attoseconds / 1_000_000_000)
        deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        // A signal that interrupts the wait does not end it; ETIMEDOUT (or EINVAL, which this
        // class's semaphore and deadline cannot cause) does.
        do {
            try nothingOrErrno { sem_timedwait(semaphore, &deadline) }
            return true
        } catch {
            return false
        }
    }
}

/// A thread that runs one closure; ``join()`` waits for it to return.
package final class WorkerThread: @unchecked Sendable {
    private var thread = pthread_t()
    private var joined = false

    /// Starts `body` on a new thread; `nil` when the system refuses one (`pthread_create`'s
    /// EAGAIN), so that the caller can run the work itself.
    package init?(_ body: @escaping @Sendable () -> Void) {
        guard let thread = Self.start(body) else {
            // deinit runs for this instance too: there is no thread to join.
            joined = true
            return nil
        }
        self.thread = thread
    }

    /// Starts `body` on a new thread; `nil` when the system refuses one.
    private static func start(_ body: @escaping @Sendable () -> Void) -> pthread_t? {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let started = pthread_create(
            &thread, nil,
            { context in
                let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                box.body()
                return nil
            }, context)
        guard started == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            return nil
        }
        return thread
    }

    deinit { join() }

    /// Waits for the thread's closure to return (once; later calls return at once).
    package func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }

    /// Runs `body` on a new detached thread (nobody joins it; it ends when `body` returns); false
    /// when the system refuses a thread. For a blocking call made on behalf of a task, so that
    /// the concurrency runtime's few threads never wait.
    package static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        guard let thread = start(body) else { return false }
        pthread_detach(thread)
        return true
    }

    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}

/// Runs `body` on a detached thread (``WorkerThread/detach(_:)``) and resumes the calling task
/// with its result, so that a call that blocks (a keyring's look-up, a read from a FIFO or a
/// socket) never holds one of the concurrency runtime's few threads; on the calling thread when
/// the system refuses a thread. The error keeps its type.
package func offTheCooperativePool<Value: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> Value
) async throws(Failure) -> Value {
    let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Value, Failure>, Never>) in
        let started = WorkerThread.detach {
            continuation.resume(returning: Result { () throws(Failure) in try body() })
        }
        if !started { continuation.resume(returning: Result { () throws(Failure) in try body() }) }
    }
    return try result.get()
}

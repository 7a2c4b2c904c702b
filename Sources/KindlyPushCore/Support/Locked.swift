#if canImport(Glibc)
    import Glibc
#endif

/// A value that threads share, guarded by a `pthread_mutex_t`.
///
/// Why not `Synchronization.Mutex`: on Linux its futex-based lock lives in the uninstrumented
/// standard library, so ThreadSanitizer cannot see it and reports every access it guards as a
/// race; `tools/test --sanitize` could then not tell a real race from those. ThreadSanitizer
/// intercepts `pthread_mutex_lock`, and the cost is the same uncontended.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

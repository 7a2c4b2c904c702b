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

    /// A lock around `value`. A `recursive` lock may be taken again by the thread that holds it
    /// (for a lock held while calling out to code that may call back in).
    package init(_ value: Value, recursive: Bool = false) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        if recursive { pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE)) }
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
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

    /// Runs `body` while holding the lock, without touching the value: for a lock that guards
    /// something else (with `recursive`, a nested call from the same thread does not deadlock).
    package func whileLocked<Result, E: Error>(_ body: () throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

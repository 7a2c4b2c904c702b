#if canImport(Glibc)
    import Glibc
#endif

/// `CLOCK_MONOTONIC`, for deadlines, backoffs and latencies that a change of the wall clock must
/// not move: the one reading the workers, the sender and the service notifier share.
package enum MonotonicClock {
    /// Nanoseconds since an arbitrary start.
    package static func nanoseconds() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1_000_000_000 + time.tv_nsec
    }

    /// Milliseconds since the same start.
    package static func milliseconds() -> Int { nanoseconds() / 1_000_000 }
}

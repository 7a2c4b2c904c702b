#if canImport(Glibc)
    import Glibc
#endif

/// An error number of the system (`errno`), as swift-system's `Errno` and swift-nio's `IOError`
/// carry it: the value a failed call left, and strerror's text for it.
package struct Errno: Error, Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    /// The `errno` value (`EINTR`, `EPIPE`, ...).
    package let rawValue: Int32

    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    package init(_ rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// What `errno` holds now: read it right after the call that failed.
    package static var current: Errno {
        Errno(rawValue: errno)
    }

    /// `EINTR`: a signal arrived before the call did anything.
    package static var interrupted: Errno { Errno(rawValue: EINTR) }
    /// `EAGAIN` (`EWOULDBLOCK` on Linux): a non-blocking call that would have waited.
    package static var wouldBlock: Errno { Errno(rawValue: EAGAIN) }
    /// `EIO`: an input/output error, also what a write that wrote nothing is taken for.
    package static var ioError: Errno { Errno(rawValue: EIO) }
    /// `EPIPE`: a write to a pipe whose reader is gone (SIGPIPE ignored).
    package static var brokenPipe: Errno { Errno(rawValue: EPIPE) }
    /// `ENOENT`: no such file or folder.
    package static var noSuchFileOrDirectory: Errno { Errno(rawValue: ENOENT) }

    /// strerror's text (`Broken pipe`), from `strerror_r`: `strerror` shares one buffer
    /// between threads.
    package var description: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            let start = buffer.baseAddress!
            start.initialize(to: 0)
            return message(strerror_r(rawValue, start, buffer.count), in: start)
        }
    }

    /// GNU `strerror_r` (glibc): the message, which may be a static string rather than `buffer`.
    private func message(_ result: UnsafeMutablePointer<CChar>?, in buffer: UnsafeMutablePointer<CChar>) -> String {
        String(cString: result ?? buffer)
    }

    /// XSI `strerror_r` (musl, the BSDs): 0 with the message in `buffer`, or an error of its own.
    private func message(_ result: Int32, in buffer: UnsafeMutablePointer<CChar>) -> String {
        result == 0 ? String(cString: buffer) : "Unknown error \(rawValue)"
    }
}

/// The result of the system call `body` makes, for the calls that return -1 and set `errno` on
/// failure (`read`, `write`, `poll`, `waitpid`, `flock`, `sem_wait`): its value, or `errno` as
/// ``Errno``. With `retryOnInterrupt` a call that a signal interrupted (`EINTR`) is made again,
/// as swift-system's `valueOrErrno(retryOnInterrupt:_:)` does.
package func valueOrErrno<I: FixedWidthInteger>(retryOnInterrupt: Bool = true, _ body: () -> I) throws(Errno) -> I {
    while true {
        let value = body()
        guard value == -1 else { return value }
        let error = Errno.current
        guard retryOnInterrupt, error == .interrupted else { throw error }
    }
}

/// The result of a call that returns `NULL` and sets `errno` on failure (`opendir`, `fopen`):
/// its value, or `errno` as ``Errno``.
package func pointerOrErrno<T>(_ body: () -> T?) throws(Errno) -> T {
    guard let value = body() else { throw Errno.current }
    return value
}

/// ``valueOrErrno(retryOnInterrupt:_:)`` for a call whose value on success says nothing (0).
package func nothingOrErrno<I: FixedWidthInteger>(retryOnInterrupt: Bool = true, _ body: () -> I) throws(Errno) {
    _ = try valueOrErrno(retryOnInterrupt: retryOnInterrupt, body)
}

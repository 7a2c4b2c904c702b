#if canImport(Glibc)
    import Glibc
#endif

/// The service manager's notification protocol (sd_notify(3)), spoken here without libsystemd:
/// each message (`READY=1`, `STATUS=…`, `WATCHDOG=1`, `STOPPING=1`, lines joined by `\n`) is one
/// datagram to the Unix socket that `NOTIFY_SOCKET` names, a path or (`@…`) an abstract name.
/// The environment is read, never changed.
///
/// The watchdog (`WatchdogSec=`, which sets `WATCHDOG_USEC` and `WATCHDOG_PID`):
/// ``feedWatchdog()`` sends `WATCHDOG=1` at most once per half interval, and only while the
/// owner of the process's work says it is healthy (``setHealthy(_:)``; a Redis worker is
/// while Redis answers). A process that never says so never feeds it.
package final class ServiceNotifier: Sendable {
    /// The process's notifier, from its environment at first use; `nil` without
    /// `NOTIFY_SOCKET` (not run by a service manager that listens).
    package static let process = ServiceNotifier { getenv($0).map { String(cString: $0) } }

    /// `NOTIFY_SOCKET` as given, for a message.
    package let socketName: String
    /// `sun_path`'s bytes: the path and its 0, or the abstract name after a 0 byte; empty for
    /// a `NOTIFY_SOCKET` that is neither (relative, too long).
    private let address: [UInt8]
    /// Milliseconds between two `WATCHDOG=1`: half of `WATCHDOG_USEC`; `nil` without a
    /// watchdog, or with one for another process (`WATCHDOG_PID`).
    package let watchdogInterval: Int?
    private let watchdog = Locked(Watchdog())

    private struct Watchdog {
        var healthy = false
        /// When the next `WATCHDOG=1` is due (``now()``).
        var due = 0
    }

    /// The notifier `environment` describes; `nil` when it has no `NOTIFY_SOCKET`.
    package init?(environment: (String) -> String?) {
        guard let name = environment("NOTIFY_SOCKET"), !name.isEmpty else { return nil }
        socketName = name
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        if name.hasPrefix("@"), name.utf8.count <= capacity {
            address = [0] + Array(name.utf8.dropFirst())
        } else if name.hasPrefix("/"), name.utf8.count < capacity {
            address = Array(name.utf8) + [0]
        } else {
            address = []
        }
        let pid = environment("WATCHDOG_PID").flatMap { Int32($0) }
        if let microseconds = environment("WATCHDOG_USEC").flatMap(Int.init), microseconds > 0, pid == nil || pid == getpid() {
            watchdogInterval = max(1, microseconds / 2000)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `message` as one datagram; `EINVAL` for a `NOTIFY_SOCKET` that is no Unix socket
    /// address.
    package func send(_ message: String) throws(Errno) {
        guard !address.isEmpty else { throw Errno(EINVAL) }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: address) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + address.count)
        let descriptor = try valueOrErrno { socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        defer { close(descriptor) }
        let bytes = Array(message.utf8)
        let sent = try withUnsafePointer(to: &socketAddress) { (pointer) throws(Errno) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (target) throws(Errno) in
                try valueOrErrno { sendto(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL), target, length) }
            }
        }
        // A datagram goes whole or not at all.
        guard sent == bytes.count else { throw Errno.ioError }
    }

    /// Whether the work is healthy: the watchdog is fed only while it is. Turning healthy makes
    /// the next ``feedWatchdog()`` send at once.
    package func setHealthy(_ healthy: Bool) {
        watchdog.withLock {
            if healthy, !$0.healthy { $0.due = 0 }
            $0.healthy = healthy
        }
    }

    /// `WATCHDOG=1` when the watchdog is this process's, the work is healthy, and half the
    /// interval went by since the last; from any thread, as often as wanted (a failure to send
    /// is the next message's to report).
    package func feedWatchdog() {
        guard let interval = watchdogInterval else { return }
        let now = Self.now()
        let due = watchdog.withLock { state in
            guard state.healthy, now >= state.due else { return false }
            state.due = now + interval
            return true
        }
        if due { try? send("WATCHDOG=1") }
    }

    /// Milliseconds of `CLOCK_MONOTONIC`.
    private static func now() -> Int { MonotonicClock.milliseconds() }
}

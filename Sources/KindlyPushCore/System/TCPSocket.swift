#if canImport(Glibc)
    import Glibc
#endif

/// A TCP connection made the way every client of the project makes one (Redis over TLS, the push
/// services): the name resolved with `getaddrinfo`, each address tried in turn with a
/// non-blocking `connect` that may take at most the time-out, the descriptor left blocking and
/// close-on-exec. The caller owns the descriptor.
package enum TCPSocket {
    /// Why no connection was made: the name did not resolve, or the last address's error.
    package enum Failure: Error, Sendable, CustomStringConvertible {
        case unresolved
        case failed(Errno)

        package var description: String {
            switch self {
            case .unresolved: return "the name does not resolve"
            case .failed(let error): return "\(error)"
            }
        }
    }

    /// A descriptor connected to `host:port` within `timeout` milliseconds per address.
    /// `nonBlocking` leaves it non-blocking (for a caller that polls it).
    package static func connect(host: String, port: Int, timeout: Int, nonBlocking: Bool = false) throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { throw .unresolved }
        defer { freeaddrinfo(first) }
        var failure = Errno(rawValue: EADDRNOTAVAIL)
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let item = next {
            next = item.pointee.ai_next
            do throws(Errno) {
                return try connect(item.pointee, timeout: timeout, nonBlocking: nonBlocking)
            } catch {
                failure = error
            }
        }
        throw .failed(failure)
    }

    private static func connect(_ address: addrinfo, timeout: Int, nonBlocking: Bool) throws(Errno) -> Int32 {
        let descriptor = try valueOrErrno { socket(address.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do throws(Errno) {
            let flags = try valueOrErrno { fcntl(descriptor, F_GETFL) }
            try nothingOrErrno { fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
            do throws(Errno) {
                try nothingOrErrno(retryOnInterrupt: false) { Glibc.connect(descriptor, address.ai_addr, address.ai_addrlen) }
            } catch  where error.rawValue == EINPROGRESS || error == .interrupted {
                // Under way: done when the socket is writable, with its SO_ERROR.
                var waiting = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                guard try valueOrErrno({ poll(&waiting, 1, Int32(timeout)) }) == 1 else { throw Errno(rawValue: ETIMEDOUT) }
                var code: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                try nothingOrErrno { getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &code, &length) }
                if code != 0 { throw Errno(rawValue: code) }
            }
            if !nonBlocking { try nothingOrErrno { fcntl(descriptor, F_SETFL, flags) } }
            return descriptor
        } catch {
            close(descriptor)
            throw error
        }
    }
}

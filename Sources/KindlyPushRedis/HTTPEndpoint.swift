internal import CHTTPServer
internal import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 server on libmicrohttpd for what a worker serves (`--metrics`: `/metrics` and
/// `/healthz`), with limits that no client can use to blind it:
///
/// - every connection is served by one event loop (epoll) on a thread of its own: a client that
///   sends slowly, or not at all, holds a connection, never the server;
/// - a connection, and so a request (each answer closes its connection), has ``Limits/deadline``
///   (2 s) from its accept to its answer, however it trickles its bytes; past it, it is shut down;
/// - at most ``Limits/connections`` (256) are open at once, each with ``Limits/memory`` bytes,
///   which bound a request's head (a longer one is answered 431 or 414 by libmicrohttpd);
/// - only `GET` and `HEAD`; the query string is ignored.
///
/// The handler runs on the serving thread: it must answer at once (the worker's figures are read
/// under a lock, never computed there).
final class HTTPEndpoint: @unchecked Sendable {
    // Unchecked: `server` is set once before the thread starts, and `open` is touched only on the
    // serving thread (libmicrohttpd calls `notify` and `answer` from `kp_http_run_wait`).

    /// One answer.
    struct Response: Sendable {
        var status: UInt32
        var type = "text/plain; charset=utf-8"
        var body: String
    }

    /// What one client can hold.
    struct Limits: Sendable {
        var connections: UInt32 = 256
        var deadline: Duration = .seconds(2)
        var memory = 8192
    }

    typealias Handler = @Sendable (_ path: Substring) -> Response

    let limits: Limits
    private let handler: Handler
    private let listener: Int32
    private var server: OpaquePointer?
    /// The open connections: their descriptors, their deadlines, and whether they were shut down.
    private var open: [UnsafeMutableRawPointer: (descriptor: Int32, deadline: ContinuousClock.Instant, shut: Bool)] = [:]

    /// Listens on `host:port` (an IP address, or `localhost`); `option` names the flag in errors
    /// (a `usage` error for an address that is not one, `io` for one that cannot be bound).
    init(host: String, port: Int32, option: String, limits: Limits = Limits(), handler: @escaping Handler) throws(CodedError) {
        self.limits = limits
        self.handler = handler
        listener = try Self.listen(host: host, port: port, option: option)
    }

    /// Serves on a thread of its own until the process ends; false when there is no thread or
    /// libmicrohttpd cannot start.
    func start() -> Bool {
        let context = Unmanaged.passRetained(self).toOpaque()
        let idle = UInt32(limits.deadline.components.seconds) + 1
        guard let started = kp_http_start(listener, limits.connections, idle, limits.memory, Self.answer, Self.notify, context) else {
            Unmanaged<HTTPEndpoint>.fromOpaque(context).release()
            return false
        }
        server = started
        return WorkerThread.detach { [self] in
            while true {
                _ = kp_http_run_wait(server, 250)
                enforceDeadlines()
            }
        }
    }

    /// Shuts down every connection past its deadline (libmicrohttpd then reads its end and closes
    /// it; its descriptor stays open until then, so it cannot be another's meanwhile).
    private func enforceDeadlines() {
        let now = ContinuousClock.now
        for (connection, entry) in open where !entry.shut && entry.deadline <= now {
            shutdown(entry.descriptor, Int32(SHUT_RDWR))
            open[connection]?.shut = true
        }
    }

    private static let notify: kp_http_notify = { context, connection, descriptor, started in
        guard let context, let connection else { return }
        let endpoint = Unmanaged<HTTPEndpoint>.fromOpaque(context).takeUnretainedValue()
        endpoint.open[connection] = started != 0 ? (descriptor, .now + endpoint.limits.deadline, false) : nil
    }

    private static let answer: kp_http_handler = { context, connection, url, method in
        guard let context, let connection, let url, let method else { return 0 }
        let endpoint = Unmanaged<HTTPEndpoint>.fromOpaque(context).takeUnretainedValue()
        let verb = String(cString: method)
        guard verb == "GET" || verb == "HEAD" else {
            return endpoint.queue(Response(status: 405, body: "only GET and HEAD\n"), on: connection, allow: true)
        }
        let path = String(cString: url)
        return endpoint.queue(endpoint.handler(path.prefix { $0 != "?" }), on: connection, allow: false)
    }

    private func queue(_ response: Response, on connection: UnsafeMutableRawPointer, allow: Bool) -> Int32 {
        let body = Array(response.body.utf8)
        return body.withUnsafeBytes { kp_http_respond(connection, response.status, response.type, $0.baseAddress, $0.count, allow ? 1 : 0) }
    }

    /// A bound, listening, non-blocking socket on `host:port`.
    private static func listen(host: String, port: Int32, option: String) throws(CodedError) -> Int32 {
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        if host.contains(":") {
            family = AF_INET6
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                throw CodedError(.usage, "\(option): '\(host)' is not an address")
            }
            withUnsafeMutableBytes(of: &storage) { raw in raw.storeBytes(of: address, as: sockaddr_in6.self) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            family = AF_INET
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else {
                throw CodedError(.usage, "\(option): '\(host)' is not an address (give an IP address, or localhost)")
            }
            withUnsafeMutableBytes(of: &storage) { raw in raw.storeBytes(of: address, as: sockaddr_in.self) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let descriptor: Int32
        do throws(Errno) {
            descriptor = try valueOrErrno { socket(family, kind, 0) }
        } catch {
            throw CodedError(.io, "\(option): cannot make a socket: \(error)")
        }
        do throws(Errno) {
            var one: Int32 = 1
            try nothingOrErrno { setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
            try nothingOrErrno {
                withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
            }
            try nothingOrErrno { Glibc.listen(descriptor, 128) }
        } catch {
            FileDescriptor(rawValue: descriptor).close()
            throw CodedError(.io, "\(option): cannot listen on \(host):\(port): \(error)")
        }
        return descriptor
    }
}

internal import CHiredis
internal import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// `--metrics HOST:PORT`: the worker's counters in Prometheus's text format at `/metrics`, and
/// `/healthz` (200 while the loop runs connected, 503 while Redis is unreachable), served by one
/// thread of its own (issue 33, item 2). The worker's thread updates the figures; the serving
/// thread reads them under one lock.
final class RedisMetrics: Sendable {
    /// The upper bounds (seconds) of `kindly_push_batch_duration_seconds`'s buckets.
    static let bucketBounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Figures: Sendable {
        /// Entries processed, by result (`result` or the error code).
        var entries: [String: Int] = [:]
        var bucketCounts = [Int](repeating: 0, count: RedisMetrics.bucketBounds.count)
        var durationSum = 0.0
        var durationCount = 0
        var pending: Int?
        var lag: Int?
        var healthy = false
    }

    let command: String
    private let figures = Locked(Figures())
    private let listener: Int32

    /// Listens on `address` (a `usage` error for an address that cannot be bound).
    init(_ address: RedisOptions.MetricsAddress, command: String) throws(CodedError) {
        self.command = command
        var storage = sockaddr_storage()
        var length: socklen_t
        let family: Int32
        if address.host.contains(":") {
            family = AF_INET6
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = UInt16(address.port).bigEndian
            guard inet_pton(AF_INET6, address.host, &socketAddress.sin6_addr) == 1 else {
                throw CodedError(.usage, "--metrics: '\(address.host)' is not an address")
            }
            withUnsafeMutableBytes(of: &storage) { raw in raw.storeBytes(of: socketAddress, as: sockaddr_in6.self) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            family = AF_INET
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = UInt16(address.port).bigEndian
            let host = address.host == "localhost" ? "127.0.0.1" : address.host
            guard inet_pton(AF_INET, host, &socketAddress.sin_addr) == 1 else {
                throw CodedError(.usage, "--metrics: '\(address.host)' is not an address (give an IP address, or localhost)")
            }
            withUnsafeMutableBytes(of: &storage) { raw in raw.storeBytes(of: socketAddress, as: sockaddr_in.self) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw CodedError(.io, "--metrics: cannot make a socket: \(Errno.current)") }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            let reason = Errno.current
            close(descriptor)
            throw CodedError(.io, "--metrics: cannot listen on \(address.host):\(address.port): \(reason)")
        }
        listener = descriptor
    }

    /// Serves requests on a thread of its own until the process ends; false when no thread.
    func start() -> Bool {
        WorkerThread.detach { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { continue }
                answer(client)
                close(client)
            }
        }
    }

    func update(_ body: (inout Figures) -> Void) { figures.withLock { body(&$0) } }

    /// Counts one processed entry by its result.
    func count(_ result: String) { update { $0.entries[result, default: 0] += 1 } }

    /// Records one batch's duration.
    func observe(seconds: Double) {
        update { figures in
            for (index, bound) in Self.bucketBounds.enumerated() where seconds <= bound { figures.bucketCounts[index] += 1 }
            figures.durationSum += seconds
            figures.durationCount += 1
        }
    }

    /// Reads one request (at most 4 KiB, within 2 s) and answers it.
    private func answer(_ client: Int32) {
        var limit = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while request.count < 4096, !request.ends(with: Array("\r\n\r\n".utf8)) {
            let count = read(client, &chunk, chunk.count)
            guard count > 0 else { break }
            request += chunk[0..<count]
        }
        let line = request.prefix { $0 != UInt8(ascii: "\r") }.split(separator: UInt8(ascii: " "))
        let path = line.count >= 2 ? String(decoding: line[1], as: UTF8.self) : ""
        let status: String
        var body: String
        var type = "text/plain; charset=utf-8"
        switch path.prefix(while: { $0 != "?" }) {
        case "/metrics":
            status = "200 OK"
            body = text()
            type = "text/plain; version=0.0.4; charset=utf-8"
        case "/healthz":
            let healthy = figures.withLock { $0.healthy }
            status = healthy ? "200 OK" : "503 Service Unavailable"
            body = healthy ? "ok\n" : "Redis is unreachable\n"
        default:
            status = "404 Not Found"
            body = "not found: /metrics or /healthz\n"
        }
        let response = Array(
            "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
        var sent = 0
        while sent < response.count {
            let count = response[sent...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// The figures in Prometheus's text exposition format.
    func text() -> String {
        let now = figures.withLock { $0 }
        let label = "command=\"\(command)\""
        var text = "# HELP kindly_push_entries_total Entries processed, by result (result, or the error code).\n"
        text += "# TYPE kindly_push_entries_total counter\n"
        for (result, count) in now.entries.sorted(by: { $0.key < $1.key }) {
            text += "kindly_push_entries_total{\(label),result=\"\(result)\"} \(count)\n"
        }
        text += "# HELP kindly_push_batch_duration_seconds The time to turn one batch into its commit.\n"
        text += "# TYPE kindly_push_batch_duration_seconds histogram\n"
        for (bound, count) in zip(Self.bucketBounds, now.bucketCounts) {
            text += "kindly_push_batch_duration_seconds_bucket{\(label),le=\"\(bound)\"} \(count)\n"
        }
        text += "kindly_push_batch_duration_seconds_bucket{\(label),le=\"+Inf\"} \(now.durationCount)\n"
        text += "kindly_push_batch_duration_seconds_sum{\(label)} \(now.durationSum)\n"
        text += "kindly_push_batch_duration_seconds_count{\(label)} \(now.durationCount)\n"
        if let pending = now.pending {
            text += "# HELP kindly_push_pending_entries Entries delivered to the group and not acknowledged (XINFO GROUPS).\n"
            text += "# TYPE kindly_push_pending_entries gauge\nkindly_push_pending_entries{\(label)} \(pending)\n"
        }
        if let lag = now.lag {
            text += "# HELP kindly_push_lag_entries Entries of the stream not yet delivered to the group (XINFO GROUPS).\n"
            text += "# TYPE kindly_push_lag_entries gauge\nkindly_push_lag_entries{\(label)} \(lag)\n"
        }
        text += "# HELP kindly_push_build_info The version of the worker.\n# TYPE kindly_push_build_info gauge\n"
        text += "kindly_push_build_info{version=\"\(KindlyPushRelease.version)\"} 1\n"
        text += "# HELP kindly_push_up 1 while the worker is connected to Redis.\n# TYPE kindly_push_up gauge\n"
        text += "kindly_push_up \(now.healthy ? 1 : 0)\n"
        return text
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix) }
}

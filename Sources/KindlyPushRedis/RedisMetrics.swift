internal import CHiredis
package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// `--metrics HOST:PORT`: the worker's counters in Prometheus's text format at `/metrics`, and
/// `/healthz` (200 while the loop runs connected, 503 while Redis is unreachable), served by an
/// ``HTTPEndpoint`` (its limits: no client can hold it). The worker's thread updates the figures;
/// the serving thread reads them under one lock.
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
        /// The server the worker writes to (`HOST:PORT`, and the service of a sentinel URL).
        var server = "none"
        /// Commits wait for `--min-replicas` replicas (a primary just promoted has none yet).
        var waitingForReplicas = false
    }

    let command: String
    private let figures = Locked(Figures())
    private let endpoint: HTTPEndpoint

    /// Listens on `address` (a `usage` error for an address that cannot be bound).
    init(_ address: RedisOptions.MetricsAddress, command: String, more: (@Sendable () -> String)? = nil) throws(CodedError) {
        self.command = command
        let figures = figures
        var limits = HTTPEndpoint.Limits()
        // The suite's hook: a deadline that no loaded machine reaches while a test holds its
        // connections, or a short one to see it enforced.
        if let text = getenv("KINDLY_PUSH_TEST_METRICS_DEADLINE_MS"), let milliseconds = Int(String(cString: text)), milliseconds > 0 {
            limits.deadline = .milliseconds(milliseconds)
        }
        endpoint = try HTTPEndpoint(host: address.host, port: address.port, option: "--metrics", limits: limits) { [command] path in
            var answer = Self.answer(path, figures: figures, command: command)
            if path == "/metrics", let more { answer.body += more() }
            return answer
        }
    }

    /// Serves requests on a thread of its own until the process ends; false when it cannot.
    func start() -> Bool { endpoint.start() }

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

    /// The answer for `path`.
    private static func answer(_ path: Substring, figures: Locked<Figures>, command: String) -> HTTPEndpoint.Response {
        switch path {
        case "/metrics":
            return HTTPEndpoint.Response(
                status: 200, type: "text/plain; version=0.0.4; charset=utf-8", body: text(figures.withLock { $0 }, command: command))
        case "/healthz":
            let (healthy, server, waiting) = figures.withLock { ($0.healthy, $0.server, $0.waitingForReplicas) }
            // Waiting for replicas is not a fault of the worker's (a restart would not mend it):
            // 200, and said.
            let replicas = waiting ? "; commits wait for --min-replicas replicas" : ""
            return HTTPEndpoint.Response(
                status: healthy ? 200 : 503,
                body: healthy ? "ok: writing to \(server)\(replicas)\n" : "Redis is unreachable (last: \(server))\n")
        default:
            return HTTPEndpoint.Response(status: 404, body: "not found: /metrics or /healthz\n")
        }
    }

    /// `kindly_push_build_info`, on every page.
    static var buildInfo: String {
        "# HELP kindly_push_build_info The version of the worker.\n# TYPE kindly_push_build_info gauge\n"
            + "kindly_push_build_info{version=\"\(KindlyPushRelease.version)\"} 1\n"
    }

    /// The figures in Prometheus's text exposition format.
    private static func text(_ now: Figures, command: String) -> String {
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
        text += buildInfo
        text += "# HELP kindly_push_up 1 while the worker is connected to Redis.\n# TYPE kindly_push_up gauge\n"
        text += "kindly_push_up \(now.healthy ? 1 : 0)\n"
        return text
    }
}

/// `send --jsonl --metrics HOST:PORT`: a page of the sending's series (`text`) and the build's,
/// and `/healthz` (200 while the command runs), on the same endpoint as a worker's.
package enum CommandMetrics {
    /// Starts serving on a thread of its own; a `usage` error for an address that is not one, `io`
    /// for one that cannot be bound.
    package static func serve(_ address: RedisOptions.MetricsAddress, text: @escaping @Sendable () -> String) throws(CodedError) {
        let endpoint = try HTTPEndpoint(host: address.host, port: address.port, option: "--metrics") { path in
            switch path {
            case "/metrics":
                return HTTPEndpoint.Response(
                    status: 200, type: "text/plain; version=0.0.4; charset=utf-8", body: RedisMetrics.buildInfo + text())
            case "/healthz": return HTTPEndpoint.Response(status: 200, body: "ok\n")
            default: return HTTPEndpoint.Response(status: 404, body: "not found: /metrics or /healthz\n")
            }
        }
        guard endpoint.start() else { throw CodedError(.io, "--metrics: no thread to serve the metrics on") }
    }
}

internal import KindlyPushBase
internal import KindlyPushCore

/// What `send` counts for `--metrics` (docs/operating.md, "Metrics of sending"): every answer by
/// app, platform, HTTP status and reason, its latency, the requests in flight, the retries,
/// reconnections, provider-token refreshes and devices gone. The sender's thread counts; the
/// metrics endpoint's thread reads ``text()`` under the same lock.
package final class SendMetrics: Sendable {
    /// The upper bounds (seconds) of `kindly_push_send_duration_seconds`'s buckets.
    static let bucketBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    /// The labels every series carries.
    struct Source: Hashable, Sendable {
        var app: String
        var platform: String
    }

    struct Answer: Hashable, Sendable {
        var source: Source
        var status: Int
        var reason: String
    }

    struct Figures: Sendable {
        var answers: [Answer: Int] = [:]
        var buckets: [Source: [Int]] = [:]
        var durationSum: [Source: Double] = [:]
        var durationCount: [Source: Int] = [:]
        var inFlight: [Source: Int] = [:]
        var retries: [Source: Int] = [:]
        var reconnects: [Source: Int] = [:]
        var tokenRefreshes: [Source: Int] = [:]
        var gone: [Source: Int] = [:]
    }

    private let figures = Locked(Figures())

    package init() {}

    /// One answer of the server (each attempt's: a 429 retried and then answered 200 counts a 429
    /// and a 200), with its latency; 410 (APNs) and 404 (FCM) count the device gone.
    func answered(_ source: Source, status: Int, reason: String?, seconds: Double, gone: Bool) {
        figures.withLock { figures in
            figures.answers[Answer(source: source, status: status, reason: reason ?? ""), default: 0] += 1
            var buckets = figures.buckets[source] ?? [Int](repeating: 0, count: Self.bucketBounds.count)
            for (index, bound) in Self.bucketBounds.enumerated() where seconds <= bound { buckets[index] += 1 }
            figures.buckets[source] = buckets
            figures.durationSum[source, default: 0] += seconds
            figures.durationCount[source, default: 0] += 1
            if gone { figures.gone[source, default: 0] += 1 }
        }
    }

    /// Every series of `source` at 0, so that a dashboard sees them before the first event.
    func register(_ source: Source) {
        figures.withLock { figures in
            figures.inFlight[source] = figures.inFlight[source] ?? 0
            figures.retries[source] = figures.retries[source] ?? 0
            figures.reconnects[source] = figures.reconnects[source] ?? 0
            figures.tokenRefreshes[source] = figures.tokenRefreshes[source] ?? 0
            figures.gone[source] = figures.gone[source] ?? 0
        }
    }

    func setInFlight(_ source: Source, _ count: Int) { figures.withLock { $0.inFlight[source] = count } }
    func retried(_ source: Source) { figures.withLock { $0.retries[source, default: 0] += 1 } }
    func reconnected(_ source: Source) { figures.withLock { $0.reconnects[source, default: 0] += 1 } }
    func refreshedToken(_ source: Source) { figures.withLock { $0.tokenRefreshes[source, default: 0] += 1 } }

    /// The figures in Prometheus's text exposition format.
    package func text() -> String {
        let now = figures.withLock { $0 }
        func labels(_ source: Source) -> String { "app=\"\(Self.escaped(source.app))\",platform=\"\(source.platform)\"" }
        var text = "# HELP kindly_push_send_requests_total Answers of the push service, by app, platform, HTTP status and reason.\n"
        text += "# TYPE kindly_push_send_requests_total counter\n"
        let answers = now.answers.sorted {
            ($0.key.source.app, $0.key.status, $0.key.reason) < ($1.key.source.app, $1.key.status, $1.key.reason)
        }
        for (answer, count) in answers {
            let status = "status=\"\(answer.status)\",reason=\"\(Self.escaped(answer.reason))\""
            text += "kindly_push_send_requests_total{\(labels(answer.source)),\(status)} \(count)\n"
        }
        text += "# HELP kindly_push_send_duration_seconds The time from a request's start to its answer.\n"
        text += "# TYPE kindly_push_send_duration_seconds histogram\n"
        for (source, buckets) in now.buckets.sorted(by: { $0.key.app < $1.key.app }) {
            for (bound, count) in zip(Self.bucketBounds, buckets) {
                text += "kindly_push_send_duration_seconds_bucket{\(labels(source)),le=\"\(bound)\"} \(count)\n"
            }
            let count = now.durationCount[source] ?? 0
            text += "kindly_push_send_duration_seconds_bucket{\(labels(source)),le=\"+Inf\"} \(count)\n"
            text += "kindly_push_send_duration_seconds_sum{\(labels(source))} \(now.durationSum[source] ?? 0)\n"
            text += "kindly_push_send_duration_seconds_count{\(labels(source))} \(count)\n"
        }
        for (name, kind, help, values) in [
            ("kindly_push_send_in_flight", "gauge", "Requests sent and not yet answered.", now.inFlight),
            ("kindly_push_send_retries_total", "counter", "Requests sent again after a 429, a 5xx or a lost connection.", now.retries),
            ("kindly_push_send_reconnects_total", "counter", "Connections made again after one was lost or went away.", now.reconnects),
            ("kindly_push_send_token_refreshes_total", "counter", "Provider tokens (access tokens) made again.", now.tokenRefreshes),
            ("kindly_push_send_gone_total", "counter", "Answers that the device or subscription is no longer registered.", now.gone),
        ] {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind)\n"
            for (source, value) in values.sorted(by: { $0.key.app < $1.key.app }) { text += "\(name){\(labels(source))} \(value)\n" }
        }
        return text
    }

    /// A label value as the exposition format writes it: `\`, `"` and line breaks escaped.
    static func escaped(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

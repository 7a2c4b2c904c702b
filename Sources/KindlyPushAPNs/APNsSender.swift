package import KindlyPushBase
package import KindlyPushCore
internal import KindlyPushHTTP2
internal import KindlyPushLibcrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The sender's bounds and timings (docs/running-at-scale.md states them; the documented-figures
/// test checks it).
package enum SendTiming {
    /// Attempts of a push that APNs answers 429, 500 or 503 (the last answer is its result).
    package static let serverAttempts = 5
    /// The statuses APNs answers with (Apple's "Handling notification responses from APNs").
    package static let apnsStatuses: Set<Int> = [200, 400, 403, 404, 405, 410, 413, 429, 500, 503]

    /// A status that is tried again: 429, 500 and 503, and any status APNs does not answer with
    /// (a 3xx, a 600, a proxy's 502): a server that is not APNs's, or not itself, is a fault of
    /// the moment, not the push's answer.
    package static func isRetried(_ status: Int) -> Bool {
        status == 429 || status == 500 || status == 503 || !apnsStatuses.contains(status)
    }
    /// Attempts of a push whose connection failed, was refused or went away (GOAWAY, reset)
    /// before an answer: then the line's error is `io`.
    package static let transportAttempts = 5
    /// Retry backoff, in milliseconds: the first delay, doubled up to the longest; each delay is
    /// drawn between its half and its whole (jitter).
    package static let firstRetryDelay = 100
    package static let longestRetryDelay = 5000
    /// Connecting (TCP and TLS), and a whole request, in milliseconds.
    package static let connectTimeout = 10_000
    package static let requestTimeout = 30_000
    /// After SIGTERM, how long what is in flight may still be answered (milliseconds): past it,
    /// every push not answered ends with an `io` error line (a worker leaves its entry pending).
    package static let stopDrain = 10_000
    /// Requests in flight on one connection at most: as many as the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS allows on it, up to this bound.
    package static let maximumHandedOver = 1000
    /// Lines read ahead of the oldest one not yet answered (results are written in input order).
    package static let readAhead = 4096
    /// How long (milliseconds) answered results may wait to be written with the next ones:
    /// answers that come one at a time are written together, in one write, instead of a
    /// write each. Past it, or at 64 KiB of results, or when nothing is left to answer, they
    /// are written.
    package static let resultGathering = 20
    /// A response body kept, in bytes (APNs's are a few dozen).
    package static let maximumResponseSize = 1 << 14
    /// The longest `retry-after` (milliseconds) a push waits for in `send`: a retried answer's
    /// `retry-after` makes its next attempt wait at least that long; past this bound the push is
    /// not tried again in this run, and its result says `retry_after` (a worker holds the entry
    /// that long).
    package static let longestRetryAfter = 60_000

    /// A `retry-after` header's value in milliseconds: delay-seconds, or an HTTP-date measured
    /// from `now` (Unix seconds); nil for anything else (RFC 9110, section 10.2.3).
    package static func retryAfter(_ value: some Collection<UInt8>, now: Int) -> Int? {
        let text = String(decoding: value, as: UTF8.self)
        if !text.isEmpty, text.utf8.count <= 9, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { return Int(text)! * 1000 }
        // IMF-fixdate, the form HTTP sends: "Sun, 06 Nov 1994 08:49:37 GMT".
        let fields = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard fields.count == 6, fields[0].count == 4, fields[5] == "GMT", let day = Int(fields[1]),
            let month = months.firstIndex(of: String(fields[2])),
            let year = Int(fields[3]), year >= 1970
        else { return nil }
        let clock = fields[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (1...31).contains(day), (0..<24).contains(clock[0]), (0..<60).contains(clock[1]),
            (0..<61).contains(clock[2])
        else { return nil }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (Int32(year - 1900), Int32(month), Int32(day))
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (Int32(clock[0]), Int32(clock[1]), Int32(clock[2]))
        return max(0, timegm(&parts) - now) * 1000
    }
}

/// One push on its way: what is sent, and how its attempts went.
final class Transfer {
    let sequence: Int
    let push: APNsPush
    /// The provider token the request carried (``ProviderToken/generation``).
    var tokenGeneration = 0
    var serverAttempts = 0
    var transportAttempts = 0
    /// It was sent again once after `ExpiredProviderToken`.
    var renewedToken = false
    /// When a delayed retry may go (monotonic milliseconds).
    var due = 0
    /// When it was last handed over (monotonic nanoseconds), for the answer's latency.
    var sentAt = 0

    init(sequence: Int, push: APNsPush) {
        self.sequence = sequence
        self.push = push
    }
}

/// Where the sender sends, and what every request carries: what `send`'s options say of APNs
/// (the command line builds it; the sender knows no command line).
package struct APNsDestination: Sendable {
    /// `https://HOST[:PORT]`, without a final `/`.
    package var serverURL: String
    /// `apns-topic`: the app's bundle id.
    package var topic: String
    /// The CA bundle that verifies the server, instead of the system's.
    package var caFile: String?
    /// `apns-expiration`, in seconds from the push's sending, for a push that gives no
    /// expiration of its own; nil: none.
    package var expiration: Int?
    /// HTTP/2 connections to the server at most (`--connections`, an app's `connections`), each
    /// used up to its own stream limit.
    package var connections: Int
    /// The app's name in `send --config`'s file (the metrics' `app`); nil: the one app of the
    /// command line, named by its topic.
    package var app: String?

    package init(
        serverURL: String, topic: String, caFile: String? = nil, expiration: Int? = nil, connections: Int = 1, app: String? = nil
    ) {
        self.serverURL = serverURL
        self.topic = topic
        self.caFile = caFile
        self.expiration = expiration
        self.connections = connections
        self.app = app
    }
}

/// What became of one push, beside its result line: what a worker or a one-document run decides
/// from (commit, hold, dead-letter, exit status), so that nothing reads back the line it wrote.
package enum SendOutcome: Sendable {
    /// The push service answered: its status, its reason, and for a status tried again its
    /// `retry-after` in milliseconds (rounded up to whole seconds, as the line says it).
    case answered(status: Int, reason: String?, retryAfter: Int?)
    /// No answer (`io`), or the document was refused before anything was sent: the line's error.
    case failed(CodedError)
}

/// One provider token for every sender of one team and key (``APNsSender``s of the apps of
/// `send --config` that share them), used from the sending thread only.
package final class SharedProviderToken {
    var token: ProviderToken

    package init(_ token: ProviderToken) { self.token = token }
}

/// `kindly-push send`: reads documents, sends each push to APNs over a pool of multiplexed
/// HTTP/2 connections (``APNsDestination/connections``, KindlyPushHTTP2's client on nghttp2
/// and OpenSSL), and writes one result per input, in input order.
///
/// One thread does everything: it reads lines while fewer than ``SendTiming/readAhead`` wait
/// for their answer, hands each request to the least busy connection that has room (each
/// takes as many as its server's stream limit allows: the first request of a connection goes
/// alone, until the server's SETTINGS; at most ``SendTiming/maximumHandedOver``), waits in one
/// `poll` over every connection and standard input, and writes the answered prefix of the
/// results. Every connection carries the one provider token.
package final class APNsSender {
    package let destination: APNsDestination
    /// The provider token, shared with every sender of the same team and key (``SharedProviderToken``).
    private let tokens: SharedProviderToken
    private var token: ProviderToken {
        get { tokens.token }
        set { tokens.token = newValue }
    }
    private let client: HTTP2Client
    private let host: String
    /// Ready to go, oldest input first.
    private var ready: [Transfer] = []
    /// Waiting for their backoff delay.
    private var delayed: [Transfer] = []
    /// The result line of each input from `firstUnwritten` on; nil while unanswered.
    private var results: [(line: [UInt8], outcome: SendOutcome)?] = []
    /// Where the results not taken yet start in `results` (the taken ones are dropped in bulk).
    private var head = 0
    private var firstUnwritten = 0
    private var nextSequence = 0
    /// The connections (their numbers) that failed a push: each counts once as a reconnection.
    private var lostConnections: Set<Int> = []
    /// The fields every request starts with (`:method`, `:scheme`, `:authority`), and those
    /// after its path and token that every push carries (topic, content type, user agent).
    private var leadingFields = HTTP2Headers()
    private var trailingFields = HTTP2Headers()
    /// One request's fields, built again for each push in the same buffers.
    private var fields = HTTP2Headers()
    /// The `authorization` value of the token of ``authorizationGeneration``.
    private var authorization = ""
    private var authorizationGeneration = -1
    /// The exchanges the client ended, taken at each wake-up.
    private var done: [HTTP2Exchange] = []
    /// `--metrics`: what the sender counts (``SendMetrics``), under its app (the topic) and platform.
    package var metrics: SendMetrics? {
        didSet { metrics?.register(source) }
    }
    private var source: SendMetrics.Source { SendMetrics.Source(app: destination.app ?? destination.topic, platform: "apns") }

    /// The answer headers the sender reads, by index in ``HTTP2Exchange/headers``.
    private static let apnsIDHeader = 0
    private static let retryAfterHeader = 1

    package convenience init(destination: APNsDestination, token: ProviderToken) throws(CodedError) {
        try self.init(destination: destination, token: SharedProviderToken(token))
    }

    /// A sender whose provider token is `token`'s, which other senders (apps of the same team
    /// and key) may share: whichever renews it renews it for all, so APNs sees one token per
    /// team and key, renewed no more often than it allows.
    package init(destination: APNsDestination, token: SharedProviderToken) throws(CodedError) {
        self.destination = destination
        self.tokens = token
        client = try Self.client(destination, connections: destination.connections)
        host = client.configuration.authority
        leadingFields.append(":method", "POST")
        leadingFields.append(":scheme", "https")
        leadingFields.append(":authority", host)
        trailingFields.append("apns-topic", destination.topic)
        trailingFields.append("content-type", "application/json")
        trailingFields.append("user-agent", "kindly-push/\(KindlyPushRelease.version)")
    }

    /// An HTTP/2 client of the destination's server: HTTP/2 only, the connection and request
    /// time-outs, and with `--ca-file` only its authorities.
    private static func client(_ destination: APNsDestination, connections: Int) throws(CodedError) -> HTTP2Client {
        guard let place = HTTP2Client.Configuration.hostAndPort(ofURL: destination.serverURL) else {
            throw CodedError(.io, "'\(destination.serverURL)' is not https://HOST[:PORT]")
        }
        let configuration = HTTP2Client.Configuration(
            host: place.host, port: place.port, authority: place.authority, caFile: destination.caFile, connections: max(1, connections),
            connectTimeout: SendTiming.connectTimeout, requestTimeout: SendTiming.requestTimeout,
            maximumStreams: SendTiming.maximumHandedOver, maximumBodySize: SendTiming.maximumResponseSize,
            watchedHeaders: ["apns-id", "retry-after"])
        do throws(HTTP2SetupError) {
            return try HTTP2Client(configuration)
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    static func now() -> Int { MonotonicClock.milliseconds() }

    static func nanoseconds() -> Int { MonotonicClock.nanoseconds() }

    /// `nil` when the push service answers one HTTP/2 request (`GET /`, which APNs answers 405:
    /// no push; its body dropped) on a connection of its own, its certificate verified as for a
    /// push; else why not. A worker asks it before it says it is ready.
    package func probe() -> String? {
        let probing: HTTP2Client
        do throws(CodedError) {
            probing = try Self.client(destination, connections: 1)
        } catch {
            return error.message
        }
        var request = HTTP2Headers()
        request.append(":method", "GET")
        request.append(":scheme", "https")
        request.append(":authority", host)
        request.append(":path", "/")
        request.append("user-agent", "kindly-push/\(KindlyPushRelease.version)")
        let exchange = HTTP2Exchange(owner: nil, body: [])
        guard probing.submit(exchange, headers: request) else { return "\(host): the request could not be made" }
        var ended: [HTTP2Exchange] = []
        // Bounded: the client ends the request at its time-out, the connection at its own.
        while ended.isEmpty {
            _ = probing.wait(alsoWatching: -1, timeout: 200)
            probing.takeFinished(into: &ended)
        }
        switch exchange.failure {
        case nil: return nil
        case .noHTTP2: return "\(host) does not speak HTTP/2 (its TLS handshake chose no 'h2')"
        case .transport(let reason): return "\(host): \(reason)"
        }
    }

    /// Whether every push handed over has its result taken.
    package var isIdle: Bool { results.count == head }

    /// Takes one push (or the refusal of its document, answered at once with its error line).
    package func submit(_ result: Result<APNsPush, APNsPush.Refusal>) {
        let sequence = nextSequence
        nextSequence += 1
        results.append(nil)
        switch result {
        case .success(let push): ready.append(Transfer(sequence: sequence, push: push))
        case .failure(let error): fail(sequence, id: error.id, token: error.token, error.error)
        }
    }

    /// Appends the result line of the oldest push whose result is not taken yet, and a newline,
    /// when it is answered, and says what became of the push; `nil` (nothing appended) while it
    /// is not answered.
    package func takeOne(into output: inout [UInt8]) -> SendOutcome? {
        guard head < results.count, let result = results[head] else { return nil }
        output += result.line
        output.append(0x0A)
        results[head] = nil
        head += 1
        firstUnwritten += 1
        // The taken prefix is dropped now and then, not at each line.
        if head >= 1024, head * 2 >= results.count {
            results.removeFirst(head)
            head = 0
        }
        return result.outcome
    }

    /// Whether an answered result waits to be taken.
    var hasAnswer: Bool { head < results.count && results[head] != nil }

    /// Hands requests over, and says what to wait for before ``perform(_:)``: the connections'
    /// sockets (appended to `descriptors`), and how long (milliseconds, at most `timeout`).
    func prepare(timeout: Int, into descriptors: inout [pollfd]) -> Int {
        let now = Self.now()
        if !delayed.isEmpty {
            let due = delayed.filter { $0.due <= now }
            if !due.isEmpty {
                delayed.removeAll { $0.due <= now }
                ready = (ready + due).sorted { $0.sequence < $1.sequence }
            }
        }
        var started = 0
        while started < ready.count, start(ready[started]) { started += 1 }
        if started > 0 { ready.removeFirst(started) }
        var wait = timeout
        if let next = delayed.map(\.due).min() { wait = min(wait, next - now) }
        if !ready.isEmpty, client.hasRoom { wait = 0 }
        return client.prepare(timeout: wait, into: &descriptors)
    }

    /// Lets the connections work on what `poll` saw of the descriptors ``prepare(timeout:into:)``
    /// gave, and takes the answers.
    func perform(_ descriptors: ArraySlice<pollfd>) {
        client.perform(descriptors)
        collect()
    }

    /// Hands `transfer`'s request to a connection; false when none has room (it stays ready).
    /// A push whose provider token cannot be made ends with its error line.
    private func start(_ transfer: Transfer) -> Bool {
        guard client.hasRoom else { return false }
        do throws(AuthKeyError) {
            let generation = token.generation
            try token.refreshIfDue()
            if token.generation != generation { metrics?.refreshedToken(source) }
        } catch {
            fail(transfer.sequence, id: transfer.push.id, token: transfer.push.token, CodedError(.io, error.description))
            return true
        }
        if authorizationGeneration != token.generation {
            authorization = String(token.header.utf8.dropFirst("authorization: ".utf8.count))!
            authorizationGeneration = token.generation
        }
        let push = transfer.push
        fields.removeAll()
        fields.append(contentsOf: leadingFields)
        fields.append(":path", "/3/device/", push.token, changes: true)
        fields.append("authorization", authorization)
        fields.append(contentsOf: trailingFields)
        fields.append("apns-push-type", push.pushType)
        fields.append("apns-priority", decimal: push.priority)
        // The push's own expiration (Unix seconds), else the run's `--expiration` from now; none:
        // no header (APNs keeps the push for its own default time).
        if let expiration = push.delivery.expiration {
            fields.append("apns-expiration", decimal: expiration, changes: true)
        } else if let expiration = destination.expiration {
            fields.append("apns-expiration", decimal: expiration == 0 ? 0 : token.clock.now() + expiration, changes: true)
        }
        if let collapse = push.collapseID { fields.append("apns-collapse-id", collapse, changes: true) }
        fields.append("content-length", decimal: push.body.count)
        transfer.tokenGeneration = token.generation
        let exchange = HTTP2Exchange(owner: transfer, body: push.body)
        guard client.submit(exchange, headers: fields) else { return false }
        metrics?.setInFlight(source, client.inFlight)
        transfer.sentAt = Self.nanoseconds()
        return true
    }

    /// Takes the exchanges the client ended: each push's answer or failure.
    private func collect() {
        client.takeFinished(into: &done)
        guard !done.isEmpty else { return }
        metrics?.setInFlight(source, client.inFlight)
        for exchange in done {
            guard let owner = exchange.owner else { continue }
            finish(unsafeDowncast(owner, to: Transfer.self), exchange)
        }
        done.removeAll(keepingCapacity: true)
    }

    /// Sends `transfer` again after its backoff, and not before `notBefore` milliseconds (an
    /// answer's `retry-after`).
    private func retryLater(_ transfer: Transfer, attempt: Int, notBefore: Int? = nil) {
        metrics?.retried(source)
        let delay = min(SendTiming.longestRetryDelay, SendTiming.firstRetryDelay << min(attempt - 1, 16))
        transfer.due = Self.now() + max(delay / 2 + Int.random(in: 0...(delay / 2)), notBefore ?? 0)
        delayed.append(transfer)
    }

    private func finish(_ transfer: Transfer, _ exchange: HTTP2Exchange) {
        let token = transfer.push.token
        switch exchange.failure {
        case .noHTTP2?:
            // No attempt will change the server's protocols: nothing was sent to it.
            let error = CodedError(
                .io, "\(host) does not speak HTTP/2 (its TLS handshake chose no 'h2'), as APNs does: nothing was sent to it")
            fail(transfer.sequence, id: transfer.push.id, token: token, error)
            return
        case .transport(let reason)?:
            // No answer: the connection failed, went away (GOAWAY past this stream, a reset) or
            // timed out. A new connection takes its place; its first request goes alone.
            if lostConnections.insert(exchange.connection).inserted { metrics?.reconnected(source) }
            transfer.transportAttempts += 1
            if transfer.transportAttempts < SendTiming.transportAttempts {
                retryLater(transfer, attempt: transfer.transportAttempts)
            } else {
                let error = CodedError(.io, "no answer from \(host) after \(transfer.transportAttempts) attempts: \(reason)")
                fail(transfer.sequence, id: transfer.push.id, token: token, error)
            }
            return
        case nil:
            break
        }
        let status = exchange.status
        var apnsID: String?
        var retryAfterHeader: [UInt8]?
        for (index, value) in exchange.headers {
            if index == Self.apnsIDHeader {
                apnsID = String(decoding: value.filter { $0 > 0x20 && $0 < 0x7F }, as: UTF8.self)
            } else if index == Self.retryAfterHeader, value.count < 100 {
                // Spaces inside an HTTP-date stay; those around the value go.
                let printable = value.filter { $0 >= 0x20 && $0 < 0x7F }
                retryAfterHeader = Array(printable.drop { $0 == 0x20 }.reversed().drop { $0 == 0x20 }.reversed())
            }
        }
        // A 200's body is empty: nothing to read.
        let body = exchange.body.isEmpty ? nil : (try? JSONReader.parse(exchange.body))?.objectValue
        let reason = body?["reason"]?.stringValue
        metrics?.answered(
            source, status: status, reason: reason, seconds: Double(Self.nanoseconds() - transfer.sentAt) / 1e9, gone: status == 410)
        if status == 403, reason == "ExpiredProviderToken", !transfer.renewedToken {
            transfer.renewedToken = true
            do throws(AuthKeyError) {
                let generation = self.token.generation
                if try self.token.renew(replacing: transfer.tokenGeneration) {
                    if self.token.generation != generation { metrics?.refreshedToken(source) }
                    ready.insert(transfer, at: ready.firstIndex { $0.sequence > transfer.sequence } ?? ready.endIndex)
                    return
                }
            } catch {
                fail(transfer.sequence, id: transfer.push.id, token: token, CodedError(.io, error.description))
                return
            }
        }
        let retryAfter = retryAfterHeader.flatMap { SendTiming.retryAfter($0, now: self.token.clock.now()) }
        if SendTiming.isRetried(status) {
            transfer.serverAttempts += 1
            if transfer.serverAttempts < SendTiming.serverAttempts, (retryAfter ?? 0) <= SendTiming.longestRetryAfter {
                retryLater(transfer, attempt: transfer.serverAttempts, notBefore: retryAfter)
                return
            }
        }
        if status == 200, transfer.push.id == nil, apnsID?.utf8.allSatisfy(Self.isPlainIDByte) ?? true {
            complete(
                transfer.sequence, with: Self.deliveredLine(token: token, apnsID: apnsID),
                .answered(status: 200, reason: nil, retryAfter: nil))
            return
        }
        var members: [JSONObject.Member] = transfer.push.id.map { [.init(key: "id", value: $0)] } ?? []
        members += [.init(key: "token", value: .string(token)), .init(key: "status", value: .number(JSONNumber(status)))]
        if let id = apnsID { members.append(.init(key: "apns_id", value: .string(id))) }
        if status != 200 {
            members.append(.init(key: "reason", value: reason.map { .string($0) } ?? .null))
        }
        if status == 410, let timestamp = body?["timestamp"], case .number = timestamp {
            members.append(.init(key: "unregistered_at", value: timestamp))
        }
        // The retry-after of a status tried again, in whole seconds rounded up: the line's and the
        // outcome's alike.
        let retryAfterSeconds = SendTiming.isRetried(status) ? retryAfter.map { ($0 + 999) / 1000 } : nil
        if let retryAfterSeconds { members.append(.init(key: "retry_after", value: .number(JSONNumber(retryAfterSeconds)))) }
        complete(
            transfer.sequence, with: JSONWriter.compactBytes(.object(JSONObject(members))),
            .answered(status: status, reason: reason, retryAfter: retryAfterSeconds.map { $0 * 1000 }))
    }

    /// A byte of an `apns-id` that JSON writes as it is (APNs's are UUIDs: hex digits and hyphens).
    private static func isPlainIDByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "-")
    }

    /// The result line of a push delivered (200) that had no `"id"`, written straight: what
    /// JSONWriter writes for `{"token", "status": 200, "apns_id"}` when the token is hex digits
    /// (every push's is) and the `apns-id` is letters, digits and hyphens (``isPlainIDByte(_:)``).
    private static func deliveredLine(token: String, apnsID: String?) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(token.utf8.count + (apnsID?.utf8.count ?? 0) + 48)
        line.append(contentsOf: #"{"token":""#.utf8)
        line.append(contentsOf: token.utf8)
        line.append(contentsOf: #"","status":200"#.utf8)
        if let apnsID {
            line.append(contentsOf: #","apns_id":""#.utf8)
            line.append(contentsOf: apnsID.utf8)
            line.append(UInt8(ascii: "\""))
        }
        line.append(UInt8(ascii: "}"))
        return line
    }

    /// Ends every push not answered yet with an `io` error line saying `reason`: those in flight
    /// (their connections closed), waiting for a retry's backoff, or not started. For a stop
    /// that must not wait for a server that never answers (``SendTiming/stopDrain``).
    private func abandon(_ reason: String) {
        client.closeAll(reason)
        client.takeFinished(into: &done)
        metrics?.setInFlight(source, 0)
        let inFlight = done.compactMap { $0.owner.map { unsafeDowncast($0, to: Transfer.self) } }
        done.removeAll(keepingCapacity: true)
        for transfer in inFlight + ready + delayed {
            fail(transfer.sequence, id: transfer.push.id, token: transfer.push.token, CodedError(.io, reason))
        }
        ready = []
        delayed = []
    }

    /// The line of a push abandoned at a stop: it may or may not have reached APNs.
    static var stopReason: String {
        "stopped (SIGTERM) with no answer from APNs within \(SendTiming.stopDrain / 1000) s: the push may or may not have been delivered"
    }

    /// When a stop's drain ends (``SendTiming/stopDrain`` after SIGTERM was first seen).
    private var stopDeadline: Int?

    /// After SIGTERM, what is in flight has ``SendTiming/stopDrain`` to be answered: past it,
    /// every push not answered ends as `io` (``abandon(_:)``). Every loop that drives the sender
    /// calls it before waiting.
    package func endAfterStopDrain() {
        guard StopSignals.requested else { return }
        let now = Self.now()
        if stopDeadline == nil { stopDeadline = now + SendTiming.stopDrain }
        if let stopDeadline, now >= stopDeadline, !isIdle { abandon(Self.stopReason) }
    }

    /// Ends a push with `error`: its error line (with its id and token when it has them).
    private func fail(_ sequence: Int, id: JSONValue?, token: String?, _ error: CodedError) {
        complete(sequence, with: Self.errorLine(id: id, token: token, error), .failed(error))
    }

    private func complete(_ sequence: Int, with line: [UInt8], _ outcome: SendOutcome) {
        results[head + sequence - firstUnwritten] = (line, outcome)
    }

    /// The error object of a line: `{"id": ..., "token": ..., "error": {"code", "message"}}`, the
    /// id and the token when the line had them.
    static func errorLine(id: JSONValue? = nil, token: String?, _ error: CodedError) -> [UInt8] {
        var members: [JSONObject.Member] = id.map { [.init(key: "id", value: $0)] } ?? []
        if let token { members.append(.init(key: "token", value: .string(token))) }
        if case .object(let object) = error.jsonObject { members += object.members }
        return JSONWriter.compactBytes(.object(JSONObject(members)))
    }

    /// Whether nothing is left to send or answer.
    package var hasWork: Bool { client.inFlight > 0 || !ready.isEmpty || !delayed.isEmpty }
}

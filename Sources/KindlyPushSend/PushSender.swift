package import KindlyPushBase
internal import KindlyPushCore
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

/// The platforms `send` delivers to, as result lines and metrics name them (wire-format
/// section 9).
package enum SendPlatform: String, Sendable {
    case apns
    case fcm
    case webPush = "webpush"

    /// The push service, as messages name it.
    package var service: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        case .webPush: "the Web Push service"
        }
    }

    /// The configuration key that lets this platform's pushes reach private addresses, which a
    /// refusal names: Web Push's (its push service is the subscription's); APNs and FCM are
    /// reached at their own servers, never refused so.
    var privateAddressesKey: String? { self == .webPush ? "webpush.allow_private_addresses" : nil }

    /// The result line's member naming the message: APNs's `apns-id`, FCM's `name`, Web Push's
    /// `Location`.
    var messageNameKey: String {
        switch self {
        case .apns: "apns_id"
        case .fcm: "name"
        case .webPush: "location"
        }
    }

    /// Whether an answer is tried again (``SendTiming/serverAttempts``): on APNs 429, 500, 503
    /// and any status APNs does not answer with (``SendTiming/isRetried(_:)``); on Web Push 429,
    /// any 5xx, and anything but a 2xx or a 4xx (section 9.4); on FCM the same (section 9.3:
    /// 429, 500 and 503).
    package func isRetried(_ status: Int) -> Bool {
        switch self {
        case .apns: SendTiming.isRetried(status)
        case .fcm, .webPush: status == 429 || !(200..<500).contains(status)
        }
    }

    /// Whether an answer says the push was accepted: APNs's and FCM's 200, a Web Push service's
    /// 2xx (201).
    package func isDelivered(_ status: Int) -> Bool { self == .webPush ? (200..<300).contains(status) : status == 200 }

    /// Whether an answer says the device or subscription is gone: APNs's 410, FCM's 404 whose
    /// `errorCode` is `UNREGISTERED` (another 404, such as a project that does not exist, is
    /// not the device's), Web Push's 404 and 410.
    package func isGone(_ status: Int, reason: String?) -> Bool {
        switch self {
        case .apns: status == 410
        case .fcm: status == 404 && reason == "UNREGISTERED"
        case .webPush: status == 404 || status == 410
        }
    }

    /// The section of `send --config`'s app that serves the platform.
    package var section: String { rawValue }
}

/// One checked push of any platform: what a line of `send` gives, by its shape (`token` or
/// `subscription`).
package enum OutgoingPush: Sendable {
    case apns(APNsPush)
    case fcm(FCMPush)
    case webPush(WebPushPush)

    package var platform: SendPlatform {
        switch self {
        case .apns: .apns
        case .fcm: .fcm
        case .webPush: .webPush
        }
    }

    /// The document's `"id"`, as given.
    package var id: JSONValue? {
        switch self {
        case .apns(let push): push.id
        case .fcm(let push): push.content.id
        case .webPush(let push): push.content.id
        }
    }

    package var delivery: DeliveryFields {
        switch self {
        case .apns(let push): push.delivery
        case .fcm(let push): push.content.delivery
        case .webPush(let push): push.content.delivery
        }
    }

    /// The members that name the device in the push's result line: `"token"`, `"fcm_token"`, or
    /// the subscription's `"endpoint"`.
    var target: [JSONObject.Member] {
        switch self {
        case .apns(let push): [.init(key: "token", value: .string(push.token))]
        case .fcm(let push): [.init(key: "fcm_token", value: .string(push.token))]
        case .webPush(let push): [.init(key: "endpoint", value: .string(push.endpoint))]
        }
    }
}

/// One push on its way: what is sent, and how its attempts went.
final class Transfer {
    let sequence: Int
    let push: OutgoingPush
    /// The connection pool it was last handed to (the message of a failure names its server).
    /// Weak: the link owns its pools, and a pool's connections hold their exchanges, whose
    /// owner this is (a strong reference would make a cycle that outlives the run).
    weak var client: HTTP2Client?
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

    init(sequence: Int, push: OutgoingPush) {
        self.sequence = sequence
        self.push = push
    }
}

/// What became of one push, beside its result line: what a worker or a one-document run decides
/// from (commit, hold, dead-letter, exit status), so that nothing reads back the line it wrote.
package enum SendOutcome: Sendable {
    /// The push service answered: its status, its reason, and for a status tried again its
    /// `retry-after` in milliseconds (rounded up to whole seconds, as the line says it); the
    /// platform says what the status means.
    case answered(status: Int, reason: String?, retryAfter: Int?, platform: SendPlatform = .apns)
    /// No answer (`io`), or the document was refused before anything was sent: the line's error.
    case failed(CodedError)
}

/// Whether a platform's link can make requests now (``PlatformLink/readiness()``).
enum LinkReadiness {
    case ready
    /// Not yet: it waits for something of its own, in the sender's `poll` (FCM: its access token).
    case waiting
    /// Not for `milliseconds`, for a reason that is the link's and not the push's (FCM: its access
    /// token could not be fetched): the push is tried again then, as after a lost connection,
    /// within its attempts, and ends with `error` when they run out.
    case paused(CodedError, milliseconds: Int)
}

/// What one platform adds to ``PushSender``'s pipeline: the connections a push goes on, its
/// request, and what the platform's answers mean (``APNsLink``, ``WebPushLink``).
protocol PlatformLink: AnyObject {
    var platform: SendPlatform { get }
    /// The metrics' `app` label: the app's name, or the one app's topic.
    var appLabel: String { get }
    /// Every pool of connections open now (polled together).
    var clients: [HTTP2Client] { get }
    /// The pool a push goes on (Web Push's are opened at an origin's first push); nil when none
    /// can be opened for it until a request in flight is answered (Web Push at its limit of push
    /// services). An error ends the push with its error line.
    func client(for push: OutgoingPush) throws(CodedError) -> HTTP2Client?
    /// The request of `transfer` on `client`: its header fields appended to `fields`, its body
    /// returned; an error ends the push with its error line.
    func request(_ transfer: Transfer, on client: HTTP2Client, into fields: inout HTTP2Headers) throws(CodedError) -> [UInt8]
    /// The reason an answer gives in its body (APNs's `reason`, a Web Push service's `error`).
    func reason(status: Int, body: [UInt8]) -> String?
    /// Whether the answer calls for sending the push again at once (APNs's
    /// `ExpiredProviderToken`, once, with a renewed token); throws when that fails.
    func sendsAgain(_ transfer: Transfer, status: Int, reason: String?) throws(CodedError) -> Bool
    /// The message's name in an answer: the first watched header's value (APNs's `apns-id`, Web
    /// Push's `Location`), or from the body (FCM's `name`).
    func messageName(header: String?, body: [UInt8]) -> String?
    /// Members the platform adds to an answer's result line (APNs's `unregistered_at`).
    func extraMembers(status: Int, body: [UInt8]) -> [JSONObject.Member]
    /// The result line of a delivered push with no `"id"`, written straight, when the platform
    /// has such a line (APNs's, at its rate); nil: the line is built member by member.
    func deliveredLine(_ push: OutgoingPush, messageName: String?) -> [UInt8]?
    /// `nil` when the push service answers a probe, else why not (``PushSender/probe()``).
    func probe() -> String?
    /// Whether the link can make a request now (FCM waits for its access token, fetched on a
    /// connection of its own among ``clients``, so that the wait is the sender's `poll`, which
    /// the other platforms share).
    func readiness() -> LinkReadiness
    /// Unix time in seconds (the test clock, when `send` has one).
    func unixTime() -> Int
    /// What is counted (``SendMetrics``), set by the sender.
    var metrics: SendMetrics? { get set }
}

extension PlatformLink {
    var source: SendMetrics.Source { SendMetrics.Source(app: appLabel, platform: platform.rawValue) }

    func readiness() -> LinkReadiness { .ready }

    func messageName(header: String?, body: [UInt8]) -> String? { header }
}

/// `kindly-push send`'s pipeline for one platform of one app: reads documents, sends each push
/// over its platform's pools of multiplexed HTTP/2 connections (KindlyPushHTTP2's client on
/// nghttp2 and OpenSSL; ``PlatformLink`` builds each request and says what its answers mean),
/// and keeps one result per input, in input order.
///
/// One thread does everything: it reads lines while fewer than ``SendTiming/readAhead`` wait
/// for their answer, hands each request to the least busy connection that has room (each
/// takes as many as its server's stream limit allows: the first request of a connection goes
/// alone, until the server's SETTINGS; at most ``SendTiming/maximumHandedOver``), waits in one
/// `poll` over every connection and standard input, and writes the answered prefix of the
/// results. Retries, backoff, reconnections and the stop's drain are the same on every platform.
package final class PushSender {
    let link: any PlatformLink
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
    /// The connections (their pools and numbers) that failed a push: each counts once as a
    /// reconnection.
    private var lostConnections: Set<String> = []
    /// One request's fields, built again for each push in the same buffers.
    private var fields = HTTP2Headers()
    /// The exchanges the clients ended, taken at each wake-up.
    private var done: [HTTP2Exchange] = []
    /// The pools polled by the last ``prepare(timeout:into:)``, and where each one's part of the
    /// descriptors ends.
    private var polled: [(client: HTTP2Client, end: Int)] = []
    /// `--metrics`: what the sender counts (``SendMetrics``), under its app and platform.
    package var metrics: SendMetrics? {
        didSet {
            link.metrics = metrics
            metrics?.register(source)
        }
    }
    private var source: SendMetrics.Source { link.source }
    /// The platform it sends to.
    package var platform: SendPlatform { link.platform }

    /// The answer headers the sender reads, by index in ``HTTP2Exchange/headers``: every
    /// platform's client watches the message's name first, then `retry-after`.
    static let messageNameHeader = 0
    static let retryAfterHeader = 1

    /// An APNs sender whose provider token is `token`'s, which other senders (apps of the same
    /// team and key) may share: whichever renews it renews it for all, so APNs sees one token
    /// per team and key, renewed no more often than it allows.
    package convenience init(destination: APNsDestination, token: SharedProviderToken) throws(CodedError) {
        self.init(link: try APNsLink(destination: destination, token: token))
    }

    package convenience init(destination: APNsDestination, token: ProviderToken) throws(CodedError) {
        try self.init(destination: destination, token: SharedProviderToken(token))
    }

    /// An FCM sender of one app (``FCMDestination``).
    package convenience init(fcm destination: FCMDestination) throws(CodedError) {
        self.init(link: try FCMLink(destination: destination))
    }

    /// A Web Push sender of one app (``WebPushDestination``).
    package convenience init(webPush destination: WebPushDestination) {
        self.init(link: WebPushLink(destination: destination))
    }

    init(link: any PlatformLink) {
        self.link = link
    }

    /// An HTTP/2 client of `serverURL` (`https://HOST[:PORT]`): HTTP/2 only, the connection and
    /// request time-outs, the answer headers `watched`, and with `caFile` only its authorities.
    static func client(
        serverURL: String, caFile: String?, connections: Int, watched: [String], globalAddressesOnly: Bool = false
    ) throws(CodedError) -> HTTP2Client {
        guard let place = HTTP2Client.Configuration.hostAndPort(ofURL: serverURL) else {
            throw CodedError(.io, "'\(serverURL)' is not https://HOST[:PORT]")
        }
        let configuration = HTTP2Client.Configuration(
            host: place.host, port: place.port, authority: place.authority, caFile: caFile, connections: max(1, connections),
            connectTimeout: SendTiming.connectTimeout, requestTimeout: SendTiming.requestTimeout,
            maximumStreams: SendTiming.maximumHandedOver, maximumBodySize: SendTiming.maximumResponseSize,
            watchedHeaders: watched, globalAddressesOnly: globalAddressesOnly)
        do throws(HTTP2SetupError) {
            return try HTTP2Client(configuration)
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// One request on `client`, alone, waited for (bounded: the client ends it at its time-out,
    /// the connection at its own): APNs's probe, FCM's access token. Nil when the request could
    /// not be made.
    static func exchangeAlone(on client: HTTP2Client, _ request: HTTP2Headers, body: [UInt8]) -> HTTP2Exchange? {
        let exchange = HTTP2Exchange(owner: nil, body: body)
        guard client.submit(exchange, headers: request) else { return nil }
        var ended: [HTTP2Exchange] = []
        while ended.isEmpty {
            _ = client.wait(alsoWatching: -1, timeout: 200)
            client.takeFinished(into: &ended)
        }
        return exchange
    }

    static func now() -> Int { MonotonicClock.milliseconds() }

    static func nanoseconds() -> Int { MonotonicClock.nanoseconds() }

    /// `nil` when the push service answers one HTTP/2 request on a connection of its own, its
    /// certificate verified as for a push (APNs: `GET /`, which it answers 405; Web Push has no
    /// one server to ask: nil); else why not. A worker asks it before it says it is ready.
    package func probe() -> String? { link.probe() }

    /// Whether every push handed over has its result taken.
    package var isIdle: Bool { results.count == head }

    /// Takes one push of its platform.
    package func submit(_ push: OutgoingPush) {
        precondition(push.platform == link.platform)
        results.append(nil)
        ready.append(Transfer(sequence: nextSequence, push: push))
        nextSequence += 1
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

    /// The requests in flight on every pool.
    private var inFlight: Int { link.clients.reduce(0) { $0 + $1.inFlight } }

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
        var stopped = Start.handled
        while started < ready.count {
            stopped = start(ready[started])
            guard stopped == .handled else { break }
            started += 1
        }
        if started > 0 { ready.removeFirst(started) }
        var wait = timeout
        if let next = delayed.map(\.due).min() { wait = min(wait, next - now) }
        if stopped == .refused { wait = 0 }
        polled.removeAll(keepingCapacity: true)
        var shortest = wait
        for client in link.clients {
            shortest = min(shortest, client.prepare(timeout: wait, into: &descriptors))
            polled.append((client, descriptors.count))
        }
        return shortest
    }

    /// Lets the connections work on what `poll` saw of the descriptors ``prepare(timeout:into:)``
    /// gave, and takes the answers.
    func perform(_ descriptors: ArraySlice<pollfd>) {
        // The ends are places in the gateway's array, whose slice this is.
        var start = descriptors.startIndex
        for (client, end) in polled {
            client.perform(descriptors[start..<end])
            start = end
        }
        collect()
    }

    /// What ``start(_:)`` did with a ready push.
    private enum Start {
        /// Handed to a connection, ended with its error, or put off (a pause): no longer ready.
        case handled
        /// It stays ready: its pool has no room, or its link waits; an answer or the link's
        /// descriptor in the `poll` says when to try again.
        case waits
        /// It stays ready: the client refused it though its pool had room; tried again at once.
        case refused
    }

    /// Hands `transfer`'s request to a connection (``Start``). A push whose request cannot be
    /// made ends with its error line; one whose link is paused waits out the pause, within its
    /// attempts.
    private func start(_ transfer: Transfer) -> Start {
        let client: HTTP2Client
        do throws(CodedError) {
            guard let found = try link.client(for: transfer.push), found.hasRoom else { return .waits }
            client = found
            switch link.readiness() {
            case .ready:
                break
            case .waiting:
                return .waits
            case .paused(let error, let milliseconds):
                guard transfer.transportAttempts + 1 < SendTiming.transportAttempts else { throw error }
                transfer.transportAttempts += 1
                retryLater(transfer, attempt: transfer.transportAttempts, notBefore: milliseconds)
                return .handled
            }
            fields.removeAll()
            let body = try link.request(transfer, on: client, into: &fields)
            let exchange = HTTP2Exchange(owner: transfer, body: body)
            guard client.submit(exchange, headers: fields) else { return .refused }
        } catch {
            fail(transfer, error)
            return .handled
        }
        transfer.client = client
        metrics?.setInFlight(source, inFlight)
        transfer.sentAt = Self.nanoseconds()
        return .handled
    }

    /// Takes the exchanges the clients ended: each push's answer or failure.
    private func collect() {
        for client in link.clients { client.takeFinished(into: &done) }
        guard !done.isEmpty else { return }
        metrics?.setInFlight(source, inFlight)
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
        let platform = link.platform
        let host = transfer.client?.configuration.authority ?? "the push service"
        switch exchange.failure {
        case .noHTTP2?:
            // No attempt will change the server's protocols: nothing was sent to it.
            let error = CodedError(
                .io, "\(host) does not speak HTTP/2 (its TLS handshake chose no 'h2'), as \(platform.service) does: nothing was sent to it")
            fail(transfer, error)
            return
        case .refusedAddress(let reason)?:
            // The host resolves only to private or reserved addresses: never sent, never retried.
            let allowing = platform.privateAddressesKey.map { " (\($0) allows one)" } ?? ""
            fail(transfer, CodedError(.badInput, "\(reason): not sent\(allowing)"))
            return
        case .transport(let reason)?:
            // No answer: the connection failed, went away (GOAWAY past this stream, a reset) or
            // timed out. A new connection takes its place; its first request goes alone.
            if lostConnections.insert("\(host) \(exchange.connection)").inserted { metrics?.reconnected(source) }
            transfer.transportAttempts += 1
            if transfer.transportAttempts < SendTiming.transportAttempts {
                retryLater(transfer, attempt: transfer.transportAttempts)
            } else {
                fail(transfer, CodedError(.io, "no answer from \(host) after \(transfer.transportAttempts) attempts: \(reason)"))
            }
            return
        case nil:
            break
        }
        let status = exchange.status
        var messageName: String?
        var retryAfterHeader: [UInt8]?
        for (index, value) in exchange.headers {
            if index == Self.messageNameHeader {
                messageName = String(decoding: value.filter { $0 > 0x20 && $0 < 0x7F }, as: UTF8.self)
            } else if index == Self.retryAfterHeader, value.count < 100 {
                // Spaces inside an HTTP-date stay; those around the value go.
                let printable = value.filter { $0 >= 0x20 && $0 < 0x7F }
                retryAfterHeader = Array(printable.drop { $0 == 0x20 }.reversed().drop { $0 == 0x20 }.reversed())
            }
        }
        messageName = link.messageName(header: messageName, body: exchange.body)
        let reason = link.reason(status: status, body: exchange.body)
        metrics?.answered(
            source, status: status, reason: reason, seconds: Double(Self.nanoseconds() - transfer.sentAt) / 1e9,
            gone: platform.isGone(status, reason: reason))
        do throws(CodedError) {
            if try link.sendsAgain(transfer, status: status, reason: reason) {
                ready.insert(transfer, at: ready.firstIndex { $0.sequence > transfer.sequence } ?? ready.endIndex)
                return
            }
        } catch {
            fail(transfer, error)
            return
        }
        let retryAfter = retryAfterHeader.flatMap { SendTiming.retryAfter($0, now: link.unixTime()) }
        if platform.isRetried(status) {
            transfer.serverAttempts += 1
            if transfer.serverAttempts < SendTiming.serverAttempts, (retryAfter ?? 0) <= SendTiming.longestRetryAfter {
                retryLater(transfer, attempt: transfer.serverAttempts, notBefore: retryAfter)
                return
            }
        }
        let delivered = platform.isDelivered(status)
        if delivered, transfer.push.id == nil, let line = link.deliveredLine(transfer.push, messageName: messageName) {
            complete(transfer.sequence, with: line, .answered(status: status, reason: nil, retryAfter: nil, platform: platform))
            return
        }
        var members: [JSONObject.Member] = transfer.push.id.map { [.init(key: "id", value: $0)] } ?? []
        members.append(.init(key: "platform", value: .string(platform.rawValue)))
        members += transfer.push.target
        members.append(.init(key: "status", value: .number(JSONNumber(status))))
        if let messageName { members.append(.init(key: platform.messageNameKey, value: .string(messageName))) }
        if !delivered {
            members.append(.init(key: "reason", value: reason.map { .string($0) } ?? .null))
        }
        if platform.isGone(status, reason: reason) { members.append(.init(key: "gone", value: .bool(true))) }
        members += link.extraMembers(status: status, body: exchange.body)
        // The retry-after of a status tried again, in whole seconds rounded up: the line's and the
        // outcome's alike.
        let retryAfterSeconds = platform.isRetried(status) ? retryAfter.map { ($0 + 999) / 1000 } : nil
        if let retryAfterSeconds { members.append(.init(key: "retry_after", value: .number(JSONNumber(retryAfterSeconds)))) }
        complete(
            transfer.sequence, with: JSONWriter.compactBytes(.object(JSONObject(members))),
            .answered(status: status, reason: reason, retryAfter: retryAfterSeconds.map { $0 * 1000 }, platform: platform))
    }

    /// Ends every push not answered yet with an `io` error line saying `reason`: those in flight
    /// (their connections closed), waiting for a retry's backoff, or not started. For a stop
    /// that must not wait for a server that never answers (``SendTiming/stopDrain``).
    private func abandon(_ reason: String) {
        for client in link.clients {
            client.closeAll(reason)
            client.takeFinished(into: &done)
        }
        metrics?.setInFlight(source, 0)
        let inFlight = done.compactMap { $0.owner.map { unsafeDowncast($0, to: Transfer.self) } }
        done.removeAll(keepingCapacity: true)
        for transfer in inFlight + ready + delayed { fail(transfer, CodedError(.io, reason)) }
        ready = []
        delayed = []
    }

    /// The line of a push abandoned at a stop: it may or may not have reached its push service.
    var stopReason: String {
        "stopped (SIGTERM) with no answer from \(link.platform.service) within \(SendTiming.stopDrain / 1000) s: "
            + "the push may or may not have been delivered"
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
        if let stopDeadline, now >= stopDeadline, !isIdle { abandon(stopReason) }
    }

    /// Ends a push with `error`: its error line (with its id, platform and device).
    private func fail(_ transfer: Transfer, _ error: CodedError) {
        let target = [JSONObject.Member(key: "platform", value: .string(transfer.push.platform.rawValue))] + transfer.push.target
        complete(transfer.sequence, with: Self.errorLine(id: transfer.push.id, target: target, error), .failed(error))
    }

    private func complete(_ sequence: Int, with line: [UInt8], _ outcome: SendOutcome) {
        results[head + sequence - firstUnwritten] = (line, outcome)
    }

    /// The error object of a line: `{"id": ..., TARGET..., "error": {"code", "message"}}`, the
    /// id and the members naming the device when the line had them.
    static func errorLine(id: JSONValue? = nil, target: [JSONObject.Member], _ error: CodedError) -> [UInt8] {
        var line: [UInt8] = []
        error.appendErrorObject(to: &line, leading: (id.map { [.init(key: "id", value: $0)] } ?? []) + target)
        return line
    }

    /// Whether something is left to send or answer.
    package var hasWork: Bool { inFlight > 0 || !ready.isEmpty || !delayed.isEmpty }
}

internal import CCurl
internal import CCurlShim
internal import COpenSSL
package import KindlyPushBase
package import KindlyPushCore
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
    /// Requests handed to libcurl at once; libcurl sends as many of them as the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS allows on the one connection and holds the rest.
    package static let maximumHandedOver = 1000
    /// Lines read ahead of the oldest one not yet answered (results are written in input order).
    package static let readAhead = 4096
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

/// One push on its way: what is sent, and what came back so far.
final class Transfer {
    let sequence: Int
    let push: APNsPush
    var response: [UInt8] = []
    var apnsID: String?
    /// The answer's `retry-after` header, as it came.
    var retryAfterHeader: [UInt8]?
    var headers: UnsafeMutablePointer<curl_slist>?
    /// The provider token the request carried (``ProviderToken/generation``).
    var tokenGeneration = 0
    /// The connection it was handed over on (``APNsSender``'s `connection` then).
    var connection = 0
    var serverAttempts = 0
    var transportAttempts = 0
    /// It was sent again once after `ExpiredProviderToken`.
    var renewedToken = false
    /// When a delayed retry may go (monotonic milliseconds).
    var due = 0
    /// When it was last handed to libcurl (monotonic nanoseconds), for the answer's latency.
    var sentAt = 0

    init(sequence: Int, push: APNsPush) {
        self.sequence = sequence
        self.push = push
    }
}

/// Drops what it is given (the answer to ``APNsSender/probe()``).
private let discardCallback: kp_curl_data_callback = { _, size, count, _ in size * count }

private let writeCallback: kp_curl_data_callback = { data, size, count, context in
    let length = size * count
    guard let data, let context else { return length }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    if transfer.response.count + length <= SendTiming.maximumResponseSize {
        transfer.response.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
    }
    return length
}

private let headerCallback: kp_curl_data_callback = { data, size, count, context in
    let length = size * count
    guard let data, let context else { return length }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let line = UnsafeRawBufferPointer(start: data, count: length)
    let name = Array("apns-id:".utf8)
    if line.count > name.count, zip(line.prefix(name.count), name).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) {
        let value = line.dropFirst(name.count).filter { $0 > 0x20 && $0 < 0x7F }
        transfer.apnsID = String(decoding: value, as: UTF8.self)
    }
    let retryAfter = Array("retry-after:".utf8)
    if line.count > retryAfter.count, line.count < 100,
        zip(line.prefix(retryAfter.count), retryAfter).allSatisfy({ $0 | 0x20 == $1 | 0x20 })
    {
        // Spaces inside an HTTP-date stay; those around the value and the line's end go.
        let value = line.dropFirst(retryAfter.count).filter { $0 >= 0x20 && $0 < 0x7F }
        transfer.retryAfterHeader = Array(value.drop { $0 == 0x20 }.reversed().drop { $0 == 0x20 }.reversed())
    }
    return length
}

/// Lets a request go only over HTTP/2: the connection's TLS handshake must have chosen `h2`
/// (ALPN). libcurl would otherwise fall back to HTTP/1.1 with a server that offers no `h2`, one
/// request per connection, while APNs speaks HTTP/2 only: such a server is refused before
/// anything is sent (the transfer ends `CURLE_ABORTED_BY_CALLBACK`). `context` is the easy handle.
private let requireHTTP2: curl_prereq_callback = { context, _, _, _, _ in
    var pointer: UnsafeMutableRawPointer?
    guard let context, kp_curl_easy_get_pointer(context, CURLINFO_TLS_SSL_PTR, &pointer) == CURLE_OK, let pointer else {
        return CURL_PREREQFUNC_ABORT
    }
    let session = pointer.assumingMemoryBound(to: curl_tlssessioninfo.self).pointee
    guard session.backend == CURLSSLBACKEND_OPENSSL, let ssl = session.internals else { return CURL_PREREQFUNC_ABORT }
    var selected: UnsafePointer<UInt8>?
    var length: UInt32 = 0
    SSL_get0_alpn_selected(OpaquePointer(ssl), &selected, &length)
    guard let selected, length == 2, selected[0] == UInt8(ascii: "h"), selected[1] == UInt8(ascii: "2") else {
        return CURL_PREREQFUNC_ABORT
    }
    return CURL_PREREQFUNC_OK
}

/// What libcurl asked to be told about (`curl_multi_socket_action`): the sockets to watch, for
/// what, and when its timer runs out.
///
/// Why not `curl_multi_perform`: it looks at every transfer in each call, each with a `poll` of
/// its own, so that a connection with a hundred streams in flight cost a hundred system calls per
/// wake-up (profiled: most of send's CPU time). `curl_multi_socket_action` hands libcurl the
/// readiness this thread's one `poll` saw.
final class CurlEvents {
    /// Each socket and its `poll` events.
    var sockets: [Int32: Int16] = [:]
    /// When libcurl's timer runs out (monotonic milliseconds); nil for no timer.
    var deadline: Int?
}

private let socketCallback: curl_socket_callback = { _, socket, what, context, _ in
    guard let context else { return 0 }
    let events = Unmanaged<CurlEvents>.fromOpaque(context).takeUnretainedValue()
    switch what {
    case Int32(CURL_POLL_IN): events.sockets[socket] = Int16(POLLIN)
    case Int32(CURL_POLL_OUT): events.sockets[socket] = Int16(POLLOUT)
    case Int32(CURL_POLL_INOUT): events.sockets[socket] = Int16(POLLIN | POLLOUT)
    default: events.sockets[socket] = nil
    }
    return 0
}

private let timerCallback: curl_multi_timer_callback = { _, milliseconds, context in
    guard let context else { return 0 }
    let events = Unmanaged<CurlEvents>.fromOpaque(context).takeUnretainedValue()
    events.deadline = milliseconds < 0 ? nil : APNsSender.now() + milliseconds
    return 0
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
    /// The app's name in `send --config`'s file (the metrics' `app`); nil: the one app of the
    /// command line, named by its topic.
    package var app: String?

    package init(serverURL: String, topic: String, caFile: String? = nil, expiration: Int? = nil, app: String? = nil) {
        self.serverURL = serverURL
        self.topic = topic
        self.caFile = caFile
        self.expiration = expiration
        self.app = app
    }
}

/// `kindly-push send`: reads documents, sends each push to APNs over one multiplexed HTTP/2
/// connection (libcurl's multi interface, `CURLPIPE_MULTIPLEX`, one connection to the host),
/// and writes one result per input, in input order.
///
/// One thread does everything: it reads lines while fewer than ``SendTiming/readAhead`` wait
/// for their answer, hands requests to libcurl (the first alone, until the server has
/// answered one and so raised its stream limit; then up to ``SendTiming/maximumHandedOver``),
/// waits in `curl_multi_poll` on the connection and standard input together, and writes the
/// answered prefix of the results.
package final class APNsSender {
    package let destination: APNsDestination
    private var token: ProviderToken
    private let multi: UnsafeMutableRawPointer
    private let host: String
    private var inFlight: [UnsafeMutableRawPointer: Transfer] = [:]
    private var idleHandles: [UnsafeMutableRawPointer] = []
    /// Ready to go, oldest input first.
    private var ready: [Transfer] = []
    /// Waiting for their backoff delay.
    private var delayed: [Transfer] = []
    /// The result line of each input from `firstUnwritten` on; nil while unanswered.
    private var results: [[UInt8]?] = []
    /// Where the results not taken yet start in `results` (the taken ones are dropped in bulk).
    private var head = 0
    private var firstUnwritten = 0
    private var nextSequence = 0
    /// The current connection, counted: a transfer that finds no answer ends the connection it
    /// was handed over on, and the next one starts with a new number.
    private var connection = 0
    /// The newest connection that answered a request. While it is the current one, more than
    /// one request may go at once; an answer on a connection already ended (a stream below a
    /// GOAWAY's last stream id) does not count for the next, which starts with the server's
    /// initial stream limit (1 for APNs) until it answers one of its own.
    private var answeredConnection = -1
    private let events = CurlEvents()
    /// `--metrics`: what the sender counts (``SendMetrics``), under its app (the topic) and platform.
    package var metrics: SendMetrics? {
        didSet { metrics?.register(source) }
    }
    private var source: SendMetrics.Source { SendMetrics.Source(app: destination.app ?? destination.topic, platform: "apns") }

    package init(destination: APNsDestination, token: ProviderToken) throws(CodedError) {
        self.destination = destination
        self.token = token
        guard curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK, let multi = curl_multi_init() else {
            throw CodedError(.io, "libcurl cannot start")
        }
        self.multi = multi
        host = String(decoding: destination.serverURL.utf8.dropFirst(8), as: UTF8.self)
        _ = kp_curl_multi_set_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        // One connection: every request is a stream of it, as APNs asks.
        _ = kp_curl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1)
        _ = kp_curl_multi_set_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 1)
        // libcurl's own cap on streams (100 by default) raised: the server's SETTINGS decide.
        _ = kp_curl_multi_set_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, Int(SendTiming.maximumHandedOver))
        let context = Unmanaged.passUnretained(events).toOpaque()
        _ = kp_curl_multi_set_socket_function(multi, socketCallback)
        _ = kp_curl_multi_set_pointer(multi, CURLMOPT_SOCKETDATA, context)
        _ = kp_curl_multi_set_timer_function(multi, timerCallback)
        _ = kp_curl_multi_set_pointer(multi, CURLMOPT_TIMERDATA, context)
    }

    deinit {
        for (easy, transfer) in inFlight {
            curl_multi_remove_handle(multi, easy)
            curl_slist_free_all(transfer.headers)
            curl_easy_cleanup(easy)
        }
        for easy in idleHandles { curl_easy_cleanup(easy) }
        curl_multi_cleanup(multi)
    }

    static func now() -> Int { MonotonicClock.milliseconds() }

    static func nanoseconds() -> Int { MonotonicClock.nanoseconds() }

    /// `nil` when the push service answers one HTTP/2 request (`GET /`, which APNs answers 405:
    /// no push; its body dropped) on a connection of its own, its certificate verified as for a
    /// push; else why not. A worker asks it before it says it is ready.
    package func probe() -> String? {
        guard let easy = curl_easy_init() else { return "libcurl: out of memory" }
        defer { curl_easy_cleanup(easy) }
        "\(destination.serverURL)/".withCString { _ = kp_curl_easy_set_pointer(easy, CURLOPT_URL, $0) }
        setTransport(of: easy)
        _ = kp_curl_easy_set_callback(easy, CURLOPT_WRITEFUNCTION, discardCallback)
        let code = curl_easy_perform(easy)
        if code == CURLE_ABORTED_BY_CALLBACK { return "\(host) does not speak HTTP/2 (its TLS handshake chose no 'h2')" }
        guard code == CURLE_OK else { return "\(host): \(String(cString: curl_easy_strerror(code)))" }
        return nil
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
        case .failure(let error): complete(sequence, with: Self.errorLine(id: error.id, token: error.token, error.error))
        }
    }

    /// Appends the result line of the oldest push whose result is not taken yet, and a newline,
    /// when it is answered; `false` (nothing appended) while it is not.
    package func takeOne(into output: inout [UInt8]) -> Bool {
        guard head < results.count, let line = results[head] else { return false }
        output += line
        output.append(0x0A)
        results[head] = nil
        head += 1
        firstUnwritten += 1
        // The taken prefix is dropped now and then, not at each line.
        if head >= 1024, head * 2 >= results.count {
            results.removeFirst(head)
            head = 0
        }
        return true
    }

    /// Hands requests over, and says what to wait for before ``perform(_:)``: libcurl's
    /// sockets, and how long (milliseconds, at most `timeout`).
    func prepare(timeout: Int) -> (descriptors: [pollfd], wait: Int) {
        let now = Self.now()
        if !delayed.isEmpty {
            let due = delayed.filter { $0.due <= now }
            if !due.isEmpty {
                delayed.removeAll { $0.due <= now }
                ready = (ready + due).sorted { $0.sequence < $1.sequence }
            }
        }
        let limit = answeredConnection == connection ? SendTiming.maximumHandedOver : 1
        let count = min(max(0, limit - inFlight.count), ready.count)
        if count > 0 {
            for transfer in ready[0..<count] { start(transfer) }
            ready.removeFirst(count)
        }
        var wait = timeout
        if let next = delayed.map(\.due).min() { wait = min(wait, next - now) }
        if let deadline = events.deadline { wait = min(wait, deadline - now) }
        if !ready.isEmpty, inFlight.count < limit { wait = 0 }
        return (events.sockets.map { pollfd(fd: $0.key, events: $0.value, revents: 0) }, max(0, wait))
    }

    /// Lets libcurl work on what `poll` saw of the descriptors ``prepare(timeout:)`` gave, and
    /// takes the answers.
    func perform(_ descriptors: ArraySlice<pollfd>) {
        var running: Int32 = 0
        for descriptor in descriptors where descriptor.revents != 0 {
            var mask: Int32 = 0
            if descriptor.revents & Int16(POLLIN | POLLHUP) != 0 { mask |= Int32(CURL_CSELECT_IN) }
            if descriptor.revents & Int16(POLLOUT) != 0 { mask |= Int32(CURL_CSELECT_OUT) }
            if descriptor.revents & Int16(POLLERR | POLLNVAL) != 0 { mask |= Int32(CURL_CSELECT_ERR) }
            curl_multi_socket_action(multi, descriptor.fd, mask, &running)
        }
        if let deadline = events.deadline, deadline <= Self.now() {
            events.deadline = nil
            // CURL_SOCKET_TIMEOUT: libcurl's timer ran out.
            curl_multi_socket_action(multi, -1, 0, &running)
        }
        collect()
    }

    private func start(_ transfer: Transfer) {
        do throws(AuthKeyError) {
            let generation = token.generation
            try token.refreshIfDue()
            if token.generation != generation { metrics?.refreshedToken(source) }
        } catch {
            complete(
                transfer.sequence,
                with: Self.errorLine(id: transfer.push.id, token: transfer.push.token, CodedError(.io, error.description)))
            return
        }
        let easy: UnsafeMutableRawPointer
        if let idle = idleHandles.popLast() {
            curl_easy_reset(idle)
            easy = idle
        } else {
            guard let new = curl_easy_init() else {
                complete(
                    transfer.sequence,
                    with: Self.errorLine(id: transfer.push.id, token: transfer.push.token, CodedError(.io, "libcurl: out of memory")))
                return
            }
            easy = new
        }
        transfer.response.removeAll(keepingCapacity: true)
        transfer.apnsID = nil
        transfer.retryAfterHeader = nil
        transfer.tokenGeneration = token.generation
        transfer.connection = connection
        let push = transfer.push
        var lines = [
            token.header, "apns-topic: \(destination.topic)", "apns-push-type: \(push.pushType)", "apns-priority: \(push.priority)",
            "content-type: application/json", "accept:",
        ]
        // The push's own expiration (Unix seconds), else the run's `--expiration` from now; none:
        // no header (APNs keeps the push for its own default time).
        if let expiration = push.delivery.expiration {
            lines.append("apns-expiration: \(expiration)")
        } else if let expiration = destination.expiration {
            lines.append("apns-expiration: \(expiration == 0 ? 0 : token.clock.now() + expiration)")
        }
        if let collapse = push.collapseID { lines.append("apns-collapse-id: \(collapse)") }
        var headers: UnsafeMutablePointer<curl_slist>?
        for line in lines { headers = curl_slist_append(headers, line) }
        transfer.headers = headers
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        "\(destination.serverURL)/3/device/\(push.token)".withCString { _ = kp_curl_easy_set_pointer(easy, CURLOPT_URL, $0) }
        setTransport(of: easy)
        _ = kp_curl_easy_set_long(easy, CURLOPT_PIPEWAIT, 1)
        _ = kp_curl_easy_set_long(easy, CURLOPT_POST, 1)
        _ = kp_curl_easy_set_long(easy, CURLOPT_POSTFIELDSIZE, push.body.count)
        push.body.withUnsafeBytes { _ = kp_curl_easy_set_pointer(easy, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
        _ = kp_curl_easy_set_pointer(easy, CURLOPT_HTTPHEADER, headers)
        _ = kp_curl_easy_set_callback(easy, CURLOPT_WRITEFUNCTION, writeCallback)
        _ = kp_curl_easy_set_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = kp_curl_easy_set_callback(easy, CURLOPT_HEADERFUNCTION, headerCallback)
        _ = kp_curl_easy_set_pointer(easy, CURLOPT_HEADERDATA, context)
        "kindly-push/\(KindlyPushRelease.version)".withCString { _ = kp_curl_easy_set_pointer(easy, CURLOPT_USERAGENT, $0) }
        inFlight[easy] = transfer
        metrics?.setInFlight(source, inFlight.count)
        transfer.sentAt = Self.nanoseconds()
        curl_multi_add_handle(multi, easy)
    }

    /// What every request of the sender's (a push, the probe) goes over: HTTP/2 only
    /// (``requireHTTP2``), no signals, the connection and request time-outs, and with `--ca-file`
    /// only its authorities.
    private func setTransport(of easy: UnsafeMutableRawPointer) {
        _ = kp_curl_easy_set_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        _ = kp_curl_easy_set_prereq(easy, requireHTTP2, easy)
        _ = kp_curl_easy_set_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = kp_curl_easy_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, SendTiming.connectTimeout)
        _ = kp_curl_easy_set_long(easy, CURLOPT_TIMEOUT_MS, SendTiming.requestTimeout)
        if let caFile = destination.caFile {
            // Only these authorities: without the CA path, libcurl would trust the system's too
            // (Debian's is built with /etc/ssl/certs).
            caFile.withCString { _ = kp_curl_easy_set_pointer(easy, CURLOPT_CAINFO, $0) }
            _ = kp_curl_easy_set_pointer(easy, CURLOPT_CAPATH, nil)
        }
    }

    private func collect() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            var status = 0
            _ = kp_curl_easy_get_long(easy, CURLINFO_RESPONSE_CODE, &status)
            curl_multi_remove_handle(multi, easy)
            guard let transfer = inFlight.removeValue(forKey: easy) else { continue }
            metrics?.setInFlight(source, inFlight.count)
            curl_slist_free_all(transfer.headers)
            transfer.headers = nil
            idleHandles.append(easy)
            finish(transfer, code: code, status: status)
        }
    }

    /// Sends `transfer` again after its backoff, and not before `notBefore` milliseconds (an
    /// answer's `retry-after`).
    private func retryLater(_ transfer: Transfer, attempt: Int, notBefore: Int? = nil) {
        metrics?.retried(source)
        let delay = min(SendTiming.longestRetryDelay, SendTiming.firstRetryDelay << min(attempt - 1, 16))
        transfer.due = Self.now() + max(delay / 2 + Int.random(in: 0...(delay / 2)), notBefore ?? 0)
        delayed.append(transfer)
    }

    private func finish(_ transfer: Transfer, code: CURLcode, status: Int) {
        let token = transfer.push.token
        if code == CURLE_ABORTED_BY_CALLBACK {
            // requireHTTP2 refused the connection: no attempt will change the server's protocols.
            let error = CodedError(
                .io, "\(host) does not speak HTTP/2 (its TLS handshake chose no 'h2'), as APNs does: nothing was sent to it")
            complete(transfer.sequence, with: Self.errorLine(id: transfer.push.id, token: token, error))
            return
        }
        guard code == CURLE_OK, status > 0 else {
            // No answer: the connection failed, went away (GOAWAY past this stream, a reset) or
            // timed out. The next connection starts with one request, as the first did.
            if transfer.connection == connection {
                connection += 1
                metrics?.reconnected(source)
            }
            transfer.transportAttempts += 1
            if transfer.transportAttempts < SendTiming.transportAttempts {
                retryLater(transfer, attempt: transfer.transportAttempts)
            } else {
                let reason = String(cString: curl_easy_strerror(code))
                let error = CodedError(.io, "no answer from \(host) after \(transfer.transportAttempts) attempts: \(reason)")
                complete(transfer.sequence, with: Self.errorLine(id: transfer.push.id, token: token, error))
            }
            return
        }
        answeredConnection = max(answeredConnection, transfer.connection)
        let body = (try? JSONReader.parse(transfer.response))?.objectValue
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
                complete(transfer.sequence, with: Self.errorLine(id: transfer.push.id, token: token, CodedError(.io, error.description)))
                return
            }
        }
        let retryAfter = transfer.retryAfterHeader.flatMap { SendTiming.retryAfter($0, now: self.token.clock.now()) }
        if SendTiming.isRetried(status) {
            transfer.serverAttempts += 1
            if transfer.serverAttempts < SendTiming.serverAttempts, (retryAfter ?? 0) <= SendTiming.longestRetryAfter {
                retryLater(transfer, attempt: transfer.serverAttempts, notBefore: retryAfter)
                return
            }
        }
        var members: [JSONObject.Member] = transfer.push.id.map { [.init(key: "id", value: $0)] } ?? []
        members += [.init(key: "token", value: .string(token)), .init(key: "status", value: .number(JSONNumber(status)))]
        if let id = transfer.apnsID { members.append(.init(key: "apns_id", value: .string(id))) }
        if status != 200 {
            members.append(.init(key: "reason", value: reason.map { .string($0) } ?? .null))
        }
        if status == 410, let timestamp = body?["timestamp"], case .number = timestamp {
            members.append(.init(key: "unregistered_at", value: timestamp))
        }
        if SendTiming.isRetried(status), let retryAfter {
            members.append(.init(key: "retry_after", value: .number(JSONNumber((retryAfter + 999) / 1000))))
        }
        complete(transfer.sequence, with: JSONWriter.compactBytes(.object(JSONObject(members))))
    }

    /// Ends every push not answered yet with an `io` error line saying `reason`: those in flight
    /// (their streams reset), waiting for a retry's backoff, or not started. For a stop that must
    /// not wait for a server that never answers (``SendTiming/stopDrain``).
    private func abandon(_ reason: String) {
        for (easy, transfer) in inFlight {
            curl_multi_remove_handle(multi, easy)
            curl_slist_free_all(transfer.headers)
            transfer.headers = nil
            idleHandles.append(easy)
        }
        metrics?.setInFlight(source, 0)
        for transfer in Array(inFlight.values) + ready + delayed {
            complete(transfer.sequence, with: Self.errorLine(id: transfer.push.id, token: transfer.push.token, CodedError(.io, reason)))
        }
        inFlight = [:]
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

    private func complete(_ sequence: Int, with line: [UInt8]) {
        results[head + sequence - firstUnwritten] = line
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
    package var hasWork: Bool { !inFlight.isEmpty || !ready.isEmpty || !delayed.isEmpty }
}

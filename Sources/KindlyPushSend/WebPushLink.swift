internal import KindlyPushBase
internal import KindlyPushCore
internal import KindlyPushHTTP2
package import KindlyPushLibcrypto
internal import KindlyPushWebPush

/// Where an app's Web Push pushes go from, and what every request carries: its `webpush`
/// section of `send --config` (the command line builds it).
package struct WebPushDestination: Sendable {
    /// The app's name in `send --config`'s file (the metrics' `app`).
    package var app: String
    /// The VAPID key (RFC 8292): its secret stays in wiped memory.
    package var vapidKey: ES256Key
    /// The VAPID JWT's `sub`: `mailto:…` or `https:…`.
    package var subject: String
    /// Where its pushes may go, and over how many connections.
    package var reach: WebPushReach
    /// `TTL` for a push that gives no expiration of its own (`--expiration`); nil: 28 days.
    package var expiration: Int?
    /// The Unix clock (the test clock, when given).
    package var clock: SendClock

    package init(
        app: String, vapidKey: ES256Key, subject: String, reach: WebPushReach = WebPushReach(), expiration: Int? = nil, clock: SendClock
    ) {
        self.app = app
        self.vapidKey = vapidKey
        self.subject = subject
        self.reach = reach
        self.expiration = expiration
        self.clock = clock
    }
}

/// Where an app's Web Push pushes may go and over what: the part of its `webpush` section of
/// `send --config` besides its VAPID identity.
package struct WebPushReach: Sendable {
    /// The CA bundle that verifies the push services, instead of the system's.
    package var caFile: String?
    /// HTTP/2 connections to each push service's origin at most.
    package var connections: Int
    /// The origins pushes may go to (``WebPushOrigins``); nil: any. A subscription names its
    /// push service, so whoever writes the input chooses where `send` connects.
    package var allowedOrigins: WebPushOrigins?
    /// Push services (origins) with connections open at once at most: at a new one, the one
    /// unused longest with nothing in flight is closed.
    package var maximumPushServices: Int
    /// Whether a push service may resolve to a loopback, private, link-local or reserved address
    /// (``InternetAddress``); by default it may not, since whoever writes the input would
    /// otherwise reach this host's own networks.
    package var allowsPrivateAddresses: Bool

    package init(
        caFile: String? = nil, connections: Int = 1, allowedOrigins: WebPushOrigins? = nil,
        maximumPushServices: Int = WebPushOrigins.defaultMaximum, allowsPrivateAddresses: Bool = false
    ) {
        self.caFile = caFile
        self.connections = connections
        self.allowedOrigins = allowedOrigins
        self.maximumPushServices = maximumPushServices
        self.allowsPrivateAddresses = allowsPrivateAddresses
    }
}

/// The origins an app's Web Push pushes may go to (`webpush.allowed_origins` of `send
/// --config`): each `https://HOST[:PORT]`, or `https://*.DOMAIN[:PORT]` for every host under
/// DOMAIN (one label or more), as Sygnal's `allowed_endpoints` does for its hosts.
package struct WebPushOrigins: Sendable {
    /// Push services with connections open at once, when the app does not say.
    package static let defaultMaximum = 64
    /// The most an app may set: each open push service holds its connections' sockets.
    package static let mostPushServices = 1024

    /// The origins, normalized as ``VAPID/origin(of:)`` writes them (lower case, no default port).
    package let patterns: [String]

    /// `patterns`, each checked and normalized; nil when one is not an origin or a wildcard one.
    package init?(_ patterns: [String]) {
        var normalized: [String] = []
        for pattern in patterns {
            var authority = pattern.utf8.dropFirst("https://".utf8.count)
            if authority.last == UInt8(ascii: "/") { authority = authority.dropLast() }
            let host = authority.starts(with: "*.".utf8) ? authority.dropFirst(2) : authority
            guard pattern.utf8.starts(with: "https://".utf8), !host.isEmpty, !host.contains(where: { "*/?#@".utf8.contains($0) }),
                let origin = try? VAPID.origin(of: pattern)
            else { return nil }
            normalized.append(origin)
        }
        self.patterns = normalized
    }

    /// Whether `origin` (``VAPID/origin(of:)``'s) is one of the patterns' or under a wildcard one.
    package func allows(_ origin: String) -> Bool {
        patterns.contains { pattern in
            guard pattern.utf8.starts(with: "https://*.".utf8) else { return origin == pattern }
            let suffix = pattern.utf8.dropFirst("https://*".utf8.count)
            let authority = origin.utf8.dropFirst("https://".utf8.count)
            guard origin.utf8.starts(with: "https://".utf8), authority.count > suffix.count else { return false }
            let head = authority.prefix(authority.count - suffix.count)
            return authority.suffix(suffix.count).elementsEqual(suffix) && !head.contains(UInt8(ascii: ":"))
                && !head.contains(UInt8(ascii: "["))
        }
    }
}

/// Web Push's part of ``PushSender`` (wire-format section 9.4): a pool of connections per push
/// service's origin, opened at its first push and kept (at most the app's
/// ``WebPushReach/maximumPushServices``, the one unused longest closed for a new one);
/// each push's document encrypted (RFC 8291, `aes128gcm`) for its subscription's keys, with a
/// VAPID header per origin (RFC 8292) and `TTL`, `Urgency` and `Topic`; 404 and 410 say the
/// subscription is gone. An origin the app does not allow is that push's `bad_input`, and no
/// connection is made; so is a push service that resolves only to loopback, private,
/// link-local or reserved addresses, unless the app allows private addresses.
final class WebPushLink: PlatformLink {
    let destination: WebPushDestination
    /// The pools, by origin, with when each was last given a push (``uses``).
    private var pools: [String: (client: HTTP2Client, lastUse: Int)] = [:]
    private(set) var clients: [HTTP2Client] = []
    /// A count of the pushes given a pool, which orders the pools by their last use.
    private var uses = 0
    /// Each origin's `authorization` value and when it was signed (Unix seconds).
    private var authorizations: [String: (value: String, signedAt: Int)] = [:]
    var metrics: SendMetrics?

    var platform: SendPlatform { .webPush }
    var appLabel: String { destination.app }

    /// The answer headers read: the message's name, then `retry-after` (``PushSender/messageNameHeader``).
    static let watchedHeaders = ["location", "retry-after"]
    /// A VAPID header is signed again after this many seconds (its JWT lives ``VAPID/lifetime``).
    static let vapidRenewal = 3600

    init(destination: WebPushDestination) {
        self.destination = destination
    }

    func unixTime() -> Int { destination.clock.now() }

    func client(for push: OutgoingPush) throws(CodedError) -> HTTP2Client? {
        guard case .webPush(let push) = push else { preconditionFailure("a Web Push sender takes Web Push pushes") }
        uses += 1
        if let pool = pools[push.origin] {
            pools[push.origin]?.lastUse = uses
            return pool.client
        }
        if let allowed = destination.reach.allowedOrigins, !allowed.allows(push.origin) {
            throw CodedError(
                .badInput,
                "the subscription's push service \(push.origin) is not among app '\(destination.app)'s webpush.allowed_origins: not sent")
        }
        if pools.count >= destination.reach.maximumPushServices {
            // The pool unused longest with nothing in flight makes room; none: the push waits for
            // an answer.
            guard let (origin, _) = pools.filter({ $0.value.client.inFlight == 0 }).min(by: { $0.value.lastUse < $1.value.lastUse })
            else { return nil }
            let closed = pools.removeValue(forKey: origin)?.client
            clients.removeAll { $0 === closed }
            authorizations[origin] = nil
        }
        let client = try PushSender.client(
            serverURL: push.origin, caFile: destination.reach.caFile, connections: destination.reach.connections,
            watched: Self.watchedHeaders,
            globalAddressesOnly: !destination.reach.allowsPrivateAddresses)
        pools[push.origin] = (client, uses)
        clients.append(client)
        return client
    }

    /// The request: the document encrypted for the subscription, and the headers of section 9.4.
    func request(_ transfer: Transfer, on client: HTTP2Client, into fields: inout HTTP2Headers) throws(CodedError) -> [UInt8] {
        guard case .webPush(let push) = transfer.push else { preconditionFailure("a Web Push sender takes Web Push pushes") }
        let now = destination.clock.now()
        var authorization = authorizations[push.origin]
        if authorization == nil || now - authorization!.signedAt >= Self.vapidRenewal || now < authorization!.signedAt {
            do throws(WebPushError) {
                authorization = (
                    try VAPID.authorization(endpoint: push.origin, subject: destination.subject, key: destination.vapidKey, now: now), now
                )
            } catch {
                throw CodedError(.io, "cannot sign the VAPID header: \(error)")
            }
            authorizations[push.origin] = authorization
        }
        let body: [UInt8]
        do throws(WebPushError) {
            body = try push.content.body.withBytes { (plaintext) throws(WebPushError) in
                try WebPushEncryption.encrypt(plaintext, for: push.keys)
            }
        } catch {
            throw CodedError(.badInput, "cannot encrypt the push for the subscription: \(error)")
        }
        let ttl =
            push.content.delivery.expiration.map { WebPushHeaders.ttl(expiration: $0, now: now) } ?? destination.expiration
            ?? WebPushHeaders.defaultTTL
        fields.append(":method", "POST")
        fields.append(":scheme", "https")
        fields.append(":authority", client.configuration.authority)
        fields.append(":path", push.path, changes: true)
        fields.append("authorization", authorization!.value, changes: true)
        fields.append("ttl", decimal: ttl, changes: true)
        fields.append("urgency", WebPushHeaders.urgency(priority: push.content.priority))
        if let collapse = push.content.delivery.collapseID {
            fields.append("topic", WebPushHeaders.topic(collapseID: collapse), changes: true)
        }
        fields.append("content-encoding", "aes128gcm")
        fields.append("content-type", "application/octet-stream")
        fields.append("content-length", decimal: body.count)
        fields.append("user-agent", "kindly-push/\(KindlyPushRelease.version)")
        return body
    }

    /// The service's `error` (autopush's JSON refusal: `{"code", "errno", "error", "message"}`),
    /// when it gives one.
    func reason(status: Int, body: [UInt8]) -> String? {
        guard !body.isEmpty, (400..<600).contains(status) else { return nil }
        return (try? JSONReader.parse(body))?.objectValue?["error"]?.stringValue
    }

    func sendsAgain(_ transfer: Transfer, status: Int, reason: String?) throws(CodedError) -> Bool { false }

    func extraMembers(status: Int, body: [UInt8]) -> [JSONObject.Member] { [] }

    func deliveredLine(_ push: OutgoingPush, messageName: String?) -> [UInt8]? { nil }

    /// No one server to ask: each subscription names its own.
    func probe() -> String? { nil }
}

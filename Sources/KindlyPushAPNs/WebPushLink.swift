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
    /// The CA bundle that verifies the push services, instead of the system's.
    package var caFile: String?
    /// HTTP/2 connections to each push service's origin at most.
    package var connections: Int
    /// `TTL` for a push that gives no expiration of its own (`--expiration`); nil: 28 days.
    package var expiration: Int?
    /// The Unix clock (the test clock, when given).
    package var clock: SendClock

    package init(
        app: String, vapidKey: ES256Key, subject: String, caFile: String? = nil, connections: Int = 1, expiration: Int? = nil,
        clock: SendClock
    ) {
        self.app = app
        self.vapidKey = vapidKey
        self.subject = subject
        self.caFile = caFile
        self.connections = connections
        self.expiration = expiration
        self.clock = clock
    }
}

/// Web Push's part of ``PushSender`` (wire-format section 9.4): a pool of connections per push
/// service's origin, opened at its first push and kept; each push's document encrypted (RFC
/// 8291, `aes128gcm`) for its subscription's keys, with a VAPID header per origin (RFC 8292)
/// and `TTL`, `Urgency` and `Topic`; 404 and 410 say the subscription is gone.
final class WebPushLink: PlatformLink {
    let destination: WebPushDestination
    /// The pools, by origin, and in the order they were opened.
    private var pools: [String: HTTP2Client] = [:]
    private(set) var clients: [HTTP2Client] = []
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

    func client(for push: OutgoingPush) throws(CodedError) -> HTTP2Client {
        guard case .webPush(let push) = push else { preconditionFailure("a Web Push sender takes Web Push pushes") }
        if let client = pools[push.origin] { return client }
        let client = try PushSender.client(
            serverURL: push.origin, caFile: destination.caFile, connections: destination.connections, watched: Self.watchedHeaders)
        pools[push.origin] = client
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

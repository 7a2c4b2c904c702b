internal import KindlyPushBase
internal import KindlyPushCore
internal import KindlyPushHTTP2
internal import KindlyPushLibcrypto

/// Where an APNs sender sends, and what every request carries: what `send`'s options say of
/// APNs (the command line builds it; the sender knows no command line).
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

/// One provider token for every sender of one team and key (the APNs senders of the apps of
/// `send --config` that share them), used from the sending thread only.
package final class SharedProviderToken {
    var token: ProviderToken

    package init(_ token: ProviderToken) { self.token = token }
}

/// APNs's part of ``PushSender`` (wire-format section 9.2): one pool of connections to the
/// app's server, `POST /3/device/TOKEN` with the provider token and the `apns-*` headers, and
/// APNs's answers (`ExpiredProviderToken` renews the token once; a 410's `unregistered_at`).
final class APNsLink: PlatformLink {
    let destination: APNsDestination
    /// The provider token, shared with every sender of the same team and key (``SharedProviderToken``).
    private let tokens: SharedProviderToken
    private var token: ProviderToken {
        get { tokens.token }
        set { tokens.token = newValue }
    }
    private let client: HTTP2Client
    private let host: String
    /// The fields every request starts with (`:method`, `:scheme`, `:authority`), and those
    /// after its path and token that every push carries (topic, content type, user agent).
    private var leadingFields = HTTP2Headers()
    private var trailingFields = HTTP2Headers()
    /// The `authorization` value of the token of ``authorizationGeneration``.
    private var authorization = ""
    private var authorizationGeneration = -1
    var metrics: SendMetrics?

    var platform: SendPlatform { .apns }
    var appLabel: String { destination.app ?? destination.topic }
    var clients: [HTTP2Client] { [client] }

    /// The answer headers read: the message's name, then `retry-after` (``PushSender/messageNameHeader``).
    static let watchedHeaders = ["apns-id", "retry-after"]

    init(destination: APNsDestination, token: SharedProviderToken) throws(CodedError) {
        self.destination = destination
        self.tokens = token
        client = try PushSender.client(
            serverURL: destination.serverURL, caFile: destination.caFile, connections: destination.connections, watched: Self.watchedHeaders
        )
        host = client.configuration.authority
        leadingFields.append(":method", "POST")
        leadingFields.append(":scheme", "https")
        leadingFields.append(":authority", host)
        trailingFields.append("apns-topic", destination.topic)
        trailingFields.append("content-type", "application/json")
        trailingFields.append("user-agent", "kindly-push/\(KindlyPushRelease.version)")
    }

    func unixTime() -> Int { token.clock.now() }

    func client(for push: OutgoingPush) throws(CodedError) -> HTTP2Client? { client }

    /// The request's fields: the path, the provider token (renewed when due) and the `apns-*`
    /// headers of wire-format section 9.2.
    func request(_ transfer: Transfer, on client: HTTP2Client, into fields: inout HTTP2Headers) throws(CodedError) -> [UInt8] {
        guard case .apns(let push) = transfer.push else { preconditionFailure("an APNs sender takes APNs pushes") }
        do throws(AuthKeyError) {
            let generation = token.generation
            try token.refreshIfDue()
            if token.generation != generation { metrics?.refreshedToken(source) }
        } catch {
            throw CodedError(.io, error.description)
        }
        if authorizationGeneration != token.generation {
            authorization = String(token.header.utf8.dropFirst("authorization: ".utf8.count))!
            authorizationGeneration = token.generation
        }
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
        return push.body
    }

    /// APNs's `reason` (a 200's body is empty: nothing to read).
    func reason(status: Int, body: [UInt8]) -> String? {
        body.isEmpty ? nil : (try? JSONReader.parse(body))?.objectValue?["reason"]?.stringValue
    }

    /// A 403 `ExpiredProviderToken` renews the token (unless another push renewed it already)
    /// and sends the push again, once.
    func sendsAgain(_ transfer: Transfer, status: Int, reason: String?) throws(CodedError) -> Bool {
        guard status == 403, reason == "ExpiredProviderToken", !transfer.renewedToken else { return false }
        transfer.renewedToken = true
        do throws(AuthKeyError) {
            let generation = token.generation
            guard try token.renew(replacing: transfer.tokenGeneration) else { return false }
            if token.generation != generation { metrics?.refreshedToken(source) }
            return true
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// A 410's `unregistered_at`: APNs's timestamp (milliseconds) of the device's going.
    func extraMembers(status: Int, body: [UInt8]) -> [JSONObject.Member] {
        guard status == 410, let timestamp = (try? JSONReader.parse(body))?.objectValue?["timestamp"], case .number = timestamp else {
            return []
        }
        return [.init(key: "unregistered_at", value: timestamp)]
    }

    /// A byte of an `apns-id` that JSON writes as it is (APNs's are UUIDs: hex digits and hyphens).
    private static func isPlainIDByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "-")
    }

    /// The result line of a push delivered (200) that had no `"id"`, written straight: what
    /// JSONWriter writes for `{"platform": "apns", "token", "status": 200, "apns_id"}` when the
    /// token is hex digits (every push's is) and the `apns-id` is letters, digits and hyphens
    /// (``isPlainIDByte(_:)``); nil for another `apns-id`.
    func deliveredLine(_ push: OutgoingPush, messageName apnsID: String?) -> [UInt8]? {
        guard case .apns(let push) = push, apnsID?.utf8.allSatisfy(Self.isPlainIDByte) ?? true else { return nil }
        let token = push.token
        var line: [UInt8] = []
        line.reserveCapacity(token.utf8.count + (apnsID?.utf8.count ?? 0) + 68)
        line.append(contentsOf: #"{"platform":"apns","token":""#.utf8)
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

    /// `GET /` on a connection of its own (APNs answers 405: no push; its body dropped).
    func probe() -> String? {
        let probing: HTTP2Client
        do throws(CodedError) {
            probing = try PushSender.client(
                serverURL: destination.serverURL, caFile: destination.caFile, connections: 1, watched: Self.watchedHeaders)
        } catch {
            return error.message
        }
        var request = HTTP2Headers()
        request.append(":method", "GET")
        request.append(":scheme", "https")
        request.append(":authority", host)
        request.append(":path", "/")
        request.append("user-agent", "kindly-push/\(KindlyPushRelease.version)")
        guard let exchange = PushSender.exchangeAlone(on: probing, request, body: []) else {
            return "\(host): the request could not be made"
        }
        switch exchange.failure {
        case nil: return nil
        case .noHTTP2: return "\(host) does not speak HTTP/2 (its TLS handshake chose no 'h2')"
        case .transport(let reason), .refusedAddress(let reason): return "\(host): \(reason)"
        }
    }
}

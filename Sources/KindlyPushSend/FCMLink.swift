package import KindlyPushBase
internal import KindlyPushCore
internal import KindlyPushHTTP2
package import KindlyPushLibcrypto

/// A Google service account's JSON key file, as Google issues it (wire-format section 9.3):
/// `project_id`, `client_email`, `token_uri` and the RSA `private_key`, which is read straight
/// into wiped memory and never quoted.
package struct FCMServiceAccount: Sendable {
    package var projectID: String
    package var clientEmail: String
    /// Where the access token is asked for (`https://oauth2.googleapis.com/token`).
    package var tokenURI: String
    package var key: RS256Key

    /// Reads and checks the key file at `path` (regular, the user's, mode 0600).
    package static func read(_ path: String) throws(PrivateFileError) -> FCMServiceAccount {
        try PrivateFile.read(path) { (bytes, path) throws(PrivateFileError) in try parse(bytes, path: path) }
    }

    /// Parses a key file's text (`path` names it in errors): the private key's PEM is unescaped
    /// from its JSON string straight into a wiped buffer.
    package static func parse(_ bytes: UnsafeRawBufferPointer, path: String) throws(PrivateFileError) -> FCMServiceAccount {
        func malformed(_ reason: String) -> PrivateFileError { .malformed(path: path, reason: reason) }
        let parsed: (object: JSONObject, secretRange: Range<Int>?)
        do {
            parsed = try JSONReader.parseObject(bytes, withSecretMember: "private_key", escapes: true)
        } catch {
            throw malformed("not a service account's JSON key file (\(error))")
        }
        guard !parsed.object.hasDuplicateKeys else { throw malformed("a member occurs twice") }
        func text(_ name: String) throws(PrivateFileError) -> String {
            guard let value = parsed.object[name]?.stringValue, !value.isEmpty else { throw malformed("no \"\(name)\" string") }
            return value
        }
        let projectID = try text("project_id")
        let clientEmail = try text("client_email")
        let tokenURI = try text("token_uri")
        guard tokenURI.utf8.starts(with: "https://".utf8) else { throw malformed("\"token_uri\" is not an https:// URL") }
        guard let range = parsed.secretRange, let pem = unescaped(UnsafeRawBufferPointer(rebasing: bytes[range])) else {
            throw malformed("no \"private_key\" string of PEM")
        }
        do throws(AuthKeyError) {
            let key = try RS256Key(pem: pem, what: "its private_key")
            return FCMServiceAccount(projectID: projectID, clientEmail: clientEmail, tokenURI: tokenURI, key: key)
        } catch {
            throw malformed(error.description)
        }
    }

    /// A JSON string's text (between its quotes) unescaped into wiped memory: PEM has only
    /// `\n`, `\/`, `\\` and `\"` to unescape; nil for any other escape.
    static func unescaped(_ text: UnsafeRawBufferPointer) -> SecureBytes? {
        var count = 0
        var index = 0
        while index < text.count {
            if text[index] == UInt8(ascii: "\\") {
                guard index + 1 < text.count, "n/\\\"".utf8.contains(text[index + 1]) else { return nil }
                index += 1
            }
            count += 1
            index += 1
        }
        return SecureBytes(count: count) { (out: UnsafeMutableRawBufferPointer) in
            var (from, to) = (0, 0)
            while from < text.count {
                var byte = text[from]
                if byte == UInt8(ascii: "\\") {
                    from += 1
                    byte = text[from] == UInt8(ascii: "n") ? 0x0A : text[from]
                }
                out[to] = byte
                to += 1
                from += 1
            }
        }
    }
}

/// Where an app's FCM pushes go, and what every request carries: its `fcm` section of `send
/// --config` (the command line builds it).
package struct FCMDestination: Sendable {
    /// The app's name in `send --config`'s file (the metrics' `app`).
    package var app: String
    package var account: FCMServiceAccount
    /// `https://HOST[:PORT]` of the HTTP v1 API (`https://fcm.googleapis.com`).
    package var serverURL: String
    /// The CA bundle that verifies the API's server and the token endpoint, instead of the system's.
    package var caFile: String?
    package var connections: Int
    /// `ttl` for a push that gives no expiration of its own (`--expiration`); nil: none.
    package var expiration: Int?
    package var clock: SendClock

    /// FCM's server.
    package static let productionURL = "https://fcm.googleapis.com"

    package init(
        app: String, account: FCMServiceAccount, serverURL: String = productionURL, caFile: String? = nil, connections: Int = 1,
        expiration: Int? = nil, clock: SendClock
    ) {
        self.app = app
        self.account = account
        self.serverURL = serverURL
        self.caFile = caFile
        self.connections = connections
        self.expiration = expiration
        self.clock = clock
    }
}

/// One FCM input document of `kindly-push send`, checked: `{"fcm_token": T, "push": {...}}`
/// and optionally `"id"` and the delivery fields, mapped as wire-format section 9.3 says.
package struct FCMPush: Sendable {
    /// The document's budget: FCM's 4000 bytes of data less the key `kindly_push`.
    package static let maximumPayloadSize = PushPlatform.fcmMaximumPayloadSize
    /// The longest registration token taken, in bytes.
    package static let maximumTokenSize = PushPlatform.maximumFCMTokenSize

    package var token: String
    /// The push (the value of `data.kindly_push`), its delivery fields and its `"id"`.
    package var content: PushContent

    init(object: JSONObject, compactPush: [UInt8]?) throws(APNsPush.Refusal) {
        let id = object["id"]
        guard let token = object["fcm_token"]?.stringValue, PushPlatform.isFCMToken(token) else {
            throw APNsPush.Refusal(
                token: nil, error: CodedError(.badInput, "\"fcm_token\" is not an FCM registration token (printable, 1 to 4096 bytes)"),
                id: id)
        }
        content = try APNsPush.checkPush(
            object, compactPush: compactPush, budget: Self.maximumPayloadSize, service: "FCM's"
        ) { (text) in APNsPush.Refusal(token: nil, error: CodedError(.badInput, text), id: id, fcmToken: token) }
        self.token = token
    }
}

/// FCM's part of ``PushSender`` (wire-format section 9.3): one pool of connections to the HTTP v1
/// API, `POST /v1/projects/PROJECT_ID/messages:send` with a data-only message and the OAuth 2.0
/// access token of the service account (the JWT bearer grant, RFC 7523), used until 5 minutes
/// before it runs out and fetched again once on a 401; 404 says the device is gone. A token is
/// fetched on a connection of its own beside the pushes' (``clients``), in the sender's one
/// `poll`: while it comes, the FCM pushes wait and every other platform goes on.
final class FCMLink: PlatformLink {
    let destination: FCMDestination
    private let client: HTTP2Client
    private let path: String
    /// The access token, until when it is used (Unix seconds), and how many were fetched.
    private var accessToken: String?
    /// The last failed token fetch: its error, and until when (monotonic milliseconds) pushes
    /// wait instead of asking the token endpoint again (the pause doubles with each failure in
    /// a row, from ``firstFetchPause`` to ``longestFetchPause``).
    private var fetchFailure: (error: CodedError, until: Int, pause: Int)?
    private var usedUntil = 0
    private var generation = 0
    var metrics: SendMetrics?

    var platform: SendPlatform { .fcm }
    var appLabel: String { destination.app }
    var clients: [HTTP2Client] { tokenFetch.map { [client, $0.client] } ?? [client] }
    /// The token request in flight: its client (one connection to the `token_uri`), its
    /// exchange, and when it was made (Unix seconds: the token's lifetime counts from then).
    private var tokenFetch: (client: HTTP2Client, exchange: HTTP2Exchange, madeAt: Int)?

    /// The answer headers read: none names the message (its body does), then `retry-after`.
    static let watchedHeaders = ["x-kindly-none", "retry-after"]
    /// The OAuth scope of FCM's HTTP v1 API.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// An access token is fetched again this many seconds before its `expires_in` runs out.
    static let tokenMargin = 300
    /// Milliseconds between token fetches after one failed: a token endpoint that fails or hangs
    /// costs one request per pause, not one per push (each push waits, within its attempts).
    static let firstFetchPause = 1000
    static let longestFetchPause = 30_000

    init(destination: FCMDestination) throws(CodedError) {
        self.destination = destination
        client = try PushSender.client(
            serverURL: destination.serverURL, caFile: destination.caFile, connections: destination.connections, watched: Self.watchedHeaders
        )
        path = "/v1/projects/\(destination.account.projectID)/messages:send"
    }

    func unixTime() -> Int { destination.clock.now() }

    func client(for push: OutgoingPush) throws(CodedError) -> HTTP2Client? { client }

    /// A fresh access token from the service account's `token_uri`, waited for (the probe, before
    /// a worker says it is ready), or why not.
    private func fetchToken() throws(CodedError) {
        let now = destination.clock.now()
        let request = try tokenRequest(now: now)
        let answered = PushSender.exchangeAlone(on: request.client, request.headers, body: request.body)
        request.client.closeAll("done")
        guard let exchange = answered else { throw CodedError(.io, "\(destination.account.tokenURI): the request could not be made") }
        try takeToken(from: exchange, requestedAt: now)
    }

    /// Ready while the access token is there and not due; else its fetch is made (not waited
    /// for) or, once answered, taken. Paused for what is left of the pause after a failed fetch.
    func readiness() -> LinkReadiness {
        do throws(CodedError) {
            return try tokenReady() ? .ready : .waiting
        } catch {
            // Every failure of a fetch sets `fetchFailure` (pausingAfterFailure).
            return .paused(error, milliseconds: max(0, (fetchFailure?.until ?? 0) - MonotonicClock.milliseconds()))
        }
    }

    /// Whether the access token is there and not due; else its fetch is made (not waited for)
    /// or, once answered, taken. Throws the last fetch's failure while its pause lasts.
    private func tokenReady() throws(CodedError) -> Bool {
        if accessToken != nil, destination.clock.now() < usedUntil { return true }
        if let fetch = tokenFetch {
            guard fetch.exchange.finished else { return false }
            tokenFetch = nil
            fetch.client.closeAll("done")
            try pausingAfterFailure { () throws(CodedError) in try takeToken(from: fetch.exchange, requestedAt: fetch.madeAt) }
            fetchFailure = nil
            return true
        }
        if let failure = fetchFailure, MonotonicClock.milliseconds() < failure.until { throw failure.error }
        try pausingAfterFailure { () throws(CodedError) in
            let now = destination.clock.now()
            let request = try tokenRequest(now: now)
            let exchange = HTTP2Exchange(owner: nil, body: request.body)
            guard request.client.submit(exchange, headers: request.headers) else {
                throw CodedError(.io, "\(destination.account.tokenURI): the request could not be made")
            }
            tokenFetch = (request.client, exchange, now)
        }
        return false
    }

    /// Runs a step of a token fetch; its failure starts the next pause (doubled after one that
    /// failed before it) and is thrown.
    private func pausingAfterFailure(_ step: () throws(CodedError) -> Void) throws(CodedError) {
        do throws(CodedError) {
            try step()
        } catch {
            let pause = fetchFailure.map { min(Self.longestFetchPause, $0.pause * 2) } ?? Self.firstFetchPause
            fetchFailure = (error, MonotonicClock.milliseconds() + pause, pause)
            throw error
        }
    }

    /// The token request: the service account's assertion signed for `now`, on a client of its
    /// own to the `token_uri`'s origin.
    private func tokenRequest(now: Int) throws(CodedError) -> (client: HTTP2Client, headers: HTTP2Headers, body: [UInt8]) {
        let account = destination.account
        let claims = JSONValue.object(
            JSONObject([
                .init(key: "iss", value: .string(account.clientEmail)), .init(key: "scope", value: .string(Self.scope)),
                .init(key: "aud", value: .string(account.tokenURI)), .init(key: "iat", value: .number(JSONNumber(now))),
                .init(key: "exp", value: .number(JSONNumber(now + 3600))),
            ]))
        let assertion: String
        do throws(LibcryptoError) {
            assertion = try account.key.jwt(headerMembers: [.init(key: "typ", value: "JWT")], claims: claims)
        } catch {
            throw CodedError(.io, "cannot sign the OAuth assertion: \(error)")
        }
        let afterScheme = account.tokenURI.utf8.dropFirst("https://".utf8.count)
        let slash = afterScheme.firstIndex(of: UInt8(ascii: "/")) ?? afterScheme.endIndex
        let origin = String(decoding: account.tokenURI.utf8[..<slash], as: UTF8.self)
        let tokenPath = slash == afterScheme.endIndex ? "/" : String(decoding: account.tokenURI.utf8[slash...], as: UTF8.self)
        let tokenClient = try PushSender.client(serverURL: origin, caFile: destination.caFile, connections: 1, watched: [])
        let body = Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8)
        var request = HTTP2Headers()
        request.append(":method", "POST")
        request.append(":scheme", "https")
        request.append(":authority", tokenClient.configuration.authority)
        request.append(":path", tokenPath)
        request.append("content-type", "application/x-www-form-urlencoded")
        request.append("content-length", decimal: body.count)
        request.append("user-agent", "kindly-push/\(KindlyPushRelease.version)")
        return (tokenClient, request, body)
    }

    /// The access token of the token endpoint's answer (requested at `requestedAt`), or why there
    /// is none.
    private func takeToken(from exchange: HTTP2Exchange, requestedAt now: Int) throws(CodedError) {
        let account = destination.account
        switch exchange.failure {
        case .transport(let reason)?, .refusedAddress(let reason)?: throw CodedError(.io, "\(account.tokenURI): \(reason)")
        case .noHTTP2?: throw CodedError(.io, "\(account.tokenURI) does not speak HTTP/2")
        case nil: break
        }
        let answer = (try? JSONReader.parse(exchange.body))?.objectValue
        guard exchange.status == 200, let token = answer?["access_token"]?.stringValue, !token.isEmpty,
            token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
            case .number(let lifetime)? = answer?["expires_in"], let seconds = lifetime.integerValue(in: 1...86_400).map({ Int($0) })
        else {
            let reason = answer?["error"]?.stringValue.map { ": \(Printable.escaped($0))" } ?? ""
            throw CodedError(.io, "\(account.tokenURI) gave no access token (\(exchange.status)\(reason))")
        }
        accessToken = token
        usedUntil = now + seconds - Self.tokenMargin
        generation += 1
        metrics?.refreshedToken(source)
    }

    /// The request: the data-only message of section 9.3, with the access token
    /// (``readiness()`` saw to it).
    func request(_ transfer: Transfer, on client: HTTP2Client, into fields: inout HTTP2Headers) throws(CodedError) -> [UInt8] {
        guard case .fcm(let push) = transfer.push else { preconditionFailure("an FCM sender takes FCM pushes") }
        let now = destination.clock.now()
        // The sender asked ``readiness()`` first.
        guard let accessToken else { throw CodedError(.io, "\(destination.account.tokenURI): no access token yet") }
        var android: [JSONObject.Member] = [.init(key: "priority", value: .string(push.content.priority >= 10 ? "HIGH" : "NORMAL"))]
        let ttl = push.content.delivery.expiration.map { max(0, $0 - now) } ?? destination.expiration
        if let ttl { android.append(.init(key: "ttl", value: .string("\(ttl)s"))) }
        if let collapse = push.content.delivery.collapseID { android.append(.init(key: "collapse_key", value: .string(collapse))) }
        let message = JSONObject([
            .init(key: "token", value: .string(push.token)),
            .init(
                key: "data",
                value: .object(JSONObject([.init(key: "kindly_push", value: .string(String(decoding: push.content.body, as: UTF8.self)))]))),
            .init(key: "android", value: .object(JSONObject(android))),
        ])
        let body = JSONWriter.compactBytes(.object(JSONObject([.init(key: "message", value: .object(message))])))
        fields.append(":method", "POST")
        fields.append(":scheme", "https")
        fields.append(":authority", client.configuration.authority)
        fields.append(":path", path)
        fields.append("authorization", "Bearer ", accessToken, changes: true)
        fields.append("content-type", "application/json")
        fields.append("content-length", decimal: body.count)
        fields.append("user-agent", "kindly-push/\(KindlyPushRelease.version)")
        transfer.tokenGeneration = generation
        return body
    }

    /// FCM's `errorCode` (in `error.details`), else the error's `status`.
    func reason(status: Int, body: [UInt8]) -> String? {
        guard status != 200, !body.isEmpty, let error = (try? JSONReader.parse(body))?.objectValue?["error"]?.objectValue else {
            return nil
        }
        if case .array(let details)? = error["details"] {
            for detail in details { if let code = detail.objectValue?["errorCode"]?.stringValue { return code } }
        }
        return error["status"]?.stringValue
    }

    /// A 401 fetches a new access token (unless another push did already) and sends the push
    /// again, once.
    func sendsAgain(_ transfer: Transfer, status: Int, reason: String?) throws(CodedError) -> Bool {
        guard status == 401, !transfer.renewedToken else { return false }
        transfer.renewedToken = true
        if transfer.tokenGeneration == generation { accessToken = nil }
        return true
    }

    /// A 200's `name` (`projects/P/messages/ID`).
    func messageName(header: String?, body: [UInt8]) -> String? {
        guard !body.isEmpty else { return nil }
        return (try? JSONReader.parse(body))?.objectValue?["name"]?.stringValue
    }

    func extraMembers(status: Int, body: [UInt8]) -> [JSONObject.Member] { [] }

    func deliveredLine(_ push: OutgoingPush, messageName: String?) -> [UInt8]? { nil }

    /// An access token fetched: the service account's key and its token endpoint work.
    func probe() -> String? {
        do throws(CodedError) {
            try fetchToken()
            return nil
        } catch {
            return error.message
        }
    }
}

internal import KindlyPushBase
internal import KindlyPushCore
internal import KindlyPushWebPush

/// One Web Push input document of `kindly-push send`, checked: `{"subscription": {"endpoint":
/// URL, "keys": {"p256dh": B64URL, "auth": B64URL}}, "push": {...}}` (the W3C
/// `PushSubscription` JSON of registration section 9.1) and optionally `"id"` and the delivery
/// fields (``DeliveryFields``), mapped as wire-format section 9.4 says.
package struct WebPushPush: Sendable {
    /// The document's budget: an encrypted body of at most 4096 bytes (section 9.4).
    package static let maximumPayloadSize = PushPlatform.webPushMaximumPayloadSize
    /// The longest endpoint taken, in bytes.
    package static let maximumEndpointSize = PushPlatform.maximumEndpointSize

    /// The subscription's endpoint, as given (`https://`).
    package var endpoint: String
    /// Its origin (`https://HOST[:PORT]`, RFC 6454): the connections' server and VAPID's `aud`.
    var origin: String
    /// Its path and query (`/` when it has none): the request's `:path`.
    var path: String
    /// The subscription's `p256dh` and `auth`.
    var keys: WebPushSubscriptionKeys
    /// The push (what is encrypted), its delivery fields and its `"id"`.
    package var content: PushContent

    /// Checks one document whose `"subscription"` is there; `compactPush`, when given, is its
    /// `"push"` value's text, already compact (``APNsPush/compactPush(in:)``).
    init(object: JSONObject, compactPush: [UInt8]?) throws(APNsPush.Refusal) {
        let id = object["id"]
        func bad(_ text: String, endpoint: String? = nil) -> APNsPush.Refusal {
            APNsPush.Refusal(token: nil, error: CodedError(.badInput, text), id: id, endpoint: endpoint)
        }
        guard let subscription = object["subscription"]?.objectValue, !subscription.hasDuplicateKeys,
            let endpoint = subscription["endpoint"]?.stringValue
        else {
            throw bad("\"subscription\" is not {\"endpoint\": URL, \"keys\": {\"p256dh\", \"auth\"}}")
        }
        guard PushPlatform.isEndpoint(endpoint), let origin = try? VAPID.origin(of: endpoint)
        else {
            throw bad(
                "the subscription's \"endpoint\" is not an https:// URL with a host (printable, no fragment, at most \(Self.maximumEndpointSize) bytes)"
            )
        }
        let afterScheme = endpoint.utf8.dropFirst("https://".utf8.count)
        let pathStart = afterScheme.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
        var path = pathStart.map { String(decoding: endpoint.utf8[$0...], as: UTF8.self) } ?? "/"
        if path.utf8.first == UInt8(ascii: "?") { path = "/" + path }
        guard let keysObject = subscription["keys"]?.objectValue, let p256dh = keysObject["p256dh"]?.stringValue,
            let auth = keysObject["auth"]?.stringValue
        else {
            throw bad("the subscription has no \"keys\" {\"p256dh\", \"auth\"} strings", endpoint: endpoint)
        }
        do throws(WebPushError) {
            keys = try WebPushSubscriptionKeys(p256dh: p256dh, auth: auth)
        } catch {
            throw bad("the subscription's \(error)", endpoint: endpoint)
        }
        content = try APNsPush.checkPush(
            object, compactPush: compactPush, budget: Self.maximumPayloadSize, service: "Web Push's"
        ) { (text) in bad(text, endpoint: endpoint) }
        self.endpoint = endpoint
        self.origin = origin
        self.path = path
    }
}

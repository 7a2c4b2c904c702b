package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// One input document of `kindly-push send`, checked: `{"token": HEX, "push": {...}}` and
/// optionally `"id"` (copied into the result, as `seal --recipients-inline` copies it) and the
/// delivery fields `"app"`, `"collapse_id"`, `"expiration"` and `"priority"` (``DeliveryFields``,
/// mapped to headers as wire-format section 9.2 says).
package struct APNsPush: Sendable, Equatable {
    /// APNs's limit for a notification's JSON document, in bytes.
    package static let maximumPayloadSize = PushPlatform.apnsMaximumPayloadSize
    /// APNs's limit for `apns-collapse-id`, in bytes.
    package static let maximumCollapseIDSize = DeliveryFields.maximumCollapseIDSize
    /// The longest device token taken, in hex digits (APNs's are 64 today; Apple says they may grow).
    package static let maximumTokenLength = 200

    /// The device token as given (hex).
    package var token: String
    /// The push, compact, as the project's writer writes it (what `seal` measures).
    package var body: [UInt8]
    /// `aps` has `content-available` 1 and no `alert`: `apns-push-type: background`, priority 5.
    package var isSilent: Bool
    /// The app, collapse id (`apns-collapse-id`: APNs shows only the newest push of one),
    /// expiration and priority the document gives.
    package var delivery: DeliveryFields
    package var collapseID: String? { delivery.collapseID }
    /// The document's `"id"`, as given.
    package var id: JSONValue?

    /// A refused document: the error, and its token when it had a readable one (the result
    /// line names it).
    package struct Refusal: Error, Sendable {
        package var token: String?
        package var error: CodedError
        /// The document's `"id"`, when it had one.
        package var id: JSONValue?
        /// The document could not be read as a JSON object at all (nothing of it was checked).
        package var isUnreadable = false
        /// A Web Push line's endpoint, when it had a readable one (instead of a token).
        package var endpoint: String?
        /// An FCM line's registration token, when it had a readable one.
        package var fcmToken: String?

        /// The members naming the device in the line's error object.
        var target: [JSONObject.Member] {
            if let token { return [.init(key: "token", value: .string(token))] }
            if let fcmToken { return [.init(key: "fcm_token", value: .string(fcmToken))] }
            return endpoint.map { [.init(key: "endpoint", value: .string($0))] } ?? []
        }
    }

    /// Reads one input document's bytes.
    package init(bytes: UnsafeRawBufferPointer) throws(Refusal) {
        let document: JSONValue
        switch JSONReader.parseInputObject(bytes, what: "input") {
        case .success(let value): document = value
        case .failure(let problem): throw Refusal(token: nil, error: CodedError(problem), isUnreadable: true)
        }
        try self.init(document: document, compactPush: Self.compactPush(in: bytes))
    }

    /// Checks one input document.
    package init(document: JSONValue) throws(Refusal) {
        try self.init(document: document, compactPush: nil)
    }

    /// Checks one input document; `compactPush`, when given, is its `"push"` value's text,
    /// already what JSONWriter writes for it (``compactPush(in:)``).
    init(document: JSONValue, compactPush: [UInt8]?) throws(Refusal) {
        guard let object = document.objectValue else {
            throw Refusal(token: nil, error: CodedError(.badInput, "the input is not a JSON object"))
        }
        if object.hasDuplicateKeys { throw Refusal(token: nil, error: CodedError(.badInput, "the input has a member name twice")) }
        let id = object["id"]
        func bad(_ text: String, token: String? = nil) -> Refusal { Refusal(token: token, error: CodedError(.badInput, text), id: id) }
        guard let token = object["token"]?.stringValue else { throw bad("the input has no \"token\" string") }
        let isHex = token.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0)
        }
        guard isHex, token.utf8.count >= 16, token.utf8.count <= Self.maximumTokenLength, token.utf8.count % 2 == 0 else {
            throw bad("\"token\" is not a device token (an even number of hex digits, 16 to \(Self.maximumTokenLength))")
        }
        let content = try Self.checkPush(object, compactPush: compactPush, budget: Self.maximumPayloadSize, service: "APNs's") {
            (text) in bad(text, token: token)
        }
        (body, isSilent, delivery) = (content.body, content.isSilent, content.delivery)
        self.token = token
        self.id = id
    }

    /// The checks of a line's `"push"` that every platform shares: an object with no member
    /// twice, at most `budget` bytes compact (`service` names whose budget), whether it is silent
    /// (`aps` has `content-available` 1 and no `alert`), and the line's delivery fields; `bad`
    /// makes the refusal of a reason.
    static func checkPush(
        _ object: JSONObject, compactPush: [UInt8]?, budget: Int, service: String, bad: (String) -> Refusal
    ) throws(Refusal) -> PushContent {
        guard let push = object["push"], let pushObject = push.objectValue else { throw bad("the input has no \"push\" object") }
        if pushObject.hasDuplicateKeys { throw bad("the push has a member name twice") }
        let body = compactPush ?? JSONWriter.compactBytes(push)
        guard body.count <= budget else { throw bad("the push is \(body.count) bytes, over \(service) \(budget)") }
        let aps = pushObject["aps"]?.objectValue
        let isSilent = aps?["alert"] == nil && aps?["content-available"] == .number(JSONNumber(1))
        do throws(DeliveryFields.Refusal) {
            return PushContent(body: body, isSilent: isSilent, delivery: try DeliveryFields(object), id: object["id"])
        } catch {
            throw bad(error.message)
        }
    }

    /// The text of the top-level `"push"` member's value in a document the strict reader took,
    /// when it is already what JSONWriter writes for that value: no whitespace outside strings
    /// and no backslash at all. The writer escapes only `"`, `\\` and control characters (which
    /// a string can hold only escaped), keeps numbers as they were written and members in their
    /// order, so such text is its own compact form, and the push goes as it came without being
    /// written again. Nil otherwise (a backslash anywhere in the document): the writer writes it.
    static func compactPush(in bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        let quote = UInt8(ascii: "\"")
        let count = bytes.count
        // A backslash anywhere: the writer may write that text otherwise (and every string's end
        // below is its next quote).
        guard let text = bytes.baseAddress, memchr(text, Int32(UInt8(ascii: "\\")), count) == nil else { return nil }
        let byte = text.assumingMemoryBound(to: UInt8.self)
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        /// The index of the quote that ends the string whose opening quote is at `start`.
        func stringEnd(_ start: Int) -> Int? {
            guard start + 1 < count, let end = memchr(text + start + 1, Int32(quote), count - start - 1) else { return nil }
            return UnsafeRawPointer(end) - text
        }
        var index = 0
        while index < count, isSpace(byte[index]) { index += 1 }
        guard index < count, byte[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        while true {
            while index < count, isSpace(byte[index]) { index += 1 }
            guard index < count, byte[index] == quote, let nameEnd = stringEnd(index) else { return nil }
            let isPush = nameEnd - index == 5 && memcmp(text + index + 1, "push", 4) == 0
            index = nameEnd + 1
            while index < count, isSpace(byte[index]) { index += 1 }
            guard index < count, byte[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            while index < count, isSpace(byte[index]) { index += 1 }
            // The value: to its end at depth 0, whitespace inside it noted.
            let start = index
            var depth = 0
            var compact = true
            scan: while index < count {
                switch byte[index] {
                case quote:
                    guard let end = stringEnd(index) else { return nil }
                    index = end + 1
                    if depth == 0 { break scan }
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    index += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { break scan }
                    depth -= 1
                    index += 1
                    if depth == 0 { break scan }
                case UInt8(ascii: ","):
                    if depth == 0 { break scan }
                    index += 1
                case let other:
                    if isSpace(other) {
                        if depth == 0 { break scan }
                        compact = false
                    }
                    index += 1
                }
            }
            if isPush { return compact ? Array(UnsafeRawBufferPointer(start: text + start, count: index - start)) : nil }
            while index < count, isSpace(byte[index]) { index += 1 }
            guard index < count, byte[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    /// `apns-push-type` and `apns-priority`.
    package var pushType: String { isSilent ? "background" : "alert" }
    /// The document's priority, else 10 for a visible push and 5 for a silent one.
    package var priority: Int { delivery.priority ?? (isSilent ? 5 : 10) }
}

/// What every platform's line carries beside its device, checked (``APNsPush/checkPush(_:compactPush:budget:service:bad:)``).
package struct PushContent: Sendable {
    /// The push, compact, as the project's writer writes it: what is sent (or encrypted, or
    /// carried as a string).
    package var body: [UInt8]
    /// `aps` has `content-available` 1 and no `alert`: a silent push (priority 5 by default).
    package var isSilent: Bool
    package var delivery: DeliveryFields
    /// The document's `"id"`, as given.
    package var id: JSONValue?

    /// The document's priority, else 10 for a visible push and 5 for a silent one.
    package var priority: Int { delivery.priority ?? (isSilent ? 5 : 10) }
}

extension OutgoingPush {
    /// Reads one input document's bytes: a push for the platform its shape names (`"token"`:
    /// APNs, `"fcm_token"`: FCM, `"subscription"`: Web Push; registration section 9.1).
    package init(bytes: UnsafeRawBufferPointer) throws(APNsPush.Refusal) {
        let document: JSONValue
        switch JSONReader.parseInputObject(bytes, what: "input") {
        case .success(let value): document = value
        case .failure(let problem): throw APNsPush.Refusal(token: nil, error: CodedError(problem), isUnreadable: true)
        }
        if let object = document.objectValue, !object.hasDuplicateKeys {
            if object["subscription"] != nil {
                self = .webPush(try WebPushPush(object: object, compactPush: APNsPush.compactPush(in: bytes)))
                return
            }
            if object["fcm_token"] != nil {
                self = .fcm(try FCMPush(object: object, compactPush: APNsPush.compactPush(in: bytes)))
                return
            }
        }
        self = .apns(try APNsPush(document: document, compactPush: APNsPush.compactPush(in: bytes)))
    }
}

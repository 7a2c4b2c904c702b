internal import KindlyPushCore

// The wire of `kindly-push seal --recipients-inline` (docs/command.md): one document per push,
// `{"public_key": B64, "plaintext": {...}}` with optional `"id"`, the device's registration
// (`"token"`, `"fcm_token"` or `"subscription"`: ``RecipientRegistration``), `"mode"`,
// `"placeholder_title"`, `"placeholder_body"`, `"thread_id"` and the delivery fields (`"app"`,
// `"collapse_id"`, `"expiration"`, `"priority"`: ``DeliveryFields``), read by the strict reader
// (a tree) or, for a compact line, located in its bytes. The command keeps only its options and
// its output.

/// Why a `--recipients-inline` document is refused: the `bad_input` message.
package struct RecipientsInlineError: Error, Sendable, Equatable {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }
}

/// The members a line may have.
package enum RecipientsInlineMember {
    package static let id = "id"
    /// The device's APNs token, copied to the output for `send` (`{"token", "push"}`).
    package static let token = "token"
    /// The device's FCM registration token, copied to the output for `send` (`{"fcm_token", "push"}`).
    package static let fcmToken = "fcm_token"
    /// The device's Web Push subscription (`{"endpoint", "keys": {"p256dh", "auth"}}`), copied
    /// to the output for `send` (`{"subscription", "push"}`).
    package static let subscription = "subscription"
    /// The members that name the device, one per platform: a line has at most one.
    package static let registrations = [token, fcmToken, subscription]
    /// The platform a registration names, as section 9.1 stores it (`"apns"`, `"fcm"`,
    /// `"webpush"`): with `"fcm"`, `"token"` is the FCM registration token.
    package static let platform = "platform"
    package static let publicKey = "public_key"
    package static let plaintext = "plaintext"
    package static let mode = "mode"
    package static let placeholderTitle = "placeholder_title"
    package static let placeholderBody = "placeholder_body"
    /// `aps.thread-id` of a visible push (a silent one has no banner to group).
    package static let threadID = "thread_id"
    /// The longest thread id, in bytes.
    package static let maximumThreadIDSize = 128
    package static let all =
        [id, token, fcmToken, subscription, platform, publicKey, plaintext, mode, placeholderTitle, placeholderBody, threadID]
        + DeliveryFields.names
}

/// A line's own push kind and alert, when it gives any.
package struct LineAlert: Hashable, Sendable {
    package let mode: KindlyPushSealer.Mode
    package let title: String
    package let body: String
    /// `aps.thread-id`; always `nil` for a silent push.
    package let threadID: String?

    package var placeholder: KindlyPushSealer.Placeholder {
        var placeholder = KindlyPushSealer.Placeholder(title: title, body: body)
        placeholder.threadID = threadID
        return placeholder
    }

    /// The alert of a line that gives `mode`, `title`, `body` or `thread_id`, over the
    /// command's; `nil` when it gives none. A silent push has no alert to give, and no banner to
    /// group: its thread id is not written.
    package init?(
        mode lineMode: KindlyPushSealer.Mode?, title lineTitle: String?, body lineBody: String?, threadID lineThreadID: String? = nil,
        defaultMode: KindlyPushSealer.Mode, defaultPlaceholder: KindlyPushSealer.Placeholder
    ) throws(RecipientsInlineError) {
        guard lineMode != nil || lineTitle != nil || lineBody != nil || lineThreadID != nil else { return nil }
        if let lineThreadID, !DeliveryFields.isPrintable(lineThreadID, maximumSize: RecipientsInlineMember.maximumThreadIDSize) {
            throw RecipientsInlineError("\"thread_id\" is 1 to \(RecipientsInlineMember.maximumThreadIDSize) bytes of printable text")
        }
        mode = lineMode ?? defaultMode
        if mode == .silent, lineTitle != nil || lineBody != nil {
            throw RecipientsInlineError(
                "a silent push has no alert: \"placeholder_title\" and \"placeholder_body\" need \"mode\": \"visible\"")
        }
        title = lineTitle ?? defaultPlaceholder.title
        body = lineBody ?? defaultPlaceholder.body
        threadID = mode == .silent ? nil : lineThreadID
    }
}

/// A line read with the strict reader, checked member by member.
package struct RecipientsInlineLine {
    package let recipient: DevicePublicKey
    package let plaintext: JSONValue
    package let alert: LineAlert?
    /// What the output line carries for `send`.
    package let delivery: DeliveryFields
    /// The platform the line's registration names (APNs without one): whose budget the push has.
    package let platform: PushPlatform

    package init(_ document: JSONValue, mode: KindlyPushSealer.Mode, placeholder: KindlyPushSealer.Placeholder)
        throws(RecipientsInlineError)
    {
        guard case .object(let object) = document else {
            throw RecipientsInlineError("the input is \(document.typeName), not a JSON object")
        }
        if object.hasDuplicateKeys { throw RecipientsInlineError("a member name occurs twice") }
        for name in object.keys where !RecipientsInlineMember.all.contains(where: { $0.unicodeScalars.elementsEqual(name.unicodeScalars) })
        {
            var quoted: [UInt8] = []
            JSONWriter.writeString(name, to: &quoted)
            throw RecipientsInlineError(
                "unknown member \(String(decoding: quoted, as: UTF8.self)); a --recipients-inline input has \"public_key\", \"plaintext\" "
                    + "and optionally \"id\", one of \"token\", \"fcm_token\" and \"subscription\", \"platform\", \"mode\", "
                    + "\"placeholder_title\", \"placeholder_body\", \"thread_id\", \"app\", \"collapse_id\", \"expiration\", \"priority\"")
        }
        func string(_ name: String) throws(RecipientsInlineError) -> String? {
            guard let value = object[name] else { return nil }
            guard case .string(let text) = value else { throw RecipientsInlineError("\"\(name)\" is \(value.typeName), not a string") }
            return text
        }
        _ = try string(RecipientsInlineMember.token)
        platform = try RecipientRegistration.platform(of: object)
        guard let key = try string(RecipientsInlineMember.publicKey) else {
            throw RecipientsInlineError("\"public_key\" is missing (the device's public key)")
        }
        do throws(KeyDecodingError) {
            recipient = try DevicePublicKey(base64: key)
        } catch {
            throw RecipientsInlineError("\"public_key\": \(error)")
        }
        if let reason = recipient.unusableReason { throw RecipientsInlineError("\"public_key\": \(reason)") }
        guard let plaintext = object[RecipientsInlineMember.plaintext] else {
            throw RecipientsInlineError("\"plaintext\" is missing (the message object)")
        }
        guard case .object = plaintext else { throw RecipientsInlineError("\"plaintext\" is \(plaintext.typeName), not a JSON object") }
        self.plaintext = plaintext
        var lineMode: KindlyPushSealer.Mode?
        if let text = try string(RecipientsInlineMember.mode) {
            guard let parsed = KindlyPushSealer.Mode(rawValue: text) else {
                throw RecipientsInlineError("\"mode\" is neither \"visible\" nor \"silent\"")
            }
            lineMode = parsed
        }
        alert = try LineAlert(
            mode: lineMode, title: try string(RecipientsInlineMember.placeholderTitle),
            body: try string(RecipientsInlineMember.placeholderBody), threadID: try string(RecipientsInlineMember.threadID),
            defaultMode: mode, defaultPlaceholder: placeholder)
        do throws(DeliveryFields.Refusal) {
            delivery = try DeliveryFields(object)
        } catch {
            throw RecipientsInlineError(error.message)
        }
    }
}

/// A compact line as a backend writes it, found without building a value: the ranges of the
/// public key's text and of the plaintext object, and the line's own alert. `nil` for anything
/// else (whitespace, escapes in the public key or the placeholders, a member name twice, an
/// unknown member, an invalid line): the strict reader then decides and explains. A plaintext
/// that comes last after the public key is taken as the rest of the line, unread: the fast path
/// seals it only when it is one object in the writer's compact form (members after it, or any
/// other spelling, go the strict way).
package struct RecipientsInlineCompactLine {
    package let publicKey: Range<Int>
    package let plaintext: Range<Int>
    package let alert: LineAlert?
    /// The line's `"id"`, when it is a scalar (an array or object goes the strict way).
    package let id: Range<Int>?
    /// The line's `"token"` or `"fcm_token"` string, quotes included, or its `"subscription"`
    /// object (``subscription`` is its text as the writer writes it).
    package let registration: Range<Int>?
    /// The platform the registration names (APNs without one).
    package let platform: PushPlatform
    /// A Web Push line's subscription, compact as the project's writer writes it (what the
    /// strict path copies).
    package let subscription: [UInt8]?
    /// What the output line carries for `send`.
    package let delivery: DeliveryFields

    package init?(
        _ bytes: UnsafeRawBufferPointer, mode defaultMode: KindlyPushSealer.Mode,
        placeholder defaultPlaceholder: KindlyPushSealer.Placeholder
    ) {
        var reader = JSONTokenizer(bytes, compact: true)
        // Each known member once (any other member: the strict way), one bit each.
        var seen = 0
        func first(_ bit: Int) -> Bool {
            defer { seen |= bit }
            return seen & bit == 0
        }
        var publicKey: Range<Int>?
        var plaintext: Range<Int>?
        var mode: KindlyPushSealer.Mode?
        var title: String?
        var body: String?
        var id: Range<Int>?
        var registration: Range<Int>?
        var platform = PushPlatform.apns
        var threadID: String?
        var app: Range<Int>?
        var collapseID: Range<Int>?
        var expiration: Range<Int>?
        var priority: Range<Int>?
        var endsWithPlaintext = false
        guard reader.consume(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let name = reader.compactString(), reader.consume(UInt8(ascii: ":")) else { return nil }
            if reader.text(name, is: "public_key") {
                guard first(1), let text = reader.compactString() else { return nil }
                publicKey = text
            } else if reader.text(name, is: "plaintext") {
                guard first(2), reader.current == UInt8(ascii: "{") else { return nil }
                let start = reader.index
                if publicKey != nil, bytes.count - 1 > start, bytes[bytes.count - 1] == UInt8(ascii: "}") {
                    // Last, as a backend writes it: the plaintext runs to the line's closing brace.
                    // Not stepped over here: the fast path takes it only when it is exactly one
                    // object in the writer's form, so that nothing can follow it.
                    plaintext = start..<(bytes.count - 1)
                    endsWithPlaintext = true
                    break
                }
                guard (try? reader.skipValue()) != nil else { return nil }
                plaintext = start..<reader.index
            } else if reader.text(name, is: "id") {
                let start = reader.index
                guard first(32), reader.compactScalar() else {
                    return nil
                }
                id = start..<reader.index
            } else if reader.text(name, is: "token") {
                // One registration (bit 64 for any of the three): two are the strict reader's to refuse.
                let start = reader.index
                guard first(64), reader.compactString() != nil else { return nil }
                registration = start..<reader.index
            } else if reader.text(name, is: "fcm_token") {
                let start = reader.index
                guard first(64), let text = reader.compactString(), let plain = RecipientsInlineCompactLine.plainText(text, in: bytes),
                    PushPlatform.isFCMToken(plain)
                else { return nil }
                registration = start..<reader.index
                platform = .fcm
            } else if reader.text(name, is: "subscription") {
                guard first(64), reader.current == UInt8(ascii: "{") else { return nil }
                let start = reader.index
                guard (try? reader.skipValue()) != nil else { return nil }
                registration = start..<reader.index
                platform = .webPush
            } else if reader.text(name, is: "platform") {
                // A registration as section 9.1 stores it: the strict reader maps it.
                return nil
            } else if reader.text(name, is: "mode") {
                guard first(4), let text = reader.compactString() else { return nil }
                if reader.text(text, is: "visible") {
                    mode = .visible
                } else if reader.text(text, is: "silent") {
                    mode = .silent
                } else {
                    return nil
                }
            } else if reader.text(name, is: "placeholder_title") {
                guard first(8), let text = reader.compactString(), let plain = RecipientsInlineCompactLine.plainText(text, in: bytes) else {
                    return nil
                }
                title = plain
            } else if reader.text(name, is: "placeholder_body") {
                guard first(16), let text = reader.compactString(), let plain = RecipientsInlineCompactLine.plainText(text, in: bytes)
                else { return nil }
                body = plain
            } else if reader.text(name, is: "thread_id") {
                guard first(128), let text = reader.compactString(), let plain = RecipientsInlineCompactLine.plainText(text, in: bytes)
                else { return nil }
                threadID = plain
            } else if reader.text(name, is: "app") {
                guard first(256), let text = reader.compactString() else { return nil }
                app = text
            } else if reader.text(name, is: "collapse_id") {
                guard first(512), let text = reader.compactString() else { return nil }
                collapseID = text
            } else if reader.text(name, is: "expiration") {
                guard first(1024), let number = reader.compactNumber() else { return nil }
                expiration = number
            } else if reader.text(name, is: "priority") {
                guard first(2048), let number = reader.compactNumber() else { return nil }
                priority = number
            } else {
                return nil
            }
        } while reader.consume(UInt8(ascii: ","))
        guard endsWithPlaintext || (reader.consume(UInt8(ascii: "}")) && reader.atEnd), let publicKey, let plaintext else { return nil }
        // A silent line with placeholders is left to the strict way, which says why it is refused.
        // (`nil`, no alert of its own, is the common case, not a failure.)
        do throws(RecipientsInlineError) {
            alert = try LineAlert(
                mode: mode, title: title, body: body, threadID: threadID, defaultMode: defaultMode, defaultPlaceholder: defaultPlaceholder)
        } catch {
            return nil
        }
        // A member that breaks its rule is the strict reader's to explain.
        guard let delivery = DeliveryFields(compact: bytes, app: app, collapseID: collapseID, expiration: expiration, priority: priority)
        else { return nil }
        self.delivery = delivery
        self.publicKey = publicKey
        self.plaintext = plaintext
        self.id = id
        self.registration = registration
        self.platform = platform
        // A subscription is read and checked as the strict reader does, and written as it writes
        // it (a few hundred bytes; the seal costs far more).
        if platform == .webPush, let registration {
            guard let value = try? JSONReader.parse(UnsafeRawBufferPointer(rebasing: bytes[registration])),
                (try? RecipientRegistration.checkSubscription(value)) != nil
            else { return nil }
            subscription = JSONWriter.compactBytes(value)
        } else {
            subscription = nil
        }
    }

    /// The text of a string with no escape (already checked as UTF-8); `nil` when it has one.
    private static func plainText(_ range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> String? {
        let text = UnsafeRawBufferPointer(rebasing: bytes[range])
        guard !text.contains(UInt8(ascii: "\\")) else { return nil }
        return String(decoding: text, as: UTF8.self)
    }
}

/// The device a `--recipients-inline` line names, as its registration stores it (wire-format
/// section 9.1) and as `send` takes it: `"token"` (APNs), `"fcm_token"` (FCM) or
/// `"subscription"` (Web Push), at most one; none is an APNs push with no device named (the
/// backend adds it). The member is copied to the output line; the platform sets the push's budget.
package enum RecipientRegistration {
    /// The platform `object`'s registration names, after checking its shape as `send` does
    /// (a subscription's keys by their lengths: `send` checks the point on the curve).
    package static func platform(of object: JSONObject) throws(RecipientsInlineError) -> PushPlatform {
        try registration(of: object)?.platform ?? .apns
    }

    /// The device `object` names and its platform, checked as `send` checks it, or `nil` when it
    /// names none: `"token"` (APNs), `"fcm_token"` (FCM) or `"subscription"` (Web Push), or a
    /// registration as section 9.1 stores it, `"platform"` beside its address (`"token"` for
    /// `"apns"` and `"fcm"`, `"subscription"` for `"webpush"`).
    package static func registration(of object: JSONObject) throws(RecipientsInlineError) -> (platform: PushPlatform, address: JSONValue)? {
        let given = RecipientsInlineMember.registrations.filter { object[$0] != nil }
        guard given.count <= 1 else {
            throw RecipientsInlineError(
                "a line names one device: \"token\" (APNs), \"fcm_token\" (FCM) or \"subscription\" (Web Push), not \(given.count)")
        }
        var platform: PushPlatform
        var address: JSONValue
        if let declared = object[RecipientsInlineMember.platform] {
            guard case .string(let name) = declared, let named = PushPlatform(rawValue: name) else {
                throw RecipientsInlineError("\"platform\" is not \"apns\", \"fcm\" or \"webpush\" (wire-format section 9.1)")
            }
            let member = named == .webPush ? RecipientsInlineMember.subscription : RecipientsInlineMember.token
            guard let value = object[member] else {
                throw RecipientsInlineError(
                    "\"platform\" is \"\(name)\", whose registration names the device by \"\(member)\", which is missing")
            }
            (platform, address) = (named, value)
        } else if let value = object[RecipientsInlineMember.fcmToken] {
            (platform, address) = (.fcm, value)
        } else if let value = object[RecipientsInlineMember.subscription] {
            (platform, address) = (.webPush, value)
        } else if let value = object[RecipientsInlineMember.token] {
            (platform, address) = (.apns, value)
        } else {
            return nil
        }
        switch platform {
        case .fcm:
            let name = given.first ?? RecipientsInlineMember.fcmToken
            guard case .string(let token) = address else { throw RecipientsInlineError("\"\(name)\" is \(address.typeName), not a string") }
            guard PushPlatform.isFCMToken(token) else {
                throw RecipientsInlineError(
                    "\"\(name)\" is not an FCM registration token (printable, 1 to \(PushPlatform.maximumFCMTokenSize) bytes)")
            }
        case .webPush:
            try checkSubscription(address)
        case .apns:
            break
        }
        return (platform, address)
    }

    /// Checks a Web Push subscription, the W3C `PushSubscription` JSON: `{"endpoint": URL,
    /// "keys": {"p256dh": B64URL, "auth": B64URL}}` (other members, such as `expirationTime`,
    /// are carried along unread).
    package static func checkSubscription(_ value: JSONValue) throws(RecipientsInlineError) {
        guard case .object(let subscription) = value, !subscription.hasDuplicateKeys,
            case .string(let endpoint)? = subscription["endpoint"]
        else {
            throw RecipientsInlineError("\"subscription\" is not {\"endpoint\": URL, \"keys\": {\"p256dh\", \"auth\"}}")
        }
        guard PushPlatform.isEndpoint(endpoint) else {
            throw RecipientsInlineError(
                "the subscription's \"endpoint\" is not an https:// URL with a host (printable, no fragment, at most "
                    + "\(PushPlatform.maximumEndpointSize) bytes)")
        }
        guard case .object(let keys)? = subscription["keys"], !keys.hasDuplicateKeys, case .string(let p256dh)? = keys["p256dh"],
            case .string(let auth)? = keys["auth"]
        else {
            throw RecipientsInlineError("the subscription has no \"keys\" {\"p256dh\", \"auth\"} strings")
        }
        // An uncompressed P-256 point, and a 16-byte secret (RFC 8291 section 2).
        guard let point = try? Base64.decode(p256dh), point.count == 65, point.first == 4 else {
            throw RecipientsInlineError("the subscription's \"p256dh\" is not the base64url of an uncompressed P-256 point (65 bytes)")
        }
        // Decoded into wiped memory: the auth secret is the subscription's secret.
        let secretLength = auth.withUTF8Bytes { try? Base64.decodeSecret($0).count }
        guard secretLength == 16 else {
            throw RecipientsInlineError("the subscription's \"auth\" is not the base64url of 16 bytes")
        }
    }
}

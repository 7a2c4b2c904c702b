internal import KindlyPushCore

/// What a host that presents notifications itself shows for one push: where no system shows
/// alerts and no extension runs (a Linux desktop, `kindly-push notify`), the device side is both
/// the extension and the app, and posts every banner and placeholder itself.
///
/// Made by ``KindlyNotificationHandler/devicePresentation(for:placeholder:)``: the display
/// rule for the handler's app state, screen and delegate, the placeholder's text, cleaned text
/// (``NotificationText``), and the identities a de-duplication store claims.
public struct DevicePresentation: Sendable, Equatable {
    /// What to post.
    public enum Content: Sendable, Equatable {
        /// The decrypted title and body, for `chatId`.
        case banner(title: String, body: String, chatId: String)
        /// The push's own alert, or the reader's placeholder (see
        /// ``KindlyNotificationHandler/devicePresentation(for:placeholder:)``).
        case placeholder(title: String, body: String)
        /// Nothing is shown.
        case none
    }

    /// The display decision, as `kindly-push route` prints it (its text as decrypted, uncleaned).
    public let decision: RouteDecision
    /// What to post, its text cleaned.
    public let content: Content
    /// The message's identity, for a banner only (the push decrypted, or was marked decrypted):
    /// its key id with its message id, or with its envelope nonce when it has none. A push is
    /// claimed under it only once it decrypted, so that an undecryptable copy (a forgery, or a
    /// delivery that met a locked keyring) can never take the genuine message's place.
    public let messageIdentity: [UInt8]?
    /// The envelope's identity (key id and nonce), for a banner and a placeholder: a placeholder
    /// is claimed under it, in a namespace of its own, and the banner of the same envelope,
    /// when it later decrypts, replaces that placeholder.
    public let envelopeIdentity: [UInt8]?

    /// The chat a tap on the banner opens: the banner's chat id when it is one that may be
    /// handed to another program (``NotificationText/isUsableChatID(_:)``), else `nil`.
    public var chatToOpen: String? {
        guard case .banner(_, _, let chatId) = content, NotificationText.isUsableChatID(chatId) else { return nil }
        return chatId
    }
}

/// What a host that launches the app itself does with a tap (``KindlyNotificationHandler/deviceTapped(_:chatId:)``).
public enum DeviceTap: Sendable, Equatable {
    /// Not Kindly's: not consumed.
    case notKindly
    /// The app is started and active: its chat was opened (the handler called `openChat`).
    case opened(chatId: String)
    /// Open the app, on `chatId` when one is known: on iOS the system launches the app for a tap
    /// on any Kindly notification, a placeholder's too; a host that is the system does it here.
    /// The tap is remembered, and replayed through `openChat` once `start()` has run and the app
    /// is active, within ``KindlyNotificationHandler/tapReplayWindow``.
    case openApp(chatId: String?)
}

extension KindlyNotificationHandler {
    /// The device side's decision for `userInfo` in the handler's state now (app state, screen,
    /// chat on screen, delegate, `hasExtension`): the rule of display-rules.md, the text to post
    /// (a placeholder is the push's own alert, or `placeholder` when it carries none or the
    /// reader is in pinned mode, which trusts nothing in a push that does not decrypt), and the
    /// identities to claim. Decrypts at most once; asks the delegate at most once.
    public func devicePresentation(for userInfo: JSONValue, placeholder: KindlyPushSealer.Placeholder = .default) -> DevicePresentation {
        let (decision, resolution) = KindlyPushRouter.evaluate(
            userInfo: userInfo, context: context(appState: appState), decryption: decryption)
        // The envelope is found once, for both identities.
        let found = KindlyNotificationHandler.envelopeAndRules(userInfo)
        let envelope = KindlyNotificationHandler.envelopeIdentity(found)
        switch decision.presentation {
        case .banner:
            guard let chatId = decision.chatId, let title = decision.title, let body = decision.body else {
                return DevicePresentation(decision: decision, content: .none, messageIdentity: nil, envelopeIdentity: nil)
            }
            let messageID: String?
            switch resolution {
            case .decrypted(let payload)?: messageID = payload.messageId
            case .alreadyDecrypted(let message)?: messageID = message.messageId
            default: messageID = nil
            }
            return DevicePresentation(
                decision: decision,
                content: .banner(
                    title: NotificationText.cleaned(title), body: NotificationText.cleaned(body, keepsLines: true), chatId: chatId),
                messageIdentity: KindlyNotificationHandler.messageIdentity(found, messageID: messageID), envelopeIdentity: envelope)
        case .placeholder:
            var text = placeholder
            let alert = NotificationContent(userInfo: userInfo)
            if !decryption.isInPinnedMode, !(alert.title.isEmpty && alert.body.isEmpty) {
                text = KindlyPushSealer.Placeholder(title: alert.title, body: alert.body)
            }
            return DevicePresentation(
                decision: decision,
                content: .placeholder(
                    title: NotificationText.cleaned(text.title), body: NotificationText.cleaned(text.body, keepsLines: true)),
                messageIdentity: nil, envelopeIdentity: envelope)
        case .none, .passthrough:
            return DevicePresentation(decision: decision, content: .none, messageIdentity: nil, envelopeIdentity: nil)
        }
    }

    /// A tap on a notification the device side posted itself, `userInfo` being the push it showed.
    /// The handler's tap rule decides (``notificationTapped(_:)-(JSONValue)``); what the system does on iOS
    /// (launch the app for any Kindly notification) is returned as ``DeviceTap/openApp(chatId:)``:
    /// with the chat id of a banner (``DevicePresentation/chatToOpen``), with none for a
    /// placeholder, or when ``openChatOnNotificationTap`` is off.
    public func deviceTapped(_ userInfo: JSONValue, chatId: String?) -> DeviceTap {
        // This host opens the app itself (``DeviceTap/openApp(chatId:)``): not through `openApp`.
        switch tapped(userInfo, opensApp: false) {
        case .notKindly: return .notKindly
        case .opened(let chat): return .opened(chatId: chat)
        case .deferred: return .openApp(chatId: chatId)
        case .disabled, .noChat: return .openApp(chatId: nil)
        }
    }

    /// `kid` and `n` of the first envelope (``envelopeAndRules(_:)``), length-prefixed; `nil`
    /// without them.
    static func envelopeIdentity(_ found: (JSONObject, EnvelopeRules)?) -> [UInt8]? {
        // The members come from the version's rules (Wire/Versions): `kid`, and the one that is
        // new for every sealing (`n`, or version 3's `enc`).
        guard let (envelope, rules) = found, let kid = envelope[rules.kid.name]?.stringValue,
            let delivery = envelope[rules.delivery.name]?.stringValue
        else { return nil }
        var bytes: [UInt8] = [2]
        appendField(binary(kid), to: &bytes)
        appendField(binary(delivery), to: &bytes)
        return bytes
    }

    /// `kid` with the message id, or the envelope identity without one.
    static func messageIdentity(_ found: (JSONObject, EnvelopeRules)?, messageID: String?) -> [UInt8]? {
        guard let messageID else { return envelopeIdentity(found) }
        guard let (envelope, rules) = found, let kid = envelope[rules.kid.name]?.stringValue else {
            return nil
        }
        var bytes: [UInt8] = [1]
        appendField(binary(kid), to: &bytes)
        appendField(Array(messageID.utf8), to: &bytes)
        return bytes
    }

    /// The push's envelope and the rules of the version it names (a placeholder's envelope may
    /// name none: it is read with version 1's, as before version 3 existed); `nil` for a push
    /// that is not Kindly's.
    static func envelopeAndRules(_ userInfo: JSONValue) -> (JSONObject, EnvelopeRules)? {
        guard let envelope = SealedEnvelope.envelopes(in: userInfo).first else { return nil }
        let number = TreeEnvelopeMembers(object: envelope).integer(.version, in: 1...3)
        return (envelope, number.flatMap { WireVersion(rawValue: Int($0)) }?.rules ?? .one)
    }

    /// A base64 field's bytes, or its text when it does not decode (one spelling per delivery).
    private static func binary(_ text: String) -> [UInt8] {
        (try? Base64.decode(text)) ?? Array(text.utf8)
    }

    /// A length-prefixed field, so that no two different inputs give the same bytes.
    private static func appendField(_ field: [UInt8], to bytes: inout [UInt8]) {
        var length = UInt32(clamping: field.count).bigEndian
        withUnsafeBytes(of: &length) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: field)
    }
}

/// Banner text as a notification server may receive it: a NUL would cut the
/// text short in C, escape sequences and other controls reach a terminal-like renderer, and
/// bidirectional overrides make a text read differently from what it holds.
public enum NotificationText {
    /// `text` without NUL, escape sequences (ESC with its CSI or OSC tail), C0 and C1 controls,
    /// DEL and bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066 to
    /// U+2069). A tab becomes a space; a line break stays only with `keepsLines` (a body), and
    /// becomes a space otherwise (a title).
    public static func cleaned(_ text: String, keepsLines: Bool = false) -> String {
        var result = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            switch scalar.value {
            case 0x1B:
                // ESC: drop it with the sequence it starts (CSI "[" … final byte, OSC "]" … BEL/ST).
                guard let next = scalars.next() else { break }
                if next == "[" {
                    while let tail = scalars.next(), !(0x40...0x7E).contains(tail.value) {}
                } else if next == "]" {
                    var previous: Unicode.Scalar?
                    while let tail = scalars.next() {
                        if tail.value == 0x07 || (previous?.value == 0x1B && tail == "\\") { break }
                        previous = tail
                    }
                }
            case 0x0A: result.append(keepsLines ? scalar : " ")
            case 0x09, 0x0D: result.append(" ")
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: break
            default: result.append(scalar)
            }
        }
        return String(result)
    }

    /// Whether `chatId` may be handed to another program (`KINDLY_CHAT_ID`, a D-Bus signal):
    /// not empty, and without NUL, controls or bidirectional overrides, which would cut it short
    /// or make it read as another chat.
    public static func isUsableChatID(_ chatId: String) -> Bool {
        !chatId.isEmpty && cleaned(chatId, keepsLines: false) == chatId && !chatId.unicodeScalars.contains { $0.value == 0x09 }
    }
}

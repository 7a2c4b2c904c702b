internal import KindlyPushCore

/// The state of the app that receives a push: the inputs of docs/spec/display-rules.md that are not read
/// from the push itself.
public struct RouteContext: Sendable {
    /// Where the delegate's answer comes from.
    public enum Delegate: Sendable {
        /// A fixed answer (the `--delegate` option of `kindly-push route`).
        case answer(DisplayRules.DelegateAnswer)
        /// The host's delegate, asked only when the rules consult it, and then exactly once.
        case object(any KindlyNotificationDelegate & Sendable)
    }

    /// The host app's state when the push arrives.
    public var appState: DisplayRules.AppState
    /// Read only in the foreground.
    public var screen: DisplayRules.Screen
    /// The chat on top, when ``screen`` is `chat` and the host says which one
    /// (``DisplayInput/chatOnScreen``); `nil` by default.
    public var chatOnScreen: String?
    /// Whether the host ships a notification service extension built on the SDK.
    public var hasExtension: Bool
    /// How the host answers `shouldHandleNotification`.
    public var delegate: Delegate

    /// A context with a fixed delegate answer (by default `allow`, as when no delegate is set).
    public init(
        appState: DisplayRules.AppState, screen: DisplayRules.Screen = .other, hasExtension: Bool = false,
        delegate: DisplayRules.DelegateAnswer = .allow
    ) {
        self.appState = appState
        self.screen = screen
        self.hasExtension = hasExtension
        self.delegate = .answer(delegate)
    }

    /// A context that asks a `Sendable` `delegate` when the rules consult it.
    public init(
        appState: DisplayRules.AppState, screen: DisplayRules.Screen = .other, hasExtension: Bool = false,
        delegate: any KindlyNotificationDelegate & Sendable
    ) {
        self.appState = appState
        self.screen = screen
        self.hasExtension = hasExtension
        self.delegate = .object(delegate)
    }

    /// A context that asks `delegate`, of any type, when the rules consult it: it is taken over
    /// (`sending`) and asked one call at a time, as ``KindlyNotificationHandler/setDelegate(_:)``
    /// does.
    @_disfavoredOverload
    public init(
        appState: DisplayRules.AppState, screen: DisplayRules.Screen = .other, hasExtension: Bool = false,
        delegate: sending any KindlyNotificationDelegate
    ) {
        self.appState = appState
        self.screen = screen
        self.hasExtension = hasExtension
        self.delegate = .object(OwnedNotificationDelegate(delegate))
    }

    /// The delegate's answer for `notification`. Calls a delegate object, so call it once.
    func askDelegate(_ notification: ExternalNotification) -> DisplayRules.DelegateAnswer {
        switch delegate {
        case .answer(let answer): return answer
        case .object(let object):
            return DisplayRules.DelegateAnswer(shouldHandle: DelegateQuestion.ask(object, notification))
        }
    }
}

/// How a Kindly push is at hand in decrypted form, or why it is not.
public enum DecryptionResolution: Sendable, Equatable {
    /// Marked decrypted by the extension (`isDecrypted`): the text was read from `aps.alert` and
    /// the chat id from `kindly.chat_id`, with no keyring look-up.
    case alreadyDecrypted(DisplayMessage)
    /// Marked decrypted, but `kindly.chat_id` is not a non-empty string: the marking cannot be
    /// used. It counts as not decrypting (no banner without a chat to open), with no `reason`:
    /// the push was not decrypted here, so no decryption failed.
    case markedWithoutChat
    /// Decrypted here with a key the keyring holds now.
    case decrypted(DecryptedPayload)
    /// Not marked decrypted (in pinned mode: whatever the mark), and it does not decrypt with the
    /// keys at hand.
    case failed(DecryptionFailure)

    /// The display rules' input.
    public var outcome: DecryptionOutcome {
        switch self {
        case .alreadyDecrypted(let message): return .decrypted(message)
        case .decrypted(let payload): return .decrypted(DisplayMessage(payload))
        case .markedWithoutChat, .failed: return .failed
        }
    }

    /// The failure's reason: present exactly for a push that is not marked decrypted (in pinned
    /// mode: whatever the mark) and does not decrypt (docs/spec/streams.md, "The output of route").
    public var reason: DecryptionFailure.Reason? {
        if case .failed(let failure) = self { return failure.reason }
        return nil
    }
}

/// The display decision for one push, as `kindly-push route` prints it.
public struct RouteDecision: Sendable, Hashable {
    /// `isKindlyNotification`.
    public let isKindly: Bool
    /// The kind of push, for every push.
    public let kind: PushKind
    /// What the user sees.
    public let presentation: DisplayRules.Presentation
    /// Who shows it.
    public let presenter: DisplayRules.Presenter
    /// Whether `shouldHandleNotification` was asked.
    public let delegateConsulted: Bool
    /// The decrypted chat id, title and body, exactly when `presentation` is `banner`.
    public let chatId: String?
    /// The decrypted title, exactly when `presentation` is `banner`.
    public let title: String?
    /// The decrypted text, exactly when `presentation` is `banner`.
    public let body: String?
    /// Why the push does not decrypt: present exactly when it is Kindly's, is not marked
    /// decrypted, and does not decrypt with the keys at hand (whatever the presentation).
    public let reason: DecryptionFailure.Reason?

    /// A decision with these fields (``KindlyPushRouter`` makes them).
    public init(
        isKindly: Bool, kind: PushKind, presentation: DisplayRules.Presentation, presenter: DisplayRules.Presenter, delegateConsulted: Bool,
        chatId: String? = nil, title: String? = nil, body: String? = nil, reason: DecryptionFailure.Reason? = nil
    ) {
        self.isKindly = isKindly
        self.kind = kind
        self.presentation = presentation
        self.presenter = presenter
        self.delegateConsulted = delegateConsulted
        self.chatId = chatId
        self.title = title
        self.body = body
        self.reason = reason
    }

    /// The decision for a push that is not Kindly's: the host hands it on unchanged.
    public static func notKindly(kind: PushKind) -> RouteDecision {
        RouteDecision(isKindly: false, kind: kind, presentation: .passthrough, presenter: .system, delegateConsulted: false)
    }

    /// Exactly the object of docs/spec/streams.md "The output of route", in this member order: `kindly`, `kind`,
    /// `presentation`, `presenter`, `delegate_consulted`, then `chat_id`, `title`, `body` when
    /// the presentation is a banner, then `reason` when present.
    public var json: JSONValue {
        var members: [JSONObject.Member] = [
            .init(key: "kindly", value: .bool(isKindly)),
            .init(key: "kind", value: .string(kind.rawValue)),
            .init(key: "presentation", value: .string(presentation.rawValue)),
            .init(key: "presenter", value: .string(presenter.rawValue)),
            .init(key: "delegate_consulted", value: .bool(delegateConsulted)),
        ]
        if presentation == .banner, let chatId, let title, let body {
            members.append(.init(key: "chat_id", value: .string(chatId)))
            members.append(.init(key: "title", value: .string(title)))
            members.append(.init(key: "body", value: .string(body)))
        }
        if let reason {
            members.append(.init(key: "reason", value: .string(reason.code)))
        }
        return .object(JSONObject(members))
    }
}

/// Routes one push: detection, then its decrypted form, then the display rules.
///
/// ## How "decrypts" is read
///
/// `route` receives the push as it reaches the point of decision, and reads "decrypts" the same
/// way in every row:
///
/// - A push marked decrypted (`kindly.decrypted` true) counts as decrypting, without another
///   decryption: the title and body come from `aps.alert` and the chat id from
///   `kindly.chat_id`. This is the foreground with an extension, where the extension has
///   already run and the app sees its output.
/// - Any other Kindly push is decrypted once with the keys at hand now. With an extension in
///   the killed or background state that is the extension's own attempt; in the foreground it
///   is the app's second attempt after the extension could not decrypt (say the key was not
///   readable then); without an extension it is the app's only attempt. The attempt is made in
///   every row, also where the rules show the placeholder either way, because `reason` reports
///   whether the push decrypts with the keys at hand, whatever the presentation.
/// - In pinned mode (docs/spec/wire-format.md section 7.1; ``KindlyPushDecryption/isInPinnedMode``) the mark
///   proves nothing, since anybody can write it: every Kindly push is decrypted now, and a marked
///   push that does not decrypt is handled as its reason says (docs/spec/display-rules.md). The functions
///   that take a `decrypt` closure cannot know the reader's mode and trust the mark.
public enum KindlyPushRouter {
    /// The display decision for `userInfo` in `context`. Asks a delegate object at most once,
    /// and only where the rules consult it.
    public static func route(userInfo: JSONValue, context: RouteContext, decryption: KindlyPushDecryption) -> RouteDecision {
        evaluate(userInfo: userInfo, context: context, decryption: decryption).decision
    }

    /// ``route(userInfo:context:decryption:)-(JSONValue,_,_)`` with another way to decrypt, for instance one
    /// key read from a key file: `{ KindlyPushDecryption.decryptResult(userInfo: $0, using: key) }`.
    /// `decrypt` is called at most once, and never for a push that is marked decrypted or is not
    /// Kindly's.
    public static func route(
        userInfo: JSONValue, context: RouteContext, decrypt: (JSONValue) -> Result<DecryptedPayload, DecryptionFailure>
    ) -> RouteDecision {
        evaluate(userInfo: userInfo, context: context, decrypt: decrypt).decision
    }

    /// The push's decrypted form: marked decrypted, decrypted now, or the failure.
    /// A push that is not Kindly's fails with `not_kindly`.
    public static func resolve(userInfo: JSONValue, decryption: KindlyPushDecryption) -> DecryptionResolution {
        resolve(userInfo: userInfo, trustsMark: !decryption.isInPinnedMode, decrypt: decryption.decryptResult(userInfo:))
    }

    /// ``resolve(userInfo:decryption:)`` with another way to decrypt; `decrypt` is called only
    /// for a push that is not marked decrypted.
    public static func resolve(
        userInfo: JSONValue, decrypt: (JSONValue) -> Result<DecryptedPayload, DecryptionFailure>
    ) -> DecryptionResolution {
        resolve(userInfo: userInfo, trustsMark: true, decrypt: decrypt)
    }

    /// The resolution; the mark `kindly.decrypted` counts only when `trustsMark` (read only for a
    /// marked push) is true, that is outside pinned mode.
    static func resolve(
        userInfo: JSONValue, trustsMark: @autoclosure () -> Bool, decrypt: (JSONValue) -> Result<DecryptedPayload, DecryptionFailure>
    ) -> DecryptionResolution {
        if KindlyPushDecryption.isDecrypted(userInfo: userInfo), trustsMark() {
            return markedMessage(userInfo: userInfo).map(DecryptionResolution.alreadyDecrypted) ?? .markedWithoutChat
        }
        switch decrypt(userInfo) {
        case .success(let payload): return .decrypted(payload)
        case .failure(let failure): return .failed(failure)
        }
    }

    /// The message of a push the extension marked decrypted: title and body from `aps.alert`
    /// (a string alert is the body, as the system reads it), chat id from `kindly.chat_id`,
    /// message id from `kindly.message_id`. `nil` when the chat id is not a non-empty string.
    public static func markedMessage(userInfo: JSONValue) -> DisplayMessage? {
        guard let envelope = userInfo.objectValue?[KindlyKey.envelope]?.objectValue,
            let chatId = envelope[KindlyKey.chatID]?.stringValue, !chatId.isEmpty
        else { return nil }
        let content = NotificationContent(userInfo: userInfo)
        return DisplayMessage(
            chatId: chatId, title: content.title, body: content.body, messageId: envelope[KindlyKey.messageID]?.stringValue)
    }

    /// The decision and, for a Kindly push, how it was resolved (the app side needs the payload
    /// to post a banner).
    static func evaluate(
        userInfo: JSONValue, context: RouteContext, decryption: KindlyPushDecryption
    ) -> (decision: RouteDecision, resolution: DecryptionResolution?) {
        evaluate(
            userInfo: userInfo, context: context, trustsMark: !decryption.isInPinnedMode, decrypt: decryption.decryptResult(userInfo:))
    }

    static func evaluate(
        userInfo: JSONValue, context: RouteContext, trustsMark: @autoclosure () -> Bool = true,
        decrypt: (JSONValue) -> Result<DecryptedPayload, DecryptionFailure>
    ) -> (decision: RouteDecision, resolution: DecryptionResolution?) {
        let kind = PushKind(userInfo: userInfo)
        guard KindlyPushDecryption.isKindlyNotification(userInfo) else {
            return (.notKindly(kind: kind), nil)
        }
        let resolution = resolve(userInfo: userInfo, trustsMark: trustsMark(), decrypt: decrypt)
        var input = DisplayInput(
            kind: kind, hasExtension: context.hasExtension, appState: context.appState, screen: context.screen,
            decryption: resolution.outcome)
        input.chatOnScreen = context.chatOnScreen
        // The delegate is asked once, before the rule, and only where the rules consult it.
        if DisplayRules.consultsDelegate(input), let message = resolution.outcome.message {
            input.delegate = context.askDelegate(ExternalNotification(message, userInfo: userInfo))
        }
        let decision = DisplayRules.decide(input)
        let banner = decision.presentation == .banner ? decision.message : nil
        return (
            RouteDecision(
                isKindly: true, kind: kind, presentation: decision.presentation, presenter: decision.presenter,
                delegateConsulted: decision.delegateConsulted, chatId: banner?.chatId, title: banner?.title,
                body: banner?.body, reason: resolution.reason),
            resolution
        )
    }
}

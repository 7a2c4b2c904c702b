internal import KindlyPushCore

/// The decrypted text of a push, as far as the display rules need it.
public struct DisplayMessage: Sendable, Hashable, Codable {
    /// The Kindly chat the message belongs to.
    public var chatId: String
    /// The decrypted banner title.
    public var title: String
    /// The decrypted banner text.
    public var body: String
    /// The chat message's id, when known.
    public var messageId: String?

    /// A message with these fields.
    public init(chatId: String, title: String, body: String, messageId: String? = nil) {
        self.chatId = chatId
        self.title = title
        self.body = body
        self.messageId = messageId
    }

    /// The message of a decrypted payload.
    public init(_ payload: DecryptedPayload) {
        self.init(chatId: payload.chatId, title: payload.title, body: payload.body, messageId: payload.messageId)
    }
}

/// The "decryption" input of docs/spec/display-rules.md: whether the push is at hand in decrypted form.
///
/// The engine does no decryption itself: the caller decides how the push reached the point of
/// decision (decrypted with the keys it holds, or already marked decrypted by the extension)
/// and passes the outcome. ``KindlyPushRouter`` is the caller that does this for one push.
public enum DecryptionOutcome: Sendable, Equatable {
    /// Decrypted with a key the device holds now, or already decrypted by the extension.
    case decrypted(DisplayMessage)
    /// Does not decrypt (whatever the reason) and is not marked decrypted.
    case failed

    /// The message, when decrypted.
    public var message: DisplayMessage? {
        if case .decrypted(let message) = self { return message }
        return nil
    }
}

/// Everything the display rules read for one push.
public struct DisplayInput: Sendable, Equatable {
    /// Whether the push is Kindly's (`isKindlyNotification`). When false every other input is ignored.
    public var isKindly: Bool
    /// The kind of push (`visible`, `plain`, `silent`).
    public var kind: PushKind
    /// Whether the host ships a notification service extension built on the SDK.
    public var hasExtension: Bool
    /// The host app's state when the push arrives.
    public var appState: DisplayRules.AppState
    /// Read only in the foreground.
    public var screen: DisplayRules.Screen
    /// The chat on top when ``screen`` is ``DisplayRules/Screen/chat`` and the host said which
    /// one; `nil` when it did not (then `chat` holds for every push). A decrypted push for
    /// another chat is handled as ``DisplayRules/Screen/other``; one that does not decrypt has
    /// no chat to compare and is handled as `chat` (display-rules.md, "Inputs").
    public var chatOnScreen: String?
    /// Whether the push is at hand in decrypted form.
    public var decryption: DecryptionOutcome
    /// The delegate's answer; read only when ``DisplayRules/consultsDelegate(_:)`` is true.
    public var delegate: DisplayRules.DelegateAnswer

    /// The inputs of one decision.
    public init(
        isKindly: Bool = true, kind: PushKind, hasExtension: Bool, appState: DisplayRules.AppState, screen: DisplayRules.Screen = .other,
        decryption: DecryptionOutcome, delegate: DisplayRules.DelegateAnswer = .allow
    ) {
        self.isKindly = isKindly
        self.kind = kind
        self.hasExtension = hasExtension
        self.appState = appState
        self.screen = screen
        self.decryption = decryption
        self.delegate = delegate
    }

    /// The screen as the rules read it: ``screen``, except that a decrypted push for another
    /// chat than ``chatOnScreen`` is on the `other` screen.
    public var effectiveScreen: DisplayRules.Screen {
        guard screen == .chat, let chatOnScreen, let message = decryption.message else { return screen }
        return message.chatId == chatOnScreen ? .chat : .other
    }
}

/// What the display rules decide for one push.
public struct DisplayDecision: Sendable, Hashable, Codable {
    /// What the user sees.
    public var presentation: DisplayRules.Presentation
    /// Who shows it.
    public var presenter: DisplayRules.Presenter
    /// Whether `shouldHandleNotification` is asked (once, before the rule is applied).
    public var delegateConsulted: Bool
    /// The decrypted message, exactly when `presentation` is ``DisplayRules/Presentation/banner``.
    public var message: DisplayMessage?

    /// A decision with these outputs.
    public init(
        presentation: DisplayRules.Presentation, presenter: DisplayRules.Presenter, delegateConsulted: Bool, message: DisplayMessage? = nil
    ) {
        self.presentation = presentation
        self.presenter = presenter
        self.delegateConsulted = delegateConsulted
        self.message = message
    }
}

/// The display-rule engine of docs/spec/display-rules.md: a pure function of its inputs, with no I/O, no
/// keyring and no clock, so that every combination can be enumerated in a test.
public enum DisplayRules {
    /// Whether the app process receives this push at all: in the foreground every kind, in the
    /// background only `silent` (alerts are shown by the system or the extension without waking
    /// the app), and a killed app nothing.
    public static func appProcessReceives(kind: PushKind, appState: DisplayRules.AppState) -> Bool {
        switch appState {
        case .killed: return false
        case .background: return kind == .silent
        case .foreground: return true
        }
    }

    /// Whether `shouldHandleNotification` is asked: exactly for a Kindly push that the app
    /// process (not the extension) has in decrypted form, whatever the screen; never when
    /// decryption failed. ``DisplayInput/delegate`` is not read here, so a caller can ask this
    /// first and call a real delegate only when it is true.
    public static func consultsDelegate(_ input: DisplayInput) -> Bool {
        input.isKindly && input.decryption.message != nil
            && appProcessReceives(kind: input.kind, appState: input.appState)
    }

    /// The decision for `input`, row by row as docs/spec/display-rules.md's tables give it.
    public static func decide(_ input: DisplayInput) -> DisplayDecision {
        guard input.isKindly else {
            return DisplayDecision(presentation: .passthrough, presenter: .system, delegateConsulted: false)
        }
        let consulted = consultsDelegate(input)
        let message = input.decryption.message
        let nothing = DisplayDecision(presentation: .none, presenter: .none, delegateConsulted: consulted)
        let placeholder = DisplayDecision(presentation: .placeholder, presenter: .system, delegateConsulted: consulted)

        // The app process has the push decrypted and is allowed to show it: it posts the banner
        // (or tells the system to present the extension's decrypted content).
        func sdkBannerOr(_ otherwise: DisplayDecision) -> DisplayDecision {
            guard let message else { return otherwise }
            guard input.delegate == .allow else { return nothing }
            return DisplayDecision(presentation: .banner, presenter: .sdk, delegateConsulted: consulted, message: message)
        }

        switch input.kind {
        case .silent:
            // No alert: the extension never runs and the system has nothing to show, so a push
            // that does not decrypt shows nothing, and a killed (force-quit) app never gets it.
            switch input.appState {
            case .killed: return nothing
            case .background: return sdkBannerOr(nothing)
            case .foreground: return input.effectiveScreen == .chat ? nothing : sdkBannerOr(nothing)
            }
        case .visible, .plain:
            switch input.appState {
            case .killed, .background:
                // The app process does not see alert pushes here. Only an extension (which runs
                // for `visible` only) can replace the placeholder, and it never asks the delegate.
                if input.kind == .visible, input.hasExtension, let message {
                    return DisplayDecision(
                        presentation: .banner, presenter: .extension, delegateConsulted: false, message: message)
                }
                return placeholder
            case .foreground:
                // The message appears in the open chat itself; elsewhere the SDK presents it, or
                // the system shows the placeholder when nobody could decrypt it.
                return input.effectiveScreen == .chat ? nothing : sdkBannerOr(placeholder)
            }
        }
    }
}

extension DisplayMessage {
    enum CodingKeys: String, CodingKey {
        case chatId = "chat_id"
        case title, body
        case messageId = "message_id"
    }
}

extension DisplayDecision {
    enum CodingKeys: String, CodingKey {
        case presentation, presenter
        case delegateConsulted = "delegate_consulted"
        case message
    }
}

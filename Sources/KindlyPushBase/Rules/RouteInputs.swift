internal import KindlyPushCore

/// The inputs and outputs of the display rules (docs/spec/display-rules.md), named as the spec and the
/// `kindly-push route` command name them: each raw value is the spec's `code` word.

/// What kind of push this is, read from `aps` alone (docs/spec/display-rules.md, "Inputs").
///
/// The kind decides whether a notification service extension can run for the push at all:
/// the system starts one only for an alert with `mutable-content` 1.
public enum PushKind: String, Sendable, CaseIterable {
    /// `aps.alert` present and `aps.mutable-content` is 1: an extension may rewrite it.
    case visible
    /// `aps.alert` present without `mutable-content` 1: the system shows it as delivered.
    case plain
    /// No `aps.alert`: only the app process can do anything with it.
    case silent

    /// The kind of `userInfo`, an APNs document.
    ///
    /// `aps.alert` counts as present when it is a string or an object, and `mutable-content`
    /// counts only as the JSON number 1 (`1`, `1.0`, `1e0`; never `true` or `"1"`), as wire
    /// format section 3 says. An `aps` that is missing or is not an object has no alert, so the
    /// push is `silent`; so is anything that is not a JSON object. `content-available` plays no
    /// part: a push without an alert is `silent` whether or not it asks to wake the app.
    public init(userInfo: JSONValue) {
        guard let aps = userInfo.objectValue?[APNsKey.aps]?.objectValue else {
            self = .silent
            return
        }
        switch aps[APNsKey.alert] {
        case .string?, .object?:
            self = PushKind.isNumberOne(aps[APNsKey.mutableContent]) ? .visible : .plain
        default:
            self = .silent
        }
    }

    /// Whether `aps.content-available` is the JSON number 1 (the system wakes the app for it).
    public static func hasContentAvailable(userInfo: JSONValue) -> Bool {
        isNumberOne(userInfo.objectValue?[APNsKey.aps]?.objectValue?[APNsKey.contentAvailable])
    }

    /// `mutable-content` and `content-available` count only as a JSON number equal to 1.
    static func isNumberOne(_ value: JSONValue?) -> Bool {
        guard case .number(let number)? = value else { return false }
        return number.integerValue(in: 1...1) != nil
    }
}

extension DisplayRules {
    /// The state of the host app when the push arrives.
    public enum AppState: String, Sendable, CaseIterable {
        /// Not running, or force-quit: the app process receives nothing.
        case killed
        /// Running but not active: the app process receives silent pushes only.
        case background
        /// Active: the app process receives every push (`willPresent` or the silent path).
        case foreground
    }

    /// What is on screen; read only in the foreground.
    public enum Screen: String, Sendable, CaseIterable {
        /// The chat conversation is on top: the message appears there, so nothing is presented.
        case chat
        /// Anything else.
        case other
    }

    /// What the host's `shouldHandleNotification` returns for a decrypted push.
    public enum DelegateAnswer: String, Sendable, CaseIterable {
        /// Let the SDK present it (the default when no delegate is set).
        case allow
        /// The host handles it itself: the SDK presents nothing.
        case suppress

        /// `allow` for `true`, as `shouldHandleNotification` answers.
        public init(shouldHandle: Bool) {
            self = shouldHandle ? .allow : .suppress
        }
    }

    /// What the user sees.
    public enum Presentation: String, Sendable, CaseIterable {
        /// The decrypted title and body.
        case banner
        /// `aps.alert` exactly as the backend sent it (never message text, never ciphertext).
        case placeholder
        /// Nothing.
        case none
        /// Not Kindly's: the host hands it unchanged to its other provider, or presents it as before.
        case passthrough
    }

    /// Who shows it.
    public enum Presenter: String, Sendable, CaseIterable {
        /// The notification service extension, with the content it decrypted.
        case `extension`
        /// The SDK in the app process: a banner it posts itself, or it tells the system to present
        /// content that is already decrypted.
        case sdk
        /// The system, showing the payload as delivered.
        case system
        /// Nobody.
        case none
    }
}

internal import KindlyPushCore

/// How the host wants Kindly pushes delivered, named as in the iOS SDK. It sets `push_mode` in
/// the registration (docs/spec/wire-format.md section 6), and so whether the backend sends visible or
/// silent pushes.
///
/// ## How `automatic` decides on Linux
///
/// On iOS the SDK finds its notification service extension in the app bundle. On Linux nothing
/// runs before a notification is shown unless the host runs it, so there is nothing to detect:
/// the host **declares** whether a decrypting presenter is installed, one that decrypts a visible
/// push before anybody sees it (for a desktop, `kindly-push notify`; on a device, the host's own
/// equivalent of the extension). `automatic` is `alert` when one is declared and `silent`
/// otherwise. ``KindlyNotificationHandler`` takes the declaration as `hasExtension`; the
/// `kindly-push keygen` command as `--presenter notify|none`.
public enum KindlyNotificationMode: String, Sendable, CaseIterable, Codable {
    /// `alert` when the host declares a decrypting presenter, `silent` otherwise: the default,
    /// so that a host that adds one gets visible pushes without another change.
    case automatic
    /// Visible pushes: the host has a presenter that decrypts them.
    case alert
    /// Silent pushes, decrypted by the app process.
    case silent

    /// The registration's `push_mode`.
    ///
    /// - Parameter hasDecryptingPresenter: the host's declaration; read only in `automatic` mode.
    public func pushMode(hasDecryptingPresenter: Bool) -> Registration.PushMode {
        switch self {
        case .alert: return .alert
        case .silent: return .silent
        case .automatic: return hasDecryptingPresenter ? .alert : .silent
        }
    }
}

extension Registration {
    /// The registration for a device token given as bytes (as
    /// `didRegisterForRemoteNotificationsWithDeviceToken` gives it), written as lowercase hex,
    /// with `push_mode` from `mode` and the host's declaration of a decrypting presenter.
    public init(
        deviceToken: [UInt8], mode: KindlyNotificationMode, hasDecryptingPresenter: Bool,
        publicKey: DevicePublicKey, sdkVersion: String = Registration.sdkVersion
    ) {
        self.init(
            token: Registration.tokenHex(deviceToken), pushMode: mode.pushMode(hasDecryptingPresenter: hasDecryptingPresenter),
            publicKey: publicKey, sdkVersion: sdkVersion)
    }

    /// The registration for a device token given as text: hex digits only, an even number of
    /// them, not empty; written lowercase.
    ///
    /// - Throws: ``Registration/InvalidToken`` for any other text.
    public init(
        deviceTokenHex: String, mode: KindlyNotificationMode, hasDecryptingPresenter: Bool,
        publicKey: DevicePublicKey, sdkVersion: String = Registration.sdkVersion
    ) throws(InvalidToken) {
        self.init(
            token: try Registration.tokenHex(validating: deviceTokenHex),
            pushMode: mode.pushMode(hasDecryptingPresenter: hasDecryptingPresenter), publicKey: publicKey,
            sdkVersion: sdkVersion)
    }
}

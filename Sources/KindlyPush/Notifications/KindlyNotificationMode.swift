import Foundation
package import KindlyPushCore

/// How the host wants Kindly pushes delivered, named as in the iOS SDK. It sets `push_mode` in
/// the registration (wire format section 6), and so whether the backend sends visible or
/// silent pushes.
public enum KindlyNotificationMode: String, Sendable, CaseIterable {
    /// `alert` when a notification service extension built on the library is present, `silent`
    /// otherwise: the default, so that a host that adds an extension gets visible pushes
    /// without a code change.
    case automatic
    /// Visible pushes: the host ships an extension that decrypts them.
    case alert
    /// Silent pushes, decrypted by the app process.
    case silent

    /// The registration's `push_mode`; `extensionPresent` is evaluated only in `automatic` mode.
    public func pushMode(extensionPresent: @autoclosure () -> Bool) -> Registration.PushMode {
        switch self {
        case .alert: return .alert
        case .silent: return .silent
        case .automatic: return extensionPresent() ? .alert : .silent
        }
    }

    /// The registration's `push_mode`, asking `detector` only in `automatic` mode.
    public func pushMode(detector: NotificationServiceExtensionDetector) -> Registration.PushMode {
        pushMode(extensionPresent: detector.isPresent())
    }
}

/// Tells whether the host ships a notification service extension built on the library.
public struct NotificationServiceExtensionDetector: Sendable {
    private let detect: @Sendable () -> Bool

    /// A detector that runs `detect`.
    public init(_ detect: @escaping @Sendable () -> Bool) {
        self.detect = detect
    }

    /// Whether such an extension is present.
    public func isPresent() -> Bool { detect() }

    /// Always present (a host that knows it ships one).
    public static let present = NotificationServiceExtensionDetector { true }
    /// Never present.
    public static let absent = NotificationServiceExtensionDetector { false }

    /// The extension point of notification service extensions.
    public static let extensionPointIdentifier = "com.apple.usernotifications.service"
    /// The top-level `Info.plist` key, with the boolean `true`, by which an extension says it is
    /// built on this library (a `KindlyNotificationService`). An extension point alone does not
    /// say it: another provider's extension would not decrypt Kindly pushes.
    public static let markerKey = "KindlyPushNotificationService"

    /// Looks, as the iOS SDK looks in its app bundle, for `PlugIns/*.appex/Info.plist` under
    /// `appBundlePath` whose `NSExtension.NSExtensionPointIdentifier` is
    /// ``extensionPointIdentifier`` and whose ``markerKey`` is `true`. Unreadable folders and
    /// property lists count as absent.
    public static func appBundle(at appBundlePath: String) -> NotificationServiceExtensionDetector {
        NotificationServiceExtensionDetector {
            let plugIns = (appBundlePath as NSString).appendingPathComponent("PlugIns")
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: plugIns) else { return false }
            return names.sorted().contains { name in
                guard name.hasSuffix(".appex") else { return false }
                let path = ((plugIns as NSString).appendingPathComponent(name) as NSString).appendingPathComponent("Info.plist")
                return isKindlyServiceExtension(infoPlistAt: path)
            }
        }
    }

    static func isKindlyServiceExtension(infoPlistAt path: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: path),
            let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
            let info = plist as? [String: Any],
            let attributes = info["NSExtension"] as? [String: Any],
            attributes["NSExtensionPointIdentifier"] as? String == extensionPointIdentifier
        else { return false }
        return info[markerKey] as? Bool == true
    }
}

extension Registration {
    /// The registration for a device token given as bytes (as
    /// `didRegisterForRemoteNotificationsWithDeviceToken` gives it), written as lowercase hex,
    /// with `push_mode` from `mode` (asking `detector` only in `automatic` mode).
    public init(
        deviceToken: [UInt8], mode: KindlyNotificationMode, detector: NotificationServiceExtensionDetector,
        publicKey: DevicePublicKey, sdkVersion: String = Registration.sdkVersion
    ) {
        self.init(
            token: Registration.tokenHex(deviceToken), pushMode: mode.pushMode(detector: detector), publicKey: publicKey,
            sdkVersion: sdkVersion)
    }

    /// The registration for a device token given as text: hex digits only, an even number of
    /// them, not empty; written lowercase.
    ///
    /// - Throws: ``Registration/InvalidToken`` for any other text.
    public init(
        deviceTokenHex: String, mode: KindlyNotificationMode, detector: NotificationServiceExtensionDetector,
        publicKey: DevicePublicKey, sdkVersion: String = Registration.sdkVersion
    ) throws(InvalidToken) {
        self.init(
            token: try Registration.tokenHex(validating: deviceTokenHex), pushMode: mode.pushMode(detector: detector),
            publicKey: publicKey, sdkVersion: sdkVersion)
    }
}

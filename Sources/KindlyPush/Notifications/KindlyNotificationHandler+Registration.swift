public import FoundationEssentials
internal import KindlyPushCore

/// Why ``KindlyNotificationHandler/setAPNSDeviceToken(_:)-(String)`` could not register.
public enum RegistrationError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The token text is not an even number of hex digits.
    case invalidToken(Registration.InvalidToken)
    /// The keyring could not give or store the device key.
    case keyring(KeyringError)

    /// One line for people.
    public var description: String {
        switch self {
        case .invalidToken(let error): return error.description
        case .keyring(let error): return error.description
        }
    }

    /// The same line as ``description``.
    public var errorDescription: String? { description }
}

extension KindlyNotificationHandler {
    /// The label a device key gets when ``setAPNSDeviceToken(_:)-(Data)`` creates one.
    public static let deviceKeyLabel = "kindly-push"

    /// The registration to send the backend for this APNs device token (docs/spec/wire-format.md section 6),
    /// named as in the iOS SDK.
    ///
    /// It uses the newest device key in the keyring and creates (and stores) one only when the
    /// keyring holds none, so registering again never rotates the key. `push_mode` comes from
    /// ``notificationMode`` and the host's declaration ``hasExtension``.
    ///
    /// ```swift
    /// let registration = try handler.setAPNSDeviceToken(deviceToken)
    /// try await backend.register(JSONEncoder().encode(registration))
    /// ```
    ///
    /// - Throws: the keyring's error when it can neither give nor store a key.
    public func setAPNSDeviceToken(_ deviceToken: Data) throws(KeyringError) -> Registration {
        let (key, _) = try decryption.keyring.newestKeyOrNew(label: KindlyNotificationHandler.deviceKeyLabel)
        return Registration(
            deviceToken: [UInt8](deviceToken), mode: notificationMode, hasDecryptingPresenter: hasExtension,
            publicKey: key.publicKey)
    }

    /// ``setAPNSDeviceToken(_:)-(Data)`` for a token given as hex text (written lowercase).
    ///
    /// - Throws: ``RegistrationError/invalidToken(_:)`` before the keyring is touched, or
    ///   ``RegistrationError/keyring(_:)``.
    public func setAPNSDeviceToken(_ deviceTokenHex: String) throws(RegistrationError) -> Registration {
        let token: String
        do {
            token = try Registration.tokenHex(validating: deviceTokenHex)
        } catch {
            throw .invalidToken(error)
        }
        let key: DeviceKey
        do {
            key = try decryption.keyring.newestKeyOrNew(label: KindlyNotificationHandler.deviceKeyLabel).key
        } catch {
            throw .keyring(error)
        }
        return Registration(
            token: token, pushMode: notificationMode.pushMode(hasDecryptingPresenter: hasExtension), publicKey: key.publicKey)
    }

    /// The iOS SDK's name for ``notificationTapped(_:)``: the user tapped a notification.
    public func notificationResponseReceived(_ userInfo: JSONValue) -> TapOutcome {
        notificationTapped(userInfo)
    }
}

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
    /// The label a device key gets when registering creates one.
    public static let deviceKeyLabel = "kindly-push"

    /// Registers this APNs device token as the iOS SDK does, named as in it: the registration
    /// (wire format section 6) goes to ``sendRegistration``, the sink the host set once, and a
    /// failure is logged (at `error`, through the handler's logger), never thrown.
    ///
    /// ```swift
    /// handler.sendRegistration = { registration in backend.register(registration.json) }  // once
    /// handler.setAPNSDeviceToken(deviceToken)
    /// ```
    ///
    /// It uses the newest device key in the keyring and creates (and stores) one only when the
    /// keyring holds none, so registering again never rotates the key. `push_mode` comes from
    /// ``notificationMode`` and the host's declaration ``hasExtension``. A host that wants the
    /// registration in hand, or the error, calls ``registration(forAPNSDeviceToken:)-(Data)``.
    public func setAPNSDeviceToken(_ deviceToken: Data) {
        deliver(Result { () throws(KeyringError) in try registration(forAPNSDeviceToken: deviceToken) })
    }

    /// ``setAPNSDeviceToken(_:)-(Data)`` for a token given as hex text (written lowercase); text
    /// that is not a token is logged and nothing is sent.
    public func setAPNSDeviceToken(_ deviceTokenHex: String) {
        deliver(Result { () throws(RegistrationError) in try registration(forAPNSDeviceToken: deviceTokenHex) })
    }

    /// Hands a registration to the sink, or logs why there is none to hand over.
    private func deliver<E: Error>(_ result: Result<Registration, E>) {
        switch result {
        case .success(let registration):
            guard let send = sendRegistration else {
                logger.log(.error, "setAPNSDeviceToken: no sendRegistration is set: the registration was not sent")
                return
            }
            send(registration)
        case .failure(let error):
            logger.log(.error, "setAPNSDeviceToken: cannot register: \(error)")
        }
    }

    /// The registration to send the backend for this APNs device token (wire format section 6),
    /// for a host that sends it itself; ``setAPNSDeviceToken(_:)-(Data)`` sends it through
    /// ``sendRegistration``. Keys are used and created as that method says.
    ///
    /// ```swift
    /// let registration = try handler.registration(forAPNSDeviceToken: deviceToken)
    /// ```
    ///
    /// - Throws: the keyring's error when it can neither give nor store a key.
    public func registration(forAPNSDeviceToken deviceToken: Data) throws(KeyringError) -> Registration {
        let (key, _) = try decryption.keyring.newestKeyOrNew(label: KindlyNotificationHandler.deviceKeyLabel)
        return Registration(
            deviceToken: [UInt8](deviceToken), mode: notificationMode, hasDecryptingPresenter: hasExtension,
            publicKey: key.publicKey)
    }

    /// ``registration(forAPNSDeviceToken:)-(Data)`` for a token given as hex text (written
    /// lowercase).
    ///
    /// - Throws: ``RegistrationError/invalidToken(_:)`` before the keyring is touched, or
    ///   ``RegistrationError/keyring(_:)``.
    public func registration(forAPNSDeviceToken deviceTokenHex: String) throws(RegistrationError) -> Registration {
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

    /// The iOS SDK's name for ``notificationTapped(_:)-(JSONValue)``: the user tapped a notification.
    @discardableResult
    public func notificationResponseReceived(_ userInfo: JSONValue) -> TapOutcome {
        notificationTapped(userInfo)
    }

    /// The iOS SDK's `notificationResponseReceived(_ response:)` for the tapped notification
    /// (`response.notification` on iOS): ``notificationTapped(_:)-(JSONValue)`` of its `userInfo`.
    @discardableResult
    public func notificationResponseReceived(_ notification: NotificationContent) -> TapOutcome {
        notificationTapped(JSONValue.object(notification.userInfo))
    }

    // MARK: [AnyHashable: Any]

    /// ``notificationReceived(_:)-(JSONValue)`` for the userInfo dictionary of
    /// `didReceiveRemoteNotification`, as the iOS SDK takes it. The whole dictionary is
    /// converted (a value JSON cannot hold, such as a `Date`, is left out), so the delegate's
    /// `ExternalNotification.userInfo` holds every other member.
    @discardableResult
    public func notificationReceived(_ userInfo: [AnyHashable: Any]) -> RouteDecision? {
        notificationReceived(JSONValue.userInfo(userInfo))
    }

    /// ``notificationTapped(_:)-(JSONValue)`` for a userInfo dictionary (converted as
    /// ``notificationReceived(_:)-([AnyHashable:Any])`` converts it).
    @discardableResult
    public func notificationTapped(_ userInfo: [AnyHashable: Any]) -> TapOutcome {
        notificationTapped(JSONValue.userInfo(userInfo))
    }

    /// The iOS SDK's `notificationResponseReceived` for the userInfo dictionary of
    /// `didReceive response`: ``notificationTapped(_:)-([AnyHashable:Any])``.
    @discardableResult
    public func notificationResponseReceived(_ userInfo: [AnyHashable: Any]) -> TapOutcome {
        notificationTapped(userInfo)
    }
}

extension ExternalNotification {
    /// The push as the app received it, as a userInfo dictionary as on iOS (`NSNull`, `Bool`,
    /// `NSNumber`, `String`, arrays and dictionaries). In `KindlyPushBase` this name is the
    /// `JSONValue`; here that form is ``userInfoJSON``.
    public var userInfo: [AnyHashable: Any] {
        userInfoJSON.foundationValue as? [AnyHashable: Any] ?? [:]
    }

    /// A notification with these fields, received as the userInfo dictionary `userInfo`
    /// (converted as ``KindlyNotificationHandler/notificationReceived(_:)-([AnyHashable:Any])``
    /// converts it).
    public init(id: String, title: String, body: String, messageId: String? = nil, userInfo: [AnyHashable: Any]) {
        self.init(id: id, title: title, body: body, messageId: messageId, userInfo: JSONValue.userInfo(userInfo))
    }
}

extension JSONValue {
    /// A whole userInfo dictionary as a JSON object, leniently: a member JSON cannot hold, at any
    /// depth, is left out.
    static func userInfo(_ dictionary: [AnyHashable: Any]) -> JSONValue {
        JSONValue(lenient: dictionary) ?? .object(JSONObject())
    }
}

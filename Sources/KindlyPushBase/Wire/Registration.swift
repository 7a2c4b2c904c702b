internal import KindlyPushCore

/// What the device sends the backend when it registers its APNs token (docs/spec/wire-format.md section 6).
public struct Registration: Sendable, Hashable {
    /// How the backend should push to this device.
    public enum PushMode: String, Sendable, CaseIterable {
        /// The app ships a notification service extension built on the SDK: visible pushes.
        case alert
        /// No extension: silent pushes, decrypted by the app.
        case silent
    }

    /// The version of the SDK wire behaviour this library implements.
    public static let sdkVersion = "3.0.10"
    /// The oldest SDK version to which the backend sends visible pushes.
    public static let minimumVisiblePushSDKVersion = "3.0.10"

    /// The APNs device token, lowercase hex; `nil` when not known yet.
    public var token: String?
    /// `alert` for visible pushes, `silent` otherwise.
    public var pushMode: PushMode
    /// The device key's public half; the backend seals for it.
    public var publicKey: DevicePublicKey
    /// The SDK wire behaviour the device implements.
    public var sdkVersion: String

    /// A registration with these fields; `kid` is derived from `publicKey`.
    public init(token: String?, pushMode: PushMode, publicKey: DevicePublicKey, sdkVersion: String = Registration.sdkVersion) {
        self.token = token
        self.pushMode = pushMode
        self.publicKey = publicKey
        self.sdkVersion = sdkVersion
    }

    /// The registration object, in the order of section 6 (`token` left out when unknown).
    public var json: JSONValue {
        var members: [JSONObject.Member] = []
        if let token { members.append(.init(key: "token", value: .string(token))) }
        members += [
            .init(key: "platform", value: "apns"),
            .init(key: "push_mode", value: .string(pushMode.rawValue)),
            .init(key: "public_key", value: .string(publicKey.base64URL)),
            .init(key: "kid", value: .string(publicKey.kid.base64URL)),
            .init(key: "sdk_version", value: .string(sdkVersion)),
        ]
        return .object(JSONObject(members))
    }

    /// The lowercase hex of a device token given as bytes (as `didRegisterForRemoteNotificationsWithDeviceToken` gives it).
    public static func tokenHex(_ token: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(token.count * 2)
        for byte in token {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// Why a token string was refused.
    public struct InvalidToken: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    /// A device token given as text, checked (hex digits only, even length, not empty) and lowercased.
    public static func tokenHex(validating text: String) throws(InvalidToken) -> String {
        guard !text.isEmpty else { throw InvalidToken(description: "the device token is empty") }
        guard text.utf8.allSatisfy({ $0 < 0x80 && Character(Unicode.Scalar($0)).isHexDigit }) else {
            throw InvalidToken(description: "the device token must be hexadecimal digits only")
        }
        guard text.utf8.count % 2 == 0 else { throw InvalidToken(description: "the device token must have an even number of hex digits") }
        return text.lowercased()
    }

    /// The backend's choice (section 6): a visible push only for `push_mode` `alert` with
    /// `sdk_version` 3.0.10 or newer; a silent push for every other registration.
    public static func backendSendsVisiblePush(pushMode: String, sdkVersion: String) -> Bool {
        guard pushMode == PushMode.alert.rawValue,
            let version = numericVersion(sdkVersion),
            let minimum = numericVersion(minimumVisiblePushSDKVersion)
        else { return false }
        let length = max(version.count, minimum.count)
        let padded = version + Array(repeating: 0, count: length - version.count)
        let paddedMinimum = minimum + Array(repeating: 0, count: length - minimum.count)
        return !padded.lexicographicallyPrecedes(paddedMinimum)
    }

    /// `3.0.10` as [3, 0, 10]; `nil` unless it is dot-separated decimal numbers.
    static func numericVersion(_ text: String) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !parts.isEmpty else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 9, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(part) else {
                return nil
            }
            numbers.append(number)
        }
        return numbers
    }
}

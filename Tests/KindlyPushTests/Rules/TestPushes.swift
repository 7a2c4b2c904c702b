import KindlyPush
import KindlyPushCore
import KindlyPushTesting

/// Real sealed pushes for the router and notification tests.
enum TestPushes {
    static let payload = try! DecryptedPayload(chatId: "c-1", title: "Anna", body: "Hi!", messageId: "m-1")

    /// A push of `kind` sealed for `key`: `visible` and `silent` as `seal` writes them, `plain`
    /// a visible push without `mutable-content`.
    static func sealed(_ kind: PushKind, for key: DeviceKey, payload: DecryptedPayload = TestPushes.payload) throws -> JSONValue {
        let bytes = try KindlyPushSealer.seal(payload, for: key.publicKey, mode: kind == .silent ? .silent : .visible)
        let document = try JSONReader.parse(bytes)
        guard kind == .plain else { return document }
        return editing(document, "aps") { aps in aps["mutable-content"] = nil }
    }

    /// A push that is not Kindly's, of `kind`, with another provider's data.
    static func foreign(_ kind: PushKind) -> JSONValue {
        let aps: JSONValue
        switch kind {
        case .visible: aps = ["alert": ["title": "Sale", "body": "50% off"], "mutable-content": 1]
        case .plain: aps = ["alert": "Sale: 50% off", "sound": "default"]
        case .silent: aps = ["content-available": 1]
        }
        return ["aps": aps, "provider": ["campaign": "spring"]]
    }

    /// `document` with its object member `key` changed by `edit`.
    static func editing(_ document: JSONValue, _ key: String, _ edit: (inout JSONObject) -> Void) -> JSONValue {
        var object = document.objectValue ?? JSONObject()
        var member = object[key]?.objectValue ?? JSONObject()
        edit(&member)
        object[key] = .object(member)
        return .object(object)
    }
}

/// A delegate that answers as told and counts how often it was asked.
final class CountingDelegate: KindlyNotificationDelegate, Sendable {
    let answer: Bool
    private let asked = Locked<[ExternalNotification]>([])

    init(answer: Bool) {
        self.answer = answer
    }

    var notifications: [ExternalNotification] { asked.withLock { $0 } }

    func shouldHandleNotification(notification: ExternalNotification) -> Bool {
        asked.withLock { $0.append(notification) }
        return answer
    }
}

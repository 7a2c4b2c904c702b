import Foundation
package import KindlyPushCore

/// Bridging to the `[AnyHashable: Any]` dictionaries that `UNNotificationContent.userInfo`
/// and `JSONSerialization` use, for parity with the iOS SDK's signatures.
extension JSONValue {
    /// A value from a Foundation object graph (`NSNull`, `Bool`/`NSNumber`, `String`, arrays,
    /// dictionaries with string keys); `nil` for anything JSON cannot hold.
    public init?(foundation value: Any) {
        switch value {
        case is NSNull: self = .null
        case let string as String: self = .string(string)
        case let flag as Bool where type(of: value) == Bool.self: self = .bool(flag)
        case let number as NSNumber:
            // JSONSerialization gives booleans as NSNumbers of Objective-C type "c".
            if number.objCType.pointee == CChar(UInt8(ascii: "c")) {
                self = .bool(number.boolValue)
            } else if let literal = JSONNumber(literal: number.stringValue) {
                self = .number(literal)
            } else {
                return nil
            }
        case let array as [Any]:
            var elements: [JSONValue] = []
            for element in array {
                guard let converted = JSONValue(foundation: element) else { return nil }
                elements.append(converted)
            }
            self = .array(elements)
        case let dictionary as [AnyHashable: Any]:
            guard let object = JSONObject(foundation: dictionary) else { return nil }
            self = .object(object)
        default:
            return nil
        }
    }

    /// The value as a Foundation object graph.
    public var foundationValue: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let flag): return flag
        case .number(let number):
            if let integer = number.integerValue(in: Int64.min...Int64.max) { return NSNumber(value: integer) }
            return NSNumber(value: number.doubleValue)
        case .string(let string): return string
        case .array(let elements): return elements.map(\.foundationValue)
        case .object(let object): return object.foundationDictionary
        }
    }
}

extension JSONObject {
    /// An object from a userInfo dictionary; `nil` when a key is not a string or a value is not JSON.
    public init?(foundation dictionary: [AnyHashable: Any]) {
        var members: [Member] = []
        // Dictionaries are unordered: sort the names so that output is stable.
        for (key, value) in dictionary {
            guard let name = key.base as? String, let converted = JSONValue(foundation: value) else { return nil }
            members.append(Member(key: name, value: converted))
        }
        members.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        self.init(members)
    }

    /// The object as a userInfo dictionary (a duplicate name keeps its first value).
    public var foundationDictionary: [AnyHashable: Any] {
        var dictionary: [AnyHashable: Any] = [:]
        for member in members.reversed() { dictionary[member.key] = member.value.foundationValue }
        return dictionary
    }
}

extension KindlyPushDecryption {
    /// ``isKindlyNotification(_:)`` for a userInfo dictionary.
    public static func isKindlyNotification(_ userInfo: [AnyHashable: Any]) -> Bool {
        JSONObject(foundation: userInfo).map { isKindlyNotification(.object($0)) } ?? false
    }

    /// ``decrypt(userInfo:)`` for a userInfo dictionary.
    public func decrypt(userInfo: [AnyHashable: Any]) -> DecryptedPayload? {
        guard let object = JSONObject(foundation: userInfo) else { return nil }
        return decrypt(userInfo: .object(object))
    }

    /// ``isDecrypted(userInfo:)`` for a userInfo dictionary.
    public static func isDecrypted(userInfo: [AnyHashable: Any]) -> Bool {
        JSONObject(foundation: userInfo).map { isDecrypted(userInfo: .object($0)) } ?? false
    }

    /// ``apply(_:toUserInfo:)`` for a userInfo dictionary.
    public static func apply(_ payload: DecryptedPayload, toUserInfo userInfo: [AnyHashable: Any]) -> [AnyHashable: Any] {
        let object = JSONObject(foundation: userInfo) ?? JSONObject()
        return apply(payload, toUserInfo: .object(object)).objectValue?.foundationDictionary ?? userInfo
    }
}

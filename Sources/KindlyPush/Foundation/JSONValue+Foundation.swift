import Foundation
internal import KindlyPushCore

/// Bridging to the `[AnyHashable: Any]` dictionaries that `UNNotificationContent.userInfo`
/// and `JSONSerialization` use, for parity with the iOS SDK's signatures.
///
/// A dictionary cannot hold a member name twice: `JSONSerialization` has already dropped
/// duplicates (keeping one value) before the library sees it, so the rule "a duplicate member
/// name at the top level or inside `kindly` is `malformed`" cannot apply. A host that needs that
/// rule passes the push's bytes (the `Data` forms) instead.
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

extension JSONValue {
    /// The members of `dictionary` that the wire format reads (`names`), each converted on its
    /// own and leniently: inside them a member that JSON cannot hold (a `Date`, say) is left out,
    /// as if absent. Nothing else of the dictionary is looked at, so a host's own values never
    /// make a Kindly push unreadable.
    static func specView(of dictionary: [AnyHashable: Any], reading names: [String]) -> JSONValue {
        var members: [JSONObject.Member] = []
        for name in names {
            guard let value = dictionary[AnyHashable(name)], let converted = JSONValue(lenient: value) else { continue }
            members.append(JSONObject.Member(key: name, value: converted))
        }
        return .object(JSONObject(members))
    }

    /// `value` converted as ``init(foundation:)`` does, except that in dictionaries a member that
    /// JSON cannot hold is dropped instead of failing the whole value.
    init?(lenient value: Any) {
        if let dictionary = value as? [AnyHashable: Any] {
            var members: [JSONObject.Member] = []
            for (key, element) in dictionary {
                guard let name = key.base as? String, let converted = JSONValue(lenient: element) else { continue }
                members.append(JSONObject.Member(key: name, value: converted))
            }
            members.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            self = .object(JSONObject(members))
        } else {
            self.init(foundation: value)
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

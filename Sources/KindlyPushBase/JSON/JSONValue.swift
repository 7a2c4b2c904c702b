internal import KindlyPushCore

/// A JSON value as RFC 8259 defines it, read and written by this project's own strict reader
/// and writer (internal to the library).
///
/// Objects keep their members in document order and keep duplicate names, so that the
/// wire format's duplicate-member rule can be enforced and a rewritten document keeps
/// everything it did not touch. Numbers keep their literal text, so that no precision is lost.
/// Strings compare by Unicode scalars, as JSON member names do (not by canonical equivalence).
public enum JSONValue: Sendable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, kept as its exact decimal text.
    case number(JSONNumber)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, with its members in document order (duplicates kept, so that they can be refused).
    case object(JSONObject)
}

extension JSONValue {
    /// The object, when this value is one.
    public var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    /// The string, when this value is one.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The number, when this value is one.
    public var numberValue: JSONNumber? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The value of the member `key` when this value is an object (the first, if it occurs twice).
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// The name of the value's JSON type, for error messages.
    public var typeName: String { kind.typeName }

    /// The value's JSON type.
    package var kind: JSONKind {
        switch self {
        case .null: return .null
        case .bool: return .bool
        case .number: return .number
        case .string: return .string
        case .array: return .array
        case .object: return .object
        }
    }

    /// Reads one JSON document from `text` with the strict reader.
    public init(parsing text: String) throws(JSONReadError) {
        self = try text.withUTF8Bytes { (bytes) throws(JSONReadError) in try JSONReader.parse(bytes) }
    }

    /// The compact JSON text of this value (no whitespace, `/` and non-ASCII unescaped).
    public var compactText: String {
        String(decoding: JSONWriter.compactBytes(self), as: UTF8.self)
    }
}

extension JSONValue: Equatable {
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let l), .bool(let r)): return l == r
        case (.number(let l), .number(let r)): return l == r
        case (.string(let l), .string(let r)): return l.unicodeScalars.elementsEqual(r.unicodeScalars)
        case (.array(let l), .array(let r)): return l == r
        case (.object(let l), .object(let r)): return l == r
        default: return false
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { JSONObject.Member(key: $0.0, value: $0.1) }))
    }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { compactText }
}

/// The type of a JSON value, known from a tree or from the first byte of its text.
package enum JSONKind: Sendable, Equatable {
    case null, bool, number, string, array, object

    /// The type of the value whose text starts with `byte` (`nil`: no value starts so).
    package init?(startingWith byte: UInt8) {
        switch byte {
        case UInt8(ascii: "n"): self = .null
        case UInt8(ascii: "t"), UInt8(ascii: "f"): self = .bool
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): self = .number
        case UInt8(ascii: "\""): self = .string
        case UInt8(ascii: "["): self = .array
        case UInt8(ascii: "{"): self = .object
        default: return nil
        }
    }

    /// The type's name, for error messages (``JSONValue/typeName``).
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

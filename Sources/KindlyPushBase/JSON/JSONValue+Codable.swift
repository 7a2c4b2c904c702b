// Codable and Hashable for the JSON value types, so that payloads, decisions and entries that
// hold them can be encoded with `JSONEncoder`, decoded, and put in sets.

extension JSONValue: Hashable {
    /// Consistent with `==`: strings hash by Unicode scalars (as they compare), numbers by value.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let flag): hasher.combine(flag)
        case .number(let number): hasher.combine(number)
        case .string(let string): for scalar in string.unicodeScalars { hasher.combine(scalar.value) }
        case .array(let elements): hasher.combine(elements)
        case .object(let object): hasher.combine(object)
        }
    }
}

extension JSONObject: Hashable {
    /// Consistent with `==`: the members in order.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(members.count)
        for member in members {
            for scalar in member.key.unicodeScalars { hasher.combine(scalar.value) }
            hasher.combine(member.value)
        }
    }
}

/// A coding key for any member name.
struct AnyCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension JSONValue: Codable {
    /// Encodes the value as the encoder's JSON: a number as an integer when it is one that fits
    /// 64 bits, else as a `Double` (an encoder cannot write an arbitrary decimal literal).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let object):
            try object.encode(to: encoder)
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let flag):
            var container = encoder.singleValueContainer()
            try container.encode(flag)
        case .number(let number):
            try number.encode(to: encoder)
        case .string(let string):
            var container = encoder.singleValueContainer()
            try container.encode(string)
        }
    }

    /// Decodes whatever JSON value the decoder holds.
    public init(from decoder: any Decoder) throws {
        if let object = try? JSONObject(from: decoder) {
            self = .object(object)
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !container.isAtEnd { elements.append(try container.decode(JSONValue.self)) }
            self = .array(elements)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else {
            self = .number(try JSONNumber(from: decoder))
        }
    }
}

extension JSONObject: Codable {
    /// Encodes the members in order (a duplicate name is written once, with its first value).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        var written = Set<String>()
        for member in members where written.insert(member.key).inserted {
            try container.encode(member.value, forKey: AnyCodingKey(stringValue: member.key))
        }
    }

    /// Decodes an object; member order is the decoder's.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        var members: [Member] = []
        for key in container.allKeys {
            members.append(Member(key: key.stringValue, value: try container.decode(JSONValue.self, forKey: key)))
        }
        self.init(members)
    }
}

extension JSONNumber: Codable {
    /// An integer that fits 64 bits is encoded as one; any other number as the nearest `Double`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let integer = integerValue(in: Int64.min...Int64.max) {
            try container.encode(integer)
        } else {
            try container.encode(doubleValue)
        }
    }

    /// Decodes an integer exactly, or any other number through `Double`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let literal: String
        if let integer = try? container.decode(Int64.self) {
            literal = String(integer)
        } else {
            let double = try container.decode(Double.self)
            guard double.isFinite else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "JSON numbers are finite")
            }
            literal = "\(double)"
        }
        guard let number = JSONNumber(literal: literal) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON number")
        }
        self = number
    }
}

internal import KindlyPushCore

/// A decrypted Kindly message (docs/spec/wire-format.md section 4): the whole plaintext object, with its
/// known keys typed and every other key kept as an extra.
public struct DecryptedPayload: Sendable, Hashable {
    /// The Kindly chat the message belongs to (non-empty).
    public let chatId: String
    /// The banner title.
    public let title: String
    /// The banner text.
    public let body: String
    /// The chat message's id, when the backend sent one.
    public let messageId: String?
    /// Unix seconds when the backend sent it, when present.
    public let sentAt: Int64?
    /// Whether the backend cut `body` to fit the size limit (the app fetches the whole message
    /// by ``messageId``), when the plaintext says.
    public let truncated: Bool?
    /// Every key of the plaintext not named above, unchanged (derived from ``object`` when asked).
    public var extras: JSONObject { JSONObject(object.members.filter { !DecryptedPayload.knownKeys.contains($0.key) }) }
    /// The whole plaintext object as it was sealed.
    public let object: JSONObject

    /// Checks `object` against section 4.
    ///
    /// - Throws: a description of the first rule it breaks.
    public init(validating object: JSONObject) throws(PlaintextError) {
        // Not which name: member names are plaintext, and failure details never carry plaintext.
        if DecryptedPayload.hasDuplicateNames(.object(object)) { throw PlaintextError("a member name occurs twice") }
        func requiredString(_ key: String) throws(PlaintextError) -> String {
            guard let value = object[key] else { throw PlaintextError("\"\(key)\" is missing") }
            guard case .string(let string) = value else { throw PlaintextError("\"\(key)\" is \(value.typeName), not a string") }
            return string
        }
        chatId = try requiredString(KindlyKey.chatID)
        guard !chatId.isEmpty else { throw PlaintextError("\"chat_id\" is empty") }
        title = try requiredString(KindlyKey.title)
        body = try requiredString(KindlyKey.body)
        if let value = object[KindlyKey.messageID] {
            guard case .string(let string) = value else { throw PlaintextError("\"message_id\" is \(value.typeName), not a string") }
            messageId = string
        } else {
            messageId = nil
        }
        if let value = object[KindlyKey.sentAt] {
            guard case .number(let number) = value, let seconds = number.integerValue(in: 0...WireFormat.maximumSentAt) else {
                throw PlaintextError("\"sent_at\" is not a whole number from 0 to 2^53 − 1")
            }
            sentAt = seconds
        } else {
            sentAt = nil
        }
        if let value = object[KindlyKey.truncated] {
            guard case .bool(let flag) = value else { throw PlaintextError("\"truncated\" is \(value.typeName), not a boolean") }
            truncated = flag
        } else {
            truncated = nil
        }
        self.object = object
    }

    /// Reads and checks plaintext bytes: UTF-8 JSON text of one object, no byte-order mark.
    package init(plaintext bytes: UnsafeRawBufferPointer) throws(PlaintextError) {
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes)
        } catch {
            throw PlaintextError("not a JSON text: \(error)")
        }
        guard case .object(let object) = value else { throw PlaintextError("\(value.typeName), not a JSON object") }
        try self.init(validating: object)
    }

    /// A payload with the given fields (for sealing and tests); extras follow the known keys.
    public init(
        chatId: String, title: String, body: String, messageId: String? = nil, sentAt: Int64? = nil,
        extras: JSONObject = [:]
    ) throws(PlaintextError) {
        var members: [JSONObject.Member] = [
            .init(key: KindlyKey.chatID, value: .string(chatId)),
            .init(key: KindlyKey.title, value: .string(title)),
            .init(key: KindlyKey.body, value: .string(body)),
        ]
        if let messageId { members.append(.init(key: KindlyKey.messageID, value: .string(messageId))) }
        if let sentAt { members.append(.init(key: KindlyKey.sentAt, value: .number(JSONNumber(Int(sentAt))))) }
        members.append(contentsOf: extras.members)
        try self.init(validating: JSONObject(members))
    }

    /// The keys of section 4; every other key is an extra.
    static let knownKeys: Set<String> = [
        KindlyKey.chatID, KindlyKey.title, KindlyKey.body, KindlyKey.messageID, KindlyKey.sentAt, KindlyKey.truncated,
    ]

    /// Whether some object, at any depth, has a member name twice.
    static func hasDuplicateNames(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let object): return object.hasDuplicateKeys || object.members.contains { hasDuplicateNames($0.value) }
        case .array(let elements): return elements.contains(where: hasDuplicateNames)
        default: return false
        }
    }
}

extension DecryptedPayload {
    /// Payloads are equal when their plaintext objects hold the same members, whatever their
    /// order, at every depth: JSON objects are unordered (RFC 8259), so a `JSONEncoder` and
    /// `JSONDecoder` round trip, which may reorder the members, gives an equal payload. Arrays
    /// keep their order; names compare by Unicode scalars, numbers by value. (A payload has no
    /// duplicate member names: ``init(validating:)`` refuses them.)
    public static func == (lhs: DecryptedPayload, rhs: DecryptedPayload) -> Bool {
        lhs.object.hasSameMembers(as: rhs.object)
    }

    /// Consistent with `==`: the known fields, which equal payloads share, and the members'
    /// hashes combined without regard to their order.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(chatId)
        hasher.combine(title)
        hasher.combine(body)
        hasher.combine(messageId)
        hasher.combine(sentAt)
        hasher.combine(truncated)
        hasher.combine(JSONObject.unorderedHash(.object(object)))
    }
}

extension JSONObject {
    /// A hash of `value` that ignores member order in every object, as
    /// `unorderedEquals` does: each member's hash is taken on its own and the results are
    /// added (commutative), so equal values in any order hash alike.
    static func unorderedHash(_ value: JSONValue) -> Int {
        var hasher = Hasher()
        switch value {
        case .object(let object):
            hasher.combine(1)
            var sum = 0
            for member in object.members {
                var memberHasher = Hasher()
                for scalar in member.key.unicodeScalars { memberHasher.combine(scalar.value) }
                memberHasher.combine(unorderedHash(member.value))
                sum = sum &+ memberHasher.finalize()
            }
            hasher.combine(object.count)
            hasher.combine(sum)
        case .array(let elements):
            hasher.combine(2)
            hasher.combine(elements.count)
            for element in elements { hasher.combine(unorderedHash(element)) }
        default:
            hasher.combine(value)
        }
        return hasher.finalize()
    }
}

/// Why a plaintext breaks docs/spec/wire-format.md section 4.
public struct PlaintextError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    /// An error saying which rule of docs/spec/wire-format.md section 4 the plaintext breaks.
    public init(_ description: String) {
        self.description = description
    }
}

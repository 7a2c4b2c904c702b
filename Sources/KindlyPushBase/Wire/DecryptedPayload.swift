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
        for field in PayloadField.all {
            if let problem = field.problem(with: object[field.name]) { throw problem }
        }
        chatId = object[KindlyKey.chatID]?.stringValue ?? ""
        title = object[KindlyKey.title]?.stringValue ?? ""
        body = object[KindlyKey.body]?.stringValue ?? ""
        messageId = object[KindlyKey.messageID]?.stringValue
        sentAt = object[KindlyKey.sentAt]?.numberValue?.integerValue(in: 0...WireFormat.maximumSentAt)
        if case .bool(let flag)? = object[KindlyKey.truncated] { truncated = flag } else { truncated = nil }
        self.object = object
    }

    /// Reads and checks plaintext bytes: UTF-8 JSON text of one object, no byte-order mark.
    package init(plaintext bytes: UnsafeRawBufferPointer) throws(PlaintextError) {
        switch Self.parse(bytes) {
        case .success(let payload): self = payload
        case .failure(let problem): throw PlaintextError(problem)
        }
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
    static let knownKeys = Set(PayloadField.all.map(\.name))

    /// Whether some object, at any depth, has a member name twice.
    static func hasDuplicateNames(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let object): return object.hasDuplicateKeys || object.members.contains { hasDuplicateNames($0.value) }
        case .array(let elements): return elements.contains(where: hasDuplicateNames)
        default: return false
        }
    }
}

/// A member section 4 names and what it must hold: one list (``all``), which both
/// ``DecryptedPayload/init(validating:)`` (a tree), ``DecryptedPayload/isCompact(_:)`` (a text in
/// the writer's compact form) and ``CompactPlaintextWriter`` (a text in another spelling) apply.
struct PayloadField: Sendable {
    enum Rule: Sendable {
        /// A string; `required` ones must be there, `nonEmpty` ones must hold a character.
        case string(required: Bool, nonEmpty: Bool)
        /// A whole number in `range`, which failure details name as `described`.
        case wholeNumber(ClosedRange<Int64>, described: String)
        /// `true` or `false`.
        case boolean
    }

    let name: String
    let rule: Rule

    init(_ name: String, _ rule: Rule) {
        self.name = name
        self.rule = rule
    }

    /// Section 4, in the order its checks are made.
    static let all = [
        PayloadField(KindlyKey.chatID, .string(required: true, nonEmpty: true)),
        PayloadField(KindlyKey.title, .string(required: true, nonEmpty: false)),
        PayloadField(KindlyKey.body, .string(required: true, nonEmpty: false)),
        PayloadField(KindlyKey.messageID, .string(required: false, nonEmpty: false)),
        PayloadField(KindlyKey.sentAt, .wholeNumber(0...WireFormat.maximumSentAt, described: "0 to 2^53 − 1")),
        PayloadField(KindlyKey.truncated, .boolean),
    ]

    /// ``all``'s names, found by their bytes at their index in ``all``.
    static let names = JSONTokenizer.KnownNames(all.map(\.name))

    /// The bits of ``all``'s required members.
    static let requiredMask = all.indices.reduce(0) { mask, index in
        if case .string(required: true, _) = all[index].rule { return mask | 1 << index }
        return mask
    }

    /// What is wrong with the member's `value` (`nil`: it is not there), or `nil`.
    func problem(with value: JSONValue?) -> PlaintextError? {
        switch rule {
        case .string(let required, let nonEmpty):
            guard let value else { return required ? PlaintextError("\"\(name)\" is missing") : nil }
            guard case .string(let string) = value else { return PlaintextError("\"\(name)\" is \(value.typeName), not a string") }
            return nonEmpty && string.isEmpty ? PlaintextError("\"\(name)\" is empty") : nil
        case .wholeNumber(let range, let described):
            guard let value else { return nil }
            guard value.numberValue?.integerValue(in: range) != nil else {
                return PlaintextError("\"\(name)\" is not a whole number from \(described)")
            }
            return nil
        case .boolean:
            guard let value else { return nil }
            guard case .bool = value else { return PlaintextError("\"\(name)\" is \(value.typeName), not a boolean") }
            return nil
        }
    }

    /// The value of a number literal that is digits only (no sign, fraction or exponent: those
    /// the tree path reads), few enough not to overflow; read from the bytes, so that no
    /// `String` holds the plaintext's number.
    @inline(__always)
    static func digitsValue(_ literal: UnsafeRawBufferPointer) -> Int64? {
        guard literal.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in literal {
            let digit = byte &- UInt8(ascii: "0")
            guard digit <= 9 else { return nil }
            value = value * 10 + Int64(digit)
        }
        return value
    }

    /// Whether the member's value at the reader is valid and in the writer's compact form.
    /// Inlined into the compact check: called out of line, the field (and its strings) is
    /// copied and released for each member.
    @inline(__always)
    func isCompact(_ reader: inout JSONTokenizer) -> Bool {
        switch rule {
        case .string(_, let nonEmpty):
            guard let text = reader.compactString() else { return false }
            return !nonEmpty || !text.isEmpty
        case .wholeNumber(let range, _):
            guard let number = reader.compactNumber(), let value = PayloadField.digitsValue(reader.bytes(number)) else { return false }
            return range.contains(value)
        case .boolean:
            return (reader.current == UInt8(ascii: "t") || reader.current == UInt8(ascii: "f")) && reader.compactScalar()
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

    /// The error for a text that is not a plaintext (``DecryptedPayload/appendCompact(_:to:)``,
    /// ``DecryptedPayload/parse(_:)``).
    package init(_ problem: DecryptedPayload.Problem) {
        switch problem {
        case .notJSON(let error): self.init("not a JSON text: \(error)")
        case .notObject(let kind): self.init("\(kind.typeName), not a JSON object")
        case .breaksRule(let error): self = error
        }
    }
}

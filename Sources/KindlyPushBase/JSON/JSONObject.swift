internal import KindlyPushCore

/// A JSON object: its members in document order, duplicates included.
///
/// Lookup by name returns the first member with that name. Names compare by Unicode
/// scalars, as RFC 8259 and every other JSON reader compare them.
public struct JSONObject: Sendable {
    /// One `"name": value` pair.
    public struct Member: Sendable, Equatable {
        /// The member name.
        public var key: String
        /// The member value.
        public var value: JSONValue

        /// A member with this name and value.
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }

        public static func == (lhs: Member, rhs: Member) -> Bool {
            lhs.key.unicodeScalars.elementsEqual(rhs.key.unicodeScalars) && lhs.value == rhs.value
        }
    }

    /// The members in document order.
    public private(set) var members: [Member]
    /// Whether some member name occurs more than once.
    public private(set) var hasDuplicateKeys: Bool

    /// An object with `members`; duplicates are detected.
    public init(_ members: [Member] = []) {
        self.members = members
        self.hasDuplicateKeys = JSONObject.containsDuplicates(members)
    }

    init(members: [Member], hasDuplicateKeys: Bool) {
        self.members = members
        self.hasDuplicateKeys = hasDuplicateKeys
    }

    /// The number of members, duplicates included.
    public var count: Int { members.count }

    /// The names in document order, duplicates included.
    public var keys: [String] { members.map(\.key) }

    /// The value of the first member called `key`. Setting replaces the first such member
    /// and removes any later duplicates; setting `nil` removes every member called `key`;
    /// a new name is appended at the end.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let index = firstIndex(of: key) else { return nil }
            return members[index].value
        }
        set {
            guard let index = firstIndex(of: key) else {
                if let newValue { members.append(Member(key: key, value: newValue)) }
                return
            }
            if let newValue {
                members[index].value = newValue
                removeAll(named: key, after: index)
            } else {
                members.removeAll { JSONObject.sameName($0.key, key) }
            }
            hasDuplicateKeys = JSONObject.containsDuplicates(members)
        }
    }

    /// Every value whose member name is `key`, in document order.
    public func values(named key: String) -> [JSONValue] {
        members.filter { JSONObject.sameName($0.key, key) }.map(\.value)
    }

    private func firstIndex(of key: String) -> Int? {
        members.firstIndex { JSONObject.sameName($0.key, key) }
    }

    private mutating func removeAll(named key: String, after index: Int) {
        var position = members.count - 1
        while position > index {
            if JSONObject.sameName(members[position].key, key) { members.remove(at: position) }
            position -= 1
        }
    }

    /// Whether two names are the same UTF-8 bytes: the lengths first, then the bytes where the
    /// strings hold them contiguously (native strings do), not one `UTF8View` index at a time.
    static func sameName(_ lhs: String, _ rhs: String) -> Bool {
        let (left, right) = (lhs.utf8, rhs.utf8)
        guard left.count == right.count else { return false }
        let same = left.withContiguousStorageIfAvailable { left in
            right.withContiguousStorageIfAvailable { right in left.elementsEqual(right) }
        }
        return (same ?? nil) ?? left.elementsEqual(right)
    }

    static func containsDuplicates(_ members: [Member]) -> Bool {
        guard members.count > 1 else { return false }
        if members.count <= 8 {
            for i in 0..<members.count {
                for j in (i + 1)..<members.count where sameName(members[i].key, members[j].key) {
                    return true
                }
            }
            return false
        }
        var seen = Set<[UInt8]>()
        for member in members where !seen.insert(Array(member.key.utf8)).inserted {
            return true
        }
        return false
    }
}

extension JSONObject: Equatable {
    /// Objects are equal when they have the same members in the same order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members == rhs.members
    }

    /// Equal as sets of members, whatever their order (for comparing decoded payloads).
    public func hasSameMembers(as other: JSONObject) -> Bool {
        guard count == other.count, !hasDuplicateKeys, !other.hasDuplicateKeys else { return self == other }
        return members.allSatisfy { member in
            guard let value = other[member.key] else { return false }
            return JSONObject.unorderedEquals(member.value, value)
        }
    }

    /// Deep equality that ignores member order in every object.
    static func unorderedEquals(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.object(let l), .object(let r)): return l.hasSameMembers(as: r)
        case (.array(let l), .array(let r)):
            return l.count == r.count && zip(l, r).allSatisfy { unorderedEquals($0, $1) }
        default: return lhs == rhs
        }
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { Member(key: $0.0, value: $0.1) })
    }
}

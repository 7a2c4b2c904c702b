internal import KindlyPushCore

/// Why a text is not one strict RFC 8259 JSON document.
public struct JSONReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of mistake the text holds.
    public enum Kind: Sendable, Equatable {
        /// There is no value at all (empty or only whitespace).
        case empty
        /// The text starts with a byte-order mark, which JSON texts must not.
        case byteOrderMark
        /// A byte that cannot stand where it stands.
        case unexpectedByte
        /// The text ends inside a value.
        case unexpectedEnd
        /// A number that breaks JSON's number grammar.
        case invalidNumber
        /// A backslash escape JSON does not define.
        case invalidEscape
        /// A raw control character (below U+0020) inside a string.
        case controlCharacterInString
        /// Bytes that are not valid UTF-8.
        case invalidUTF8
        /// A `\\u` escape of a surrogate without its pair.
        case unpairedSurrogate
        /// Arrays and objects nested deeper than 512 levels.
        case tooDeep
        /// Something other than whitespace after the value.
        case trailingContent
    }

    /// What is wrong.
    public let kind: Kind
    /// The byte offset where reading stopped.
    public let offset: Int

    public var description: String {
        switch kind {
        case .empty: return "no JSON document (empty or only whitespace)"
        case .byteOrderMark: return "a byte-order mark at the start"
        case .unexpectedByte: return "unexpected byte at offset \(offset)"
        case .unexpectedEnd: return "the document ends too early"
        case .invalidNumber: return "invalid number at offset \(offset)"
        case .invalidEscape: return "invalid escape at offset \(offset)"
        case .controlCharacterInString: return "unescaped control character in a string at offset \(offset)"
        case .invalidUTF8: return "invalid UTF-8 at offset \(offset)"
        case .unpairedSurrogate: return "unpaired surrogate escape at offset \(offset)"
        case .tooDeep: return "nesting deeper than \(JSONReader.maximumDepth) levels at offset \(offset)"
        case .trailingContent: return "content after the document at offset \(offset)"
        }
    }
}

/// A strict RFC 8259 reader.
///
/// Unlike Foundation's `JSONSerialization` it sees duplicate member names (kept in
/// ``JSONObject``), refuses invalid UTF-8, unpaired surrogate escapes, a byte-order mark and
/// anything after the document, keeps numbers exactly, and bounds nesting so that hostile
/// input cannot exhaust the stack.
package enum JSONReader {
    /// Nesting deeper than this is refused rather than recursed into.
    package static let maximumDepth = 512

    /// Reads exactly one JSON document (surrounded by optional whitespace) from `bytes`.
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONReadError) -> JSONValue {
        var parser = Parser(bytes: bytes)
        return try parser.parseDocument()
    }

    /// Reads exactly one JSON document from `bytes`.
    package static func parse(_ bytes: [UInt8]) throws(JSONReadError) -> JSONValue {
        try bytes.withBytes { (raw) throws(JSONReadError) in try parse(raw) }
    }

    /// The length of the valid JSON number starting at `start`, or `nil`.
    package static func numberLength(in bytes: UnsafeRawBufferPointer, at start: Int) -> Int? {
        var index = start
        func digit(_ i: Int) -> Bool { i < bytes.count && bytes[i] >= UInt8(ascii: "0") && bytes[i] <= UInt8(ascii: "9") }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard digit(index) else { return nil }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while digit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digit(index) else { return nil }
            while digit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digit(index) else { return nil }
            while digit(index) { index += 1 }
        }
        return index - start
    }
}

/// The tree builder on ``JSONTokenizer``: the tokenizer scans and checks, this builds the values.
private struct Parser {
    var tokenizer: JSONTokenizer
    /// Decoded text of the string being read, when it holds escapes (reused).
    var scratch: [UInt8] = []
    /// The top-level member whose string value is located but never decoded (see `parseObject(_:withSecretMember:)`).
    var secretMember: String?
    var secretRange: Range<Int>?
    /// The secret string may hold escapes, stepped over and left for the caller to decode.
    var secretEscapes = false

    init(bytes: UnsafeRawBufferPointer) {
        tokenizer = JSONTokenizer(bytes)
    }

    mutating func parseDocument() throws(JSONReadError) -> JSONValue {
        try tokenizer.beginDocument()
        let value = try parseValue()
        try tokenizer.endDocument()
        return value
    }

    mutating func parseValue() throws(JSONReadError) -> JSONValue {
        switch try tokenizer.valueStart() {
        case UInt8(ascii: "{"): return .object(try parseObject())
        case UInt8(ascii: "["): return .array(try parseArray())
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try tokenizer.literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try tokenizer.literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try tokenizer.literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let literal = try tokenizer.number()
            return .number(JSONNumber(validatedLiteral: String(decoding: tokenizer.bytes(literal), as: UTF8.self)))
        default: throw tokenizer.failure(.unexpectedByte)
        }
    }

    mutating func parseObject() throws(JSONReadError) -> JSONObject {
        guard try tokenizer.beginObject() else { return JSONObject(members: [], hasDuplicateKeys: false) }
        var members: [JSONObject.Member] = []
        repeat { members.append(try parseMember()) } while try tokenizer.nextMember()
        return JSONObject(members: members, hasDuplicateKeys: JSONObject.containsDuplicates(members))
    }

    /// The member at the tokenizer: its name, its `:` and its value.
    mutating func parseMember() throws(JSONReadError) -> JSONObject.Member {
        let key = try parseString(name: true)
        let value: JSONValue
        if tokenizer.depth == 1, key == secretMember {
            value = .null
            secretRange = try skipSecretString()
        } else {
            value = try parseValue()
        }
        return JSONObject.Member(key: key, value: value)
    }

    mutating func parseArray() throws(JSONReadError) -> [JSONValue] {
        var elements: [JSONValue] = []
        guard try tokenizer.beginArray() else { return elements }
        repeat { elements.append(try parseValue()) } while try tokenizer.nextElement()
        return elements
    }

    /// The string at the tokenizer (a member name and its `:` with `name`).
    mutating func parseString(name: Bool = false) throws(JSONReadError) -> String {
        scratch.removeAll(keepingCapacity: true)
        let token = name ? try tokenizer.memberName(&scratch) : try tokenizer.string(&scratch)
        if token.hasEscapes { return String(decoding: scratch, as: UTF8.self) }
        return String(decoding: tokenizer.bytes(token.raw), as: UTF8.self)
    }

    /// Steps over a string without decoding it; it must hold no control character, and no escape
    /// unless `secretEscapes` (then each is stepped over whole, undecoded).
    mutating func skipSecretString() throws(JSONReadError) -> Range<Int> {
        let bytes = UnsafeRawBufferPointer(start: tokenizer.base, count: tokenizer.end)
        guard tokenizer.index < bytes.count else { throw tokenizer.failure(.unexpectedEnd) }
        guard bytes[tokenizer.index] == UInt8(ascii: "\"") else { throw tokenizer.failure(.unexpectedByte) }
        tokenizer.index += 1
        let start = tokenizer.index
        while tokenizer.index < bytes.count {
            switch bytes[tokenizer.index] {
            case UInt8(ascii: "\""):
                tokenizer.index += 1
                return start..<(tokenizer.index - 1)
            case UInt8(ascii: "\\"):
                guard secretEscapes, tokenizer.index + 1 < bytes.count else { throw tokenizer.failure(.invalidEscape) }
                tokenizer.index += 2
            case 0x00..<0x20: throw tokenizer.failure(.controlCharacterInString)
            default: tokenizer.index += 1
            }
        }
        throw tokenizer.failure(.unexpectedEnd)
    }
}

extension JSONReader {
    /// Reads a top-level JSON object in which the member named `secretMember` is a string that
    /// is never turned into a `String`: its value comes back as `null` in the object, and the
    /// byte range of its raw text (between the quotes) as `secretRange` (of its last occurrence;
    /// nil without one).
    ///
    /// For key files, whose secret key must stay in wiped buffers. A secret member must be a
    /// string without escapes (base64 never needs one), unless `escapes` (a PEM in JSON has
    /// `\n`): then its raw text keeps them, for the caller to decode into a wiped buffer.
    package static func parseObject(
        _ bytes: UnsafeRawBufferPointer,
        withSecretMember secretMember: String, escapes: Bool = false
    ) throws(JSONReadError) -> (object: JSONObject, secretRange: Range<Int>?) {
        var parser = Parser(bytes: bytes)
        parser.secretMember = secretMember
        parser.secretEscapes = escapes
        let value = try parser.parseDocument()
        guard case .object(let object) = value else { throw JSONReadError(kind: .unexpectedByte, offset: 0) }
        return (object, parser.secretRange)
    }
}

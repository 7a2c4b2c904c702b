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

private struct Parser {
    package let bytes: UnsafeRawBufferPointer
    package var index = 0
    package var depth = 0
    /// The top-level member whose string value is located but never decoded (see `parseObject(_:withSecretMember:)`).
    package var secretMember: String?
    package var secretRange: Range<Int>?

    package init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    package func fail(_ kind: JSONReadError.Kind) -> JSONReadError {
        JSONReadError(kind: kind, offset: index)
    }

    package mutating func parseDocument() throws(JSONReadError) -> JSONValue {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { throw fail(.byteOrderMark) }
        skipWhitespace()
        guard index < bytes.count else { throw fail(.empty) }
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail(.trailingContent) }
        return value
    }

    package mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    package mutating func parseValue() throws(JSONReadError) -> JSONValue {
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return .object(try parseObject())
        case UInt8(ascii: "["): return .array(try parseArray())
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw fail(.unexpectedByte)
        }
    }

    package mutating func expectLiteral(_ literal: StaticString) throws(JSONReadError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail(.unexpectedEnd) }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] {
            index += offset
            throw fail(.unexpectedByte)
        }
        index += count
    }

    package mutating func enter() throws(JSONReadError) {
        depth += 1
        guard depth <= JSONReader.maximumDepth else { throw fail(.tooDeep) }
    }

    package mutating func parseObject() throws(JSONReadError) -> JSONObject {
        try enter()
        index += 1  // {
        var members: [JSONObject.Member] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return JSONObject(members: [], hasDuplicateKeys: false)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == UInt8(ascii: "\"") else { throw fail(.unexpectedByte) }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == UInt8(ascii: ":") else { throw fail(.unexpectedByte) }
            index += 1
            skipWhitespace()
            let value: JSONValue
            if depth == 1, key == secretMember {
                value = .null
                secretRange = try skipSecretString()
            } else {
                value = try parseValue()
            }
            members.append(JSONObject.Member(key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw fail(.unexpectedByte) }
            index += 1
            depth -= 1
            return JSONObject(members: members, hasDuplicateKeys: JSONObject.containsDuplicates(members))
        }
    }

    package mutating func parseArray() throws(JSONReadError) -> [JSONValue] {
        try enter()
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw fail(.unexpectedByte) }
            index += 1
            depth -= 1
            return elements
        }
    }

    /// Steps over a string without decoding it; it must hold no escape and no control character.
    package mutating func skipSecretString() throws(JSONReadError) -> Range<Int> {
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        guard bytes[index] == UInt8(ascii: "\"") else { throw fail(.unexpectedByte) }
        index += 1
        let start = index
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return start..<(index - 1)
            case UInt8(ascii: "\\"): throw fail(.invalidEscape)
            case 0x00..<0x20: throw fail(.controlCharacterInString)
            default: index += 1
            }
        }
        throw fail(.unexpectedEnd)
    }

    package mutating func parseNumber() throws(JSONReadError) -> JSONNumber {
        guard let length = JSONReader.numberLength(in: bytes, at: index) else { throw fail(.invalidNumber) }
        let literal = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + length)]), as: UTF8.self)
        index += length
        return JSONNumber(validatedLiteral: literal)
    }

    package mutating func parseString() throws(JSONReadError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes. Find the closing quote, then validate the UTF-8 in one go.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                guard let string = String(validating: raw, as: UTF8.self) else {
                    index = start + Self.firstInvalidUTF8Offset(raw)
                    throw fail(.invalidUTF8)
                }
                index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail(.controlCharacterInString) }
            index += 1
        }
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        return try parseEscapedString(from: start)
    }

    package mutating func parseEscapedString(from start: Int) throws(JSONReadError) -> String {
        var decoded = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: decoded, as: UTF8.self) else {
                    index = start
                    throw fail(.invalidUTF8)
                }
                index += 1
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail(.unexpectedEnd) }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): decoded.append(0x22)
                case UInt8(ascii: "\\"): decoded.append(0x5C)
                case UInt8(ascii: "/"): decoded.append(0x2F)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try parseUnicodeEscape()
                    UTF8.encode(scalar) { decoded.append($0) }
                default:
                    index -= 1
                    throw fail(.invalidEscape)
                }
            default:
                if byte < 0x20 { throw fail(.controlCharacterInString) }
                decoded.append(byte)
                index += 1
            }
        }
        throw fail(.unexpectedEnd)
    }

    /// Reads the four hex digits after `\u` (and a second escape for a surrogate pair).
    package mutating func parseUnicodeEscape() throws(JSONReadError) -> Unicode.Scalar {
        let escapeStart = index - 2
        let first = try parseHex4()
        switch first {
        case 0xD800...0xDBFF:
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                index = escapeStart
                throw fail(.unpairedSurrogate)
            }
            index += 2
            let second = try parseHex4()
            guard (0xDC00...0xDFFF).contains(second) else {
                index = escapeStart
                throw fail(.unpairedSurrogate)
            }
            let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            return Unicode.Scalar(value)!
        case 0xDC00...0xDFFF:
            index = escapeStart
            throw fail(.unpairedSurrogate)
        default:
            return Unicode.Scalar(first)!
        }
    }

    package mutating func parseHex4() throws(JSONReadError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail(.unexpectedEnd) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: throw fail(.invalidEscape)
            }
            value = value << 4 | UInt32(nibble)
            index += 1
        }
        return value
    }

    package static func firstInvalidUTF8Offset(_ raw: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        var iterator = raw.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput, .error: return offset
            }
        }
    }
}

extension JSONReader {
    /// Reads a top-level JSON object in which the member named `secretMember` is a string that
    /// is never turned into a `String`: its value comes back as `null` in the object, and the
    /// byte range of its raw text (between the quotes) as `secretRange` (of its last occurrence;
    /// nil without one).
    ///
    /// For key files, whose secret key must stay in wiped buffers. A secret member must be a
    /// string without escapes (base64 never needs one).
    package static func parseObject(
        _ bytes: UnsafeRawBufferPointer,
        withSecretMember secretMember: String
    ) throws(JSONReadError) -> (object: JSONObject, secretRange: Range<Int>?) {
        var parser = Parser(bytes: bytes)
        parser.secretMember = secretMember
        let value = try parser.parseDocument()
        guard case .object(let object) = value else { throw JSONReadError(kind: .unexpectedByte, offset: 0) }
        return (object, parser.secretRange)
    }
}

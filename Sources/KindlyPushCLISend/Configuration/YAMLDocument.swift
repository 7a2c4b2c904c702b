internal import CYAML
internal import KindlyPushBase

/// One YAML document read with libyaml's event parser into a tree: mappings (their keys in
/// document order, a key twice refused), sequences and scalars, each with its place in the file
/// for messages. What a configuration does not need is refused rather than guessed at: several
/// documents, aliases, and keys that are not scalars.
package struct YAMLNode: Sendable {
    package enum Value: Sendable {
        /// A scalar's text; `isPlain` when it was written without quotes (a plain `3` is a
        /// number, `"3"` text).
        case scalar(String, isPlain: Bool)
        case mapping([(key: String, value: YAMLNode)])
        case sequence([YAMLNode])
    }

    package var value: Value
    /// Where the node starts, counted from 1.
    package var line: Int
    package var column: Int

    /// `LINE:COLUMN`, for a message.
    package var place: String { "\(line):\(column)" }

    /// The mapping's members, or `nil`.
    package var mapping: [(key: String, value: YAMLNode)]? {
        if case .mapping(let members) = value { return members }
        return nil
    }

    /// The scalar's text, or `nil`.
    package var scalar: String? {
        if case .scalar(let text, _) = value { return text }
        return nil
    }

    /// A plain scalar of decimal digits (no sign), or `nil`.
    package var integer: Int? {
        guard case .scalar(let text, let isPlain) = value, isPlain, (1...9).contains(text.utf8.count),
            text.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        return Int(text)
    }

    /// What a node is, for a message: "a mapping", "a list", "text".
    package var kind: String {
        switch value {
        case .scalar: return "text"
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        }
    }
}

/// Why a YAML text could not be read: the place and the parser's or the reader's words.
package struct YAMLError: Error, Sendable, CustomStringConvertible {
    package var line: Int
    package var column: Int
    package var message: String

    package var description: String { "\(line):\(column): \(message)" }
}

package enum YAMLDocument {
    /// The deepest nesting taken: a configuration is a few levels deep, and a hostile file of
    /// thousands of `[` must not recurse without bound.
    package static let maximumDepth = 32

    /// Reads the one document of `text` (an empty text: an empty mapping).
    package static func parse(_ text: [UInt8]) throws(YAMLError) -> YAMLNode {
        // libyaml keeps pointers into its parser for as long as it reads: the parser has an address
        // of its own (an inout `&parser` is valid only for the call it is passed to).
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        parser.initialize(to: yaml_parser_t())
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else { throw YAMLError(line: 1, column: 1, message: "libyaml cannot start") }
        defer { yaml_parser_delete(parser) }
        return try text.withUnsafeBufferPointer { (buffer) throws(YAMLError) -> YAMLNode in
            yaml_parser_set_input_string(parser, buffer.baseAddress, buffer.count)
            return try EventReader(parser: parser).document()
        }
    }

    /// The events of one parser, turned into nodes.
    private struct EventReader {
        let parser: UnsafeMutablePointer<yaml_parser_t>

        /// The next event's type, place and (for a scalar) text and style.
        struct Event {
            var type: yaml_event_type_t
            var line: Int
            var column: Int
            var text = ""
            var isPlain = false
        }

        func next() throws(YAMLError) -> Event {
            var event = yaml_event_t()
            guard yaml_parser_parse(parser, &event) == 1 else {
                let mark = parser.pointee.problem_mark
                let problem = parser.pointee.problem.map { String(cString: $0) } ?? "not YAML"
                throw YAMLError(line: mark.line + 1, column: mark.column + 1, message: problem)
            }
            defer { yaml_event_delete(&event) }
            var result = Event(type: event.type, line: event.start_mark.line + 1, column: event.start_mark.column + 1)
            if event.type == YAML_SCALAR_EVENT {
                let scalar = event.data.scalar
                result.text = String(
                    decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                result.isPlain = scalar.style == YAML_PLAIN_SCALAR_STYLE
            }
            return result
        }

        func document() throws(YAMLError) -> YAMLNode {
            var event = try next()
            guard event.type == YAML_STREAM_START_EVENT else {
                throw YAMLError(line: event.line, column: event.column, message: "not YAML")
            }
            event = try next()
            if event.type == YAML_STREAM_END_EVENT { return YAMLNode(value: .mapping([]), line: 1, column: 1) }
            guard event.type == YAML_DOCUMENT_START_EVENT else {
                throw YAMLError(line: event.line, column: event.column, message: "not YAML")
            }
            let root = try node(try next(), depth: 0)
            event = try next()
            guard event.type == YAML_DOCUMENT_END_EVENT else {
                throw YAMLError(line: event.line, column: event.column, message: "not YAML")
            }
            event = try next()
            guard event.type == YAML_STREAM_END_EVENT else {
                throw YAMLError(line: event.line, column: event.column, message: "a second document: the file holds one")
            }
            return root
        }

        func node(_ event: Event, depth: Int) throws(YAMLError) -> YAMLNode {
            func fail(_ message: String) -> YAMLError { YAMLError(line: event.line, column: event.column, message: message) }
            guard depth < YAMLDocument.maximumDepth else { throw fail("nested deeper than \(YAMLDocument.maximumDepth) levels") }
            switch event.type {
            case YAML_SCALAR_EVENT:
                return YAMLNode(value: .scalar(event.text, isPlain: event.isPlain), line: event.line, column: event.column)
            case YAML_ALIAS_EVENT:
                throw fail("an alias (*name): write the value itself")
            case YAML_SEQUENCE_START_EVENT:
                var items: [YAMLNode] = []
                while true {
                    let item = try next()
                    if item.type == YAML_SEQUENCE_END_EVENT { break }
                    items.append(try node(item, depth: depth + 1))
                }
                return YAMLNode(value: .sequence(items), line: event.line, column: event.column)
            case YAML_MAPPING_START_EVENT:
                var members: [(key: String, value: YAMLNode)] = []
                while true {
                    let key = try next()
                    if key.type == YAML_MAPPING_END_EVENT { break }
                    guard key.type == YAML_SCALAR_EVENT else {
                        throw YAMLError(line: key.line, column: key.column, message: "a key that is not text")
                    }
                    if members.contains(where: { $0.key == key.text }) {
                        throw YAMLError(line: key.line, column: key.column, message: "'\(Printable.escaped(key.text))' is given twice")
                    }
                    members.append((key.text, try node(try next(), depth: depth + 1)))
                }
                return YAMLNode(value: .mapping(members), line: event.line, column: event.column)
            default:
                throw fail("not YAML")
            }
        }
    }
}

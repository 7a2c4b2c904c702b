internal import KindlyPushCore

// The one reader of plaintext texts (docs/spec/wire-format.md section 4), for both directions:
// `seal` reads its input with it, decryption the opened box. `appendCompact` writes a text in
// the writer's compact form, in any spelling and without a tree, or says why it is not a
// plaintext; `parse` builds the payload (the tree path, and the answer for every refusal).

extension DecryptedPayload {
    /// Why a text is not a plaintext.
    package enum Problem: Error, Sendable, Equatable {
        /// Not one JSON document: what ``JSONReader/parse(_:)-(UnsafeRawBufferPointer)`` throws for it.
        case notJSON(JSONReadError)
        /// A JSON document of this type, not an object.
        case notObject(JSONKind)
        /// An object that breaks a rule of section 4: what ``init(validating:)`` throws for it.
        case breaksRule(PlaintextError)
    }

    /// Whether a text is a plaintext already in the writer's compact form, byte for byte (then
    /// it is its own compact form, and nothing is built). Read in one pass with
    /// ``JSONTokenizer``'s compact methods and ``PayloadField/all``; it says no, and stops, at
    /// the first byte that is not so, or at anything only the tree decides: more than 16
    /// members (the duplicate rule's names would no longer fit in a wiped store), an extra that
    /// is an object or an array (the duplicate rule at every depth), a `sent_at` that is not
    /// digits alone. `PlaintextShape` is the independent statement of it that the tests and the
    /// fuzz target check it against.
    package static func isCompact(_ text: UnsafeRawBufferPointer) -> Bool {
        var reader = JSONTokenizer(text, compact: true)
        // The duplicate rule: a bit per field of section 4 (in ``PayloadField/all``'s order),
        // and the extras' names. A compact name has one spelling: its raw text is its name.
        var seen = 0
        var extras = JSONTokenizer.Names()
        var members = 0
        // Read once, not per member: a static is a lazy start and a reference each time.
        let fields = PayloadField.all
        let names = PayloadField.names
        guard reader.consume(UInt8(ascii: "{")) else { return false }
        repeat {
            // Past 16 members the duplicate rule would keep names in a set that is not wiped.
            guard members < JSONTokenizer.Names.capacity, let name = reader.compactString(), reader.consume(UInt8(ascii: ":"))
            else { return false }
            members += 1
            if let index = names.index(of: reader.bytes(name)) {
                guard seen & 1 << index == 0, fields[index].isCompact(&reader) else { return false }
                seen |= 1 << index
            } else {
                // An extra that is an object or an array would need the duplicate rule at every
                // depth.
                guard extras.insert(name, in: reader), reader.compactScalar() else { return false }
            }
        } while reader.consume(UInt8(ascii: ","))
        return seen & PayloadField.requiredMask == PayloadField.requiredMask && reader.consume(UInt8(ascii: "}")) && reader.atEnd
    }

    /// Appends the writer's compact form of a plaintext text to `output` (what ``JSONWriter``
    /// writes for the payload's object), or says why the text is not a plaintext; builds no tree
    /// for a plaintext in any spelling. A text already compact is copied (``isCompact(_:)``
    /// decides that without building anything); any other is rewritten from its start straight from the
    /// strict tokenizer (``CompactPlaintextWriter``: the compact scan stops at the first byte
    /// that is not so, in `json.dumps`'s spelling after the first name), which applies every
    /// rule the tree path does. A text either refuses is read by ``parse(_:)``, whose problem is
    /// the answer: the outcome and any error are those of the tree path, which
    /// `CompactRewriteTests` checks on mutated texts.
    package static func appendCompact(_ text: UnsafeRawBufferPointer, to output: inout [UInt8]) -> Problem? {
        guard !isCompact(text) else {
            output.append(contentsOf: text)
            return nil
        }
        let start = output.count
        var writer = CompactPlaintextWriter(text)
        defer { writer.wipe() }
        if writer.write(into: &output) { return nil }
        output.removeSubrange(start...)
        switch parse(text) {
        case .failure(let problem): return problem
        case .success(let payload):
            // Not reached: the writer refuses nothing the tree takes. Written from the tree, so
            // that a difference costs speed, never a wrong answer.
            JSONWriter.write(.object(payload.object), to: &output)
            return nil
        }
    }

    /// Reads a plaintext text into a payload, whatever its spelling: the strict reader, then
    /// ``init(validating:)``.
    package static func parse(_ text: UnsafeRawBufferPointer) -> Result<DecryptedPayload, Problem> {
        let value: JSONValue
        do throws(JSONReadError) {
            value = try JSONReader.parse(text)
        } catch {
            return .failure(.notJSON(error))
        }
        guard case .object(let object) = value else { return .failure(.notObject(value.kind)) }
        return validated(object)
    }

    private static func validated(_ object: JSONObject) -> Result<DecryptedPayload, Problem> {
        do throws(PlaintextError) {
            return .success(try DecryptedPayload(validating: object))
        } catch {
            return .failure(.breaksRule(error))
        }
    }
}

/// Writes a plaintext text in the writer's compact form straight from the strict tokenizer,
/// with no tree: every value as ``JSONWriter`` writes what ``JSONReader`` builds (strings decoded
/// and escaped again as the writer escapes them, numbers as written, no whitespace), checking
/// what ``DecryptedPayload/init(validating:)`` checks (an object; no member name twice in any
/// object; the section 4 members present and of their kinds). The decoded strings and names are
/// plaintext: they stay in two buffers that ``wipe()`` zeroes.
package struct CompactPlaintextWriter {
    private var tokenizer: JSONTokenizer
    /// A string's decoded text, when it holds escapes.
    private var decoded: [UInt8] = []
    /// The decoded names of the objects open, one after the other, and where each name is.
    private var names: [UInt8] = []
    private var nameRanges: [Range<Int>] = []

    package init(_ text: UnsafeRawBufferPointer) {
        tokenizer = JSONTokenizer(text)
    }

    package mutating func wipe() {
        decoded.wipeCapacity()
        names.wipeCapacity()
    }

    /// Appends the compact form to `output`; false (and part of it appended) when the text is
    /// not JSON or breaks a rule: the tree path says which.
    package mutating func write(into output: inout [UInt8]) -> Bool {
        do throws(JSONReadError) {
            try tokenizer.beginDocument()
            guard try tokenizer.valueStart() == UInt8(ascii: "{") else { return false }
            var required: Int? = 0
            guard try writeObject(into: &output, fields: &required) else { return false }
            try tokenizer.endDocument()
            return (required ?? 0) & PayloadField.requiredMask == PayloadField.requiredMask
        } catch {
            return false
        }
    }

    /// One value, compact. `false`: a rule is broken in it.
    private mutating func writeValue(into output: inout [UInt8]) throws(JSONReadError) -> Bool {
        switch try tokenizer.valueStart() {
        case UInt8(ascii: "{"):
            var nested: Int?
            return try writeObject(into: &output, fields: &nested)
        case UInt8(ascii: "["):
            output.append(UInt8(ascii: "["))
            if try tokenizer.beginArray() {
                var first = true
                repeat {
                    if !first { output.append(UInt8(ascii: ",")) }
                    first = false
                    guard try writeValue(into: &output) else { return false }
                } while try tokenizer.nextElement()
            }
            output.append(UInt8(ascii: "]"))
        case UInt8(ascii: "\""):
            _ = try writeString(into: &output)
        case UInt8(ascii: "t"):
            try tokenizer.literal("true")
            output.append(contentsOf: "true".utf8)
        case UInt8(ascii: "f"):
            try tokenizer.literal("false")
            output.append(contentsOf: "false".utf8)
        case UInt8(ascii: "n"):
            try tokenizer.literal("null")
            output.append(contentsOf: "null".utf8)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            output.append(contentsOf: tokenizer.bytes(try tokenizer.number()))
        default:
            throw tokenizer.failure(.unexpectedByte)
        }
        return true
    }

    /// A string value, escaped as the writer escapes it; its decoded length.
    private mutating func writeString(into output: inout [UInt8]) throws(JSONReadError) -> Int {
        decoded.removeAll(keepingCapacity: true)
        let token = try tokenizer.string(&decoded)
        if token.hasEscapes {
            decoded.withUnsafeBytes { JSONWriter.writeString(utf8: $0, to: &output) }
            return decoded.count
        }
        JSONWriter.writeString(utf8: tokenizer.bytes(token.raw), to: &output)
        return token.raw.count
    }

    /// An object, compact; with `fields` (the top level), its section 4 members are checked and
    /// counted in `fields` as bits of ``PayloadField/all``.
    private mutating func writeObject(into output: inout [UInt8], fields: inout Int?) throws(JSONReadError) -> Bool {
        output.append(UInt8(ascii: "{"))
        let firstName = nameRanges.count
        defer {
            if firstName < nameRanges.count {
                names.removeSubrange(nameRanges[firstName].lowerBound...)
                nameRanges.removeSubrange(firstName...)
            }
        }
        if try tokenizer.beginObject() {
            var first = true
            repeat {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                decoded.removeAll(keepingCapacity: true)
                let token = try tokenizer.memberName(&decoded)
                let start = names.count
                if token.hasEscapes {
                    names.append(contentsOf: decoded)
                } else {
                    names.append(contentsOf: tokenizer.bytes(token.raw))
                }
                let name = start..<names.count
                // The duplicate rule, by the decoded names' bytes (as ``JSONObject`` compares them).
                for seen in nameRanges[firstName...] where names[seen].elementsEqual(names[name]) { return false }
                nameRanges.append(name)
                names.withUnsafeBytes { JSONWriter.writeString(utf8: UnsafeRawBufferPointer(rebasing: $0[name]), to: &output) }
                output.append(UInt8(ascii: ":"))
                // A field of section 4 only at the top level (where `fields` counts them).
                let field =
                    fields == nil ? nil : names.withUnsafeBytes { PayloadField.names.index(of: UnsafeRawBufferPointer(rebasing: $0[name])) }
                if let index = field {
                    guard try writeField(PayloadField.all[index], into: &output) else { return false }
                    fields! |= 1 << index
                } else {
                    guard try writeValue(into: &output) else { return false }
                }
            } while try tokenizer.nextMember()
        }
        output.append(UInt8(ascii: "}"))
        return true
    }

    /// A section 4 member's value, if it is of its kind (``PayloadField/problem(with:)``).
    private mutating func writeField(_ field: PayloadField, into output: inout [UInt8]) throws(JSONReadError) -> Bool {
        let start = try tokenizer.valueStart()
        switch field.rule {
        case .string(_, let nonEmpty):
            guard start == UInt8(ascii: "\"") else { return false }
            return try writeString(into: &output) > 0 || !nonEmpty
        case .wholeNumber(let range, _):
            guard start == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(start) else { return false }
            let literal = tokenizer.bytes(try tokenizer.number())
            // Digits alone (every writer's spelling) from the bytes; another spelling (`1.5e1`)
            // as the tree reads it, through a `String`, as the tree path itself holds it.
            if let value = PayloadField.digitsValue(literal) {
                guard range.contains(value) else { return false }
            } else {
                let number = JSONNumber(validatedLiteral: String(decoding: literal, as: UTF8.self))
                guard number.integerValue(in: range) != nil else { return false }
            }
            output.append(contentsOf: literal)
            return true
        case .boolean:
            guard start == UInt8(ascii: "t") || start == UInt8(ascii: "f") else { return false }
            return try writeValue(into: &output)
        }
    }
}

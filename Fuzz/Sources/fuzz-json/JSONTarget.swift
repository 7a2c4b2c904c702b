import FuzzSupport
import KindlyPush
import KindlyPushCore
import KindlyPushTesting

/// The strict JSON reader and the compact writer, and the plaintext reader against them.
///
/// Invariants: an accepted text is UTF-8 without a byte-order mark; compact writing and reading
/// again gives an equal value and the same bytes, never longer than the input; the `String` entry
/// point agrees with the bytes one; a refused text's error offset lies within it; duplicate names
/// are flagged exactly when present; and every number compares, hashes and converts consistently
/// with its other spellings.
enum JSONTarget {
    static func check(_ input: UnsafeRawBufferPointer) {
        let text = String(validating: input, as: UTF8.self)
        let value: JSONValue
        do {
            value = try JSONReader.parse(input)
        } catch {
            require(error.offset >= 0 && error.offset <= input.count, "error offset \(error.offset) outside 0...\(input.count)")
            var output: [UInt8] = []
            require(
                DecryptedPayload.appendCompact(input, to: &output) == .notJSON(error) && output.isEmpty,
                "the plaintext reader misses the tree's \(error)")
            require(!DecryptedPayload.isCompact(input), "a text that is not JSON taken as a compact plaintext")
            if let text {
                do {
                    _ = try JSONValue(parsing: text)
                    fail("the String entry point accepts what the bytes one refuses (\(error))")
                } catch let stringError {
                    require(stringError == error, "the String entry point fails with \(stringError), the bytes one with \(error)")
                }
            }
            return
        }
        require(text != nil, "accepted a text that is not UTF-8")
        require(!input.starts(with: [0xEF, 0xBB, 0xBF]), "accepted a byte-order mark")
        if let text {
            require((try? JSONValue(parsing: text)) == value, "the String entry point reads another value")
        }

        let compact = JSONWriter.compactBytes(value)
        require(compact.count <= input.count, "the compact text (\(compact.count) bytes) is longer than the input (\(input.count))")
        let again: JSONValue
        do {
            again = try JSONReader.parse(compact)
        } catch {
            fail("the compact text does not read back: \(error)")
        }
        require(again == value, "the compact text reads back as another value")
        require(JSONWriter.compactBytes(again) == compact, "writing is not idempotent")
        require(value.compactText.utf8.elementsEqual(compact), "compactText differs from compactBytes")

        var budget = 4096
        walk(value, depth: 1, budget: &budget)
        checkPlaintextReading(input, value)
    }

    /// The one plaintext reader (``DecryptedPayload/appendCompact(_:to:)``, what decrypt and seal
    /// run) against the tree path on a text that is JSON: the compact form of the same payload,
    /// or the same refusal with nothing written; and ``DecryptedPayload/isCompact(_:)`` exactly
    /// when the writer writes the payload as the text, every extra is a scalar, `sent_at` is
    /// digits alone and there are at most 16 members.
    static func checkPlaintextReading(_ input: UnsafeRawBufferPointer, _ value: JSONValue) {
        var output: [UInt8] = []
        let problem = DecryptedPayload.appendCompact(input, to: &output)
        let compact = DecryptedPayload.isCompact(input)
        guard case .object(let object) = value else {
            require(
                problem == .notObject(value.kind) && output.isEmpty,
                "the plaintext reader says \(String(describing: problem)) for \(value.typeName)")
            require(!compact, "a \(value.typeName) taken as a compact plaintext")
            return
        }
        let payload: DecryptedPayload
        do throws(PlaintextError) {
            payload = try DecryptedPayload(validating: object)
        } catch {
            require(
                problem == .breaksRule(error) && output.isEmpty,
                "the plaintext reader says \(String(describing: problem)); the tree, \(error)")
            require(!compact, "a text that breaks a rule taken as a compact plaintext")
            return
        }
        require(problem == nil, "the plaintext reader refuses a payload: \(String(describing: problem))")
        require(output == JSONWriter.compactBytes(.object(payload.object)), "the plaintext reader wrote another payload")
        require(compact == PlaintextShape.isCompact(object, text: input), "isCompact says \(compact) against the shape's")
    }

    /// Checks objects and numbers, visiting at most `budget` values so that wide inputs stay fast.
    static func walk(_ value: JSONValue, depth: Int, budget: inout Int) {
        guard budget > 0 else { return }
        budget -= 1
        switch value {
        case .object(let object):
            require(depth <= JSONReader.maximumDepth, "nesting \(depth) is over the limit")
            var seen = Set<[UInt8]>()
            var duplicate = false
            for member in object.members where !seen.insert(Array(member.key.utf8)).inserted { duplicate = true }
            require(object.hasDuplicateKeys == duplicate, "hasDuplicateKeys is \(object.hasDuplicateKeys), expected \(duplicate)")
            require(JSONObject(object.members).hasDuplicateKeys == duplicate, "JSONObject.init misjudges duplicates")
            for member in object.members.prefix(16) {
                let first = object.members.first { $0.key.utf8.elementsEqual(member.key.utf8) }!
                require(object[member.key] == first.value, "lookup by name does not return the first member")
            }
            for member in object.members { walk(member.value, depth: depth + 1, budget: &budget) }
        case .array(let elements):
            require(depth <= JSONReader.maximumDepth, "nesting \(depth) is over the limit")
            for element in elements { walk(element, depth: depth + 1, budget: &budget) }
        case .number(let number):
            checkNumber(number)
        case .string, .bool, .null:
            break
        }
    }

    static func checkNumber(_ number: JSONNumber) {
        let literal = number.literal
        guard let reparsed = JSONNumber(literal: literal) else { fail("the literal \(literal) is not a valid number") }
        require(reparsed == number && reparsed.hashValue == number.hashValue, "\(literal) differs from itself")
        let integer = number.integerValue(in: Int64.min...Int64.max)
        let isPlainInteger = !literal.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
        if isPlainInteger {
            // Swift's own integer parser as the reference (JSON integers have no leading '+').
            require(
                integer == Int64(literal),
                "\(literal) has integerValue \(String(describing: integer)), expected \(String(describing: Int64(literal)))")
            for spelling in [literal + ".0", literal + "e0", literal + ".000E+0", literal + "00e-2"] {
                guard let other = JSONNumber(literal: spelling) else { continue }  // "-0" + "00e-2" has a leading zero
                require(other == number, "\(spelling) != \(literal)")
                require(other.hashValue == number.hashValue, "\(spelling) and \(literal) hash differently")
                require(other.integerValue(in: Int64.min...Int64.max) == integer, "\(spelling) and \(literal) have other integer values")
            }
        }
        if let integer {
            let canonical = JSONNumber(Int(integer))
            require(canonical == number && canonical.hashValue == number.hashValue, "\(literal) != its integer value \(integer)")
            if integer.magnitude <= 1 << 53 {
                require(number.doubleValue == Double(integer), "\(literal) is \(number.doubleValue) as a Double, expected \(integer)")
            }
        }
    }
}

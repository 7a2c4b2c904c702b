internal import KindlyPushCore

// The one reader of plaintext texts (docs/spec/wire-format.md section 4), for both directions:
// `seal` reads its input with it, decryption the opened box. It reads a text once and says
// whether it is already the writer's compact form (then the text is the message, and nothing is
// built), or gives the payload, or says why not.

extension DecryptedPayload {
    /// What ``read(_:)`` found in a plaintext text.
    package enum Reading: Sendable, Equatable {
        /// A plaintext section 4 accepts, already exactly what ``JSONWriter`` writes for the
        /// object it holds: the text is its own compact form, byte for byte.
        case compact
        /// A plaintext section 4 accepts, in another spelling (whitespace, other escapes, nested
        /// extras, more than 16 members): the payload.
        case payload(DecryptedPayload)
        /// Not a plaintext: why.
        case invalid(Problem)

        /// The reading of ``parse(_:)``'s result: a payload, or why not.
        package init(_ result: Result<DecryptedPayload, Problem>) {
            switch result {
            case .success(let payload): self = .payload(payload)
            case .failure(let problem): self = .invalid(problem)
            }
        }
    }

    /// Why a text is not a plaintext.
    package enum Problem: Error, Sendable, Equatable {
        /// Not one JSON document: what ``JSONReader/parse(_:)-(UnsafeRawBufferPointer)`` throws for it.
        case notJSON(JSONReadError)
        /// A JSON document of this type, not an object.
        case notObject(JSONKind)
        /// An object that breaks a rule of section 4: what ``init(validating:)`` throws for it.
        case breaksRule(PlaintextError)
    }

    /// Reads a plaintext text in one pass.
    ///
    /// It reads the text in the writer's compact form (``JSONTokenizer``'s compact methods and
    /// ``PayloadField/all``) for as long as the text is so: a text that is so to its end is
    /// ``Reading/compact`` with nothing built. At the first member that is not (or at the end of
    /// the members, for a missing field, whitespace or anything after the last one), the strict
    /// tree builder takes over from that point (``JSONReader/parseObject(_:continuing:at:atMember:)``):
    /// the members read so far are built from where they start, the rest is read from there, and
    /// the object is checked by ``init(validating:)``. The outcome and any error (kind and offset)
    /// are those of ``parse(_:)``, which `FastPathTests` checks on mutated texts.
    package static func read(_ text: UnsafeRawBufferPointer) -> Reading {
        var reader = JSONTokenizer(text, compact: true)
        var names = JSONTokenizer.Names()
        var required = 0
        // The members read in compact form, and where the last one's value ends.
        var completed = 0
        var lastValueEnd = 0
        guard reader.consume(UInt8(ascii: "{")) else { return Reading(parse(text)) }
        repeat {
            let memberStart = reader.index
            // Past 16 members the duplicate rule would keep names in a set that is not wiped: the
            // tree takes over.
            guard !names.isFull, let name = reader.compactString(), names.insert(name, in: reader), reader.consume(UInt8(ascii: ":"))
            else { return readOn(text, names, completed, at: memberStart, atMember: true) }
            let raw = reader.bytes(name)
            if let index = PayloadField.all.firstIndex(where: { $0.utf8.count == raw.count && $0.utf8.elementsEqual(raw) }) {
                guard PayloadField.all[index].isCompact(&reader) else {
                    return readOn(text, names, completed, at: memberStart, atMember: true)
                }
                required |= 1 << index
            } else {
                // An extra that is an object or an array would need the duplicate rule at every
                // depth: the tree's.
                guard reader.compactScalar() else { return readOn(text, names, completed, at: memberStart, atMember: true) }
            }
            completed += 1
            lastValueEnd = reader.index
        } while reader.consume(UInt8(ascii: ","))
        if required & PayloadField.requiredMask == PayloadField.requiredMask, reader.consume(UInt8(ascii: "}")), reader.atEnd {
            return .compact
        }
        return readOn(text, names, completed, at: lastValueEnd, atMember: false)
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

    /// The strict reading from `index` on, after the first `completed` members (named in `names`)
    /// read in compact form; from the start when there are none.
    private static func readOn(
        _ text: UnsafeRawBufferPointer, _ names: JSONTokenizer.Names, _ completed: Int, at index: Int, atMember: Bool
    )
        -> Reading
    {
        guard completed > 0 else { return Reading(parse(text)) }
        // A name's range is its text between the quotes: its member starts at the opening quote.
        let starts = names.inlineNames.prefix(completed).map { $0.lowerBound - 1 }
        do throws(JSONReadError) {
            return Reading(validated(try JSONReader.parseObject(text, continuing: starts, at: index, atMember: atMember)))
        } catch {
            return .invalid(.notJSON(error))
        }
    }

    private static func validated(_ object: JSONObject) -> Result<DecryptedPayload, Problem> {
        do throws(PlaintextError) {
            return .success(try DecryptedPayload(validating: object))
        } catch {
            return .failure(.breaksRule(error))
        }
    }
}

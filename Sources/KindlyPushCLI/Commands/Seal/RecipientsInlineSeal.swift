package import KindlyPushBase
package import KindlyPushCore

extension SealCommand {
    /// `seal --recipients-inline` seals each input for the device it names.
    package static func make(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) -> any Command {
        if arguments[SealingOptions.recipientsInline] { return try RecipientsInlineSeal(arguments, environment: environment) }
        return try SealCommand(arguments, environment: environment)
    }
}

/// `kindly-push seal --recipients-inline`: a stream of pushes for many devices. Each input
/// document is `{"public_key": B64, "plaintext": {...}}`, optionally with `"mode"`,
/// `"placeholder_title"` and `"placeholder_body"` (which override the command's options for that
/// document); each output is the sealed push or, in `--jsonl` mode, an error object on its line.
///
/// Each thread keeps a ``PushSealer`` per recipient (the decoded key, its kid, the document
/// template; version 2 adds its second shared secret there) in an ``LRUCache`` of
/// ``cacheCapacity`` recipients, so that a stream that comes back to a device does that work once.
/// A compact line takes the fast path (``FastJSON`` finds the fields, the recipient's sealer seals
/// the plaintext text as it is); anything else is read with the strict reader, and its plaintext
/// is written compactly and sealed by the same sealer, or the general path says why not.
package struct RecipientsInlineSeal: DocumentCommand {
    package static let name = SealCommand.name
    package static let abstract = SealCommand.abstract
    package static let arguments = SealCommand.arguments
    package static let discussion = SealCommand.discussion
    package static let options = SealCommand.options

    /// Recipients whose sealers one thread keeps.
    package static let cacheCapacity = 1024

    /// The command's `--mode` and placeholder, for documents that do not give their own.
    package let mode: KindlyPushSealer.Mode
    package let placeholder: KindlyPushSealer.Placeholder
    package let oversize: KindlyPushSealer.Oversize
    /// `--sender-key-file`: every push is version 2 (or version 3 mode_auth) from this sender;
    /// `nil` for version 1 (or version 3 mode_base).
    package let senderKey: SenderKey?
    /// `--wire`, or its default.
    package let version: WireVersion
    package let stream: StreamOptions

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) {
        let sealing = SealingOptions(arguments)
        if sealing.publicKey != nil || sealing.keyFile != nil {
            throw CLIError(.usage, "--recipients-inline reads each device's key from its input: give no --public-key or --key-file")
        }
        (mode, placeholder) = try PlaintextSealing.alertOptions(sealing)
        oversize = PlaintextSealing.oversize(sealing)
        senderKey = try PlaintextSealing.senderKey(sealing)
        version = try PlaintextSealing.wireVersion(sealing, hasSender: senderKey != nil)
        stream = try StreamOptions(arguments, command: Self.name, environment: environment)
    }

    package var inputLimit: Int { PlaintextSealing.inputLimit(oversize) }

    package func makeScratch() -> LRUCache<RecipientKey, PushSealer> { LRUCache(capacity: Self.cacheCapacity) }

    package func process(bytes: UnsafeRawBufferPointer, scratch: inout LRUCache<RecipientKey, PushSealer>, into output: inout [UInt8])
        throws(CLIError)
        -> Completion
    {
        if let line = CompactLine(bytes, mode: mode, placeholder: placeholder), let key = line.recipientKey(in: bytes) {
            let start = output.count
            // A line's own "id", copied as it is (a scalar in the writer's form: what the strict
            // path writes for it).
            if let id = line.id {
                output += CorrelationID.pushPrefix
                output += UnsafeRawBufferPointer(rebasing: bytes[id])
                output += CorrelationID.pushMember
            }
            let sealed = scratch.withValue(for: key, default: sealer(for: key)) { sealer in
                Self.sealAndWipe(UnsafeRawBufferPointer(rebasing: bytes[line.plaintext]), with: &sealer, into: &output)
            }
            if sealed {
                if line.id != nil { output.append(UInt8(ascii: "}")) }
                return .success
            }
            output.removeSubrange(start...)
        }
        let document = try StandardInput.parseObject(bytes)
        return try processWithID(document, scratch: scratch, into: &output)
    }

    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CLIError) -> Completion {
        try processWithID(document, scratch: LRUCache(capacity: 1), into: &output)
    }

    /// The general path with the line's `"id"`: the push as `{"id": ID, "push": PUSH}`, or in
    /// line mode the error object with `"id"` after `"error"` (``Completion/errorObject(_:)``).
    /// Without an `"id"` (or with a member name twice), the output is the push or the error alone.
    private func processWithID(_ document: JSONValue, scratch: LRUCache<RecipientKey, PushSealer>, into output: inout [UInt8])
        throws(CLIError) -> Completion
    {
        guard case .object(let object) = document, !object.hasDuplicateKeys, let id = object[Member.id] else {
            return try process(document, scratch: scratch, into: &output)
        }
        let start = output.count
        output += CorrelationID.pushPrefix
        JSONWriter.write(id, to: &output)
        output += CorrelationID.pushMember
        do throws(CLIError) {
            _ = try process(document, scratch: scratch, into: &output)
            output.append(UInt8(ascii: "}"))
        } catch {
            output.removeSubrange(start...)
            guard stream.isLineMode else { throw error }
            JSONWriter.write(error.jsonObject, to: &output)
            output.removeLast()
            output += CorrelationID.errorMember
            JSONWriter.write(id, to: &output)
            output.append(UInt8(ascii: "}"))
            return .errorObject(error.code)
        }
        return .success
    }

    /// The general path: the line read with the strict reader.
    private func process(_ document: JSONValue, scratch: LRUCache<RecipientKey, PushSealer>, into output: inout [UInt8])
        throws(CLIError)
        -> Completion
    {
        let line = try Line(document, mode: mode, placeholder: placeholder)
        let key = RecipientKey(line.recipient, alert: line.alert)
        // The message in clear: wiped once sealed, as the runner wipes its buffers.
        var text = JSONWriter.compactBytes(line.plaintext)
        defer { text.wipeCapacity() }
        let sealed = scratch.withValue(for: key, default: sealer(for: key)) { sealer in
            text.withUnsafeBytes { Self.sealAndWipe($0, with: &sealer, into: &output) }
        }
        if !sealed {
            try PlaintextSealing.seal(
                line.plaintext, for: line.recipient, binding: try binding(for: line.recipient), version: version,
                mode: line.alert?.mode ?? mode,
                placeholder: line.alert?.placeholder ?? placeholder, oversize: oversize, into: &output)
        }
        return .success
    }

    /// Seals with a cached sealer, then zeroes the sealer's buffer: a sealer stays in the cache
    /// for as long as its recipient is among the last 1,024, and its buffer would otherwise keep
    /// that recipient's last message in clear (an evicted entry is freed, not wiped). The cost is
    /// one memzero of a few hundred bytes beside an X25519 and an AEAD.
    private static func sealAndWipe(_ plaintext: UnsafeRawBufferPointer, with sealer: inout PushSealer, into output: inout [UInt8]) -> Bool
    {
        defer { sealer.wipe() }
        return PlaintextSealing.sealFast(plaintext, with: &sealer, into: &output)
    }

    /// The sealer for a recipient, kept in the thread's cache: its document template and, for
    /// version 2, the second shared secret with the sender (computed once per recipient, wiped
    /// when the entry is evicted). A recipient the sender key cannot seal for (a low-order key)
    /// gets a sealer that leaves every line to the general path, which says why.
    private func sealer(for key: RecipientKey) -> PushSealer {
        let mode = key.alert?.mode ?? self.mode
        let placeholder = key.alert?.placeholder ?? self.placeholder
        guard let senderKey else { return PushSealer(recipient: key.publicKey, version: version, mode: mode, placeholder: placeholder) }
        guard let binding = try? KindlyPushSealer.binding(of: senderKey, for: key.publicKey) else {
            return PushSealer(recipient: key.publicKey, mode: mode, placeholder: placeholder, refusesAll: true)
        }
        return PushSealer(recipient: key.publicKey, sender: binding, version: version, mode: mode, placeholder: placeholder)
    }

    /// Version 2's binding for the general path (`nil` for version 1); `bad_input` for a
    /// recipient the sender key cannot seal for.
    private func binding(for recipient: DevicePublicKey) throws(CLIError) -> SenderBinding? {
        guard let senderKey else { return nil }
        do throws(KindlyPushSealer.SealingError) {
            return try KindlyPushSealer.binding(of: senderKey, for: recipient)
        } catch {
            throw CLIError(.badInput, error.description)
        }
    }
}

/// The text around a line's `"id"` in its output line.
private enum CorrelationID {
    static let pushPrefix = Array(#"{"id":"#.utf8)
    static let pushMember = Array(#","push":"#.utf8)
    static let errorMember = Array(#","id":"#.utf8)
}

/// The members a line may have.
private enum Member {
    package static let id = "id"
    package static let publicKey = "public_key"
    package static let plaintext = "plaintext"
    package static let mode = "mode"
    package static let placeholderTitle = "placeholder_title"
    package static let placeholderBody = "placeholder_body"
    package static let all = [id, publicKey, plaintext, mode, placeholderTitle, placeholderBody]
}

/// A line's own push kind and alert, when it gives any.
package struct LineAlert: Hashable, Sendable {
    package let mode: KindlyPushSealer.Mode
    package let title: String
    package let body: String

    package var placeholder: KindlyPushSealer.Placeholder { KindlyPushSealer.Placeholder(title: title, body: body) }

    /// The alert of a line that gives `mode`, `title` or `body`, over the command's; `nil` when it
    /// gives none. A silent push has no alert to give.
    package init?(
        mode lineMode: KindlyPushSealer.Mode?, title lineTitle: String?, body lineBody: String?, defaultMode: KindlyPushSealer.Mode,
        defaultPlaceholder: KindlyPushSealer.Placeholder
    ) throws(CLIError) {
        guard lineMode != nil || lineTitle != nil || lineBody != nil else { return nil }
        mode = lineMode ?? defaultMode
        if mode == .silent, lineTitle != nil || lineBody != nil {
            throw CLIError(
                .badInput, "a silent push has no alert: \"placeholder_title\" and \"placeholder_body\" need \"mode\": \"visible\"")
        }
        title = lineTitle ?? defaultPlaceholder.title
        body = lineBody ?? defaultPlaceholder.body
    }
}

/// What a thread's sealers are kept by: the device's public key, and the line's own alert when it
/// gives one (a sealer's document template holds the alert).
package struct RecipientKey: Hashable, Sendable {
    /// The 32 bytes of the public key.
    package let words: SIMD4<UInt64>
    package let alert: LineAlert?

    package init(_ publicKey: UnsafeRawBufferPointer, alert: LineAlert?) {
        precondition(publicKey.count == 32)
        words = SIMD4(
            publicKey.loadUnaligned(fromByteOffset: 0, as: UInt64.self), publicKey.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
            publicKey.loadUnaligned(fromByteOffset: 16, as: UInt64.self), publicKey.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        self.alert = alert
    }

    package init(_ publicKey: DevicePublicKey, alert: LineAlert?) {
        self = publicKey.rawRepresentation.withUnsafeBytes { RecipientKey($0, alert: alert) }
    }

    package var publicKey: DevicePublicKey {
        var words = words
        return try! withUnsafeBytes(of: &words) { try DevicePublicKey(rawRepresentation: Array($0)) }
    }
}

/// A line read with the strict reader, checked member by member.
private struct Line {
    package let recipient: DevicePublicKey
    package let plaintext: JSONValue
    package let alert: LineAlert?

    package init(_ document: JSONValue, mode: KindlyPushSealer.Mode, placeholder: KindlyPushSealer.Placeholder) throws(CLIError) {
        guard case .object(let object) = document else { throw CLIError(.badInput, "the input is \(document.typeName), not a JSON object") }
        if object.hasDuplicateKeys { throw CLIError(.badInput, "a member name occurs twice") }
        for name in object.keys where !Member.all.contains(where: { $0.unicodeScalars.elementsEqual(name.unicodeScalars) }) {
            var quoted: [UInt8] = []
            JSONWriter.writeString(name, to: &quoted)
            throw CLIError(
                .badInput,
                "unknown member \(String(decoding: quoted, as: UTF8.self)); a --recipients-inline input has \"public_key\", \"plaintext\" "
                    + "and optionally \"id\", \"mode\", \"placeholder_title\", \"placeholder_body\"")
        }
        func string(_ name: String) throws(CLIError) -> String? {
            guard let value = object[name] else { return nil }
            guard case .string(let text) = value else { throw CLIError(.badInput, "\"\(name)\" is \(value.typeName), not a string") }
            return text
        }
        guard let key = try string(Member.publicKey) else {
            throw CLIError(.badInput, "\"public_key\" is missing (the device's public key)")
        }
        do throws(KeyDecodingError) {
            recipient = try DevicePublicKey(base64: key)
        } catch {
            throw CLIError(.badInput, "\"public_key\": \(error)")
        }
        guard let plaintext = object[Member.plaintext] else { throw CLIError(.badInput, "\"plaintext\" is missing (the message object)") }
        guard case .object = plaintext else { throw CLIError(.badInput, "\"plaintext\" is \(plaintext.typeName), not a JSON object") }
        self.plaintext = plaintext
        var lineMode: KindlyPushSealer.Mode?
        if let text = try string(Member.mode) {
            guard let parsed = KindlyPushSealer.Mode(rawValue: text) else {
                throw CLIError(.badInput, "\"mode\" is neither \"visible\" nor \"silent\"")
            }
            lineMode = parsed
        }
        alert = try LineAlert(
            mode: lineMode, title: try string(Member.placeholderTitle), body: try string(Member.placeholderBody), defaultMode: mode,
            defaultPlaceholder: placeholder)
    }
}

/// A compact line as a backend writes it, found without building a value: the ranges of the
/// public key's text and of the plaintext object, and the line's own alert. `nil` for anything
/// else (whitespace, escapes in the public key or the placeholders, a member name twice, an
/// unknown member, an invalid line): the strict reader then decides and explains. A plaintext
/// that comes last after the public key is taken as the rest of the line, unread: the fast path
/// seals it only when it is one object in the writer's compact form (members after it, or any
/// other spelling, go the strict way).
private struct CompactLine {
    package let publicKey: Range<Int>
    package let plaintext: Range<Int>
    package let alert: LineAlert?
    /// The line's `"id"`, when it is a scalar (an array or object goes the strict way).
    package let id: Range<Int>?

    package init?(
        _ bytes: UnsafeRawBufferPointer, mode defaultMode: KindlyPushSealer.Mode,
        placeholder defaultPlaceholder: KindlyPushSealer.Placeholder
    ) {
        var reader = FastJSON(bytes, compact: true)
        // Each known member once (any other member: the strict way), one bit each.
        var seen = 0
        func first(_ bit: Int) -> Bool {
            defer { seen |= bit }
            return seen & bit == 0
        }
        var publicKey: Range<Int>?
        var plaintext: Range<Int>?
        var mode: KindlyPushSealer.Mode?
        var title: String?
        var body: String?
        var id: Range<Int>?
        var endsWithPlaintext = false
        guard reader.consume(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let name = reader.string(), reader.consume(UInt8(ascii: ":")) else { return nil }
            if reader.text(name, is: "public_key") {
                guard first(1), let text = reader.string() else { return nil }
                publicKey = text
            } else if reader.text(name, is: "plaintext") {
                guard first(2), reader.current == UInt8(ascii: "{") else { return nil }
                let start = reader.index
                if publicKey != nil, bytes.count - 1 > start, bytes[bytes.count - 1] == UInt8(ascii: "}") {
                    // Last, as a backend writes it: the plaintext runs to the line's closing brace.
                    // Not stepped over here: the fast path takes it only when it is exactly one
                    // object in the writer's form, so that nothing can follow it.
                    plaintext = start..<(bytes.count - 1)
                    endsWithPlaintext = true
                    break
                }
                guard reader.skipValue() else { return nil }
                plaintext = start..<reader.index
            } else if reader.text(name, is: "id") {
                let start = reader.index
                guard first(32), reader.current != UInt8(ascii: "{"), reader.current != UInt8(ascii: "["), reader.skipValue() else {
                    return nil
                }
                id = start..<reader.index
            } else if reader.text(name, is: "mode") {
                guard first(4), let text = reader.string() else { return nil }
                if reader.text(text, is: "visible") {
                    mode = .visible
                } else if reader.text(text, is: "silent") {
                    mode = .silent
                } else {
                    return nil
                }
            } else if reader.text(name, is: "placeholder_title") {
                guard first(8), let text = reader.string(), let plain = CompactLine.plainText(text, in: bytes) else { return nil }
                title = plain
            } else if reader.text(name, is: "placeholder_body") {
                guard first(16), let text = reader.string(), let plain = CompactLine.plainText(text, in: bytes) else { return nil }
                body = plain
            } else {
                return nil
            }
        } while reader.consume(UInt8(ascii: ","))
        guard endsWithPlaintext || (reader.consume(UInt8(ascii: "}")) && reader.atEnd), let publicKey, let plaintext else { return nil }
        // A silent line with placeholders is left to the strict way, which says why it is refused.
        // (`nil`, no alert of its own, is the common case, not a failure.)
        do throws(CLIError) {
            alert = try LineAlert(mode: mode, title: title, body: body, defaultMode: defaultMode, defaultPlaceholder: defaultPlaceholder)
        } catch {
            return nil
        }
        self.publicKey = publicKey
        self.plaintext = plaintext
        self.id = id
    }

    /// The text of a string with no escape (already checked as UTF-8); `nil` when it has one.
    private static func plainText(_ range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> String? {
        let text = UnsafeRawBufferPointer(rebasing: bytes[range])
        guard !text.contains(UInt8(ascii: "\\")) else { return nil }
        return String(decoding: text, as: UTF8.self)
    }

    /// The cache key of the line's recipient, when its public key is canonical base64 of 32 bytes.
    package func recipientKey(in bytes: UnsafeRawBufferPointer) -> RecipientKey? {
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { key -> RecipientKey? in
            guard Base64.quickDecode(UnsafeRawBufferPointer(rebasing: bytes[publicKey]), into: key) == 32 else { return nil }
            return RecipientKey(UnsafeRawBufferPointer(key), alert: alert)
        }
    }
}

internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The fast path of decryption, for streams of pushes: JSON bytes in, the payload's compact JSON
/// out, with its buffers reused from push to push and no tree of ``JSONValue``s built.
///
/// ```swift
/// var decryptor = PushDecryptor(decryption)         // one per thread
/// switch decryptor.decrypt(pushBytes, appendingTo: &output) {
/// case .decrypted: ...                                // output holds the payload object
/// case .failed(let failure): ...                      // reasons 1 to 7
/// case .notJSON(let error): ...                       // what JSONReader.parse throws
/// case .notObject(let kind): ...                      // valid JSON, not an object
/// }
/// ```
///
/// It decides every push, and its outcome (and output) is the general path's, JSONReader then
/// ``KindlyPushDecryption/decryptResult(userInfo:)``, because it runs the same rules rather than
/// repeating them: the document is read by ``JSONTokenizer`` (the strict reader's scanner, so
/// with its errors), the duplicate rule and the envelope by ``SealedEnvelope/checkDuplicates(hasEnvelope:document:envelope:)``
/// and ``EnvelopeRules/read(_:into:)``, the key is looked up and the box opened by the same
/// functions as the general path, and the plaintext is written by
/// ``DecryptedPayload/appendCompact(_:to:)`` (copied when it is already in the writer's compact
/// form, written compactly from the tokenizer in any other spelling, the tree path's problem when
/// it is not a plaintext).
/// `FastPathTests` checks the two against each other on every test vector and on mutated pushes.
package struct PushDecryptor {
    package let decryption: KindlyPushDecryption
    /// kid | sid | epk or enc | n | ct, decoded (``EnvelopeRules/read(_:into:)``).
    private var fields: [UInt8] = []
    /// The padded plaintext, then the plaintext.
    private var plaintext: [UInt8] = []
    /// The decoded text of envelope strings and names that hold escapes.
    private var scratch: [UInt8] = []
    /// The last push's key id and sender id (public).
    private var lastKid: KeyID?
    private var lastSid: SenderID?
    /// The last push's sender binding (version 2, version 3 mode_auth) and the device public key
    /// it was made for. Its secret is the cache's (kept between pushes, section 7).
    private var lastBinding: (device: [UInt8], binding: SenderBinding)?

    /// What ``decrypt(_:appendingTo:)`` did.
    package enum Outcome: Sendable, Equatable {
        /// The payload object's compact JSON (as ``JSONWriter`` writes ``DecryptedPayload/object``)
        /// was appended.
        case decrypted
        /// The push is a JSON object that does not decrypt: reasons 1 to 7 of sections 5, 7.3 and
        /// 8.2, exactly as ``KindlyPushDecryption/decryptResult(userInfo:)`` gives them.
        case failed(DecryptionFailure)
        /// The text is not one JSON document: what ``JSONReader/parse(_:)-(UnsafeRawBufferPointer)`` throws for it.
        case notJSON(JSONReadError)
        /// The text is a JSON document of this type, not an object.
        case notObject(JSONKind)
    }

    package init(_ decryption: KindlyPushDecryption) {
        self.decryption = decryption
    }

    /// Zeroes the reused buffers, which hold the last plaintexts: for the end of a run.
    package mutating func wipe() {
        lastBinding = nil
        fields.wipeCapacity()
        plaintext.wipeCapacity()
        scratch.wipeCapacity()
    }

    /// Whether every byte of the reused buffers is zero (for tests of ``wipe()``).
    package var buffersAreZero: Bool {
        fields.allSatisfy { $0 == 0 } && plaintext.allSatisfy { $0 == 0 } && scratch.allSatisfy { $0 == 0 }
    }

    /// Decrypts the push whose JSON text is `document`. Appends to `output` only on `.decrypted`.
    package mutating func decrypt(_ document: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) -> Outcome {
        scratch.removeAll(keepingCapacity: true)
        let push: PushDocument
        do throws(JSONReadError) {
            push = try PushDocument(document, scratch: &scratch)
        } catch {
            return .notJSON(error)
        }
        if let kind = push.notObject { return .notObject(kind) }
        do throws(DecryptionFailure) {
            try SealedEnvelope.checkDuplicates(
                hasEnvelope: push.hasEnvelope, document: push.hasDuplicateNames, envelope: push.envelope.hasDuplicateNames)
            // The located members by address: no copy of them per push.
            let envelope = try withUnsafePointer(to: push.envelope) { located in
                scratch.withUnsafeBytes { scratch in
                    Result { () throws(DecryptionFailure) in
                        try EnvelopeRules.read(ByteEnvelopeMembers(located, document: document, scratch: scratch), into: &fields)
                    }
                }
            }.get()
            // The last push's kid and sid when the bytes are the same (a stream is mostly for one
            // key, from one sender): no array made per push.
            if lastKid.map({ Self.same($0.bytes, fields, envelope.kid) }) != true { lastKid = KeyID(bytes: Array(fields[envelope.kid])) }
            let kid = lastKid!
            var sid: SenderID?
            if let range = envelope.senderID {
                if lastSid.map({ Self.same($0.bytes, fields, range) }) != true { lastSid = SenderID(bytes: Array(fields[range])) }
                sid = lastSid!
            }
            let key = try decryption.key(for: kid)
            let sender = try decryption.trustedSender(for: sid, version: envelope.version)
            let binding = try senderBinding(of: key, with: sender)
            if plaintext.count < envelope.ciphertext.count {
                // The old buffer holds the last plaintext: zeroed before it is let go.
                plaintext.wipeCapacity()
                plaintext = [UInt8](repeating: 0, count: envelope.ciphertext.count)
            }
            let length = try fields.withBytes { (fields) throws(DecryptionFailure) in
                try plaintext.withMutableBytes { (plaintext) throws(DecryptionFailure) in
                    try KindlyBox.open(
                        ciphertext: UnsafeRawBufferPointer(rebasing: fields[envelope.ciphertext]),
                        nonce: UnsafeRawBufferPointer(rebasing: fields[envelope.nonce]),
                        ephemeralPublicKey: UnsafeRawBufferPointer(rebasing: fields[envelope.ephemeralKey]),
                        kid: UnsafeRawBufferPointer(rebasing: fields[envelope.kid]),
                        with: key, sender: binding, version: envelope.version, into: plaintext)
                }
            }
            try plaintext.withBytes { (buffer) throws(DecryptionFailure) in
                let text = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
                // In any spelling, written compactly without a tree.
                if let problem = DecryptedPayload.appendCompact(text, to: &output) {
                    throw KindlyPushDecryption.badPlaintext(problem)
                }
            }
            return .decrypted
        } catch {
            // A key or pin that is gone is refused before the binding is asked for; its secret
            // is not kept here either.
            lastBinding = nil
            return .failed(error)
        }
    }

    /// Whether `bytes` are `fields`' bytes at `range` (one comparison of memory, not a loop
    /// over two collections).
    private static func same(_ bytes: [UInt8], _ fields: [UInt8], _ range: Range<Int>) -> Bool {
        guard bytes.count == range.count else { return false }
        guard !range.isEmpty else { return true }
        return bytes.withUnsafeBytes { a in
            fields.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress! + range.lowerBound, range.count) == 0 }
        }
    }

    /// ``KindlyPushDecryption/binding(of:with:)`` (the process's ``SenderSecretCache``), or the
    /// last push's binding when the keyring gave the same device key and the same trusted
    /// sender key again: a stream from one sender takes no lock and hashes nothing per push.
    private mutating func senderBinding(of key: DeviceKey, with sender: SenderPublicKey?) throws(DecryptionFailure)
        -> SenderBinding?
    {
        guard let sender else { return nil }
        if let last = lastBinding, last.binding.publicKey == sender, last.device == key.publicKey.rawRepresentation {
            return last.binding
        }
        lastBinding = nil
        let binding = try KindlyPushDecryption.binding(of: key, with: sender)
        lastBinding = binding.map { (key.publicKey.rawRepresentation, $0) }
        return binding
    }
}

/// A push's document read from its bytes by ``JSONTokenizer``, checked whole, with what the
/// envelope rules need located: whether it is an object, whether a top-level name occurs twice,
/// and its first top-level `kindly` member that is an object, the envelope (section 5: a push
/// is Kindly's when there is one).
struct PushDocument {
    /// The document's type when it is not an object.
    var notObject: JSONKind?
    var hasDuplicateNames = false
    var hasEnvelope = false
    var envelope = LocatedEnvelope()

    init(_ document: UnsafeRawBufferPointer, scratch: inout [UInt8]) throws(JSONReadError) {
        var reader = JSONTokenizer(document)
        try reader.beginDocument()
        let first = try reader.valueStart()
        guard first == UInt8(ascii: "{") else {
            try reader.skipValue()
            try reader.endDocument()
            notObject = JSONKind(startingWith: first)!
            return
        }
        var names = JSONTokenizer.Names()
        // Read once, not per member: a static is a lazy start and a reference each time.
        let known = LocatedEnvelope.names
        let envelopeName = LocatedEnvelope.envelopeName
        if try reader.beginObject() {
            repeat {
                let mark = scratch.count
                let name = try reader.memberName(&scratch)
                let (unique, isEnvelope) = scratch.withUnsafeBytes { scratch in
                    let decoded = UnsafeRawBufferPointer(rebasing: scratch[mark...])
                    let unique = name.hasEscapes ? names.insert(decoded: decoded, in: reader) : names.insert(name.raw, in: reader)
                    return (unique, known.index(of: name.hasEscapes ? decoded : reader.bytes(name.raw)) == envelopeName)
                }
                if !unique { hasDuplicateNames = true }
                if scratch.count > mark { scratch.removeSubrange(mark...) }
                if isEnvelope, !hasEnvelope, try reader.valueStart() == UInt8(ascii: "{") {
                    hasEnvelope = true
                    try envelope.read(&reader, scratch: &scratch, names: known)
                } else {
                    try reader.skipValue()
                }
            } while try reader.nextMember()
        }
        try reader.endDocument()
    }
}

/// The members of a `kindly` object in a document's bytes that some version reads
/// (``EnvelopeMember``): each one's type and text, the first time it occurs.
struct LocatedEnvelope {
    struct Member {
        var kind: JSONKind
        /// The value's text in the document (a string's between its quotes).
        var raw: Range<Int>
        /// A string with escapes: its decoded text in the scratch buffer.
        var decoded: Range<Int>?
    }

    var hasDuplicateNames = false
    /// One per ``EnvelopeMember``, stored inline (no allocation per push).
    private var version, kid, senderID, ephemeralPublicKey, encapsulatedKey, nonce, ciphertext: Member?

    /// The names a push's reader looks for: the members', each at the index of its member's raw
    /// value, then the envelope's own (`kindly`, at ``envelopeName``).
    static let names = JSONTokenizer.KnownNames(
        EnvelopeMember.allCases.indices.map { EnvelopeMember(rawValue: $0)!.name } + [KindlyKey.envelope])
    static let envelopeName = EnvelopeMember.allCases.count

    subscript(member: EnvelopeMember) -> Member? {
        get {
            switch member {
            case .version: return version
            case .kid: return kid
            case .senderID: return senderID
            case .ephemeralPublicKey: return ephemeralPublicKey
            case .encapsulatedKey: return encapsulatedKey
            case .nonce: return nonce
            case .ciphertext: return ciphertext
            }
        }
        set {
            switch member {
            case .version: version = newValue
            case .kid: kid = newValue
            case .senderID: senderID = newValue
            case .ephemeralPublicKey: ephemeralPublicKey = newValue
            case .encapsulatedKey: encapsulatedKey = newValue
            case .nonce: nonce = newValue
            case .ciphertext: ciphertext = newValue
            }
        }
    }

    /// Reads the object at the reader (its `{`), checking all of it; `names` is ``names``.
    mutating func read(_ reader: inout JSONTokenizer, scratch: inout [UInt8], names: JSONTokenizer.KnownNames) throws(JSONReadError) {
        // The duplicate rule: a bit per member that some version reads, and the other names.
        var seen: UInt32 = 0
        var others = JSONTokenizer.Names()
        guard try reader.beginObject() else { return }
        repeat {
            let mark = scratch.count
            let name = try reader.memberName(&scratch)
            let (unique, known) = scratch.withUnsafeBytes { scratch -> (Bool, EnvelopeMember?) in
                let decoded = UnsafeRawBufferPointer(rebasing: scratch[mark...])
                if let index = names.index(of: name.hasEscapes ? decoded : reader.bytes(name.raw)),
                    let member = EnvelopeMember(rawValue: index)
                {
                    return (seen & 1 << index == 0, member)
                }
                return (name.hasEscapes ? others.insert(decoded: decoded, in: reader) : others.insert(name.raw, in: reader), nil)
            }
            if scratch.count > mark { scratch.removeSubrange(mark...) }
            if !unique { hasDuplicateNames = true }
            // Any member but the first of a name is stepped over (its duplicate is refused).
            guard let known, unique else {
                try reader.skipValue()
                continue
            }
            seen |= 1 << known.rawValue
            let first = try reader.valueStart()
            if first == UInt8(ascii: "\"") {
                let start = scratch.count
                let text = try reader.string(&scratch)
                self[known] = Member(kind: .string, raw: text.raw, decoded: text.hasEscapes ? start..<scratch.count : nil)
            } else {
                let start = reader.index
                try reader.skipValue()
                self[known] = JSONKind(startingWith: first).map { Member(kind: $0, raw: start..<reader.index) }
            }
        } while try reader.nextMember()
    }
}

/// A ``LocatedEnvelope`` as ``EnvelopeRules/read(_:into:)`` reads it.
struct ByteEnvelopeMembers: EnvelopeMembers {
    let envelope: UnsafePointer<LocatedEnvelope>
    let document: UnsafeRawBufferPointer
    let scratch: UnsafeRawBufferPointer

    init(_ envelope: UnsafePointer<LocatedEnvelope>, document: UnsafeRawBufferPointer, scratch: UnsafeRawBufferPointer) {
        self.envelope = envelope
        self.document = document
        self.scratch = scratch
    }

    func kind(of field: EnvelopeField) -> JSONKind? { envelope.pointee[field.member]?.kind }

    func integer(_ field: EnvelopeField, in range: ClosedRange<Int64>) -> Int64? {
        guard let member = envelope.pointee[field.member], member.kind == .number else { return nil }
        let text = UnsafeRawBufferPointer(rebasing: document[member.raw])
        // One digit, as every push writes `v`; any other spelling as the tree reads it.
        if text.count == 1 {
            let value = Int64(text[0] &- UInt8(ascii: "0"))
            return range.contains(value) ? value : nil
        }
        return JSONNumber(validatedLiteral: String(decoding: text, as: UTF8.self)).integerValue(in: range)
    }

    private func text(_ field: EnvelopeField) -> UnsafeRawBufferPointer {
        guard let member = envelope.pointee[field.member] else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        if let decoded = member.decoded { return UnsafeRawBufferPointer(rebasing: scratch[decoded]) }
        return UnsafeRawBufferPointer(rebasing: document[member.raw])
    }

    func textCount(_ field: EnvelopeField) -> Int { text(field).count }

    func decode(_ field: EnvelopeField, into output: UnsafeMutableRawBufferPointer) throws(Base64.DecodingError) -> Int {
        try Base64.decode(text(field), into: output)
    }
}

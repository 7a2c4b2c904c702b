package import KindlyPushCore

/// A member some version's `kindly` envelope reads, `v` first. Which of them a version reads, and
/// what they hold, is its rules' (``EnvelopeRules``). A new member is a new case: the compiler
/// then asks for its name here and for its place wherever one value per member is kept (the
/// envelope located in a document's bytes, ``PushDecryptor``), so none is forgotten.
package enum EnvelopeMember: Int, CaseIterable, Sendable {
    case version, kid, senderID, ephemeralPublicKey, encapsulatedKey, nonce, ciphertext

    /// The member's name in the envelope.
    package var name: String {
        switch self {
        case .version: return KindlyKey.version
        case .kid: return KindlyKey.kid
        case .senderID: return KindlyKey.senderID
        case .ephemeralPublicKey: return KindlyKey.ephemeralPublicKey
        case .encapsulatedKey: return KindlyKey.encapsulatedKey
        case .nonce: return KindlyKey.nonce
        case .ciphertext: return KindlyKey.ciphertext
        }
    }
}

/// One member of a version's `kindly` envelope: which member, the length its base64 must decode
/// to, and whether it must be there.
package struct EnvelopeField: Sendable {
    /// Whether a member must be there (only `sid` is ever anything but required).
    package enum Presence: Sendable {
        /// Ignored, whatever it holds (version 1's `sid`).
        case ignored
        /// Required.
        case required
        /// Optional; read when present (version 3's `sid`, which selects mode_auth).
        case optional
    }

    package let member: EnvelopeMember
    package let presence: Presence
    /// The decoded length, or for a ciphertext its tag's length…
    package let byteCount: Int
    /// …and the block its padded message fills (a ciphertext is `byteCount + block·j`, j ≥ 1); 0
    /// for a field of fixed length.
    package let block: Int

    /// The member's name in the envelope.
    package var name: String { member.name }

    /// A field of `bytes` decoded bytes.
    init(_ member: EnvelopeMember, bytes: Int, presence: Presence = .required) {
        self.member = member
        self.presence = presence
        self.byteCount = bytes
        self.block = 0
    }

    /// A ciphertext: one or more padded blocks of `block` bytes and a tag of `tag` bytes.
    init(_ member: EnvelopeMember, tag: Int, block: Int) {
        self.member = member
        self.presence = .required
        self.byteCount = tag
        self.block = block
    }

    /// `v`, which every version has.
    package static let version = EnvelopeField(.version, bytes: 0)

    /// Whether `count` decoded bytes are what the field holds.
    package func accepts(_ count: Int) -> Bool {
        block == 0 ? count == byteCount : count >= byteCount + block && (count - byteCount) % block == 0
    }

    /// The length the field holds, as failure details say it.
    var expected: String { block == 0 ? "\(byteCount)" : "\(byteCount) + \(block)·j (j ≥ 1)" }
}

/// What one version's `kindly` envelope holds: the member names and their decoded lengths, and
/// what it makes of `sid`. Each version's rules are in its own file (WireVersion+One.swift,
/// +Two, +Three); ``read(_:into:)`` applies them, to an envelope in a tree (``SealedEnvelope``)
/// or in a document's bytes (``PushDecryptor``).
package struct EnvelopeRules: Sendable {
    package let version: WireVersion
    package let kid: EnvelopeField
    package let senderID: EnvelopeField
    /// `epk`, or HPKE's `enc` in version 3.
    package let ephemeralKey: EnvelopeField
    /// `n`; `nil` where the construction derives the nonce (version 3).
    package let nonce: EnvelopeField?
    package let ciphertext: EnvelopeField
    /// The member that is new for every sealing, which with `kid` identifies one delivery (for
    /// de-duplication and replacement, when the plaintext has no `message_id` or the push does not
    /// decrypt): `n` in versions 1 and 2, the encapsulated key `enc` in version 3 (RFC 9180's
    /// `Encap` draws a new ephemeral key for every message).
    package var delivery: EnvelopeField { nonce ?? ephemeralKey }
}

extension WireVersion {
    /// What this version's envelope holds.
    package var rules: EnvelopeRules {
        switch self {
        case .one: return .one
        case .two: return .two
        case .three: return .three
        }
    }
}

/// The members of a `kindly` object that has no name twice, as ``EnvelopeRules/read(_:into:)``
/// asks for them: from a tree (``JSONObject``) or located in a document's bytes.
package protocol EnvelopeMembers {
    /// The type of the member's value; `nil` when there is no such member.
    func kind(of field: EnvelopeField) -> JSONKind?
    /// The member's value, a number, as an integer in `range`; `nil` for any other number.
    func integer(_ field: EnvelopeField, in range: ClosedRange<Int64>) -> Int64?
    /// The length of the (decoded) UTF-8 text of the member, a string.
    func textCount(_ field: EnvelopeField) -> Int
    /// Decodes the member, a string, as ``Base64/decode(_:into:)`` does.
    func decode(_ field: EnvelopeField, into output: UnsafeMutableRawBufferPointer) throws(Base64.DecodingError) -> Int
}

/// An envelope's fields, decoded into a caller's buffer: where each is.
package struct DecodedEnvelope {
    package let version: WireVersion
    package let kid: Range<Int>
    /// `sid`, for version 2 and version 3 mode_auth; `nil` otherwise.
    package let senderID: Range<Int>?
    /// `epk`, or `enc` in version 3.
    package let ephemeralKey: Range<Int>
    /// `n`; empty in version 3.
    package let nonce: Range<Int>
    package let ciphertext: Range<Int>
}

extension EnvelopeRules {
    /// Reads an envelope (reasons 2 and 3 of sections 5, 7.3 and 8.2, after the duplicate rules):
    /// `v`, then its version's fields in order `kid`, `sid`, `epk` or `enc`, `n`, `ct`, each
    /// present (as the version says), a string, canonical base64 and of its length. The fields
    /// are decoded into `buffer` (grown when it is too small; it holds no secret), in that order.
    package static func read(_ members: some EnvelopeMembers, into buffer: inout [UInt8]) throws(DecryptionFailure) -> DecodedEnvelope {
        guard let kind = members.kind(of: .version) else {
            throw DecryptionFailure(.unsupportedVersion, "\"kindly.v\" is missing")
        }
        guard kind == .number else {
            throw DecryptionFailure(.unsupportedVersion, "\"kindly.v\" is \(kind.typeName), not version 1, 2 or 3")
        }
        guard let number = members.integer(.version, in: 1...3), let version = WireVersion(rawValue: Int(number)) else {
            throw DecryptionFailure(.unsupportedVersion, "\"kindly.v\" is a number other than 1, 2 and 3")
        }
        let rules = version.rules
        // Room for every fixed field and the longest ciphertext its text can hold.
        let fixed = rules.kid.byteCount + rules.senderID.byteCount + rules.ephemeralKey.byteCount + (rules.nonce?.byteCount ?? 0)
        let ciphertextText = members.kind(of: rules.ciphertext) == .string ? members.textCount(rules.ciphertext) : 0
        let needed = fixed + ciphertextText / 4 * 3 + 3
        if buffer.count < needed { buffer = [UInt8](repeating: 0, count: needed) }
        let result = buffer.withUnsafeMutableBytes { buffer -> Result<DecodedEnvelope, DecryptionFailure> in
            Result { () throws(DecryptionFailure) in
                var offset = 0
                // `offset` passed in, not captured: a captured variable is checked for exclusive
                // access at run time on every call.
                func field(_ field: EnvelopeField, at offset: inout Int) throws(DecryptionFailure) -> Range<Int> {
                    guard let kind = members.kind(of: field) else {
                        throw DecryptionFailure(.malformed, "\"kindly.\(field.name)\" is missing")
                    }
                    guard kind == .string else {
                        throw DecryptionFailure(.malformed, "\"kindly.\(field.name)\" is \(kind.typeName), not a string")
                    }
                    let slot = UnsafeMutableRawBufferPointer(
                        rebasing: buffer[offset..<(field.block == 0 ? offset + field.byteCount : buffer.count)])
                    let count: Int
                    do throws(Base64.DecodingError) {
                        count = try members.decode(field, into: slot)
                        if count > slot.count {
                            // Longer than the slot: nothing was written, and the text is decoded
                            // whole for its one possible error (non-zero trailing bits).
                            var whole = [UInt8](repeating: 0, count: count)
                            _ = try whole.withMutableBytes { (whole) throws(Base64.DecodingError) in try members.decode(field, into: whole)
                            }
                        }
                    } catch {
                        throw DecryptionFailure(.malformed, "\"kindly.\(field.name)\" \(error)")
                    }
                    guard field.accepts(count) else {
                        throw DecryptionFailure(
                            .malformed, "\"kindly.\(field.name)\" decodes to \(count) bytes, expected \(field.expected)")
                    }
                    defer { offset += slot.count }
                    return offset..<(offset + count)
                }
                let kid = try field(rules.kid, at: &offset)
                let sid: Range<Int>?
                switch rules.senderID.presence {
                case .ignored: sid = nil  // version 1 ignores a `sid` field entirely, whatever it holds
                case .required: sid = try field(rules.senderID, at: &offset)
                case .optional: sid = members.kind(of: rules.senderID) == nil ? nil : try field(rules.senderID, at: &offset)
                }
                if sid == nil { offset += rules.senderID.byteCount }
                let key = try field(rules.ephemeralKey, at: &offset)
                var nonce = offset..<offset
                if let rule = rules.nonce { nonce = try field(rule, at: &offset) }
                let ciphertext = try field(rules.ciphertext, at: &offset)
                return DecodedEnvelope(version: version, kid: kid, senderID: sid, ephemeralKey: key, nonce: nonce, ciphertext: ciphertext)
            }
        }
        return try result.get()
    }
}

/// The members of a `kindly` object in a tree.
struct TreeEnvelopeMembers: EnvelopeMembers {
    let object: JSONObject

    func kind(of field: EnvelopeField) -> JSONKind? { object[field.name]?.kind }

    func integer(_ field: EnvelopeField, in range: ClosedRange<Int64>) -> Int64? {
        object[field.name]?.numberValue?.integerValue(in: range)
    }

    func textCount(_ field: EnvelopeField) -> Int { object[field.name]?.stringValue?.utf8.count ?? 0 }

    func decode(_ field: EnvelopeField, into output: UnsafeMutableRawBufferPointer) throws(Base64.DecodingError) -> Int {
        try (object[field.name]?.stringValue ?? "").withUTF8Bytes { (text) throws(Base64.DecodingError) in
            try Base64.decode(text, into: output)
        }
    }
}

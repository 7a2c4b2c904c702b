internal import KindlyPushCore

/// The fast path of decryption, for streams of pushes: JSON bytes in, the payload's compact JSON
/// out, with its buffers reused from push to push and no tree of ``JSONValue``s built.
///
/// ```swift
/// var decryptor = PushDecryptor(decryption)         // one per thread
/// switch decryptor.decrypt(pushBytes, appendingTo: &output) {
/// case .decrypted: ...                                // output holds the payload object
/// case .failed(let failure): ...                      // reasons 4 to 7
/// case .undecided:                                    // the general path decides
///     let result = decryption.decryptResult(userInfo: try JSONReader.parse(pushBytes))
/// }
/// ```
///
/// It shares the spec's logic with the general path rather than repeating it: the envelope
/// is located by ``FastJSON`` (which never accepts a text ``JSONReader`` refuses and leaves
/// anything unusual to it), the fields are decoded by ``Base64``, the key is looked up and the
/// box opened by the same functions as ``KindlyPushDecryption/decryptResult(userInfo:)``, and
/// a plaintext that is not already in the writer's compact form goes through
/// ``DecryptedPayload/init(plaintext:)``. For every push it decides, the outcome (and the
/// output) is the general path's; `FastPathTests` checks this on every test vector.
package struct PushDecryptor {
    package let decryption: KindlyPushDecryption
    /// kid || sid (version 2 and 3 mode_auth; unused otherwise) || epk or enc || n (versions 1
    /// and 2) || ct, decoded.
    private var fields: [UInt8] = []
    /// The padded plaintext, then the plaintext.
    private var plaintext: [UInt8] = []

    /// What ``decrypt(_:appendingTo:)`` did.
    package enum Outcome: Sendable, Equatable {
        /// The payload object's compact JSON (as ``JSONWriter`` writes ``DecryptedPayload/object``)
        /// was appended.
        case decrypted
        /// The push is a well-formed Kindly push of version 1, 2 or 3 that does not decrypt: reasons
        /// 4 to 7 of sections 7.3 and 8.2, exactly as ``KindlyPushDecryption/decryptResult(userInfo:)`` gives them.
        case failed(DecryptionFailure)
        /// The push is invalid, not Kindly's, or of a shape this path leaves to the general one:
        /// read it with ``JSONReader`` and call ``KindlyPushDecryption/decryptResult(userInfo:)``.
        case undecided
    }

    package init(_ decryption: KindlyPushDecryption) {
        self.decryption = decryption
    }

    /// Zeroes the reused buffers, which hold the last plaintexts: for the end of a run.
    package mutating func wipe() {
        fields.wipeCapacity()
        plaintext.wipeCapacity()
    }

    /// Whether every byte of the reused buffers is zero (for tests of ``wipe()``).
    package var buffersAreZero: Bool {
        fields.allSatisfy { $0 == 0 } && plaintext.allSatisfy { $0 == 0 }
    }

    /// Decrypts the push whose JSON text is `document`. Appends to `output` only on `.decrypted`.
    package mutating func decrypt(_ document: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) -> Outcome {
        guard let envelope = EnvelopeLocation(document) else { return .undecided }
        // Decode the fields into one buffer: kid | sid | epk | n | ct (sid only with a sender, n
        // only in versions 1 and 2, epk holding version 3's enc).
        let sidOffset = KeyID.length
        let epkOffset = sidOffset + SenderID.length
        let nonceOffset = epkOffset + SealedEnvelope.ephemeralPublicKeyLength
        let ctOffset = nonceOffset + XChaCha20Poly1305.nonceLength
        let ctCapacity = envelope.ciphertext.count / 4 * 3 + 3
        let needed = ctOffset + ctCapacity
        if fields.count < needed { fields = [UInt8](repeating: 0, count: needed) }
        if plaintext.count < ctCapacity {
            // The old buffer holds the last plaintext: zeroed before it is let go.
            plaintext.wipeCapacity()
            plaintext = [UInt8](repeating: 0, count: ctCapacity)
        }
        let decoded: (kid: KeyID, sid: SenderID?, ciphertextLength: Int)? = fields.withUnsafeMutableBytes { buffer in
            func field(_ range: Range<Int>, at offset: Int, length: Int) -> Int? {
                let text = UnsafeRawBufferPointer(rebasing: document[range])
                let out = UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
                return try? Base64.decode(text, into: out)
            }
            guard field(envelope.kid, at: 0, length: KeyID.length) == KeyID.length,
                field(envelope.ephemeralPublicKey, at: epkOffset, length: SealedEnvelope.ephemeralPublicKeyLength)
                    == SealedEnvelope.ephemeralPublicKeyLength,
                !envelope.version.hasNonce
                    || field(envelope.nonce, at: nonceOffset, length: XChaCha20Poly1305.nonceLength) == XChaCha20Poly1305.nonceLength,
                let ctLength = field(envelope.ciphertext, at: ctOffset, length: buffer.count - ctOffset),
                SealedEnvelope.isValidCiphertextLength(ctLength)
            else { return nil }
            var sid: SenderID?
            if let range = envelope.senderID {
                guard field(range, at: sidOffset, length: SenderID.length) == SenderID.length else { return nil }
                sid = SenderID(bytes: Array(buffer[sidOffset..<epkOffset]))
            }
            return (KeyID(bytes: Array(buffer[0..<KeyID.length]))!, sid, ctLength)
        }
        guard let decoded else { return .undecided }
        do throws(DecryptionFailure) {
            let key = try decryption.key(for: decoded.kid)
            let sender = try decryption.trustedSender(for: decoded.sid, version: envelope.version)
            let binding = try KindlyPushDecryption.binding(of: key, with: sender)
            let length = try fields.withBytes { (fields) throws(DecryptionFailure) in
                try plaintext.withMutableBytes { (plaintext) throws(DecryptionFailure) in
                    try KindlyBox.open(
                        ciphertext: UnsafeRawBufferPointer(rebasing: fields[ctOffset..<(ctOffset + decoded.ciphertextLength)]),
                        nonce: UnsafeRawBufferPointer(rebasing: fields[nonceOffset..<ctOffset]),
                        ephemeralPublicKey: UnsafeRawBufferPointer(rebasing: fields[epkOffset..<nonceOffset]),
                        kid: UnsafeRawBufferPointer(rebasing: fields[0..<KeyID.length]),
                        with: key, sender: binding, version: envelope.version, into: plaintext)
                }
            }
            try plaintext.withBytes { (buffer) throws(DecryptionFailure) in
                let text = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
                if DecryptedPayload.isCanonicalCompactText(text) {
                    output.append(contentsOf: text)
                } else {
                    let payload = try KindlyPushDecryption.payload(plaintext: text)
                    JSONWriter.write(.object(payload.object), to: &output)
                }
            }
            return .decrypted
        } catch {
            return .failed(error)
        }
    }
}

/// Where a push's envelope fields are, found by ``FastJSON`` in a document that it checked
/// whole: a JSON object with no duplicate top-level name, whose one `kindly` member is an object
/// with no duplicate name, `v` written `1`, `2` or `3`, and the strings of its version
/// (``WireVersion``): `kid`, `epk`, `n`, `ct` for versions 1 and 2 (and for version 2 a `sid`
/// string, without escapes), `kid`, `enc`, `ct` and an optional `sid` string for version 3.
/// `nil` for anything else (the general path decides). The base64 strings are checked by
/// decoding them (``FastJSON/base64String()``): the document is valid only once they decode. A
/// `sid` is checked as a JSON string whatever the version (version 1 ignores it, but the
/// document must still be valid).
package struct EnvelopeLocation {
    package var version: WireVersion = .one
    package var kid: Range<Int> = 0..<0
    /// `sid` for a version 2 or version 3 mode_auth push; `nil` otherwise.
    package var senderID: Range<Int>?
    /// `epk`, or `enc` in version 3.
    package var ephemeralPublicKey: Range<Int> = 0..<0
    /// `n`; empty in version 3.
    package var nonce: Range<Int> = 0..<0
    package var ciphertext: Range<Int> = 0..<0

    package init?(_ document: UnsafeRawBufferPointer) {
        var reader = FastJSON(document, compact: false)
        var names = FastJSON.Names()
        var found = false
        guard reader.consume(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let name = reader.string(), names.insert(name, in: reader), reader.consume(UInt8(ascii: ":")) else { return nil }
            if reader.text(name, is: "kindly") {
                reader.skipWhitespace()
                guard reader.current == UInt8(ascii: "{"), readEnvelope(&reader) else { return nil }
                found = true
            } else {
                guard reader.skipValue(depth: 1) else { return nil }
            }
        } while reader.consume(UInt8(ascii: ","))
        guard found, reader.consume(UInt8(ascii: "}")) else { return nil }
        reader.skipWhitespace()
        guard reader.atEnd else { return nil }
    }

    private mutating func readEnvelope(_ reader: inout FastJSON) -> Bool {
        var names = FastJSON.Names()
        var seen = 0
        var version: UInt8 = 0
        var sid: Range<Int>?
        var sidIsString = true
        var epk: Range<Int>?
        var enc: Range<Int>?
        reader.index += 1  // {
        repeat {
            guard let name = reader.string(), names.insert(name, in: reader), reader.consume(UInt8(ascii: ":")) else { return false }
            if reader.text(name, is: "v") {
                guard let number = reader.number(), number.count == 1 else { return false }
                version = reader.base[number.lowerBound]
                guard (UInt8(ascii: "1")...UInt8(ascii: "3")).contains(version) else { return false }
                seen |= 1
            } else if reader.text(name, is: "sid") {
                reader.skipWhitespace()
                if reader.current == UInt8(ascii: "\"") {
                    guard let text = reader.string() else { return false }
                    sid = text
                } else {
                    guard reader.skipValue(depth: 2) else { return false }
                    sidIsString = false
                }
            } else if reader.text(name, is: "kid") {
                guard let text = reader.base64String() else { return false }
                kid = text
                seen |= 2
            } else if reader.text(name, is: "epk") {
                guard let text = reader.base64String() else { return false }
                epk = text
            } else if reader.text(name, is: "enc") {
                guard let text = reader.base64String() else { return false }
                enc = text
            } else if reader.text(name, is: "n") {
                guard let text = reader.base64String() else { return false }
                nonce = text
                seen |= 8
            } else if reader.text(name, is: "ct") {
                guard let text = reader.base64String() else { return false }
                ciphertext = text
                seen |= 16
            } else {
                guard reader.skipValue(depth: 2) else { return false }
            }
        } while reader.consume(UInt8(ascii: ","))
        guard seen & 19 == 19, reader.consume(UInt8(ascii: "}")) else { return false }  // v, kid, ct
        self.version = WireVersion(rawValue: Int(version &- UInt8(ascii: "0")))!
        // What each version reads is ``WireVersion``'s; anything it refuses is the general path's to say.
        guard let key = self.version == .three ? enc : epk else { return false }
        ephemeralPublicKey = key
        if !self.version.hasNonce {
            nonce = 0..<0
        } else if seen & 8 == 0 {
            return false
        }
        switch self.version.senderIDRule {
        case .ignored: break
        case .required:
            guard let sid else { return false }
            senderID = sid
        case .optional:
            guard sidIsString else { return false }
            senderID = sid
        }
        return true
    }
}

extension DecryptedPayload {
    /// Whether `text` is a plaintext that section 4 accepts and that is already exactly what
    /// ``JSONWriter`` writes for the object it holds: compact, no byte-order mark, escapes only
    /// as the writer writes them, no member name twice, the required keys present with their
    /// types, `sent_at` (when present) written as digits within range, `truncated` (when
    /// present) `true` or `false`, and extras that are scalars. `false` says nothing about
    /// validity: the general path decides.
    package static func isCanonicalCompactText(_ text: UnsafeRawBufferPointer) -> Bool {
        var reader = FastJSON(text, compact: true)
        var names = FastJSON.Names()
        var required = 0
        guard reader.consume(UInt8(ascii: "{")) else { return false }
        repeat {
            guard let name = reader.string(), names.insert(name, in: reader), reader.consume(UInt8(ascii: ":")) else { return false }
            if reader.text(name, is: "chat_id") {
                guard let value = reader.string(), !value.isEmpty else { return false }
                required |= 1
            } else if reader.text(name, is: "title") {
                guard reader.string() != nil else { return false }
                required |= 2
            } else if reader.text(name, is: "body") {
                guard reader.string() != nil else { return false }
                required |= 4
            } else if reader.text(name, is: "message_id") {
                guard reader.string() != nil else { return false }
            } else if reader.text(name, is: "sent_at") {
                guard let number = reader.number(), number.count <= 16 else { return false }
                var value: Int64 = 0
                for index in number {
                    let digit = reader.base[index] &- UInt8(ascii: "0")
                    guard digit <= 9 else { return false }
                    value = value * 10 + Int64(digit)
                }
                guard value <= WireFormat.maximumSentAt else { return false }
            } else if reader.text(name, is: "truncated") {
                guard reader.current == UInt8(ascii: "t") || reader.current == UInt8(ascii: "f"), reader.skipValue() else { return false }
            } else {
                guard reader.current != UInt8(ascii: "{"), reader.current != UInt8(ascii: "["), reader.skipValue() else { return false }
            }
        } while reader.consume(UInt8(ascii: ","))
        return required == 7 && reader.consume(UInt8(ascii: "}")) && reader.atEnd
    }
}

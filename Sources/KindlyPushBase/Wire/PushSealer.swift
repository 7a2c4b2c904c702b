package import KindlyPushCore

/// The fast path of sealing, for streams of plaintexts: the plaintext's JSON text in, the
/// compact APNs document out, with buffers reused from push to push. One per thread.
///
/// It decides every plaintext, and its outcome and output (but for the random bytes) are the
/// general path's, ``KindlyPushSealer/payload(plaintext:)`` then
/// ``KindlyPushSealer/seal(_:for:binding:version:mode:placeholder:oversize:)``: the text is
/// written by ``DecryptedPayload/appendCompact(_:to:)``: a text already in the writer's compact
/// form as it is (it is what the general path writes and seals), another spelling compactly
/// without a tree, and sealed so; the document around the envelope
/// fields is cut once from what ``KindlyPushSealer/apnsDocument(_:mode:placeholder:)`` writes,
/// and the cryptography is ``KindlyBox``'s. A plaintext whose push would be over its budget goes
/// to the general path with that payload, which fits it (``KindlyPushSealer/Oversize/truncateBody``)
/// or says how large it is.
///
/// With a ``SenderBinding`` it seals version 2 (section 7.2): the second shared secret is the
/// binding's, computed once for the recipient, so a push costs the same X25519 operations as in
/// version 1. With ``WireVersion/three`` it seals HPKE (section 8.1), mode_auth with a binding
/// (the same second Diffie-Hellman result) and mode_base without.
package struct PushSealer {
    package let recipient: DevicePublicKey
    /// The sender and second shared secret of version 2 or version 3 mode_auth; `nil` otherwise.
    package let sender: SenderBinding?
    package let version: WireVersion
    private let mode: KindlyPushSealer.Mode
    private let placeholder: KindlyPushSealer.Placeholder
    private let oversize: KindlyPushSealer.Oversize
    /// The platform's budget for the push (wire-format section 9): APNs's 4096 bytes unless given.
    package let maximumPayloadSize: Int
    /// Why nothing can be sealed for this recipient (a version 2 sender key and a low-order
    /// device key: ``KindlyPushSealer/binding(of:for:)``'s error), or `nil`.
    package let refusal: KindlyPushSealer.SealingError?
    private let kid: [UInt8]
    /// The document with empty `epk`, `n` and `ct` (version 3: `enc` and `ct`), and where it is cut.
    private let template: [UInt8]
    /// The members after `kid` and `sid` as the version names them (``EnvelopeRules``): the
    /// text before the ephemeral key's value, before the nonce's (none in version 3), before
    /// the ciphertext's, and the document's end.
    private let keyMember: [UInt8]
    private let nonceMember: [UInt8]?
    private let ciphertextMember: [UInt8]
    /// The length of the template before its members after `kid` and `sid`.
    private let headLength: Int
    /// padded message | sealed message.
    private var buffer: [UInt8] = []
    /// The compact text of a plaintext given in another spelling.
    private var message: [UInt8] = []

    /// What ``seal(plaintext:appendingTo:)`` did; it appends to the output only on `.sealed`.
    package enum Outcome: Sendable, Equatable {
        /// The compact APNs document was appended.
        case sealed
        /// The text is a JSON object that cannot be sealed: the general path's error (the
        /// plaintext breaks section 4, the push would be too large, the recipient's key is refused).
        case failed(KindlyPushSealer.SealingError)
        /// The text is not one JSON document: what ``JSONReader/parse(_:)-(UnsafeRawBufferPointer)`` throws for it.
        case notJSON(JSONReadError)
        /// The text is a JSON document of this type, not an object.
        case notObject(JSONKind)
    }

    package init(
        recipient: DevicePublicKey, sender: SenderBinding? = nil, version: WireVersion? = nil, mode: KindlyPushSealer.Mode = .visible,
        placeholder: KindlyPushSealer.Placeholder = .default, oversize: KindlyPushSealer.Oversize = .refuse,
        refusal: KindlyPushSealer.SealingError? = nil, maximumPayloadSize: Int = WireFormat.maximumPayloadSize
    ) {
        let version = version ?? .default(hasSender: sender != nil)
        precondition(version.allows(sender: sender != nil))
        self.recipient = recipient
        self.sender = sender
        self.version = version
        self.mode = mode
        self.placeholder = placeholder
        self.oversize = oversize
        self.refusal = refusal
        self.maximumPayloadSize = maximumPayloadSize
        self.kid = recipient.kid.bytes
        let empty = SealedEnvelope(
            kid: recipient.kid, senderID: sender?.publicKey.sid, ephemeralPublicKey: [], nonce: [], ciphertext: [], version: version)
        template = JSONWriter.compactBytes(KindlyPushSealer.apnsDocument(empty, mode: mode, placeholder: placeholder))
        let rules = version.rules
        keyMember = Array("\"\(rules.ephemeralKey.name)\":\"".utf8)
        nonceMember = rules.nonce.map { Array(",\"\($0.name)\":\"".utf8) }
        ciphertextMember = Array(",\"\(rules.ciphertext.name)\":\"".utf8)
        // The template's end: those members, empty, and the document's end.
        let tail = keyMember + (nonceMember.map { [0x22] + $0 } ?? []) + [0x22] + ciphertextMember + Array(#""}}"#.utf8)
        precondition(template.count >= tail.count && template.suffix(tail.count).elementsEqual(tail))
        headLength = template.count - tail.count
    }

    /// Zeroes the reused buffers, which hold the last plaintext: for the end of a run.
    package mutating func wipe() {
        buffer.wipeCapacity()
        message.wipeCapacity()
    }

    /// Seals the plaintext whose JSON text is `plaintext` with a fresh ephemeral key and nonce.
    package mutating func seal(plaintext: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) -> Outcome {
        seal(plaintext: plaintext, ephemeralSecretKey: nil, nonce: nil, appendingTo: &output)
    }

    /// The same with a given ephemeral secret key and nonce (for tests; never reuse them). A push
    /// over 4096 bytes, which the general path fits or refuses, gets fresh ones.
    package mutating func seal(
        plaintext: UnsafeRawBufferPointer, ephemeralSecretKey: SecureBytes?, nonce: [UInt8]?, appendingTo output: inout [UInt8]
    ) -> Outcome {
        // A text that fits is written compactly in any spelling, without a tree (the message
        // buffer has room for it: a compact text is never longer); one too long to seal as it is
        // needs its payload whatever its spelling: the tree.
        let parsed: Result<DecryptedPayload, DecryptedPayload.Problem>
        if fits(plaintext.count) {
            message.removeAll(keepingCapacity: true)
            message.reserveCapacity(WireFormat.maximumPayloadSize)
            if let problem = DecryptedPayload.appendCompact(plaintext, to: &message) {
                parsed = .failure(problem)
            } else {
                let message = message
                return message.withUnsafeBytes { compact in
                    refusal.map { .failed($0) }
                        ?? sealMessage(compact, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce, appendingTo: &output)
                }
            }
        } else {
            parsed = DecryptedPayload.parse(plaintext)
        }
        // The general path's order: the input is JSON, then the recipient, then section 4.
        switch (parsed, refusal) {
        case (.failure(.notJSON(let error)), _): return .notJSON(error)
        case (.failure(.notObject(let kind)), _): return .notObject(kind)
        case (_, let refusal?): return .failed(refusal)
        case (.failure(.breaksRule(let error)), nil): return .failed(.invalidPlaintext(error.description))
        case (.success(let payload), nil):
            do throws(KindlyPushSealer.SealingError) {
                try seal(payload, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce, appendingTo: &output)
                return .sealed
            } catch {
                return .failed(error)
            }
        }
    }

    /// Seals a payload (checked against section 4 when it was made) and appends the push: its
    /// compact text, sealed here, or the general path for a push over 4096 bytes.
    ///
    /// - Throws: the general path's error; nothing is appended then.
    package mutating func seal(_ payload: DecryptedPayload, appendingTo output: inout [UInt8]) throws(KindlyPushSealer.SealingError) {
        if let refusal { throw refusal }
        try seal(payload, ephemeralSecretKey: nil, nonce: nil, appendingTo: &output)
    }

    private mutating func seal(
        _ payload: DecryptedPayload, ephemeralSecretKey: SecureBytes?, nonce: [UInt8]?, appendingTo output: inout [UInt8]
    )
        throws(KindlyPushSealer.SealingError)
    {
        // Room for any message that fits, reserved once so that writing it never leaves a copy
        // in a buffer let go (a longer one goes to the general path anyway).
        message.removeAll(keepingCapacity: true)
        message.reserveCapacity(WireFormat.maximumPayloadSize)
        JSONWriter.write(.object(payload.object), to: &message)
        guard fits(message.count) else {
            output += try KindlyPushSealer.seal(
                payload, for: recipient, binding: sender, version: version, mode: mode, placeholder: placeholder, oversize: oversize,
                maximumPayloadSize: maximumPayloadSize)
            return
        }
        let message = message
        let outcome = message.withUnsafeBytes {
            sealMessage($0, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce, appendingTo: &output)
        }
        if case .failed(let error) = outcome { throw error }
    }

    /// Whether the push of a message of `length` bytes is within the budget.
    private func fits(_ length: Int) -> Bool {
        MessageFitting.documentLength(templateLength: template.count, plaintextLength: length, version: version)
            <= maximumPayloadSize
    }

    /// Seals `message`, the compact text of a valid plaintext whose push fits, and appends the push.
    private mutating func sealMessage(
        _ message: UnsafeRawBufferPointer, ephemeralSecretKey: SecureBytes?, nonce: [UInt8]?, appendingTo output: inout [UInt8]
    ) -> Outcome {
        let block = WireFormat.paddingBlockSize
        let paddedLength = (message.count / block + 1) * block
        let sealedLength = paddedLength + XChaCha20Poly1305.tagLength
        if buffer.count < paddedLength + sealedLength {
            // The old buffer holds the last padded plaintext: zeroed before it is let go.
            buffer.wipeCapacity()
            buffer = [UInt8](repeating: 0, count: paddedLength + sealedLength)
        }
        let head = headLength
        return withUnsafeTemporaryAllocation(byteCount: X25519.keyLength * 2 + XChaCha20Poly1305.nonceLength, alignment: 16) { keys in
            // esk | epk | n; the secret key is wiped with the rest.
            defer { SecureBytes.wipeScratch(keys) }
            let esk = UnsafeMutableRawBufferPointer(rebasing: keys[0..<32])
            let epk = UnsafeMutableRawBufferPointer(rebasing: keys[32..<64])
            let nonceBytes = UnsafeMutableRawBufferPointer(rebasing: keys[64...])
            if let ephemeralSecretKey {
                ephemeralSecretKey.withUnsafeBytes { esk.copyMemory(from: $0) }
            } else {
                Sodium.fillRandom(esk)
            }
            if let nonce {
                nonce.withUnsafeBytes { nonceBytes.copyMemory(from: $0) }
            } else {
                Sodium.fillRandom(nonceBytes)
            }
            let sealed = buffer.withUnsafeMutableBytes { buffer -> Result<Int, CryptoError> in
                kid.withUnsafeBytes { kid in
                    Result { () throws(CryptoError) in
                        try KindlyBox.seal(
                            message, for: recipient, kid: kid, sender: sender, version: version,
                            ephemeralSecretKey: UnsafeRawBufferPointer(esk),
                            nonce: UnsafeRawBufferPointer(nonceBytes), ephemeralPublicKey: epk,
                            padded: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<paddedLength]),
                            into: UnsafeMutableRawBufferPointer(rebasing: buffer[paddedLength..<(paddedLength + sealedLength)]))
                    }
                }
            }
            if case .failure(let error) = sealed { return .failed(KindlyPushSealer.SealingError(error)) }
            template.withUnsafeBytes { output.append(contentsOf: $0[0..<head]) }
            output.append(contentsOf: keyMember)
            Base64.appendURLEncoded(UnsafeRawBufferPointer(epk), to: &output)
            if let nonceMember {
                output.append(0x22)
                output.append(contentsOf: nonceMember)
                Base64.appendURLEncoded(UnsafeRawBufferPointer(nonceBytes), to: &output)
            }
            output.append(0x22)
            output.append(contentsOf: ciphertextMember)
            buffer.withUnsafeBytes {
                Base64.appendURLEncoded(UnsafeRawBufferPointer(rebasing: $0[paddedLength..<(paddedLength + sealedLength)]), to: &output)
            }
            output.append(contentsOf: #""}}"#.utf8)
            return .sealed
        }
    }
}

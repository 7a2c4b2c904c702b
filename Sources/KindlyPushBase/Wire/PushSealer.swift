package import KindlyPushCore

/// The fast path of sealing, for streams of plaintexts: the plaintext's JSON text in, the
/// compact APNs document out, with buffers reused from push to push. One per thread.
///
/// A plaintext text that is already what ``JSONWriter`` writes (see
/// ``DecryptedPayload/isCanonicalCompactText(_:)``) is sealed as it is, which is what
/// ``KindlyPushSealer/seal(plaintext:for:mode:placeholder:)`` seals after reading and
/// rewriting it; the document around the envelope fields is cut once from what
/// ``KindlyPushSealer/apnsDocument(_:mode:placeholder:)`` writes, and the cryptography is
/// ``KindlyBox``'s. Anything else (another spelling, a text section 4 refuses, a payload over
/// 4096 bytes) is `.undecided`: the general path seals it or says why not.
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
    /// Seals nothing: every plaintext is left to the general path (which says why), for a
    /// recipient that a version 2 sender key cannot seal for.
    private let refusesAll: Bool
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

    /// What ``seal(plaintext:appendingTo:)`` did.
    package enum Outcome: Sendable, Equatable {
        /// The compact APNs document was appended.
        case sealed
        /// Left to ``KindlyPushSealer/seal(plaintext:for:mode:placeholder:)``; nothing was appended.
        case undecided
    }

    package init(
        recipient: DevicePublicKey, sender: SenderBinding? = nil, version: WireVersion? = nil, mode: KindlyPushSealer.Mode = .visible,
        placeholder: KindlyPushSealer.Placeholder = .default, refusesAll: Bool = false
    ) {
        let version = version ?? .default(hasSender: sender != nil)
        precondition(version.allows(sender: sender != nil))
        self.recipient = recipient
        self.sender = sender
        self.version = version
        self.refusesAll = refusesAll
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

    /// Zeroes the reused buffer, which holds the last padded plaintext: for the end of a run.
    package mutating func wipe() {
        buffer.wipeCapacity()
    }

    /// Seals the plaintext whose JSON text is `plaintext` with a fresh ephemeral key and nonce.
    package mutating func seal(plaintext: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) -> Outcome {
        seal(plaintext: plaintext, ephemeralSecretKey: nil, nonce: nil, appendingTo: &output)
    }

    /// The same with a given ephemeral secret key and nonce (for tests; never reuse them).
    package mutating func seal(
        plaintext: UnsafeRawBufferPointer, ephemeralSecretKey: SecureBytes?, nonce: [UInt8]?, appendingTo output: inout [UInt8]
    ) -> Outcome {
        guard !refusesAll, DecryptedPayload.isCanonicalCompactText(plaintext) else { return .undecided }
        let block = WireFormat.paddingBlockSize
        let paddedLength = (plaintext.count / block + 1) * block
        let sealedLength = paddedLength + XChaCha20Poly1305.tagLength
        let size = template.count + MessageFitting.keyAndNonceLength(version) + Base64.urlEncodedLength(of: sealedLength)
        guard size <= WireFormat.maximumPayloadSize else { return .undecided }
        if buffer.count < paddedLength + sealedLength {
            // The old buffer holds the last padded plaintext: zeroed before it is let go.
            buffer.wipeCapacity()
            buffer = [UInt8](repeating: 0, count: paddedLength + sealedLength)
        }
        let head = headLength
        let start = output.count
        let sealed = withUnsafeTemporaryAllocation(byteCount: X25519.keyLength * 2 + XChaCha20Poly1305.nonceLength, alignment: 16) { keys in
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
            let written = buffer.withUnsafeMutableBytes { buffer -> Int? in
                kid.withUnsafeBytes { kid in
                    try? KindlyBox.seal(
                        plaintext, for: recipient, kid: kid, sender: sender, version: version,
                        ephemeralSecretKey: UnsafeRawBufferPointer(esk),
                        nonce: UnsafeRawBufferPointer(nonceBytes), ephemeralPublicKey: epk,
                        padded: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<paddedLength]),
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[paddedLength..<(paddedLength + sealedLength)]))
                }
            }
            guard written == sealedLength else { return false }
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
            return true
        }
        guard sealed else {
            output.removeSubrange(start...)
            return .undecided
        }
        return .sealed
    }
}

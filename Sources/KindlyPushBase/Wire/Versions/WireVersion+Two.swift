extension EnvelopeRules {
    /// Version 2 (docs/spec/wire-format.md sections 7.2 and 7.3): `kid`, `sid` (required),
    /// `epk`, `n`, `ct`.
    static let two = EnvelopeRules(
        version: .two,
        kid: EnvelopeField(.kid, bytes: 8),
        senderID: EnvelopeField(.senderID, bytes: 8, presence: .required),
        ephemeralKey: EnvelopeField(.ephemeralPublicKey, bytes: 32),
        nonce: EnvelopeField(.nonce, bytes: 24),
        ciphertext: EnvelopeField(.ciphertext, tag: 16, block: 64))
}

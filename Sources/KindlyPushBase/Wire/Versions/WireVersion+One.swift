extension EnvelopeRules {
    /// Version 1 (docs/spec/wire-format.md section 3): `kid`, `epk`, `n`, `ct`; a `sid` member
    /// is ignored, whatever it holds.
    static let one = EnvelopeRules(
        version: .one,
        kid: EnvelopeField(.kid, bytes: 8),
        senderID: EnvelopeField(.senderID, bytes: 8, presence: .ignored),
        ephemeralKey: EnvelopeField(.ephemeralPublicKey, bytes: 32),
        nonce: EnvelopeField(.nonce, bytes: 24),
        ciphertext: EnvelopeField(.ciphertext, tag: 16, block: 64))
}

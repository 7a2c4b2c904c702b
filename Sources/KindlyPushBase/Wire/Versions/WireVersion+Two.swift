extension EnvelopeRules {
    /// Version 2 (docs/spec/wire-format.md sections 7.2 and 7.3): `kid`, `sid` (required),
    /// `epk`, `n`, `ct`.
    static let two = EnvelopeRules(
        version: .two,
        kid: EnvelopeField(KindlyKey.kid, bytes: 8),
        senderID: EnvelopeField(KindlyKey.senderID, bytes: 8, presence: .required),
        ephemeralKey: EnvelopeField(KindlyKey.ephemeralPublicKey, bytes: 32),
        nonce: EnvelopeField(KindlyKey.nonce, bytes: 24),
        ciphertext: EnvelopeField(KindlyKey.ciphertext, tag: 16, block: 64))
}

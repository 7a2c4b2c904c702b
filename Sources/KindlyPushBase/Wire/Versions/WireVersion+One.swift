extension EnvelopeRules {
    /// Version 1 (docs/spec/wire-format.md section 3): `kid`, `epk`, `n`, `ct`; a `sid` member
    /// is ignored, whatever it holds.
    static let one = EnvelopeRules(
        version: .one,
        kid: EnvelopeField(KindlyKey.kid, bytes: 8),
        senderID: EnvelopeField(KindlyKey.senderID, bytes: 8, presence: .ignored),
        ephemeralKey: EnvelopeField(KindlyKey.ephemeralPublicKey, bytes: 32),
        nonce: EnvelopeField(KindlyKey.nonce, bytes: 24),
        ciphertext: EnvelopeField(KindlyKey.ciphertext, tag: 16, block: 64))
}

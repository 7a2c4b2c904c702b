extension EnvelopeRules {
    /// Version 3, HPKE (docs/spec/wire-format.md sections 8.1 and 8.2): `kid`, `sid` (optional:
    /// present, it selects mode_auth), `enc`, `ct`; no `n` (HPKE derives the nonce).
    static let three = EnvelopeRules(
        version: .three,
        kid: EnvelopeField(.kid, bytes: 8),
        senderID: EnvelopeField(.senderID, bytes: 8, presence: .optional),
        ephemeralKey: EnvelopeField(.encapsulatedKey, bytes: 32),
        nonce: nil,
        ciphertext: EnvelopeField(.ciphertext, tag: 16, block: 64))
}

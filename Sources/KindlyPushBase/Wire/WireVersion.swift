internal import KindlyPushCore

/// A version of the Kindly wire format: how a push is sealed, and what its `kindly` envelope holds.
///
/// | version | construction | sender | envelope |
/// | --- | --- | --- | --- |
/// | ``one`` | X25519, BLAKE2b, XChaCha20-Poly1305 (section 2) | anybody | `kid`, `epk`, `n`, `ct` |
/// | ``two`` | the same with a sender key (section 7.2) | a pinned sender | `kid`, `sid`, `epk`, `n`, `ct` |
/// | ``three`` | standard HPKE, RFC 9180 (section 8) | mode_base: anybody; mode_auth (with `sid`): a pinned sender | `kid`, `sid` (mode_auth), `enc`, `ct` |
///
/// A reader reads all three with one ``KindlyPushDecryption/decryptResult(userInfo:)-(JSONValue)``; the
/// sealer writes the one its caller names (``KindlyPushSealer/seal(_:for:wire:from:mode:placeholder:)``).
/// Version 3 is the one any platform's own HPKE opens (Apple CryptoKit's `HPKE.Recipient` with
/// `Curve25519_SHA256_ChachaPoly`, Tink, BoringSSL, Go, pyhpke).
public enum WireVersion: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Version 1: anybody who knows the device key can seal (section 2).
    case one = 1
    /// Version 2: proves its sender, with this page's own key derivation (section 7).
    case two = 2
    /// Version 3: standard HPKE, mode_base without a sender key and mode_auth with one (section 8).
    case three = 3

    /// The version a seal with or without a sender key writes by default: 2 with one, 1 without.
    public static func `default`(hasSender: Bool) -> WireVersion { hasSender ? .two : .one }

    /// `1`, `2` or `3`.
    public var description: String { String(rawValue) }

    /// The envelope member holding the ephemeral public key: `epk`, or HPKE's `enc` in version 3.
    package var ephemeralKeyName: String { rules.ephemeralKey.name }

    /// Whether the envelope carries a nonce `n` (versions 1 and 2; HPKE derives version 3's).
    package var hasNonce: Bool { rules.nonce != nil }

    /// The length of the nonce `n` in the envelope: 24, or 0 in version 3.
    package var nonceLength: Int { rules.nonce?.byteCount ?? 0 }

    /// What the version makes of a `sid` member (sections 7.3 and 8.2).
    package typealias SenderIDRule = EnvelopeField.Presence

    /// How the version reads `sid`.
    package var senderIDRule: SenderIDRule { rules.senderID.presence }

    /// Whether a push of this version with (`true`) or without a sender key is a valid combination.
    package func allows(sender: Bool) -> Bool {
        switch senderIDRule {
        case .ignored: return !sender
        case .required: return sender
        case .optional: return true
        }
    }
}

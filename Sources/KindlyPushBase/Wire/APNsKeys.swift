internal import KindlyPushCore

/// Every APNs and Kindly member name the library reads or writes, in one place.
package enum APNsKey {
    package static let aps = "aps"
    package static let alert = "alert"
    package static let title = "title"
    package static let subtitle = "subtitle"
    package static let body = "body"
    package static let sound = "sound"
    package static let badge = "badge"
    package static let threadID = "thread-id"
    package static let category = "category"
    package static let mutableContent = "mutable-content"
    package static let contentAvailable = "content-available"
}

/// Member names of the `kindly` envelope (docs/spec/wire-format.md section 3) and of the plaintext (section 4).
package enum KindlyKey {
    package static let envelope = "kindly"
    package static let version = "v"
    package static let kid = "kid"
    /// The sender key's id (version 2, docs/spec/wire-format.md section 7.2).
    package static let senderID = "sid"
    package static let ephemeralPublicKey = "epk"
    /// HPKE's encapsulated key, the ephemeral public key of version 3 (section 8.1).
    package static let encapsulatedKey = "enc"
    package static let nonce = "n"
    package static let ciphertext = "ct"
    package static let decrypted = "decrypted"
    package static let chatID = "chat_id"
    package static let title = "title"
    package static let body = "body"
    package static let messageID = "message_id"
    package static let sentAt = "sent_at"
    package static let truncated = "truncated"
}

/// Constants of the wire format (versions 1, 2 and 3).
package enum WireFormat {
    /// `kindly-push/v1`, the domain-separation label in the key derivation and the associated data.
    /// The labels are static strings, constants in the binary: no lazy start and no reference
    /// count on every push's way through them (``bytes(_:)`` reads one).
    package static let label: StaticString = "kindly-push/v1"
    /// `kindly-push/v2`, the same for version 2 (section 7).
    package static let label2: StaticString = "kindly-push/v2"
    /// `kindly-push/v3`, version 3's HPKE `info` and the start of its associated data (section 8.1).
    package static let label3: StaticString = "kindly-push/v3"

    /// A label's UTF-8 bytes, where the binary holds them.
    package static func bytes(_ label: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: label.utf8Start, count: label.utf8CodeUnitCount)
    }
    /// The plaintext is padded to a multiple of this many bytes.
    package static let paddingBlockSize = 64
    /// Apple's limit for the whole payload, measured as `seal` writes it.
    package static let maximumPayloadSize = 4096
    /// The largest input document the reader accepts (docs/spec/streams.md: "over 64 KiB" is `bad_input`).
    package static let maximumInputSize = 64 * 1024
    /// `sent_at` is at most 2^53 − 1, so that every JSON reader holds it exactly.
    package static let maximumSentAt: Int64 = (1 << 53) - 1
    /// The smallest sealed message: one padded block and the tag.
    package static let minimumCiphertextLength = paddingBlockSize + XChaCha20Poly1305.tagLength
}

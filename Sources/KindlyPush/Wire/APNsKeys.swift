/// Every APNs and Kindly member name the library reads or writes, in one place.
enum APNsKey {
    static let aps = "aps"
    static let alert = "alert"
    static let title = "title"
    static let subtitle = "subtitle"
    static let body = "body"
    static let sound = "sound"
    static let badge = "badge"
    static let threadID = "thread-id"
    static let category = "category"
    static let mutableContent = "mutable-content"
    static let contentAvailable = "content-available"
}

/// Member names of the `kindly` envelope (wire format section 3) and of the plaintext (section 4).
enum KindlyKey {
    static let envelope = "kindly"
    static let version = "v"
    static let kid = "kid"
    static let ephemeralPublicKey = "epk"
    static let nonce = "n"
    static let ciphertext = "ct"
    static let decrypted = "decrypted"
    static let chatID = "chat_id"
    static let title = "title"
    static let body = "body"
    static let messageID = "message_id"
    static let sentAt = "sent_at"
}

/// Constants of wire format version 1.
public enum WireFormat {
    /// `kindly-push/v1`, the domain-separation label in the key derivation and the associated data.
    public static let label: [UInt8] = Array("kindly-push/v1".utf8)
    /// The plaintext is padded to a multiple of this many bytes.
    public static let paddingBlockSize = 64
    /// Apple's limit for the whole payload, measured as `seal` writes it.
    public static let maximumPayloadSize = 4096
    /// The largest input document the reader accepts (cli.md: "over 64 KiB" is `bad_input`).
    public static let maximumInputSize = 64 * 1024
    /// `sent_at` is at most 2^53 − 1, so that every JSON reader holds it exactly.
    public static let maximumSentAt: Int64 = (1 << 53) - 1
    /// The smallest sealed message: one padded block and the tag.
    public static let minimumCiphertextLength = paddingBlockSize + XChaCha20Poly1305.tagLength
}

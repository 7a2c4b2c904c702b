internal import KindlyPushCore

/// The headers wire-format section 9.4 derives from a push's delivery fields: `TTL`, `Urgency`
/// and `Topic`.
package enum WebPushHeaders {
    /// `TTL` when the push has no expiration: 28 days.
    package static let defaultTTL = 2_419_200
    /// The longest `Topic` (RFC 8030, section 5.4).
    package static let maximumTopicLength = 32

    /// `TTL`: the seconds from `now` to `expiration` (at least 0), else ``defaultTTL``.
    package static func ttl(expiration: Int?, now: Int) -> Int {
        expiration.map { max(0, $0 - now) } ?? defaultTTL
    }

    /// `Urgency`: `high` for priority 10, `normal` for 5.
    package static func urgency(priority: Int) -> String { priority >= 10 ? "high" : "normal" }

    /// `Topic`: the collapse id when it is 1 to 32 characters of the base64url alphabet,
    /// else the first 32 characters of the unpadded base64url of its SHA-256.
    package static func topic(collapseID: String) -> String {
        let utf8 = collapseID.utf8
        if (1...maximumTopicLength).contains(utf8.count), utf8.allSatisfy(isBase64URLByte) { return collapseID }
        let digest = Array(utf8).withUnsafeBytes { SHA256Digest.digest($0) }
        return String(Base64.urlEncoded(digest).prefix(maximumTopicLength))
    }

    private static func isBase64URLByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }
}

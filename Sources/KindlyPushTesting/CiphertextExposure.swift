public import KindlyPush
internal import KindlyPushCore

/// Checks display-rules.md's "ciphertext is never shown" on what a host shows: whether any text
/// holds 12 bytes in a row of a push's ciphertext, as the envelope's base64url text or as the
/// bytes it decodes to.
///
/// ```swift
/// let shown = [content.title, content.subtitle, content.body]
/// #expect(!CiphertextExposure.exposes(shown, ciphertextOf: push))
/// ```
public enum CiphertextExposure {
    /// How many bytes in a row count as shown: long enough that a title cannot hold them by
    /// chance, short enough that a banner cut to its width still would.
    public static let windowLength = 12

    /// Whether a text of `shown` holds ``windowLength`` bytes in a row of the `ct` of `push`'s
    /// `kindly` envelope (its text, or the bytes it decodes to); `false` for a push without one.
    public static func exposes(_ shown: [String], ciphertextOf push: JSONValue) -> Bool {
        guard let ct = push.objectValue?["kindly"]?.objectValue?["ct"]?.stringValue else { return false }
        return exposes(shown, ciphertext: ct)
    }

    /// Whether a text of `shown` holds ``windowLength`` bytes in a row of `ct` (a base64url text)
    /// or of the bytes it decodes to.
    public static func exposes(_ shown: [String], ciphertext ct: String) -> Bool {
        let raw = (try? Base64.decode(ct)) ?? []
        let secret = Set(windows(of: Array(ct.utf8)) + windows(of: raw))
        return shown.contains { text in windows(of: Array(text.utf8)).contains { secret.contains($0) } }
    }

    /// ``windowLength`` bytes, held without an allocation of their own: the first eight in
    /// `head`, the next four in `tail` (little-endian: byte `i` in bits `8 i`), zero past `count`.
    private struct Window: Hashable {
        let head: UInt64
        let tail: UInt32
        let count: Int
    }

    /// Every run of ``windowLength`` bytes in `bytes` (all of it, zero-padded, when shorter): two
    /// loads a window, so that a vector's thousands of windows cost little even in a sanitized
    /// build.
    private static func windows(of bytes: [UInt8]) -> [Window] {
        guard !bytes.isEmpty else { return [] }
        let count = min(bytes.count, windowLength)
        let padded = bytes.count < windowLength ? bytes + [UInt8](repeating: 0, count: windowLength - bytes.count) : bytes
        return padded.withUnsafeBytes { raw in
            (0...(raw.count - windowLength)).map { start in
                Window(
                    head: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: start, as: UInt64.self)),
                    tail: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start + 8, as: UInt32.self)), count: count)
            }
        }
    }
}

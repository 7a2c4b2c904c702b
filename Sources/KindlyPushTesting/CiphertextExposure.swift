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

    /// ``windowLength`` bytes, held without an allocation of their own.
    private struct Window: Hashable {
        let head: UInt64
        let tail: UInt32
        let count: Int
    }

    /// Every run of ``windowLength`` bytes in `bytes` (all of it when shorter).
    private static func windows(of bytes: [UInt8]) -> [Window] {
        func window(_ slice: ArraySlice<UInt8>) -> Window {
            var head: UInt64 = 0
            var tail: UInt32 = 0
            var index = 0
            for byte in slice {
                if index < 8 { head |= UInt64(byte) << (8 * UInt64(index)) } else { tail |= UInt32(byte) << (8 * UInt32(index - 8)) }
                index += 1
            }
            return Window(head: head, tail: tail, count: slice.count)
        }
        guard bytes.count > windowLength else { return bytes.isEmpty ? [] : [window(bytes[...])] }
        return (0...(bytes.count - windowLength)).map { window(bytes[$0..<($0 + windowLength)]) }
    }
}

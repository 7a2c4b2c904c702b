import FuzzSupport
import KindlyPush
import KindlyPushCore

/// Canonical base64 decoding (`Base64.decode`, `Base64.decodeSecret`) and base64url encoding.
///
/// Invariants: the decoder accepts exactly what an independent reference decoder of wire-format
/// section 3 accepts, with the same bytes; accepted text is the one canonical spelling for its
/// alphabet and padding (so re-encoding it as base64url gives the text back, modulo alphabet
/// and padding), its length matches the decoded length, and the other spellings decode alike;
/// and any bytes round-trip through base64url.
enum Base64Target {
    static func check(_ input: UnsafeRawBufferPointer) {
        let text = Array(input)
        let expected = referenceDecode(text)
        let decoded = try? Base64.decode(input)
        require(decoded == expected, "decode gives \(show(decoded)), the reference \(show(expected))")
        let secret = (try? Base64.decodeSecret(input))?.withUnsafeBytes { Array($0) }
        require(secret == expected, "decodeSecret gives \(show(secret)), the reference \(show(expected))")

        if let decoded {
            let padding = text.reversed().prefix { $0 == UInt8(ascii: "=") }.count
            require(
                Base64.urlEncodedLength(of: decoded.count) == text.count - padding, "\(text.count) characters for \(decoded.count) bytes")
            // The only spelling of these bytes, once the alphabet and the padding are normalized.
            let url = Base64.urlEncoded(decoded)
            let normalized = text.dropLast(padding).map { byte -> UInt8 in
                switch byte {
                case UInt8(ascii: "+"): return UInt8(ascii: "-")
                case UInt8(ascii: "/"): return UInt8(ascii: "_")
                default: return byte
                }
            }
            require(Array(url.utf8) == normalized, "accepted a non-canonical spelling")
            require((try? Base64.decode(String(decoding: text, as: UTF8.self))) == decoded, "the String entry point disagrees")
            // Standard alphabet with padding, the other spelling every reader must accept.
            var standard = Array(url.utf8).map { byte -> UInt8 in
                switch byte {
                case UInt8(ascii: "-"): return UInt8(ascii: "+")
                case UInt8(ascii: "_"): return UInt8(ascii: "/")
                default: return byte
                }
            }
            while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
            require(
                (try? standard.withUnsafeBytes { try Base64.decode($0) }) == decoded, "the padded standard spelling does not decode alike")
        }

        // Encoding: any bytes round-trip through unpadded base64url.
        let encoded = Base64.urlEncodedBytes(input)
        require(encoded.count == Base64.urlEncodedLength(of: input.count), "urlEncodedBytes has the wrong length")
        require(encoded.allSatisfy { urlAlphabet.contains($0) }, "urlEncodedBytes writes a character outside base64url")
        require(Base64.urlEncoded(input).utf8.elementsEqual(encoded), "urlEncoded and urlEncodedBytes differ")
        require((try? encoded.withUnsafeBytes { try Base64.decode($0) }) == text, "bytes do not round-trip through base64url")
    }

    static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Wire-format section 3, written from RFC 4648 independently of the library: one alphabet
    /// throughout, padding absent or exactly RFC 4648's, nothing else, zero trailing bits.
    static func referenceDecode(_ text: [UInt8]) -> [UInt8]? {
        var body = text[...]
        var padding = 0
        while body.last == UInt8(ascii: "=") {
            body.removeLast()
            padding += 1
        }
        if padding > 2 || (padding > 0 && body.count % 4 + padding != 4) { return nil }
        var usesStandard = false
        var usesURL = false
        var values: [UInt32] = []
        for byte in body {
            if let index = standardAlphabet.firstIndex(of: byte) {
                values.append(UInt32(index))
                if index >= 62 { usesStandard = true }
            } else if let index = urlAlphabet.firstIndex(of: byte) {
                values.append(UInt32(index))
                usesURL = true
            } else {
                return nil
            }
        }
        if usesStandard && usesURL { return nil }
        if values.count % 4 == 1 { return nil }
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for value in values {
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        return buffer == 0 ? output : nil
    }

    static func show(_ bytes: [UInt8]?) -> String {
        bytes.map { "\($0.count) bytes \($0.prefix(16))" } ?? "a refusal"
    }
}

internal import CVectorText

/// Base64 as the wire format uses it (RFC 4648).
///
/// Writing is always base64url without padding. Reading accepts base64url and standard
/// base64, padded or not, but only in the canonical form: one alphabet throughout, padding
/// absent or exactly RFC 4648's, no whitespace, and zero trailing bits (section 3.5), so that
/// a value has one spelling per alphabet and padding choice and two readers never disagree.
package enum Base64 {
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The decoded length of canonical base64 text with `count` characters, or `nil` when no
    /// canonical text has that length.
    package static func decodedLength(ofTextWithCount count: Int, padding: Int) -> Int? {
        let dataCount = count - padding
        switch (dataCount % 4, padding) {
        case (0, 0): return dataCount / 4 * 3
        case (2, 0), (2, 2): return dataCount / 4 * 3 + 1
        case (3, 0), (3, 1): return dataCount / 4 * 3 + 2
        default: return nil
        }
    }

    /// base64url without padding.
    package static func urlEncoded(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: urlEncodedBytes(bytes), as: UTF8.self)
    }

    /// base64url without padding.
    package static func urlEncoded(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { urlEncoded($0) }
    }

    /// base64url without padding, as UTF-8 bytes.
    package static func urlEncodedBytes(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let length = urlEncodedLength(of: bytes.count)
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            urlEncode(bytes, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = length
        }
    }

    /// The length of the unpadded base64url text of `count` bytes.
    package static func urlEncodedLength(of count: Int) -> Int {
        (count * 4 + 2) / 3
    }

    /// Writes the unpadded base64url text of `bytes` into `output` (``urlEncodedLength(of:)`` bytes),
    /// so that a secret can be encoded into a secure buffer without passing through a `String`.
    package static func urlEncode(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count >= urlEncodedLength(of: bytes.count))
        urlAlphabet.withUnsafeBufferPointer { alphabet in
            var index = 0
            var out = 0
            func emit(_ chunk: UInt32, _ shift: UInt32) {
                output[out] = alphabet[Int(chunk >> shift & 63)]
                out += 1
            }
            while index + 3 <= bytes.count {
                let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                emit(chunk, 18)
                emit(chunk, 12)
                emit(chunk, 6)
                emit(chunk, 0)
                index += 3
            }
            switch bytes.count - index {
            case 1:
                let chunk = UInt32(bytes[index]) << 16
                emit(chunk, 18)
                emit(chunk, 12)
            case 2:
                let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                emit(chunk, 18)
                emit(chunk, 12)
                emit(chunk, 6)
            default: break
            }
        }
    }

    /// Appends the unpadded base64url text of `bytes` to `output`.
    package static func appendURLEncoded(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        let start = output.count
        let length = urlEncodedLength(of: bytes.count)
        output.append(contentsOf: repeatElement(0, count: length))
        output.withUnsafeMutableBytes { urlEncode(bytes, into: UnsafeMutableRawBufferPointer(rebasing: $0[start..<(start + length)])) }
    }

    /// Why a text is not canonical base64. Carries no part of the text: it may be a secret.
    package enum DecodingError: Error, Sendable, Equatable, CustomStringConvertible {
        case invalidCharacter(offset: Int)
        case mixedAlphabets
        case invalidLength
        case invalidPadding
        case nonZeroTrailingBits

        package var description: String {
            switch self {
            case .invalidCharacter(let offset): return "not a base64 character at offset \(offset)"
            case .mixedAlphabets: return "mixes the standard and URL-safe alphabets"
            case .invalidLength: return "has a length no base64 text has"
            case .invalidPadding: return "has wrong padding"
            case .nonZeroTrailingBits: return "has non-zero trailing bits"
            }
        }
    }

    /// Decodes canonical base64 or base64url.
    package static func decode(_ text: String) throws(DecodingError) -> [UInt8] {
        try text.withUTF8Bytes { (utf8) throws(DecodingError) in try decode(utf8) }
    }

    /// Decodes canonical base64 or base64url from UTF-8 bytes.
    package static func decode(_ text: UnsafeRawBufferPointer) throws(DecodingError) -> [UInt8] {
        // Room for the longest text of this length; trimmed to what was decoded.
        var bytes = [UInt8](repeating: 0, count: text.count / 4 * 3 + 3)
        let length = try bytes.withMutableBytes { (buffer) throws(DecodingError) in try decode(text, into: buffer) }
        bytes.removeSubrange(min(length, bytes.count)...)
        return bytes
    }

    /// Decodes canonical base64 or base64url into `output` and returns the decoded length.
    /// Allocates nothing. When the decoded length is more than `output.count`, nothing is
    /// written and that length is returned: callers compare it with the length they expect.
    ///
    /// One decoding loop (``quickDecode(_:into:)``); when it refuses a text,
    /// ``validatedDecodedLength(_:)`` says why, and what it does not check (the trailing bits) is
    /// then the reason.
    package static func decode(_ text: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(DecodingError) -> Int {
        if let length = quickDecode(text, into: output) { return length }
        let length = try validatedDecodedLength(text)
        guard length <= output.count else { return length }
        throw .nonZeroTrailingBits
    }

    /// Per byte: its sextet, with 0x40 for a character of the standard alphabet only (`+`, `/`),
    /// 0x80 for one of the URL-safe alphabet only (`-`, `_`), and 0xFF (both) for anything else.
    private static let decodingTable: [UInt8] = (0...255).map { (byte: Int) -> UInt8 in
        switch UInt8(byte) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt8(byte) - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt8(byte) - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt8(byte) - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62 | 0x40
        case UInt8(ascii: "/"): return 63 | 0x40
        case UInt8(ascii: "-"): return 62 | 0x80
        case UInt8(ascii: "_"): return 63 | 0x80
        default: return 0xFF
        }
    }

    /// ``decodingTable`` spread for the four places of a group: at place `p` a character's sextet
    /// shifted to bits `18 - 6p`, and its alphabet flags in bits 30 (standard only) and 31
    /// (URL-safe only, both for anything else), so that a group of four decodes with four look-ups
    /// and three ORs.
    private static let groupTables: [UInt32] = (0..<4).flatMap { (place: Int) -> [UInt32] in
        decodingTable.map { entry in
            UInt32(entry & 0x3F) << (18 - 6 * place) | UInt32(entry & 0xC0) << 24
        }
    }

    /// The decoding of canonical text in one table-driven pass; `nil` for any text that is not
    /// canonical, or when `output` is too small. It refuses exactly what
    /// ``validatedDecodedLength(_:)`` refuses, and also non-zero trailing bits. Writes nothing past
    /// the decoded length.
    package static func quickDecode(_ text: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        guard let input = text.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return text.isEmpty ? 0 : nil }
        var padding = 0
        while padding < text.count, padding < 3, input[text.count - 1 - padding] == UInt8(ascii: "=") { padding += 1 }
        if padding > 0, text.count % 4 != 0 { return nil }
        guard let length = decodedLength(ofTextWithCount: text.count, padding: padding), output.count >= length else { return nil }
        let dataCount = text.count - padding
        let out = output.baseAddress!
        return groupTables.withUnsafeBufferPointer { tables -> Int? in
            let places = tables.baseAddress!
            /// The group of up to four characters at `offset` (`count` of them): its bytes in bits
            /// 16–23, 8–15 and 0–7, its alphabet flags in bits 30 and 31.
            @inline(__always) func group(at offset: Int, count: Int = 4) -> UInt32 {
                var chunk = places[Int(input[offset])] | places[256 + Int(input[offset + 1])]
                if count > 2 { chunk |= places[512 + Int(input[offset + 2])] }
                if count > 3 { chunk |= places[768 + Int(input[offset + 3])] }
                return chunk
            }
            // Sixteen characters at a time where the CPU can (SSSE3), with the alphabets they
            // held as the group flags.
            var alphabets: UInt32 = 0
            var inIndex = kp_base64_decode_blocks(input, dataCount, out.assumingMemoryBound(to: UInt8.self), length, &alphabets)
            var groupsSeen = alphabets << 30
            var outIndex = inIndex / 4 * 3
            // Two groups at a time while their six bytes and two more are within the decoded
            // length: one eight-byte store, whose last two bytes the next step writes again.
            while inIndex + 8 <= dataCount, outIndex + 8 <= length {
                let first = group(at: inIndex)
                let second = group(at: inIndex + 4)
                groupsSeen |= first | second
                let word = UInt64(first & 0xFF_FFFF) << 40 | UInt64(second & 0xFF_FFFF) << 16
                (out + outIndex).storeBytes(of: word.bigEndian, as: UInt64.self)
                inIndex += 8
                outIndex += 6
            }
            while inIndex + 4 <= dataCount {
                let chunk = group(at: inIndex)
                groupsSeen |= chunk
                out.storeBytes(of: UInt8(truncatingIfNeeded: chunk >> 16), toByteOffset: outIndex, as: UInt8.self)
                out.storeBytes(of: UInt8(truncatingIfNeeded: chunk >> 8), toByteOffset: outIndex + 1, as: UInt8.self)
                out.storeBytes(of: UInt8(truncatingIfNeeded: chunk), toByteOffset: outIndex + 2, as: UInt8.self)
                inIndex += 4
                outIndex += 3
            }
            // The last two or three characters: one or two bytes, and bits that must be zero.
            switch dataCount - inIndex {
            case 2:
                let chunk = group(at: inIndex, count: 2)
                guard chunk & 0xF000 == 0 else { return nil }
                groupsSeen |= chunk
                out.storeBytes(of: UInt8(truncatingIfNeeded: chunk >> 16), toByteOffset: outIndex, as: UInt8.self)
            case 3:
                let chunk = group(at: inIndex, count: 3)
                guard chunk & 0xC0 == 0 else { return nil }
                groupsSeen |= chunk
                out.storeBytes(of: UInt8(truncatingIfNeeded: chunk >> 16), toByteOffset: outIndex, as: UInt8.self)
                out.storeBytes(of: UInt8(truncatingIfNeeded: chunk >> 8), toByteOffset: outIndex + 1, as: UInt8.self)
            default: break
            }
            // An invalid byte sets both flags; so do the two alphabets mixed.
            return groupsSeen >> 30 == 3 ? nil : length
        }
    }

    /// Decodes canonical base64 straight into a secure buffer, for secret keys read from files.
    package static func decodeSecret(_ text: UnsafeRawBufferPointer) throws(DecodingError) -> SecureBytes {
        let length = try validatedDecodedLength(text)
        return try SecureBytes(count: length) { (buffer) throws(DecodingError) in _ = try decode(text, into: buffer) }
    }

    /// The decoded length after checking length, padding and alphabet.
    package static func validatedDecodedLength(_ text: UnsafeRawBufferPointer) throws(DecodingError) -> Int {
        var padding = 0
        while padding < text.count, padding < 3, text[text.count - 1 - padding] == UInt8(ascii: "=") { padding += 1 }
        var sawStandard = false
        var sawURL = false
        for offset in 0..<(text.count - padding) {
            switch text[offset] {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                continue
            case UInt8(ascii: "+"), UInt8(ascii: "/"): sawStandard = true
            case UInt8(ascii: "-"), UInt8(ascii: "_"): sawURL = true
            case UInt8(ascii: "="): throw .invalidPadding
            default: throw .invalidCharacter(offset: offset)
            }
        }
        guard !(sawStandard && sawURL) else { throw .mixedAlphabets }
        if padding > 0 {
            guard text.count % 4 == 0 else { throw .invalidPadding }
        }
        guard let length = decodedLength(ofTextWithCount: text.count, padding: padding) else {
            throw (text.count - padding) % 4 == 1 ? .invalidLength : .invalidPadding
        }
        return length
    }
}

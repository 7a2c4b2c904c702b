import KindlyPush
import KindlyPushCore
import Testing

@Suite("Canonical base64", .offThePool)
struct Base64Tests {
    @Test(
        "accepts both alphabets, padded or not",
        arguments: [
            ("+/+/", [0xFB, 0xFF, 0xBF]), ("-_-_", [0xFB, 0xFF, 0xBF]), ("AA", [0]), ("AA==", [0]), ("AAE", [0, 1]), ("AAE=", [0, 1]),
            ("", []), ("_w", [0xFF]), ("/w==", [0xFF]),
            // 32 characters (24 bytes): the vector loop's blocks (sixteen characters, when
            // sixteen bytes of room are left), then the other loop.
            (String(repeating: "A", count: 28) + "+AAA", [UInt8](repeating: 0, count: 21) + [0xF8, 0, 0]),
            (String(repeating: "A", count: 28) + "-AAA", [UInt8](repeating: 0, count: 21) + [0xF8, 0, 0]),
            (
                "AAAAAAAAAAAAAA_A" + String(repeating: "A", count: 12) + "-AAA",
                [UInt8](repeating: 0, count: 10) + [0x0F, 0xC0] + [UInt8](repeating: 0, count: 9) + [0xF8, 0, 0]
            ),
        ] as [(String, [UInt8])])
    func acceptsCanonical(_ text: String, _ expected: [UInt8]) throws {
        #expect(try Base64.decode(text) == expected)
    }

    @Test(
        "refuses every non-canonical spelling",
        arguments: [
            ("+/-_", Base64.DecodingError.mixedAlphabets), ("AB", .nonZeroTrailingBits), ("AAF", .nonZeroTrailingBits),
            ("A", .invalidLength), ("AAAAA", .invalidLength), ("AA=", .invalidPadding), ("AA===", .invalidPadding),
            ("AAA==", .invalidPadding), ("AAAA=", .invalidPadding), ("A=AA", .invalidPadding), ("AA AA", .invalidCharacter(offset: 2)),
            ("AAAA\n", .invalidCharacter(offset: 4)), ("AA.A", .invalidCharacter(offset: 2)),
            // A block of the vector loop held `-` or `_`, the rest `+` or `/`: two alphabets.
            ("AAAAAAAAAAAAAA-AAAAAAAAAAAAA+AAA", .mixedAlphabets), ("AAAAAAAAAAAAAAA_AAAAAAAAAAAAAAA/", .mixedAlphabets),
            ("AAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAA", .invalidCharacter(offset: 15)),
        ])
    func refusesNonCanonical(_ text: String, _ error: Base64.DecodingError) {
        #expect(throws: error) { try Base64.decode(text) }
    }

    @Test("round-trips every length with base64url and no padding", arguments: 0..<70)
    func roundTrips(_ length: Int) throws {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let text = Base64.urlEncoded(bytes)
        #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
        #expect(try Base64.decode(text) == bytes)
    }
}

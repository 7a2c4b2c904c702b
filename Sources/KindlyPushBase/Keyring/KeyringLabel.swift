/// The rule for a key's label (`keygen --label`, any keyring's `store`): at most
/// ``maximumLength`` characters (Unicode scalars), and no control character, line or paragraph
/// separator or bidirectional formatting character, so that a label fits every keyring's limits
/// and prints as one harmless line.
package enum KeyringLabel {
    package static let maximumLength = 256

    /// Why `label` is refused, or `nil` when it is fine. Never quotes the label.
    package static func problem(with label: String) -> String? {
        var count = 0
        for scalar in label.unicodeScalars {
            count += 1
            if count > maximumLength { return "a label is at most \(maximumLength) characters" }
            if isRefused(scalar) {
                return "a label cannot hold control characters (U+\(String(scalar.value, radix: 16, uppercase: true)))"
            }
        }
        return nil
    }

    private static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029: return true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}

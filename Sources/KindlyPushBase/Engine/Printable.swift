/// The one escaping function for text that reaches a terminal: every error and note line goes
/// through it (``Diagnostics``), and so do the paths that `verify` prints. Text from outside the
/// program (a D-Bus error message, a path from the command line or the environment, a label) may
/// hold a line break, an ANSI escape sequence or a bidirectional override; here each becomes
/// printable characters, so an error is always one line and never drives the terminal.
package enum Printable {
    /// `text` with every control character (C0, DEL, C1), line or paragraph separator and
    /// bidirectional formatting character written as an escape: `\n`, `\r`, `\t`, `\xHH` for the
    /// other C0 characters and DEL, `\u{HHHH}` for the rest. Everything else is kept as it is.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                let hex = String(scalar.value, radix: 16)
                if scalar.value < 0x80 {
                    result += "\\x" + (hex.count < 2 ? "0" : "") + hex
                } else {
                    result += "\\u{" + hex + "}"
                }
            }
        }
        return result
    }

    package static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        // Line and paragraph separators.
        case 0x2028, 0x2029: return true
        // Bidirectional marks, embeddings, overrides and isolates ("Trojan Source").
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}

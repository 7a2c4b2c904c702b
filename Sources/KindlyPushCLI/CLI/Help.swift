internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Help text in swift-argument-parser's layout (OVERVIEW, USAGE, OPTIONS, SUBCOMMANDS), derived
/// from the commands' declarations and wrapped to the terminal's width.
package enum Help {
    package static let overview = "Detect, decrypt and route end-to-end-encrypted Kindly push notifications."

    /// The column where option help starts.
    package static let helpColumn = 26

    /// The width to wrap to: `$COLUMNS` when it is a number, else the width of the terminal on
    /// standard output, else 80 (a pipe or a file).
    package static func width(environment: CommandEnvironment) -> Int {
        if let text = environment["COLUMNS"], let columns = Int(text), columns > 0 { return max(columns, 40) }
        var size = winsize()
        if isatty(STDOUT_FILENO) == 1, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return max(Int(size.ws_col), 40)
        }
        return 80
    }

    package static func root(_ commands: [any Command.Type], width: Int = 80) -> String {
        var text = wrap("OVERVIEW: " + overview, width: width, indent: 0) + "\n"
        text += "USAGE: kindly-push <subcommand> [<options>]\n\n"
        text += "OPTIONS:\n" + row("--version", "Show the version.", width: width)
        text += row("-h, --help", "Show help information.", width: width) + "\n"
        text += "SUBCOMMANDS:\n"
        for command in commands { text += row(command.name, command.abstract, width: width) }
        text += "\n" + wrap("  See 'kindly-push help <subcommand>' for detailed help.", width: width, indent: 2)
        return text
    }

    package static func command(_ command: any Command.Type, width: Int = 80) -> String {
        var text = wrap("OVERVIEW: " + command.abstract, width: width, indent: 0)
        if !command.discussion.isEmpty { text += "\n" + paragraphs(command.discussion, width: width) }
        text += "\n" + usage(command, width: width) + "\nOPTIONS:\n"
        for option in command.options {
            text += row(option.label, option.help, width: width)
        }
        return text
    }

    /// `USAGE: kindly-push NAME SYNOPSIS`, one line per form, wrapped with the continuation
    /// under the first option.
    package static func usage(_ command: any Command.Type, width: Int = 80) -> String {
        var text = ""
        for (index, form) in command.synopses.enumerated() {
            let lead = index == 0 ? "USAGE: " : "       "
            text += wrap(lead + "kindly-push " + form, width: width, indent: lead.count + 2)
        }
        return text
    }

    /// One option or subcommand line: the name padded to a column, then the help wrapped in
    /// that column (below the name when the name is too long).
    package static func row(_ name: String, _ help: String, width: Int) -> String {
        let indent = "  "
        let helpWidth = max(width - helpColumn, 20)
        let lines = wrapLines(help, width: helpWidth)
        var text: String
        var rest = lines[...]
        if name.count + indent.count < helpColumn {
            text = indent + name + String(repeating: " ", count: helpColumn - name.count - indent.count) + (lines.first ?? "") + "\n"
            rest = lines.dropFirst()
        } else {
            text = indent + name + "\n"
        }
        for line in rest { text += String(repeating: " ", count: helpColumn) + line + "\n" }
        return text
    }

    /// Each paragraph of `text` (separated by an empty line) re-flowed to `width`.
    package static func paragraphs(_ text: String, width: Int) -> String {
        text.split(separator: "\n\n", omittingEmptySubsequences: false)
            .map { paragraph in
                let words = paragraph.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
                return wrapLines(words, width: width).joined(separator: "\n") + "\n"
            }
            .joined(separator: "\n")
    }

    /// `text` wrapped to `width`, continuation lines indented by `indent`, newline-terminated.
    package static func wrap(_ text: String, width: Int, indent: Int) -> String {
        let first = wrapLines(text, width: width)
        guard first.count > 1 else { return text + "\n" }
        let head = first[0]
        let tail = String(text.dropFirst(head.count)).drop(while: { $0 == " " })
        let pad = String(repeating: " ", count: indent)
        let continued = wrapLines(String(tail), width: max(width - indent, 20)).map { pad + $0 }
        return ([head] + continued).joined(separator: "\n") + "\n"
    }

    /// Words of `text` in lines of at most `width` characters (a longer word stands alone).
    package static func wrapLines(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines
    }
}

extension OptionSpec {
    /// How help and usage write the option: `--name` or `--name <value>`.
    package var label: String {
        switch kind {
        case .flag: return name == "--help" ? "-h, --help" : name
        case .value(let placeholder, _): return "\(name) <\(placeholder.lowercased())>"
        }
    }
}

/// "Did you mean …?" for a mistyped subcommand or option, by edit distance as
/// swift-argument-parser suggests.
package enum Suggestion {
    /// The candidate closest to `word`, when it is close enough to be a typo: at most 2 edits,
    /// and fewer than half the word's length.
    package static func closest(to word: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word, $0)) }.min { $0.1 < $1.1 }
        guard let (candidate, edits) = scored, edits <= 2, edits * 2 < max(word.count, 1) else { return nil }
        return candidate
    }

    /// " (did you mean 'X'?)" or nothing.
    package static func phrase(for word: String, among candidates: [String]) -> String {
        closest(to: word, among: candidates).map { "; did you mean '\($0)'?" } ?? ""
    }

    /// The Damerau–Levenshtein distance (a swap of two neighbours counts once).
    package static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}

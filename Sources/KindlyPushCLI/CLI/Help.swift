internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Help text in swift-argument-parser's layout (OVERVIEW, USAGE, OPTIONS, SUBCOMMANDS), derived
/// from the commands' declarations and wrapped to the terminal's width.
package enum Help {
    package static let overview = "Detect, decrypt and route end-to-end-encrypted Kindly push notifications."

    /// The words that are no command but run as one (`kindly-push help decrypt`,
    /// `kindly-push version`), for the root help, the completions and the typo suggestions.
    package static let builtins: [(name: String, abstract: String, usage: String)] = [
        ("help", "Show help for a subcommand.", "kindly-push help [<subcommand>]"),
        ("version", "Print the version (as --version does).", "kindly-push version"),
    ]

    /// `help help`, `help version`: a built-in's overview and usage.
    package static func builtin(named name: String, width: Int = 80) -> String? {
        guard let builtin = builtins.first(where: { $0.name == name }) else { return nil }
        return wrap("OVERVIEW: " + builtin.abstract, width: width, indent: 0) + "USAGE: \(builtin.usage)\n"
    }

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

    package static func root(_ commands: [CommandDeclaration], width: Int = 80) -> String {
        var text = wrap("OVERVIEW: " + overview, width: width, indent: 0) + "\n"
        text += "USAGE: kindly-push <subcommand> [<options>]\n\n"
        text += "OPTIONS:\n" + row(SharedOptions.version.spec.label, SharedOptions.version.spec.help, width: width)
        text += row(SharedOptions.help.spec.label, SharedOptions.help.spec.help, width: width) + "\n"
        text += "SUBCOMMANDS:\n"
        for command in commands { text += row(command.name, command.abstract, width: width) }
        for builtin in builtins { text += row(builtin.name, builtin.abstract, width: width) }
        text += "\n" + wrap("  See 'kindly-push help <subcommand>' for detailed help.", width: width, indent: 2)
        return text
    }

    package static func command(_ command: CommandDeclaration, width: Int = 80) -> String {
        var text = wrap("OVERVIEW: " + command.abstract, width: width, indent: 0)
        if !command.discussion.isEmpty { text += "\n" + paragraphs(command.discussion, width: width) }
        text += "\n" + usage(command, width: width) + "\nOPTIONS:\n"
        for option in command.options {
            text += row(option.label, option.help, width: width)
        }
        if !command.examples.isEmpty { text += "\n" + examples(command.examples, width: width) }
        return text
    }

    /// `USAGE: kindly-push NAME SYNOPSIS`, one line per form, wrapped between the parts of the
    /// synopsis (an option and its value stay together) with the continuation under the first
    /// option. A part too long for a line of its own is wrapped between its words.
    package static func usage(_ command: CommandDeclaration, width: Int = 80) -> String {
        var text = ""
        for (index, parts) in command.synopsisParts.enumerated() {
            let lead = index == 0 ? "USAGE: " : "       "
            text += fill(["kindly-push"] + parts, first: lead, next: String(repeating: " ", count: lead.count + 2), width: width)
        }
        return text
    }

    /// `EXAMPLES:`, each example's purpose, then its command line below it, indented; a line
    /// too long for the width goes on in continuation lines ending in ` \`, as a shell reads them.
    package static func examples(_ examples: [Example], width: Int) -> String {
        var text = "EXAMPLES:\n"
        for (index, example) in examples.enumerated() {
            if index > 0 { text += "\n" }
            text += fill(example.purpose.split(separator: " ").map(String.init), first: "  ", next: "  ", width: width, end: ":")
            text += commandLine(example.line, width: width, indent: 4)
        }
        return text
    }

    /// A shell command line wrapped to `width` with ` \` at the end of every line but the last,
    /// continuation lines indented two more than the first.
    package static func commandLine(_ line: String, width: Int, indent: Int) -> String {
        let words = line.split(separator: " ").map(String.init)
        let first = String(repeating: " ", count: indent)
        let lines = fillLines(words, first: first, next: first + "  ", width: width - 2)
        return lines.joined(separator: " \\\n") + "\n"
    }

    /// `parts` in lines of at most `width` characters, the first line starting with `first`,
    /// the others with `next`, each line newline-terminated; `end` follows the last part.
    package static func fill(_ parts: [String], first: String, next: String, width: Int, end: String = "") -> String {
        var parts = parts
        if let last = parts.popLast() { parts.append(last + end) }
        return fillLines(parts, first: first, next: next, width: width).joined(separator: "\n") + "\n"
    }

    /// The lines of ``fill(_:first:next:width:end:)``, without newlines. A part that does not fit
    /// on an empty line is broken between its words; a word longer than a line stands alone.
    package static func fillLines(_ parts: [String], first: String, next: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = first
        var isEmpty = true
        let room = max(width - next.count, 1)
        for part in parts {
            let pieces = part.count > room ? part.split(separator: " ").map(String.init) : [part]
            for piece in pieces {
                if isEmpty {
                    line += piece
                    isEmpty = false
                } else if line.count + 1 + piece.count <= width {
                    line += " " + piece
                } else {
                    lines.append(line)
                    line = next + piece
                }
            }
        }
        lines.append(line)
        return lines
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
        let leading = String(text.prefix(while: { $0 == " " }))
        return fill(text.split(separator: " ").map(String.init), first: leading, next: String(repeating: " ", count: indent), width: width)
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
    /// How usage writes the option: `[--name <value>]`, `[--name <value> ...]` when repeatable,
    /// without brackets when required.
    package var synopsisPart: String {
        let part = isRepeatable ? label + " ..." : label
        return isRequired ? part : "[\(part)]"
    }

    /// How help and usage write the option: `--name` or `--name <value>`.
    package var label: String {
        switch kind {
        case .flag: return shortName.map { "\($0), \(name)" } ?? name
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

    /// For a single-dash argument that is an option mistyped, the phrase naming the options
    /// meant (`; did you mean '--key-file'?`, empty when none fits); nil for any other argument
    /// (a value, `-`, a kid that begins with a dash). `-x` (one letter) means the options that begin with
    /// x, narrowed by the argument after it: one whose allowed values hold it, else one that
    /// takes any value. `-name` means `--name` when the command has that option.
    package static func longOptions(forShort argument: String, next: String?, among specs: [OptionSpec]) -> String? {
        let bytes = Array(argument.utf8)
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "-"), bytes[1] != UInt8(ascii: "-") else { return nil }
        if let spec = specs.first(where: { $0.name == "-" + argument }) { return "; did you mean '\(spec.name)'?" }
        let letter = bytes[1] | 0x20
        guard bytes.count == 2, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(letter) else { return nil }
        var candidates = specs.filter { $0.name.utf8.count > 2 && Array($0.name.utf8)[2] == letter }
        if let next, let chosen = candidates.first(where: { $0.choices.contains(next) }) {
            candidates = [chosen]
        } else if next != nil, candidates.count > 1 {
            let free = candidates.filter { $0.takesValue && $0.choices.isEmpty }
            if !free.isEmpty { candidates = free }
        }
        guard !candidates.isEmpty else { return "" }
        let names = candidates.map { "'\($0.name)'" }
        let list = names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
        return "; did you mean \(list)?"
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

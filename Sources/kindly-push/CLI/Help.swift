internal import KindlyPushCore

/// Help text in swift-argument-parser's layout: OVERVIEW, USAGE, OPTIONS (and SUBCOMMANDS).
enum Help {
    static let overview = "Detect, decrypt and route end-to-end-encrypted Kindly push notifications."

    static func root(_ commands: [any Command.Type]) -> String {
        var text = "OVERVIEW: \(overview)\n\nUSAGE: kindly-push <subcommand> [<options>]\n\n"
        text += "OPTIONS:\n" + row("--version", "Show the version.") + row("-h, --help", "Show help information.") + "\n"
        text += "SUBCOMMANDS:\n"
        for command in commands { text += row(command.name, command.abstract) }
        text += "\n  See 'kindly-push help <subcommand>' for detailed help.\n"
        return text
    }

    static func command(_ command: any Command.Type) -> String {
        var text = "OVERVIEW: \(command.abstract)\n"
        if !command.discussion.isEmpty { text += "\n" + command.discussion + "\n" }
        text += "\nUSAGE: \(command.usage)\n\nOPTIONS:\n"
        for option in command.options {
            switch option.kind {
            case .flag:
                text += row(option.name == "--help" ? "-h, --help" : option.name, option.help)
            case .value(let placeholder, _):
                text += row("\(option.name) <\(placeholder.lowercased())>", option.help)
            }
        }
        return text
    }

    /// One option or subcommand line: the name padded to a column, then the help.
    private static func row(_ name: String, _ help: String) -> String {
        let column = 26
        let indent = "  "
        if name.count + indent.count < column {
            return indent + name + String(repeating: " ", count: column - name.count - indent.count) + help + "\n"
        }
        return indent + name + "\n" + String(repeating: " ", count: column) + help + "\n"
    }
}

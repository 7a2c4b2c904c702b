/// `kindly-push completions bash|zsh|fish`: prints a completion script for the shell.
struct CompletionsCommand: Command {
    static let name = "completions"
    static let abstract = "Print a shell completion script (bash, zsh or fish)."
    static let discussion = """
        Install it where the shell looks, for example
        `kindly-push completions bash > /usr/share/bash-completion/completions/kindly-push`
        (tools/install does this).
        """
    static let arguments = ["bash", "zsh", "fish"]
    static let options: [OptionSpec] = [SharedOptions.help]

    let shell: Completions.Shell

    init(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError) {
        guard let name = arguments.positionals.first, arguments.positionals.count == 1 else {
            throw CLIError(.usage, "give one shell: bash, zsh or fish (see 'kindly-push completions --help')")
        }
        guard let shell = Completions.Shell(rawValue: name) else {
            throw CLIError(
                .usage,
                "'\(name)' is not a shell this command knows; expected one of: bash, zsh, fish\(Suggestion.phrase(for: name, among: ["bash", "zsh", "fish"]))"
            )
        }
        self.shell = shell
    }

    func run() -> Int32 {
        Terminal.printText(Completions.script(for: shell, commands: allCommands))
    }
}

/// `kindly-push man`: prints the roff man page.
struct ManCommand: Command {
    static let name = "man"
    static let abstract = "Print the man page (roff; view it with `kindly-push man | man -l -`)."
    static let options: [OptionSpec] = [SharedOptions.help]

    init(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
    }

    func run() -> Int32 {
        Terminal.printText(ManPage.roff(allCommands))
    }
}

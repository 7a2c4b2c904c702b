package import KindlyPushBase

/// `kindly-push completions bash|zsh|fish`: prints a completion script for the shell.
package struct CompletionsCommand: RunnableCommand {
    package static let name = "completions"
    package static let abstract = "Print a shell completion script (bash, zsh or fish)."
    package static let examples = [
        Example("Install the bash completion", "kindly-push completions bash > /etc/bash_completion.d/kindly-push")
    ]
    package static let discussion = """
        Install it where the shell looks, for example
        `kindly-push completions bash > /usr/share/bash-completion/completions/kindly-push`
        (tools/install does this).
        """
    package static let arguments = ["bash", "zsh", "fish"]
    package static let help = SharedOptions.help.taken

    package let shell: Completions.Shell
    /// Every command's declaration, the siblings' too.
    let commands: [CommandDeclaration]

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        guard let name = arguments.positionals.first, arguments.positionals.count == 1 else {
            throw CodedError.usage("give one shell: bash, zsh or fish", command: Self.name)
        }
        guard let shell = Completions.Shell(rawValue: name) else {
            throw CodedError(
                .usage,
                "'\(name)' is not a shell this command knows; expected one of: bash, zsh, fish\(Suggestion.phrase(for: name, among: ["bash", "zsh", "fish"]))"
            )
        }
        self.shell = shell
        commands = try environment.table.declarations(environment: environment)
    }

    package func run() -> Int32 {
        Terminal.printText(Completions.script(for: shell, commands: commands))
    }
}

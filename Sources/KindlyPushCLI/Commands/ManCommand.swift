package import KindlyPushBase

/// `kindly-push man`: prints the roff man page.
package struct ManCommand: RunnableCommand {
    package static let name = "man"
    package static let abstract = "Print the man page (roff; view it with `kindly-push man | man -l -`)."
    package static let examples = [
        Example("Read the man page", "kindly-push man | man -l -")
    ]
    package static let help = SharedOptions.help.taken

    /// The commands of this binary's table.
    let commands: [any Command.Type]

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        commands = environment.table.commands
    }

    package func run() -> Int32 {
        Terminal.printText(ManPage.roff(commands))
    }
}

package import KindlyPushBase

/// `kindly-push man`: prints the roff man page.
package struct ManCommand: RunnableCommand {
    package static let name = "man"
    package static let abstract = "Print the man page (roff; view it with `kindly-push man | man -l -`)."
    package static let examples = [
        Example("Read the man page", "kindly-push man | man -l -")
    ]
    package static let help = SharedOptions.help.taken

    /// Every command's declaration, the siblings' too.
    let commands: [CommandDeclaration]

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        commands = try environment.table.declarations(environment: environment)
    }

    package func run() -> Int32 {
        Terminal.printText(ManPage.roff(commands))
    }
}

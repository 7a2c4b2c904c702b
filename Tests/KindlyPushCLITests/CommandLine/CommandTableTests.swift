import Foundation
import KindlyPushBase
import KindlyPushCLI
import KindlyPushCLIDesktop
import KindlyPushCLIRedis
import KindlyPushCLISend
import Testing

/// Each binary's command table: every binary lists every command, in the
/// same order, and runs each one or hands it to a sibling that does; no command declares an
/// option twice.
@Suite("Command tables (KindlyPushCLI)", .offThePool)
struct CommandTableTests {
    /// The tables the four `main`s hand to `kindlyPushMain`.
    static let tables: [CommandTable] = [.kindlyPush, .desktop, .redis(over: .desktop), .send(workers: RedisWorkerServices())]

    /// The table of the binary that `arguments` end up running in, from `table`, and the
    /// implementation that runs them there; nil when a hand-off leads nowhere or loops.
    static func destination(of arguments: [String], from table: CommandTable) throws -> (CommandTable, any Command.Type)? {
        var table = table
        for _ in 0..<tables.count {
            let entry = try #require(table.entry(named: arguments[0]))
            let parsed = try ParsedArguments.parse(
                Array(arguments.dropFirst()), specs: entry.command.options, command: entry.command.name, forms: entry.command.actionWords)
            switch table.runner(for: entry, parsed, environment: [:]) {
            case .here(let implementation): return (table, implementation)
            case .sibling(let sibling): table = try #require(tables.first { $0.binary == sibling.name })
            }
        }
        return nil
    }

    @Test("every binary lists every command of kindly-push's table, in its order, under its own name")
    func sameCommands() {
        #expect(Set(Self.tables.map(\.binary)) == ["kindly-push", "kindly-push-desktop", "kindly-push-redis", "kindly-push-send"])
        let names = CommandTable.kindlyPush.commands.map { $0.name }
        #expect(names.count == Set(names).count)
        for table in Self.tables {
            #expect(table.commands.map { $0.name } == names, "\(table.binary)")
            #expect(zip(table.commands, CommandTable.kindlyPush.commands).allSatisfy { $0 == $1 }, "\(table.binary)")
        }
    }

    @Test("every binary runs every command, or hands it to a sibling that runs it, with what it needs linked")
    func everyCommandRuns() throws {
        let redis = ["--redis", "redis://127.0.0.1"]
        for table in Self.tables {
            for command in table.commands {
                let found = try Self.destination(of: [command.name], from: table)
                let (runner, implementation) = try #require(found, "\(table.binary) \(command.name)")
                #expect(implementation.name == command.name)
                if command == SendCommand.self { #expect(runner.services.send != nil) }
                // A declaration that cannot run (notify, doctor, unifiedpush) runs by its
                // implementation, in a binary with the desktop services.
                if !(command is any RunnableCommand.Type) { #expect(runner.services.desktop != nil, "\(table.binary) \(command.name)") }
            }
            for command in table.commands where command.options.contains(RedisOptions.url) {
                let (runner, _) = try #require(try Self.destination(of: [command.name] + redis, from: table))
                #expect(runner.services.redis != nil, "\(table.binary) \(command.name) --redis")
            }
            for command in table.commands where command.options.contains(KeyringOptions.keyring) {
                let (runner, _) = try #require(try Self.destination(of: [command.name, "--keyring", "secret-service"], from: table))
                #expect(runner.services.desktop != nil, "\(table.binary) \(command.name) --keyring secret-service")
            }
            let (runner, _) = try #require(try Self.destination(of: ["decrypt", "--keyring", "secret-service"] + redis, from: table))
            #expect(runner.services.desktop != nil && runner.services.redis != nil, "\(table.binary) decrypt --redis")
        }
    }

    @Test("a binary runs here what it links: kindly-push decrypts with a key file itself")
    func runsHere() throws {
        let (runner, _) = try #require(try Self.destination(of: ["decrypt", "--key-file", "k.json"], from: .kindlyPush))
        #expect(runner.binary == "kindly-push")
    }

    @Test("no command lists an option twice, by its name or its short name")
    func optionsOnce() {
        let implementations = Self.tables.flatMap(\.entries).compactMap { entry -> (any Command.Type)? in
            guard case .here(let implementation) = entry.runner else { return nil }
            return implementation
        }
        for command in CommandTable.kindlyPush.commands + implementations {
            let names = command.options.map(\.name) + command.options.compactMap(\.shortName)
            #expect(names.count == Set(names).count, "\(command.name): \(names)")
        }
    }
}

/// The build tool that writes every command's and option group's `options` from its
/// declarations (Plugins/OptionLists, Sources/OptionListGenerator), run on sources of its own.
@Suite("Option lists read off the declarations at build time", .offThePool)
struct OptionListGeneratorTests {
    /// The generator the build ran (the plugin's host tool), beside the binary under test.
    static let generator: URL = {
        let folder = CLI.binary.deletingLastPathComponent()
        let tool = folder.appendingPathComponent("OptionListGenerator-tool")
        return FileManager.default.fileExists(atPath: tool.path) ? tool : folder.appendingPathComponent("OptionListGenerator")
    }()

    /// The generator's output for `sources` (one file each), or its error.
    func generate(_ sources: [String]) throws -> (status: Int32, text: String, error: String) {
        let folder = try KeyFolder()
        var files: [String] = []
        for (number, source) in sources.enumerated() {
            let path = folder.url.appendingPathComponent("Source\(number).swift").path
            try source.write(toFile: path, atomically: true, encoding: .utf8)
            files.append(path)
        }
        let output = folder.url.appendingPathComponent("OptionLists.swift").path
        let run = try CLI.run([output] + files, executable: Self.generator)
        return (run.status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "", run.stderr)
    }

    @Test("options in declaration order, aliases and groups in place; strings, comments and annotated values are not options")
    func declarationOrder() throws {
        let generated = try generate([
            #"""
            internal import KindlyPushBase
            package struct Sample: Command {
                package static let name = "sample"
                package static let discussion = """
                    Braces in text } { and an interpolation \(["}": "{"].count) count for nothing.
                    """
                package static let first = Flag("--first", "A } brace in help.")
                // package static let commented = Flag("--commented", "")
                /* package static let blocked = Flag("--blocked", "") */
                package static let keyring = KeyringOptions.keyring.taken
                package static let number = Option<Int>("--number", "N", #"A raw "string" }"#)
                package static let stream = OptionGroup(StreamOptions.options, except: [number])
                package static let list: [OptionSpec] = [first.spec]
                package static let alias = Sample.name
                package static let required = KeyringOptions.keyFile.help("{").required()
                func run() -> Int32 { struct Local { static let inner = Flag("--inner", "") }; return 0 }
                package static let help = SharedOptions.help.taken
            }
            """#
        ])
        #expect(generated.status == 0, "\(generated.error)")
        #expect(generated.text.contains("internal import KindlyPushBase\n"))
        #expect(
            generated.text.contains(
                "package static let options: [OptionSpec] = [first.spec, keyring.spec, number.spec] + stream.specs + [required.spec, help.spec]"
            ),
            "\(generated.text)")
        #expect(generated.text.contains("package static let declaredKeys: [any OptionKey] = [first, keyring, number, required, help]"))
        // A type in a function's body is no command.
        #expect(!generated.text.contains("Local"))
    }

    @Test("a source it cannot read, a type's options in two files, or an option named without a modifier fails the build")
    func unreadable() throws {
        let open = try generate(["package enum Broken {\n    package static let flag = Flag(\"--flag\", \"\")\n"])
        #expect(open.status == 1)
        #expect(open.error.contains("Source0.swift: 1 braces are not closed"), "\(open.error)")
        let string = try generate(["package enum Broken { static let text = \"never ends }\n"])
        #expect(string.status == 1)
        #expect(string.error.contains("Source0.swift: a string literal does not end"), "\(string.error)")
        // Another type's option named without a modifier would be left out of the list.
        let plain = try generate([
            "enum Group { static let flag = Flag(\"--flag\", \"\") }",
            "struct Sample { static let name = Group.name\n static let flag = Group.flag }",
        ])
        #expect(plain.status == 1)
        #expect(plain.error.contains("'static let flag = Group.flag' names an option without a modifier"), "\(plain.error)")
        let split = try generate([
            "extension Sample { static let a = Flag(\"--a\", \"\") }", "extension Sample { static let b = Flag(\"--b\", \"\") }",
        ])
        #expect(split.status == 1)
        #expect(split.error.contains("Sample declares options in"), "\(split.error)")
    }
}

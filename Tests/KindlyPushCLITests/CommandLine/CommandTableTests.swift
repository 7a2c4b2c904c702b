import Foundation
import KindlyPushBase
import KindlyPushCLI
import KindlyPushCLIDesktop
import KindlyPushCLIRedis
import KindlyPushCLISend
import Testing

/// Each binary's command table: every binary lists every command, in the same order, and runs
/// each one or hands it to a sibling that declares and runs it; the declarations a binary asks
/// of its siblings come back whole; no command declares an option twice.
@Suite("Command tables (KindlyPushCLI)", .offThePool)
struct CommandTableTests {
    /// The tables the four `main`s hand to `kindlyPushMain`.
    static let tables: [CommandTable] = [.kindlyPush, .desktop, .redis(over: .desktop), .send(workers: RedisWorkerServices())]

    /// The table of `sibling`.
    static func table(of sibling: SiblingBinary) throws -> CommandTable {
        try #require(tables.first { $0.binary == sibling.name })
    }

    /// Every command's declaration in help's order, each sibling's read off its table in this
    /// process (the binaries ask each other: ``HelpAndUsageTests``); a table that names a command
    /// no sibling declares is this call's error.
    static func declarations() throws -> [CommandDeclaration] {
        try CommandTable.kindlyPush.declarations { (sibling) throws(CodedError) in
            guard let table = tables.first(where: { $0.binary == sibling.name }) else { throw CodedError(.io, sibling.name) }
            return table.ownDeclarations
        }
    }

    /// The table of the binary that `arguments` end up running in, from `table`, and the
    /// implementation that runs them there; nil when a hand-off leads nowhere or loops.
    static func destination(of arguments: [String], from table: CommandTable) throws -> (CommandTable, any RunnableCommand.Type)? {
        var table = table
        for _ in 0..<tables.count {
            let entry = try #require(table.entry(named: arguments[0]))
            var runner = entry.runner
            if case .here(let command) = entry.runner {
                let declaration = command.declaration
                let parsed = try ParsedArguments.parse(
                    Array(arguments.dropFirst()), specs: declaration.options, command: declaration.name, forms: declaration.actionWords)
                runner = table.runner(for: command, parsed, environment: [:])
            }
            switch runner {
            case .here(let implementation): return (table, implementation)
            case .sibling(let sibling): table = try Self.table(of: sibling)
            }
        }
        return nil
    }

    @Test("every binary lists every command of kindly-push's table, in its order, under its own name")
    func sameCommands() throws {
        #expect(Set(Self.tables.map(\.binary)) == ["kindly-push", "kindly-push-desktop", "kindly-push-redis", "kindly-push-send"])
        let names = CommandTable.kindlyPush.names
        #expect(names.count == Set(names).count)
        #expect(try Self.declarations().map(\.name) == names)
        for table in Self.tables {
            #expect(table.names == names, "\(table.binary)")
        }
    }

    @Test("a command is declared in one binary only: the one that runs it, which every other hands it to")
    func declaredOnce() throws {
        for name in CommandTable.kindlyPush.names {
            let declaring = Self.tables.filter { $0.ownDeclarations.contains { $0.name == name } }.map(\.binary)
            for table in Self.tables {
                let entry = try #require(table.entry(named: name))
                switch entry.runner {
                case .here: #expect(declaring.contains(table.binary), "\(table.binary) \(name)")
                case .sibling(let sibling): #expect(declaring.contains(sibling.name), "\(table.binary) \(name) -> \(sibling.name)")
                }
            }
        }
        // What kindly-push links not: declared in the sibling that links it.
        let kindlyPush = Set(CommandTable.kindlyPush.ownDeclarations.map(\.name))
        #expect(kindlyPush.isDisjoint(with: ["send", "vapid-keygen", "notify", "unifiedpush", "doctor", "redis-status", "dead-letter"]))
        #expect(kindlyPush.isSuperset(of: ["keygen", "seal", "decrypt", "route", "check", "verify", "completions", "man"]))
    }

    @Test("every binary runs every command, or hands it to a sibling that runs it, with what it needs linked")
    func everyCommandRuns() throws {
        let redis = ["--redis", "redis://127.0.0.1"]
        for table in Self.tables {
            for name in table.names {
                let found = try Self.destination(of: [name], from: table)
                let (runner, implementation) = try #require(found, "\(table.binary) \(name)")
                #expect(implementation.name == name)
                switch name {
                case "send", "vapid-keygen": #expect(runner.binary == SiblingBinary.send.name, "\(table.binary) \(name)")
                case "notify", "unifiedpush", "doctor": #expect(runner.services.desktop != nil, "\(table.binary) \(name)")
                case "redis-status", "dead-letter": #expect(runner.services.redis != nil, "\(table.binary) \(name)")
                default: break
                }
            }
            for command in try Self.declarations() where command.options.contains(RedisOptions.url) && command.arguments == [""] {
                let (runner, _) = try #require(try Self.destination(of: [command.name] + redis, from: table))
                #expect(runner.services.redis != nil, "\(table.binary) \(command.name) --redis")
            }
            for command in try Self.declarations() where command.options.contains(KeyringOptions.keyring) && command.actionWords.isEmpty {
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
    func optionsOnce() throws {
        for command in try Self.declarations() {
            let names = command.options.map(\.name) + command.options.compactMap(\.shortName)
            #expect(names.count == Set(names).count, "\(command.name): \(names)")
        }
    }

    @Test("a declaration passed between binaries as a JSON line comes back whole; any other line is refused")
    func declarationLines() throws {
        for declaration in try Self.declarations() {
            let line = declaration.jsonLine
            let read = try #require(CommandDeclaration(jsonLine: line), "\(declaration.name)")
            #expect(String(decoding: read.jsonLine, as: UTF8.self) == String(decoding: line, as: UTF8.self))
            #expect(Help.command(read, width: 73) == Help.command(declaration, width: 73))
            #expect(Completions.script(for: .zsh, commands: [read]) == Completions.script(for: .zsh, commands: [declaration]))
            #expect(ManPage.roff([read]) == ManPage.roff([declaration]))
        }
        // route: a required option with choices, and examples.
        let route = try #require(try Self.declarations().first { $0.name == "route" })
        let text = String(decoding: route.jsonLine, as: UTF8.self)
        let mutations = [
            (#""abstract":"#, #""summary":"#), (#""required":true"#, #""required":"yes""#), (#""choices":["#, #""choices":[1,"#),
            (#""purpose":"#, #""why":"#), (#""arguments":["#, #""arguments":[null,"#),
        ]
        for (original, replacement) in mutations {
            let broken = text.replacingOccurrences(of: original, with: replacement)
            #expect(broken != text, "\(original) is in route's line")
            #expect(CommandDeclaration(jsonLine: Array(broken.utf8)) == nil, "\(replacement)")
        }
        for broken in ["", "{}", "[]", String(text.dropLast())] {
            #expect(CommandDeclaration(jsonLine: Array(broken.utf8)) == nil, "\(broken.prefix(60))")
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

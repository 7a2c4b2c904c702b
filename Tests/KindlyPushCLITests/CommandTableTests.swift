import KindlyPushBase
import KindlyPushCLI
import KindlyPushCLIAPNs
import KindlyPushCLIDesktop
import KindlyPushCLIRedis
import Testing

/// Each binary's command table (issue 35, item 3): every binary lists every command, in the
/// same order, and runs each one or hands it to a sibling that does; no command declares an
/// option twice.
@Suite("Command tables (KindlyPushCLI)")
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
                // The declarations of notify and doctor run nowhere: their implementations do.
                #expect(!(implementation is any DesktopOnlyCommand.Type), "\(table.binary) \(command.name)")
                if command == SendCommand.self { #expect(runner.services.send != nil) }
                if command is any DesktopOnlyCommand.Type { #expect(runner.services.desktop != nil) }
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

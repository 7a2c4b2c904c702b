import Foundation
import KindlyPushBase
import KindlyPushCLI
import Testing

/// The command line parsed in-process, as swift-argument-parser's `AssertParseCommand` does:
/// the declarations, the parser, usage, suggestions, and which runs need kindly-push-desktop.
@Suite("Parsing in-process (KindlyPushCLI)", .offThePool)
struct ParseCommandTests {
    @Test("options, values, repeatable values and operands parse from the declarations")
    func parse() throws {
        let parsed = try ParsedArguments.parse(
            ["--jsonl", "--key-file=k.json", "--sender-key", "-AAA", "--sender-key", "BBB", "a.jsonl", "--", "--b.jsonl"],
            specs: DecryptCommand.options, command: "decrypt")
        #expect(parsed[StreamOptions.jsonl])
        #expect(!parsed[StreamOptions.quiet])
        #expect(parsed[KeyringOptions.keyFile] == "k.json")
        #expect(parsed[KeyringOptions.senderKey] == ["-AAA", "BBB"])
        #expect(parsed.positionals == ["a.jsonl", "--b.jsonl"])
    }

    @Test("a declared key reads its value typed; a group reads only its own keys; help keeps the command's text")
    func typedKeys() throws {
        let parsed = try ParsedArguments.parse(
            ["--jobs", "3", "--keyring", "secret-service", "--verbose", "--sender-key", "A", "--app-state", "foreground", "--extension"],
            specs: RouteCommand.options, command: "route")
        #expect(parsed[StreamOptions.jobs] == 3)
        #expect(parsed[KeyringOptions.keyring] == .secretService)
        #expect(parsed[RouteOptions.appState] == .foreground)
        #expect(parsed[RouteCommand.hasExtension])
        #expect(parsed[RouteOptions.screen] == nil && !parsed.isGiven(RouteOptions.screen))
        let keyring = KeyringOptions(parsed)
        #expect(keyring.keyring == .secretService && keyring.isVerbose && keyring.senderKeys == ["A"] && keyring.keyFile == nil)
        #expect(try StreamOptions(parsed, command: "route").jobs == 3)
        // Text that does not convert is given, but has no value: the group says why.
        let badJobs = try ParsedArguments.parse(["--jsonl", "--jobs", "many"], specs: CheckCommand.options, command: "check")
        #expect(badJobs.isGiven(StreamOptions.jobs) && badJobs[StreamOptions.jobs] == nil)
        #expect(throws: CodedError.self) { try StreamOptions(badJobs, command: "check") }
        // A key with a command's own help still reads the option (keygen's --key-file).
        let keygen = try ParsedArguments.parse(
            ["--key-file", "k.json", "--push-mode", "alert"], specs: KeygenCommand.options, command: "keygen")
        #expect(KeyringOptions(keygen).keyFile == "k.json" && keygen[KeygenCommand.keyFile] == "k.json")
        #expect(keygen[KeygenCommand.pushMode] == .alert)
        #expect(KeygenCommand.options.first { $0.declares(KeyringOptions.keyFile) }?.help.hasPrefix("Write the new key") == true)
        let sealing = SealingOptions(
            try ParsedArguments.parse(["--wire", "3", "--mode", "silent", "--fit"], specs: SealCommand.options, command: "seal"))
        #expect(sealing.wire == .three && sealing.mode == .silent && sealing.fits && !sealing.isRecipientsInline)
        #expect(
            SharedOptions.help.isNamed(by: "-h") && SharedOptions.help.isNamed(by: "--help") && !SharedOptions.version.isNamed(by: "-h"))
    }

    @Test(
        "usage errors name the argument and suggest the option meant",
        arguments: [
            (["--key-fil", "k"], "unknown option '--key-fil'; did you mean '--key-file'? (see 'kindly-push decrypt --help')"),
            (
                ["--keyring", "vault"],
                "'vault' is not a valid value for '--keyring'; expected one of: auto, secret-service, file (see 'kindly-push decrypt --help')"
            ),
            (["--key-file"], "missing value for '--key-file PATH' (see 'kindly-push decrypt --help')"),
            (["--jsonl=1"], "'--jsonl' takes no value (see 'kindly-push decrypt --help')"),
        ] as [([String], String)])
    func usageErrors(_ arguments: [String], _ message: String) {
        do {
            _ = try ParsedArguments.parse(arguments, specs: DecryptCommand.options, command: "decrypt")
            Issue.record("parsed")
        } catch {
            #expect(error.code == .usage)
            #expect(error.message == message)
        }
    }

    @Test("a suggestion is made only for a near miss")
    func suggestions() {
        #expect(Suggestion.closest(to: "decyrpt", among: CommandTable.kindlyPush.names) == "decrypt")
        #expect(Suggestion.closest(to: "snders", among: CommandTable.kindlyPush.names) == "senders")
        #expect(Suggestion.closest(to: "frobnicate", among: CommandTable.kindlyPush.names) == nil)
        #expect(Suggestion.distance("ab", "ba") == 1)
    }

    @Test("usage is derived: required options unbracketed, repeatable ones marked, operands last, actions first")
    func usage() {
        #expect(RouteCommand.declaration.synopses[0].hasPrefix("route --app-state <state> [--screen <screen>]"))
        #expect(RouteCommand.declaration.synopses[0].hasSuffix("[<file> ...]"))
        #expect(DecryptCommand.declaration.synopses[0].contains("[--sender-key <b64> ...]"))
        #expect(
            KeysCommand.declaration.synopses == [
                "keys list [--keyring <kind>] [--verbose]", "keys delete <kid> [--keyring <kind>] [--verbose]",
            ])
        #expect(Help.wrapLines("one two three four", width: 9) == ["one two", "three", "four"])
    }

    @Test(
        "only what needs libsecret, GIO or SQLite runs in kindly-push-desktop",
        arguments: [
            (["decrypt", "--key-file", "k.json"], [:], false),
            (["decrypt", "--keyring", "file"], ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"], false),
            (["decrypt"], [:], false),
            (["decrypt"], ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"], true),
            (["keys", "list", "--keyring", "secret-service"], [:], true),
            (["seal", "--public-key", "x"], ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"], false),
            (["notify"], [:], true),
            (["doctor"], [:], true),
            (["unifiedpush", "register"], [:], true),
            (["verify", "TestVectors"], ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"], false),
            (["send", "--key-id", "X"], ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"], false),
        ] as [([String], [String: String], Bool)])
    func needsDesktop(_ arguments: [String], _ environment: [String: String], _ expected: Bool) throws {
        let entry = try #require(CommandTable.kindlyPush.entry(named: arguments[0]))
        var runner = entry.runner
        if case .here(let command) = entry.runner {
            let declaration = command.declaration
            let parsed = try ParsedArguments.parse(
                Array(arguments.dropFirst()), specs: declaration.options, command: command.name, forms: declaration.actionWords)
            runner = CommandTable.kindlyPush.runner(for: command, parsed, environment: CommandEnvironment(environment))
        }
        var handedToDesktop = false
        if case .sibling(let sibling) = runner { handedToDesktop = sibling == .desktop }
        #expect(handedToDesktop == expected)
    }

    @Test(
        "kindly-push links neither Foundation, Dispatch's overlay nor libsecret, GIO, SQLite, nghttp2 or libcrypto; kindly-push-desktop and kindly-push-send do"
    )
    func leanBinary() throws {
        func libraries(_ binary: URL) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
            process.arguments = [binary.path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return text
        }
        let lean = try libraries(CLI.binary)
        let unwanted = [
            "libFoundation", "_FoundationICU", "libswiftDispatch", "libswiftSynchronization", "libsecret", "libgio", "libglib",
            "libsqlite3", "libnghttp2", "libcurl", "libcrypto", "libhiredis",
        ]
        for library in unwanted {
            #expect(!lean.contains(library), "kindly-push links \(library)")
        }
        let desktop = try libraries(CLI.binary.deletingLastPathComponent().appendingPathComponent("kindly-push-desktop"))
        #expect(desktop.contains("libsecret") && desktop.contains("libgio") && desktop.contains("libsqlite3"))
        let send = try libraries(CLI.binary.deletingLastPathComponent().appendingPathComponent("kindly-push-send"))
        #expect(send.contains("libnghttp2") && send.contains("libcrypto") && !send.contains("libcurl"))
        let redis = try libraries(CLI.binary.deletingLastPathComponent().appendingPathComponent("kindly-push-redis"))
        #expect(!redis.contains("libnghttp2"))
    }

    @Test("the command's environment reads environ as Foundation does, values with '=' whole")
    func environmentOfTheProcess() {
        let environment = CommandEnvironment.ofProcess()
        #expect(environment.dictionary == ProcessInfo.processInfo.environment)
        #expect(environment["PATH"] == ProcessInfo.processInfo.environment["PATH"])
        #expect(environment["KINDLY_PUSH_NO_SUCH_VARIABLE"] == nil)
    }

    @Test("setting a variable replaces it, nil removes it, and the order is kept")
    func environmentEdits() {
        var environment: CommandEnvironment = ["B": "2", "A": "1=one"]
        #expect(environment.map(\.key) == ["B", "A"])
        #expect(environment["A"] == "1=one")
        environment["B"] = "two"
        environment["C"] = "3"
        #expect(environment.map { "\($0.key)=\($0.value)" } == ["B=two", "A=1=one", "C=3"])
        environment["A"] = nil
        #expect(environment.map(\.key) == ["B", "C"])
        #expect(CommandEnvironment(["Z": "z", "M": "m"]).map(\.key) == ["M", "Z"])
        #expect(environment.dictionary == ["B": "two", "C": "3"])
    }
}

import Foundation
import KindlyPushCLI
import Testing

/// Help, usage and the man page as a user reads them: usage wrapped at any width
/// without a word repeated or lost, each form with only its options, an example for every
/// command, a man page that groff renders without a warning.
@Suite("kindly-push reference text: usage, examples, man page", .offThePool)
struct ReferenceTextTests {
    static let names = CommandTable.kindlyPush.names

    /// The USAGE block of a help text: from `USAGE:` to the empty line after it.
    static func usageBlock(_ help: String) -> [Substring] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("USAGE: ") }) else { return [] }
        return Array(lines[start...].prefix { !$0.isEmpty })
    }

    /// The words of the usage lines unwrapped: `kindly-push`, then each form's synopsis.
    static func unwrappedWords(_ command: CommandDeclaration) -> [Substring] {
        ["USAGE:"] + command.synopses.flatMap { ("kindly-push " + $0).split(separator: " ") }
    }

    @Test("usage wraps at every width from 40 to 200 columns without repeating or losing a word, within the width")
    func usageAtEveryWidth() throws {
        for command in try CommandTableTests.declarations() {
            for width in 40...200 {
                let block = Self.usageBlock(Help.usage(command, width: width))
                let words = block.flatMap { $0.split(separator: " ") }
                #expect(words == Self.unwrappedWords(command), "\(command.name) at \(width) columns")
                for line in block where line.count > width {
                    Issue.record("\(command.name) at \(width) columns: a line of \(line.count): \(line)")
                }
            }
        }
    }

    @Test(
        "the binary's help wraps usage at $COLUMNS without repeating or losing a word",
        arguments: ReferenceTextTests.names)
    func usageThroughTheBinary(_ name: String) throws {
        let command = try #require(try CommandTableTests.declarations().first { $0.name == name })
        for width in [40, 60, 80, 100, 137, 200] {
            let output = try CLI.run([name, "--help"], environment: ["COLUMNS": String(width)])
            #expect(output.status == 0)
            let block = Self.usageBlock(output.stdout)
            #expect(block.flatMap { $0.split(separator: " ") } == Self.unwrappedWords(command), "\(name) at \(width) columns")
            #expect(block.allSatisfy { $0.count <= width }, "\(name) at \(width) columns")
        }
    }

    @Test("senders and keys: each form lists only the options it takes, and refuses the others")
    func formsListTheirOwnOptions() throws {
        let senders = try CLI.run(["senders", "--help"], environment: ["COLUMNS": "100"])
        #expect(
            Self.usageBlock(senders.stdout).joined(separator: "\n") == """
                USAGE: kindly-push senders add --public-key <b64> [--label <text>] [--keyring <kind>] [--verbose]
                       kindly-push senders list [--keyring <kind>] [--verbose]
                       kindly-push senders delete <sid> [--keyring <kind>] [--verbose]
                """)
        let keys = try CLI.run(["keys", "--help"], environment: ["COLUMNS": "100"])
        #expect(
            Self.usageBlock(keys.stdout).joined(separator: "\n") == """
                USAGE: kindly-push keys list [--keyring <kind>] [--verbose]
                       kindly-push keys delete <kid> [--keyring <kind>] [--verbose]
                """)
        for (form, option) in [(["list"], "--label"), (["delete", "AAAAAAAAAAA"], "--public-key"), (["list"], "--public-key")] {
            let output = try CLI.run(["senders"] + form + [option, "x"])
            #expect(output.status == 64)
            #expect(output.stderr == "kindly-push: usage: senders \(form[0]) takes no \(option) (see 'kindly-push senders --help')\n")
        }
        // Every form of every command: an option its usage line shows is one it takes.
        for command in try CommandTableTests.declarations() {
            for (form, parts) in zip(command.arguments, command.synopsisParts) {
                let action = CommandDeclaration.actionWord(of: form)
                for option in command.options where parts.contains(option.synopsisPart) {
                    #expect(option.isTaken(byForm: action), "\(command.name) \(form): \(option.name)")
                }
            }
        }
    }

    @Test("bash completes, after an action word, only the options of that form")
    func completionPerForm() throws {
        let script = try CLI.run(["completions", "bash"]).stdout
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-completion-\(UUID().uuidString)")
        try script.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        func complete(_ words: [String]) throws -> [Substring] {
            let line =
                "source \(file.path); COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " "))); COMP_CWORD=\(words.count - 1); _kindly_push; printf '%s\\n' \"${COMPREPLY[@]}\""
            return try CLI.run(["-c", line], executable: URL(fileURLWithPath: "/bin/bash")).stdout.split(separator: "\n")
        }
        #expect(try complete(["kindly-push", "senders", "list", "--"]).sorted() == ["--help", "--keyring", "--verbose"])
        #expect(try complete(["kindly-push", "senders", "add", "--"]).contains("--label"))
        #expect(try complete(["kindly-push", "senders", "l"]) == ["list"])
    }

    @Test("--key-file says what each command does with the file")
    func keyFileHelpPerCommand() throws {
        let expected = [
            "keygen": "Write the new key to this key file",
            "seal": "Seal for the device whose key file this is",
            "decrypt": "Read the device's secret key from this key file",
            "route": "Read the device's secret key from this key file",
            "notify": "Read the device's secret key from this key file",
        ]
        for (name, help) in expected {
            let output = try CLI.run(["help", name], environment: ["COLUMNS": "200"])
            let row = output.stdout.split(separator: "\n").first { $0.hasPrefix("  --key-file <path>") }
            #expect(row?.contains(help) == true, "\(name): \(row ?? "no --key-file row")")
        }
    }

    @Test("every command's help ends with EXAMPLES, each a command line of that command", arguments: ReferenceTextTests.names)
    func examples(_ name: String) throws {
        let command = try #require(try CommandTableTests.declarations().first { $0.name == name })
        #expect(!command.examples.isEmpty)
        let output = try CLI.run([name, "--help"], environment: ["COLUMNS": "200"])
        let examples = try #require(output.stdout.range(of: "\nEXAMPLES:\n")).upperBound
        let block = output.stdout[examples...]
        for example in command.examples {
            #expect(block.contains("  \(example.purpose):\n    \(example.line)\n"), "\(example.line)")
            // The example is a command line the command accepts: its words after the name parse.
            let words = example.line.split(separator: " ").map(String.init)
            let start = try #require(words.firstIndex(of: "kindly-push"))
            let arguments = words[(start + 2)...].prefix { !["<", ">", "|"].contains($0) }.map {
                $0.replacingOccurrences(of: "\"", with: "")
            }
            #expect(words[start + 1] == name)
            #expect(throws: Never.self) {
                _ = try ParsedArguments.parse(arguments, specs: command.options, command: name, forms: command.actionWords)
            }
        }
        // A narrow terminal: a long example goes on after " \", as a shell reads it.
        let narrow = try CLI.run([name, "--help"], environment: ["COLUMNS": "40"]).stdout
        let narrowBlock = narrow[try #require(narrow.range(of: "\nEXAMPLES:\n")).upperBound...]
        #expect(narrowBlock.split(separator: "\n").allSatisfy { $0.count <= 40 || !$0.trimmingCharacters(in: .whitespaces).contains(" ") })
        let joined = narrowBlock.replacingOccurrences(of: " \\\n      ", with: " ")
        for example in command.examples { #expect(joined.contains(example.line), "\(example.line)") }
    }

    /// `groff -man -Tutf8 -ww` of the man page in `locale`: its warnings and its text.
    static func render(_ page: String, locale: String) throws -> (warnings: String, text: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-man-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("kindly-push.1")
        try page.write(to: source, atomically: true, encoding: .utf8)
        let groff = try #require(
            ["/usr/bin/groff", "/bin/groff"].first { FileManager.default.isExecutableFile(atPath: $0) }, "groff is needed")
        let output = try CLI.run(
            ["-man", "-Tutf8", "-ww", "-P-cbou", source.path], environment: ["LC_ALL": locale, "LANG": locale],
            executable: URL(fileURLWithPath: groff))
        #expect(output.status == 0)
        return (output.stderr, output.stdout)
    }

    @Test("every environment variable the sources read is in the man page's ENVIRONMENT")
    func everyVariableInTheManPage() throws {
        let page = try CLI.run(["man"]).stdout
        let environment = try #require(
            page.range(of: ".SH ENVIRONMENT").flatMap { start in
                page.range(of: ".SH FILES", range: start.upperBound..<page.endIndex).map { String(page[start.upperBound..<$0.lowerBound]) }
            })
        let listed = Set(environment.split(separator: "\n").filter { $0.hasPrefix(".B ") }.map { String($0.dropFirst(3)) })
        let pattern = try NSRegularExpression(pattern: #""(KINDLY_PUSH_[A-Z_]+|XDG_[A-Z_]+|DBUS_SESSION_BUS_ADDRESS|HOME|COLUMNS)""#)
        var read = Set<String>()
        let sources = CLI.packageRoot.appendingPathComponent("Sources")
        for case let url as URL in FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
        where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                read.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        #expect(read.count > 10)
        for name in read.sorted() {
            let covered = listed.contains(name) || (name.hasPrefix("KINDLY_PUSH_TEST_") && listed.contains("KINDLY_PUSH_TEST_*"))
            #expect(covered, "\(name) is read but not in the man page's ENVIRONMENT")
        }
    }

    @Test("the man page renders with no groff warning in the C and UTF-8 locales, in 80 columns, with every section")
    func manPage() throws {
        let output = try CLI.run(["man"])
        #expect(output.status == 0)
        let page = output.stdout
        #expect(page.utf8.allSatisfy { $0 < 0x80 }, "non-ASCII is written as roff escapes")
        #expect(!page.contains("`"), "no Markdown backticks")
        #expect(page.split(separator: "\n").allSatisfy { !$0.hasPrefix(".nf") })
        for locale in ["C", "C.UTF-8"] {
            let (warnings, text) = try Self.render(page, locale: locale)
            #expect(warnings == "", "groff in \(locale): \(warnings)")
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            for line in lines where line.count > 80 { Issue.record("a line of \(line.count) columns in \(locale): \(line)") }
            for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"] {
                #expect(lines.contains { $0 == section }, "section \(section)")
            }
            // The synopsis of a long command is filled: several lines, none of them long.
            #expect(text.contains("kindly-push route --app-state state [--screen screen]"))
            if locale == "C.UTF-8" { #expect(text.contains("ended with \"\u{2026}\"")) }
        }
        // SEE ALSO names what is installed: no specification file that is not.
        let seeAlso = try #require(page.range(of: ".SH SEE ALSO")).upperBound
        #expect(!page[seeAlso...].contains(".md"))
        // Every example of every command is in EXAMPLES.
        let examples = try #require(page.range(of: ".SH EXAMPLES")).upperBound
        for example in try CommandTableTests.declarations().flatMap({ $0.examples }) {
            #expect(page[examples...].contains(ManPage.escape(example.purpose)), "\(example.purpose)")
        }
    }
}

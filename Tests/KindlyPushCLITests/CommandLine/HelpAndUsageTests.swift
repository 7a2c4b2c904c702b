import Foundation
import Testing

@Suite("kindly-push help and usage errors", .offThePool)
struct HelpAndUsageTests {
    @Test("notify neither lists nor takes the Redis worker's options (it read standard input instead)")
    func notifyRefusesWorkerOptions() throws {
        let help = try CLI.run(["help", "notify"]).stdout
        for option in [
            "--redis", "--from", "--group", "--to", "--consumer", "--claim-idle", "--batch", "--exit-when-idle", "--max-deliveries",
        ] {
            #expect(!help.contains(option + " "), "help notify lists \(option)")
        }
        let output = try CLI.run(["notify", "--redis", "redis://127.0.0.1:1", "--from", "in", "--group", "g"], stdin: "{}")
        #expect(output.status == 64)
        #expect(output.stdout == "")
        #expect(output.stderr == "kindly-push: usage: unknown option '--redis' (see 'kindly-push notify --help')\n")
    }

    @Test("help decrypt lists the exit statuses in numeric order, each with its code")
    func decryptExitStatusesInOrder() throws {
        let help = try CLI.run(["help", "decrypt"], environment: ["COLUMNS": "400"]).stdout
        let text = help.split(separator: "\n").joined(separator: " ")
        let after = try #require(text.split(separator: "Failures exit with the reason's code: ", maxSplits: 1).last)
        let list = try #require(after.split(separator: ".").first)
        let entries = list.split(separator: ",").map { $0.split(separator: " ") }
        #expect(
            entries.map { $0.last.map(String.init) } == [
                "not_kindly", "unsupported_version", "malformed", "key_unavailable", "authentication_failed", "bad_plaintext",
                "untrusted_sender", "bad_input", "io",
            ])
        let statuses = entries.compactMap { $0.first.flatMap { Int($0) } }
        #expect(statuses == [1, 2, 3, 4, 5, 6, 7, 65, 74])
    }

    @Test("--help prints the overview, usage, options and subcommands on stdout")
    func rootHelp() throws {
        let output = try CLI.run(["--help"])
        #expect(output.status == 0)
        #expect(output.stderr == "")
        #expect(
            output.stdout == """
                OVERVIEW: Detect, decrypt and route end-to-end-encrypted Kindly push
                notifications.

                USAGE: kindly-push <subcommand> [<options>]

                OPTIONS:
                  --version               Show the version.
                  -h, --help              Show help information.

                SUBCOMMANDS:
                  keygen                  Create a device key, store it, and print its
                                          registration JSON.
                  keys                    List the stored keys, or delete one.
                  seal                    Seal a plaintext message for one device and print the
                                          APNs payload.
                  send                    Send sealed pushes to APNs, FCM or Web Push over
                                          HTTP/2 and print each answer.
                  check                   Tell whether a push is Kindly's and whether it is
                                          marked decrypted.
                  decrypt                 Decrypt a Kindly push and print its payload (or, with
                                          --apply, the rewritten push).
                  route                   Print who presents what for a push (the display
                                          rules).
                  notify                  Show a push as a desktop notification (freedesktop
                                          Notifications).
                  unifiedpush             Register this desktop with a UnifiedPush distributor,
                                          or end it.
                  sender-keygen           Create a sender key in a 0600 sender key file and
                                          print its sid and public key.
                  vapid-keygen            Create a VAPID key for Web Push in a 0600 key file and
                                          print its public key.
                  senders                 Pin a sender key in the keyring, list the pinned keys,
                                          or remove one.
                  verify                  Run test-vector files and report each failure.
                  doctor                  Check what decrypting needs here: keyring, session
                                          bus, Secret Service, key files, libraries.
                  redis-status            Show a Redis Streams worker group's backlog: lag,
                                          pending entries per consumer, dead letters.
                  dead-letter             Move a Redis Streams workers' dead letters back to
                                          their input stream, each exactly once.
                  completions             Print a shell completion script (bash, zsh or fish).
                  man                     Print the man page (roff; view it with `kindly-push
                                          man | man -l -`).
                  help                    Show help for a subcommand.
                  version                 Print the version (as --version does).

                  See 'kindly-push help <subcommand>' for detailed help.

                """)
        #expect(try CLI.run(["help"]).stdout == output.stdout)
        #expect(try CLI.run(["-h"]).stdout == output.stdout)
    }

    @Test("a command a sibling declares has its help there: send's, notify's and redis-status's, from kindly-push, are the sibling's")
    func siblingsDeclareTheirCommands() throws {
        let folder = CLI.binary.deletingLastPathComponent()
        for (name, sibling) in [("send", "kindly-push-send"), ("notify", "kindly-push-desktop"), ("redis-status", "kindly-push-redis")] {
            let sibling = folder.appendingPathComponent(sibling)
            for arguments in [[name, "--help"], ["help", name]] {
                let here = try CLI.run(arguments, stdin: "")
                let there = try CLI.run(arguments, executable: sibling)
                #expect(here.status == 0 && here.stderr.isEmpty, "\(arguments)")
                #expect(here.stdout.hasPrefix("OVERVIEW: ") && here.stdout == there.stdout, "\(arguments)")
            }
        }
        // What a sibling prints when asked: its own commands' declarations, one JSON line each.
        let lines = try CLI.run(["--declarations"], executable: folder.appendingPathComponent("kindly-push-send"))
        #expect(lines.status == 0 && lines.stderr.isEmpty)
        let names = lines.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["name"] as? String
        }
        #expect(
            names.contains("send") && names.contains("vapid-keygen") && names.contains("decrypt") && !names.contains("notify"), "\(names)")
    }

    @Test("kindly-push without its siblings: what it declares runs; help, completions and the man page say what is missing")
    func withoutSiblings() throws {
        let folder = try KeyFolder()
        let lone = folder.url.appendingPathComponent("kindly-push")
        // Copied by cp: a file this process wrote could still be open in a child another test
        // forks meanwhile, and then not run (ETXTBSY).
        #expect(try CLI.run([CLI.binary.path, lone.path], executable: URL(fileURLWithPath: "/bin/cp")).status == 0)
        let decrypt = try CLI.run(["decrypt", "--help"], executable: lone)
        #expect(decrypt.status == 0 && decrypt.stdout.hasPrefix("OVERVIEW: Decrypt"))
        let missing =
            "kindly-push: io: listing the commands needs kindly-push-send (the sender: APNs, Web Push keys) beside kindly-push in \(folder.url.path): "
        for arguments in [["--help"], ["help"], ["completions", "bash"], ["man"]] {
            let output = try CLI.run(arguments, executable: lone)
            #expect(output.status == 74 && output.stdout.isEmpty, "\(arguments)")
            #expect(output.stderr.hasPrefix(missing), "\(arguments): \(output.stderr)")
        }
        let send = try CLI.run(["send", "--help"], executable: lone)
        #expect(send.status == 74 && send.stdout.isEmpty)
        #expect(
            send.stderr.hasPrefix("kindly-push: io: this needs kindly-push-send (the sender: APNs, Web Push keys) beside kindly-push in "))
        // A sibling that prints something else than declarations is not believed.
        let impostor = folder.url.appendingPathComponent("kindly-push-send").path
        #expect(
            try CLI.run(
                ["-c", "printf '#!/bin/sh\\necho not a declaration\\n' > \(impostor) && chmod 755 \(impostor)"],
                executable: URL(fileURLWithPath: "/bin/sh")
            ).status == 0)
        let wrong = try CLI.run(["--help"], executable: lone)
        #expect(wrong.status == 74 && wrong.stdout.isEmpty)
        #expect(wrong.stderr == missing + "it printed no declarations\n", "\(wrong.stderr)")
    }

    @Test("help help and help version describe the built-ins: exact, exit 0")
    func builtinsHaveHelp() throws {
        let help = try CLI.run(["help", "help"], stdin: "")
        #expect(help.status == 0 && help.stderr.isEmpty)
        #expect(help.stdout == "OVERVIEW: Show help for a subcommand.\nUSAGE: kindly-push help [<subcommand>]\n")
        let version = try CLI.run(["help", "version"], stdin: "")
        #expect(version.status == 0 && version.stderr.isEmpty)
        #expect(version.stdout == "OVERVIEW: Print the version (as --version does).\nUSAGE: kindly-push version\n")
    }

    @Test("check --help is exact")
    func checkHelp() throws {
        let output = try CLI.run(["check", "--help"])
        #expect(output.status == 0)
        #expect(
            output.stdout == """
                OVERVIEW: Tell whether a push is Kindly's and whether it is marked decrypted.

                Reads an APNs JSON document on standard input and prints {"kindly": BOOL,
                "decrypted": BOOL}. Exits 0 when the push is Kindly's and 1 when it is not.

                USAGE: kindly-push check [--jsonl] [--jobs <n>] [--output <path>] [--quiet]
                         [--summary] [<file> ...]

                OPTIONS:
                  --jsonl                 Read one JSON document per line and write one JSON
                                          object per line, in order.
                  --jobs <n>              With --jsonl, process N lines at once (default: the
                                          number of cores).
                  --output <path>         Write the output to this file (a temporary file
                                          renamed into place, mode 0600) instead of standard
                                          output.
                  --quiet                 No progress line, even on a terminal.
                  --summary               With --jsonl, print the count of each result code on
                                          standard error at the end.
                  -h, --help              Show help information.

                EXAMPLES:
                  Tell whether a push is Kindly's:
                    kindly-push check < push.json

                """)
    }

    @Test(
        "every subcommand has help with overview, usage and options, on stdout with exit 0",
        arguments: [
            "keygen", "keys", "seal", "check", "decrypt", "route", "notify", "unifiedpush", "sender-keygen", "vapid-keygen", "senders",
            "verify", "doctor",
            "redis-status",
            "dead-letter", "completions",
            "man",
        ])
    func subcommandHelp(_ name: String) throws {
        for form in [[name, "--help"], [name, "-h"], ["help", name]] {
            let output = try CLI.run(form)
            #expect(output.status == 0)
            #expect(output.stderr == "")
            #expect(output.stdout.hasPrefix("OVERVIEW: "))
            #expect(output.stdout.contains("\nUSAGE: kindly-push \(name)"))
            #expect(output.stdout.contains("\nOPTIONS:\n"))
        }
    }

    @Test("--version and the version subcommand print the library's version, exit 0", arguments: [["--version"], ["version"]])
    func version(_ arguments: [String]) throws {
        let output = try CLI.run(arguments)
        #expect(output.status == 0)
        #expect(output.stderr == "")
        #expect(output.stdout == "kindly-push 0.4.0\n")
        // The CHANGELOG's newest release is the version the binary reports, with its link.
        let changelog = try String(contentsOf: CLI.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let releases = changelog.split(separator: "\n").filter { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
        #expect(releases.first?.hasPrefix("## [0.4.0] - ") == true, "\(releases.first ?? "none")")
        #expect(changelog.contains("\n[0.4.0]: "))
    }

    @Test(
        "usage errors exit 64 with one line on stderr and nothing on stdout",
        arguments: [
            ([], "kindly-push: usage: missing a subcommand (see 'kindly-push --help')"),
            (["frobnicate"], "kindly-push: usage: unknown subcommand 'frobnicate' (see 'kindly-push --help')"),
            (["help", "frobnicate"], "kindly-push: usage: unknown subcommand 'frobnicate' (see 'kindly-push --help')"),
            (["decrypt", "--wobble"], "kindly-push: usage: unknown option '--wobble' (see 'kindly-push decrypt --help')"),
            (["decrypt", "--key-file"], "kindly-push: usage: missing value for '--key-file PATH' (see 'kindly-push decrypt --help')"),
            (
                ["decrypt", "--keyring", "vault"],
                "kindly-push: usage: 'vault' is not a valid value for '--keyring'; expected one of: auto, secret-service, file (see 'kindly-push decrypt --help')"
            ),
            (["man", "extra"], "kindly-push: usage: unexpected argument 'extra' (see 'kindly-push man --help')"),
            (["decyrpt"], "kindly-push: usage: unknown subcommand 'decyrpt'; did you mean 'decrypt'? (see 'kindly-push --help')"),
            (
                ["decrypt", "--key-fil", "k.json"],
                "kindly-push: usage: unknown option '--key-fil'; did you mean '--key-file'? (see 'kindly-push decrypt --help')"
            ),
            (
                ["completions", "bsh"],
                "kindly-push: usage: 'bsh' is not a shell this command knows; expected one of: bash, zsh, fish; did you mean 'bash'?"
            ),
            (["check", "--jsonl=yes"], "kindly-push: usage: '--jsonl' takes no value (see 'kindly-push check --help')"),
            (["check", "--jobs", "0"], "kindly-push: usage: '--jobs' takes a whole number from 1 to 256 (see 'kindly-push check --help')"),
            (
                ["seal"],
                "kindly-push: usage: missing the device key: give --public-key B64 or --key-file PATH (see 'kindly-push seal --help')"
            ),
            (["seal", "--public-key", "AAAA"], "kindly-push: usage: --public-key: the public key has the wrong length"),
            (["seal", "--public-key", "A"], "kindly-push: usage: --public-key: the public key is not canonical base64"),
            (
                ["keygen", "--key-file", "x", "--token", "xyz"],
                "kindly-push: usage: --token: the device token must be hexadecimal digits only"
            ),
            (["keys"], "kindly-push: usage: missing action: list or delete (see 'kindly-push keys --help')"),
            (["keys", "delete", "nope"], "kindly-push: usage: 'nope' is not a kid (8 bytes of base64url)"),
            (["verify"], "kindly-push: usage: missing a vector file or folder (see 'kindly-push verify --help')"),
        ] as [([String], String)])
    func usageErrors(_ arguments: [String], _ message: String) throws {
        let output = try CLI.run(arguments)
        #expect(output.status == 64)
        #expect(output.stdout == "")
        #expect(output.stderr == message + "\n")
    }
}

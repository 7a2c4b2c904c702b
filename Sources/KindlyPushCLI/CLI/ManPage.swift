internal import KindlyPushBase

/// The roff man page (`man -l`, `groff -man`), generated from the commands' declarations.
package enum ManPage {
    package static func roff(_ commands: [any Command.Type], date: String = "2026-12-01") -> String {
        var page = """
            .TH KINDLY-PUSH 1 "\(date)" "kindly-push \(KindlyPushRelease.version)" "User Commands"
            .SH NAME
            kindly-push \\- \(escape(Help.overview))
            .SH SYNOPSIS
            .B kindly-push
            .I subcommand
            .RI [ options ]
            .SH DESCRIPTION
            \(escape("Kindly's backend seals each chat message for one device and sends it as an APNs push. kindly-push reads and writes those pushes as a Unix filter: one APNs JSON document on standard input (or FILE arguments), or with --jsonl one document per line, and one result per input on standard output. Errors go to standard error as one line, kindly-push: CODE: TEXT."))
            .SH COMMANDS

            """
        for command in commands {
            page += ".SS \(escape(command.name))\n"
            for synopsis in command.synopses {
                page += ".nf\n\\fBkindly-push\\fR \(escape(synopsis))\n.fi\n"
            }
            page += ".PP\n\(escape(command.abstract))\n"
            if !command.discussion.isEmpty {
                for paragraph in command.discussion.split(separator: "\n\n") {
                    page += ".PP\n" + escape(paragraph.split(separator: "\n").joined(separator: " ")) + "\n"
                }
            }
            for option in command.options where option.name != "--help" {
                page += ".TP\n\\fB\(escape(option.name))\\fR"
                if case .value(let placeholder, _) = option.kind { page += " \\fI\(escape(placeholder.lowercased()))\\fR" }
                page += "\n\(escape(option.help))\n"
            }
        }
        page += """
            .SH GENERAL OPTIONS
            .TP
            \\fB\\-\\-version\\fR
            Print the version and exit.
            .TP
            \\fB\\-h\\fR, \\fB\\-\\-help\\fR
            Show help for the command.
            .SH EXIT STATUS
            .TP
            0
            Success (route: a decision was printed).
            .TP
            1
            not_kindly: the push is not Kindly's.
            .TP
            2\\(en7
            unsupported_version, malformed, key_unavailable, authentication_failed, bad_plaintext, untrusted_sender.
            .TP
            64
            usage: an unknown command or option, a missing argument.
            .TP
            65
            bad_input: the input is not a JSON object, not UTF\\-8, or over 64 KiB; a plaintext breaks the wire format.
            .TP
            74
            io: a file, the keyring or standard output failed.
            .SH ENVIRONMENT
            .TP
            .B KINDLY_PUSH_KEYRING_DIR
            The file keyring's folder (default: $XDG_DATA_HOME/kindly\\-push/keys).
            .TP
            .B KINDLY_PUSH_SECRET_SERVICE_COLLECTION
            The Secret Service collection (an alias or an object path).
            .TP
            .B COLUMNS
            The width help is wrapped to.
            .SH SEE ALSO
            The wire format, display rules and command interface: wire\\-format.md, display\\-rules.md and cli.md of the
            Kindly push specification.

            """
        return page
    }

    /// Text made safe for roff: backslashes and hyphens escaped, no line starting with a dot or quote.
    package static func escape<S: StringProtocol>(_ text: S) -> String {
        var result = String(text).replacingCharacters([("\\", "\\e"), ("-", "\\-")])
        if result.hasPrefix(".") || result.hasPrefix("'") { result = "\\&" + result }
        return result
    }
}

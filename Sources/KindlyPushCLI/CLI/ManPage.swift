internal import KindlyPushBase

/// The roff man page (`man -l`, `groff -man`), generated from the commands' declarations: the
/// synopses, options and examples that help shows.
///
/// Plain ASCII roff: every other character is written as a roff escape (`\[u2026]`), so that
/// `groff -man -ww` is silent in any locale; `code` of the declarations is bold. Synopses use
/// the man macros `.SY`/`.OP`/`.YS`, which roff fills and wraps to the page.
package enum ManPage {
    package static func roff(_ commands: [CommandDeclaration], date: String = "2026-12-01") -> String {
        var page = """
            .TH KINDLY-PUSH 1 "\(date)" "kindly-push \(KindlyPushRelease.version)" "User Commands"
            .\\" Ragged right and no hyphenation: paths, codes and options stay whole.
            .nh
            .ad l
            .SH NAME
            kindly-push \\- \(escape(Help.overview))
            .SH SYNOPSIS
            .SY kindly\\-push
            .I command
            .RI [ options ]
            .RI [ file \\ .\\|.\\|.\\&]
            .YS
            .SY kindly\\-push
            .B help
            .RI [ command ]
            .YS
            .SY kindly\\-push
            .B \\-\\-version
            .YS
            .SH DESCRIPTION
            \(escape("Kindly's backend seals each chat message for one device and sends it as an APNs push. kindly-push reads and writes those pushes as a Unix filter: one APNs JSON document on standard input (or FILE arguments), or with --jsonl one document per line, and one result per input on standard output. Errors go to standard error as one line, kindly-push: CODE: TEXT."))
            .SH COMMANDS

            """
        for command in commands {
            page += ".SS \(escape(command.name))\n"
            for parts in command.synopsisParts {
                page += synopsis(parts)
            }
            page += ".PP\n\(escape(command.abstract))\n"
            if !command.discussion.isEmpty {
                for paragraph in command.discussion.split(separator: "\n\n") {
                    page += ".PP\n" + escape(paragraph.split(separator: "\n").joined(separator: " ")) + "\n"
                }
            }
            for option in command.options where !option.declares(SharedOptions.help) {
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
            .PP
            Every other option is long; \\fB\\-\\-\\fR ends the options (an argument that begins with a dash, a kid
            or a file name, goes after it).
            .SH EXIT STATUS
            .TP
            0
            Success (route: a decision was printed; with \\-\\-jsonl: every line was read, whatever its result).
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
            .TP
            78
            config: a \\fB\\-\\-redis\\fR worker of decrypt or route whose keyring holds no device key refuses to start.
            .SH ENVIRONMENT
            .TP
            .B KINDLY_PUSH_KEYRING_DIR
            The file keyring's folder (default: \\fI$XDG_DATA_HOME/kindly\\-push/keys\\fR).
            .TP
            .B KINDLY_PUSH_SECRET_SERVICE_COLLECTION
            The Secret Service collection (an alias or an object path).
            .TP
            .B DBUS_SESSION_BUS_ADDRESS
            The session bus; with \\fB\\-\\-keyring auto\\fR (the default), keys live in the Secret Service when it
            answers, and in the file keyring without one.
            .TP
            .B XDG_RUNTIME_DIR
            Without \\fBDBUS_SESSION_BUS_ADDRESS\\fR, the session bus is \\fI$XDG_RUNTIME_DIR/bus\\fR when that socket
            exists; the agent's unit follows the FIFO \\fI$XDG_RUNTIME_DIR/kindly\\-push/inbox\\fR.
            .TP
            .B HOME
            Where \\fBXDG_DATA_HOME\\fR and \\fBXDG_STATE_HOME\\fR default to, when they are not set.
            .TP
            .B XDG_DATA_DIRS
            Where \\fBkeygen\\fR looks for the Secret Service's D\\-Bus activation files (default:
            \\fI/usr/local/share:/usr/share\\fR).
            .TP
            .B KINDLY_PUSH_REDIS_PASSWORD
            With \\fB\\-\\-redis\\fR, the Redis password (a password in the URL is taken out of the command line, with
            a warning, and passed on here).
            .TP
            .B KINDLY_PUSH_REDIS_PASSWORD_FILE
            With \\fB\\-\\-redis\\fR and no \\fBKINDLY_PUSH_REDIS_PASSWORD\\fR, a file (mode 0600, owned by the user; a
            systemd credential) holding the password.
            .TP
            .B KINDLY_PUSH_SENTINEL_PASSWORD
            With a \\fBredis+sentinel://\\fR URL, the sentinels' own password (the data nodes' is
            \\fBKINDLY_PUSH_REDIS_PASSWORD\\fR).
            .TP
            .B KINDLY_PUSH_SENTINEL_PASSWORD_FILE
            With no \\fBKINDLY_PUSH_SENTINEL_PASSWORD\\fR, a file (mode 0600, owned by the user) holding it.
            .TP
            .B XDG_DATA_HOME
            Where the file keyring's default folder is (default: \\fI\\(ti/.local/share\\fR).
            .TP
            .B XDG_STATE_HOME
            Where notify's state store is (default: \\fI\\(ti/.local/state\\fR).
            .TP
            .B KINDLY_CHAT_ID
            Set for the command of \\fBnotify \\-\\-on\\-open\\fR: the chat of the banner clicked.
            .TP
            .B KINDLY_PUSH_ON_OPEN
            \\fBnotify\\fR's \\fB\\-\\-on\\-open\\fR command when the option is not given: one value, arguments
            and all (agent.env splits \\fBKINDLY_PUSH_AGENT_OPTIONS\\fR at spaces).
            .TP
            .B COLUMNS
            The width help is wrapped to (default: the terminal's, else 80).
            .TP
            .B KINDLY_PUSH_TEST_*
            Hooks of the test suite (a clock file, kill points, no O_TMPFILE); never set them otherwise.
            .SH FILES
            .TP
            .I $XDG_DATA_HOME/kindly\\-push/keys/
            The file keyring: one file per key, mode 0600, in a folder of mode 0700.
            .TP
            .I $XDG_STATE_HOME/kindly\\-push/state.sqlite3
            notify's state store (the pushes shown, a followed file's position; mode 0600).
            .TP
            .I $XDG_CONFIG_HOME/kindly\\-push/agent.env
            The agent's unit and bus activation read \\fBKINDLY_PUSH_AGENT_OPTIONS\\fR (notify's options, such as
            \\fB\\-\\-keyring file\\fR) and the variables above from it: one NAME=VALUE per line, no quotes.
            .TP
            .I device.json
            A key file (\\fB\\-\\-key\\-file\\fR): {"kid", "public_key", "secret_key"}, base64url, mode 0600;
            one that group or others can read is refused. A sender key file (\\fBsender\\-keygen\\fR) has
            "sid" in place of "kid".
            .SH EXAMPLES

            """
        for command in commands {
            for example in command.examples {
                page += ".PP\n\(escape(example.purpose)):\n.PP\n.RS 4\n.EX\n"
                page += escape(Help.commandLine(example.line, width: 70, indent: 0)) + ".EE\n.RE\n"
            }
        }
        page += """
            .SH SEE ALSO
            \\fBkindly\\-push help\\fR \\fIcommand\\fR; \\fBkindly\\-push doctor\\fR, when keys cannot be found.
            The protocol specification (wire format, display rules, the command's stream formats) is
            in docs/spec/ of the KindlyPush source distribution.

            """
        return page
    }

    /// One form of a command in `.SY`/`.OP` macros: the name in bold, an optional option as
    /// `.OP`, the rest (a required option, an action, operands) as words roff fills.
    static func synopsis(_ parts: [String]) -> String {
        var text = ".SY \"kindly\\-push \(escape(parts[0]))\"\n"
        for part in parts.dropFirst() {
            let isOptional = part.hasPrefix("[--") && part.hasSuffix("]")
            let words = (isOptional ? part.dropFirst().dropLast() : part[...]).split(separator: " ")
            if isOptional, words.count <= 2, let option = words.first {
                let value = words.dropFirst().first.map { " " + escape($0.dropFirst().dropLast()) } ?? ""
                text += ".OP \(escape(option))\(value)\n"
            } else if isOptional, let option = words.first, words.count == 3, words[2] == "..." {
                text += ".RB [ \(escape(option))\n.IR \(escape(words[1].dropFirst().dropLast())) \\ .\\|.\\|.\\&]\n"
            } else {
                // A required option, an action, operands: `<name>` in italics, the rest in bold
                // (brackets and dots in roman); `\&` so that roff sees no end of sentence in `...]`.
                text += words.map(synopsisWord).joined(separator: " ") + "\\&\n"
            }
        }
        return text + ".YS\n"
    }

    /// Text made safe for roff: backslashes and hyphens escaped, every character outside ASCII as
    /// a `\[uXXXX]` escape, `code` in bold, no line starting with a dot or a quote.
    package static func escape<S: StringProtocol>(_ text: S) -> String {
        var result = ""
        var inCode = false
        var atLineStart = true
        for scalar in String(text).unicodeScalars {
            if atLineStart, scalar == "." || scalar == "'" { result += "\\&" }
            atLineStart = scalar == "\n"
            switch scalar {
            case "\\": result += "\\e"
            case "-": result += "\\-"
            case "`":
                result += inCode ? "\\fR" : "\\fB"
                inCode.toggle()
            case "\n": result += "\n"
            case _ where scalar.isASCII && scalar.value >= 0x20 && scalar.value < 0x7F: result.unicodeScalars.append(scalar)
            default: result += "\\[u" + hex(scalar.value) + "]"
            }
        }
        if inCode { result += "\\fR" }
        return result
    }

    /// `<file>` as `\fIfile\fR`, `--app-state` in bold, `[` and `...]` in roman.
    static func synopsisWord(_ word: Substring) -> String {
        if word.hasPrefix("[") || word.hasSuffix("]") {
            let core = word.drop { $0 == "[" }.reversed().drop { $0 == "]" }.reversed()
            let inner = synopsisWord(Substring(String(core)))
            return String(repeating: "[", count: word.prefix { $0 == "[" }.count) + inner
                + String(repeating: "]", count: word.reversed().prefix { $0 == "]" }.count)
        }
        if word == "..." { return ".\\|.\\|." }
        if word.hasPrefix("<"), word.hasSuffix(">") { return "\\fI" + escape(word.dropFirst().dropLast()) + "\\fR" }
        return "\\fB" + escape(word) + "\\fR"
    }

    /// At least four upper-case hexadecimal digits, as roff's `\[uXXXX]` wants.
    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

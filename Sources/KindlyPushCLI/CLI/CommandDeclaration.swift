internal import KindlyPushBase

/// A command's declaration as a value: its name, help, options, forms and examples, which help,
/// usage, completions and the man page read. A binary has the declarations of the commands it
/// links (``Command/declaration``) and asks a sibling binary for the others'
/// (``CommandTable/declarations(asking:)``), which the sibling prints as JSON lines
/// (``jsonLine``, read back by ``init(jsonLine:)``).
package struct CommandDeclaration: Sendable {
    package let name: String
    package let abstract: String
    package let discussion: String
    package let options: [OptionSpec]
    /// The arguments after the options in the usage line, or the command's forms
    /// (``Command/arguments``).
    package let arguments: [String]
    package let examples: [Example]

    package init(
        name: String, abstract: String, discussion: String, options: [OptionSpec], arguments: [String], examples: [Example]
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.examples = examples
    }

    /// The action word of each form that has one (`list`, `delete` of `delete <kid>`; `bash`
    /// of completions), in order; none for a command of one form with operands only.
    package var actionWords: [String] { arguments.compactMap(Self.actionWord(of:)) }

    /// The first word of `form` when it is an action (not an operand such as `<path> ...`).
    package static func actionWord(of form: String) -> String? {
        guard let first = form.split(separator: " ").first, !first.hasPrefix("<"), !first.hasPrefix("[") else { return nil }
        return String(first)
    }

    /// Each form of the usage line as its parts, derived from the declarations: the name, the
    /// action word with its operands, each option that form takes (`[--name <value>]`) but
    /// help, then the operands (`<path> ...`). Usage wraps between parts, never inside one.
    package var synopsisParts: [[String]] {
        arguments.map { form in
            let action = Self.actionWord(of: form)
            let options = self.options.filter { !$0.declares(SharedOptions.help) && $0.isTaken(byForm: action) }.map(\.synopsisPart)
            guard !form.isEmpty else { return [name] + options }
            // An action word (`list`, `delete <kid>`) comes first, as a subcommand does; operands
            // (`<path> ...`, `[<file> ...]`) come after the options.
            return action == nil ? [name] + options + [form] : [name, form] + options
        }
    }

    /// Each form of the usage line on one line.
    package var synopses: [String] {
        synopsisParts.map { $0.joined(separator: " ") }
    }
}

// MARK: - Between binaries

extension CommandDeclaration {
    /// The declaration as one line of JSON (no newline): what a sibling binary prints for
    /// `--declarations`.
    package var jsonLine: [UInt8] {
        let options: [JSONValue] = options.map { option in
            var object: JSONObject = ["name": .string(option.name), "help": .string(option.help)]
            if case .value(let placeholder, let choices) = option.kind {
                object["placeholder"] = .string(placeholder)
                object["choices"] = .array(choices.map(JSONValue.string))
            }
            if option.isRequired { object["required"] = true }
            if option.isRepeatable { object["repeatable"] = true }
            if !option.forms.isEmpty { object["forms"] = .array(option.forms.map(JSONValue.string)) }
            if let short = option.shortName { object["short"] = .string(short) }
            return .object(object)
        }
        let document: JSONObject = [
            "name": .string(name), "abstract": .string(abstract), "discussion": .string(discussion), "options": .array(options),
            "arguments": .array(arguments.map(JSONValue.string)),
            "examples": .array(examples.map { .object(["purpose": .string($0.purpose), "line": .string($0.line)]) }),
        ]
        return JSONWriter.compactBytes(.object(document))
    }

    /// A declaration from a line of ``jsonLine``; nil for any other text.
    package init?(jsonLine: some Collection<UInt8>) {
        guard let document = try? JSONReader.parse(Array(jsonLine)) else { return nil }
        func text(_ value: JSONValue?) -> String? { value?.stringValue }
        func texts(_ value: JSONValue?) -> [String]? {
            guard case .array(let elements) = value else { return nil }
            let strings = elements.compactMap(\.stringValue)
            return strings.count == elements.count ? strings : nil
        }
        func flag(_ value: JSONValue?) -> Bool? {
            switch value {
            case nil: return false
            case .bool(let flag): return flag
            default: return nil
            }
        }
        guard let name = text(document["name"]), let abstract = text(document["abstract"]),
            let discussion = text(document["discussion"]), let arguments = texts(document["arguments"]),
            case .array(let optionValues) = document["options"], case .array(let exampleValues) = document["examples"]
        else { return nil }
        var options: [OptionSpec] = []
        for value in optionValues {
            guard let optionName = text(value["name"]), let help = text(value["help"]), let required = flag(value["required"]),
                let repeatable = flag(value["repeatable"])
            else { return nil }
            var option: OptionSpec
            if let placeholder = text(value["placeholder"]) {
                guard let choices = texts(value["choices"]) else { return nil }
                option =
                    repeatable ? .repeatableValue(optionName, placeholder, help) : .value(optionName, placeholder, help, choices: choices)
                guard option.choices == choices else { return nil }
            } else {
                guard !repeatable else { return nil }
                option = .flag(optionName, help)
            }
            option.isRequired = required
            if let forms = value["forms"] {
                guard let forms = texts(forms) else { return nil }
                option = option.only(forms)
            }
            if let short = value["short"] {
                guard let short = text(short) else { return nil }
                option = option.short(short)
            }
            options.append(option)
        }
        var examples: [Example] = []
        for value in exampleValues {
            guard let purpose = text(value["purpose"]), let line = text(value["line"]) else { return nil }
            examples.append(Example(purpose, line))
        }
        self.init(name: name, abstract: abstract, discussion: discussion, options: options, arguments: arguments, examples: examples)
    }
}

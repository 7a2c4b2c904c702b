package import KindlyPushBase
internal import KindlyPushCore

/// The options a command accepts, for parsing and for its help text.
package struct OptionSpec: Sendable {
    package enum Kind: Sendable {
        /// `--name` alone.
        case flag
        /// `--name VALUE` or `--name=VALUE`; `choices` restricts the value when not empty.
        case value(placeholder: String, choices: [String])
    }

    package let name: String
    package let kind: Kind
    package private(set) var help: String
    /// The command cannot run without it (usage writes it without brackets).
    package var isRequired = false
    /// A value option that may be given more than once (read with a ``RepeatableOption``).
    package var isRepeatable = false
    /// The forms of a command with several (`senders add`, `senders list`) that take the option,
    /// by their action word; empty: every form. Usage lists it only in those forms, and the
    /// parser refuses it in the others.
    package private(set) var forms: [String] = []
    /// The one-letter form (`-h`), when the option has one.
    package private(set) var shortName: String?

    package static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .flag, help: help)
    }

    package static func value(
        _ name: String, _ placeholder: String, _ help: String, choices: [String] = [], required: Bool = false
    ) -> OptionSpec {
        OptionSpec(name: name, kind: .value(placeholder: placeholder, choices: choices), help: help, isRequired: required)
    }

    /// The allowed values, when the option restricts them (for completions and the man page).
    package var choices: [String] {
        if case .value(_, let choices) = kind { return choices }
        return []
    }

    /// Whether the option takes a value.
    package var takesValue: Bool {
        if case .value = kind { return true }
        return false
    }

    /// The option taken only by the forms whose action word is one of `forms` (`.only("add")`).
    package func only(_ forms: String...) -> OptionSpec { only(forms) }

    func only(_ forms: [String]) -> OptionSpec {
        var option = self
        option.forms = forms
        return option
    }

    /// The same flag with a one-letter form (`-h` of `--help`), which help writes before it.
    package func short(_ name: String) -> OptionSpec {
        var option = self
        option.shortName = name
        return option
    }

    /// The same option with the help a command gives it: a shared option can mean something
    /// else to one command (`--key-file` is written by keygen, read by seal and decrypt).
    package func help(_ text: String) -> OptionSpec {
        var option = self
        option.help = text
        return option
    }

    /// Whether the form with this action word (`nil`: a command of one form) takes the option.
    package func isTaken(byForm action: String?) -> Bool {
        guard let action, !forms.isEmpty else { return true }
        return forms.contains(action)
    }

    package static func repeatableValue(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .value(placeholder: placeholder, choices: []), help: help, isRequired: false, isRepeatable: true)
    }
}

/// A declared option: the spec that help, usage, completions and the man page read, and the key
/// to its value in ``ParsedArguments`` (`arguments[Self.apply]`), as a `@Flag` or `@Option`
/// declaration of swift-argument-parser is. The parser matches arguments by the spec's name;
/// nothing else compares option names, so a misspelt key does not compile.
package protocol OptionKey: Sendable {
    var spec: OptionSpec { get }
}

extension OptionKey {
    /// `--name`, for messages.
    package var name: String { spec.name }

    /// The same option, as it is declared: `static let keyring = KeyringOptions.keyring.taken`
    /// declares that a command takes another's option, at that place of its list.
    package var taken: Self { self }
}

/// Options of another group, taken as a whole at this place of a command's list
/// (`static let stream = OptionGroup(StreamOptions.options)`), as swift-argument-parser's
/// `@OptionGroup`; `except` leaves out options the command declares itself.
package struct OptionGroup: Sendable {
    package let specs: [OptionSpec]

    package init(_ specs: [OptionSpec], except: [any OptionKey] = []) {
        self.specs = specs.filter { spec in !except.contains { $0.name == spec.name } }
    }
}

/// `--name` alone: `arguments[key]` is whether it was given.
package struct Flag: OptionKey {
    package private(set) var spec: OptionSpec

    package init(_ name: String, _ help: String, short: String? = nil) {
        spec = .flag(name, help)
        if let short { spec = spec.short(short) }
    }

    /// The same flag with the help a command gives it.
    package func help(_ text: String) -> Flag {
        var flag = self
        flag.spec = spec.help(text)
        return flag
    }

    /// Whether `argument` names this flag (`--help`, or its short form `-h`): for the words
    /// before a subcommand, which no spec list parses.
    package func isNamed(by argument: String) -> Bool {
        argument == spec.name || (spec.shortName.map { argument == $0 } ?? false)
    }
}

/// `--name VALUE` given at most once: `arguments[key]` is its value as `Value`, or nil when the
/// option is not given.
///
/// An option whose `Value` is an enumeration of strings takes its allowed values from the cases
/// (the parser refuses any other, with the usage error of today's text); others convert the text
/// (`Int`), and `arguments[key]` is nil for text that does not convert:
/// ``ParsedArguments/isGiven(_:)`` tells that apart from no option.
package struct Option<Value: Sendable>: OptionKey {
    package private(set) var spec: OptionSpec
    private let convert: @Sendable (String) -> Value?

    package init(
        _ name: String, _ placeholder: String, _ help: String, choices: [String] = [], required: Bool = false,
        convert: @escaping @Sendable (String) -> Value?
    ) {
        spec = .value(name, placeholder, help, choices: choices, required: required)
        self.convert = convert
    }

    /// The value of `text`, as given on the command line.
    package func value(of text: String) -> Value? { convert(text) }

    /// The same option with the help a command gives it.
    package func help(_ text: String) -> Option {
        var option = self
        option.spec = spec.help(text)
        return option
    }

    /// The same option, required by this command (usage writes it without brackets).
    package func required() -> Option {
        var option = self
        option.spec.isRequired = true
        return option
    }

    /// The option taken only by the forms whose action word is one of `forms`.
    package func only(_ forms: String...) -> Option {
        var option = self
        option.spec = spec.only(forms)
        return option
    }
}

extension Option where Value == String {
    package init(_ name: String, _ placeholder: String, _ help: String, required: Bool = false) {
        self.init(name, placeholder, help, required: required) { $0 }
    }
}

extension Option where Value == Int {
    /// A whole number; its range is the reader's to check, with its own message.
    package init(_ name: String, _ placeholder: String, _ help: String) {
        self.init(name, placeholder, help) { Int($0) }
    }
}

extension Option where Value: CaseIterable & RawRepresentable, Value.RawValue == String {
    /// One of `Value`'s cases by its raw value; the choices are the cases, in order.
    package init(_ name: String, _ placeholder: String, _ help: String, required: Bool = false) {
        self.init(name, placeholder, help, choices: Value.allCases.map(\.rawValue), required: required) { Value(rawValue: $0) }
    }
}

/// `--name VALUE` that may be given more than once: `arguments[key]` is every value, in order.
package struct RepeatableOption: OptionKey {
    package let spec: OptionSpec

    package init(_ name: String, _ placeholder: String, _ help: String) {
        spec = .repeatableValue(name, placeholder, help)
    }
}

extension OptionSpec {
    /// Whether this spec declares `key`'s option (whatever help the command gives it).
    package func declares(_ key: some OptionKey) -> Bool { name == key.spec.name }
}

extension Array where Element == OptionSpec {
    /// Whether one of the specs declares `key`'s option.
    package func contains(_ key: some OptionKey) -> Bool { contains { $0.declares(key) } }
}

/// Parsed command-line arguments of one command, read with the keys that declared the options.
///
/// Lists, not a `Set` and dictionaries: a command line names a handful of options, and a
/// one-shot run then maps no hashing code of the standard library for them.
package struct ParsedArguments: Sendable {
    private var flags: [String] = []
    private var values: [(name: String, value: String)] = []
    package private(set) var positionals: [String] = []
    private var repeatedValues: [(name: String, value: String)] = []

    private func has(_ flag: String) -> Bool { flags.contains(flag) }
    private func text(_ name: String) -> String? { values.first { $0.name == name }?.value }

    /// Whether the flag was given.
    package subscript(key: Flag) -> Bool { has(key.name) }

    /// The option's value; nil when it is not given (or its text does not convert).
    package subscript<Value>(key: Option<Value>) -> Value? { text(key.name).flatMap(key.value(of:)) }

    /// Every value of a repeatable option, in order.
    package subscript(key: RepeatableOption) -> [String] { repeatedValues.filter { $0.name == key.name }.map(\.value) }

    /// Whether the option was given, whatever its value.
    package func isGiven(_ key: any OptionKey) -> Bool {
        let name = key.spec.name
        return has(name) || text(name) != nil || repeatedValues.contains { $0.name == name }
    }

    /// The value of an option `command` cannot run without; missing or empty, the usage error
    /// `missing '--name'`.
    package func required(_ key: Option<String>, command: String) throws(CodedError) -> String {
        guard let value = self[key], !value.isEmpty else { throw CodedError.usage("missing '\(key.name)'", command: command) }
        return value
    }

    /// Parses `arguments` against `specs`; `--` ends options. Throws a usage error naming the
    /// offending argument. `forms` are the command's action words (`add`, `list`): an option
    /// that the form named by the first operand does not take (``OptionSpec/only(_:)``) is refused.
    package static func parse(
        _ arguments: [String], specs: [OptionSpec], command: String, forms: [String] = []
    ) throws(CodedError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        func usage(_ text: String) -> CodedError { .usage(text, command: command) }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if !optionsEnded, let spec = specs.first(where: { $0.shortName == argument }) {
                if !parsed.has(spec.name) { parsed.flags.append(spec.name) }
                continue
            }
            // Every option is long, so an argument with a single dash is a value: a kid may begin
            // with "-" (base64url). One that begins with "--" can follow "--". But `-k` (no kid,
            // no sid is two characters) or `-jsonl` is an option mistyped: said so, with the
            // option meant (a file of that name goes after "--", or as ./-k).
            if !optionsEnded, let meant = Suggestion.longOptions(forShort: argument, next: arguments[safe: index], among: specs) {
                throw usage("unknown option '\(argument)'\(meant)")
            }
            if optionsEnded || !argument.utf8.starts(with: "--".utf8) {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = argument
            var inlineValue: String?
            if let (before, after) = argument.splitAtFirstEquals() {
                name = before
                inlineValue = after
            }
            guard let spec = specs.first(where: { $0.name == name }) else {
                throw usage("unknown option '\(name)'\(Suggestion.phrase(for: name, among: specs.map(\.name)))")
            }
            switch spec.kind {
            case .flag:
                guard inlineValue == nil else { throw usage("'\(name)' takes no value") }
                if !parsed.has(name) { parsed.flags.append(name) }
            case .value(let placeholder, let choices):
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw usage("missing value for '\(name) \(placeholder)'") }
                    value = arguments[index]
                    index += 1
                }
                if !choices.isEmpty, !choices.contains(value) {
                    throw usage("'\(value)' is not a valid value for '\(name)'; expected one of: \(choices.joined(separator: ", "))")
                }
                if spec.isRepeatable {
                    parsed.repeatedValues.append((name, value))
                    continue
                }
                guard parsed.text(name) == nil else { throw usage("'\(name)' is given twice") }
                parsed.values.append((name, value))
            }
        }
        try parsed.checkForm(specs: specs, command: command, forms: forms)
        return parsed
    }

    /// Refuses an option that the form named by the first operand does not take.
    private func checkForm(specs: [OptionSpec], command: String, forms: [String]) throws(CodedError) {
        guard let action = positionals.first, forms.contains(action) else { return }
        let given = flags + values.map(\.name) + repeatedValues.map(\.name)
        for spec in specs where !spec.isTaken(byForm: action) && given.contains(spec.name) {
            throw CodedError.usage("\(command) \(action) takes no \(spec.name)", command: command)
        }
    }
}

extension Array {
    /// The element at `index`, or nil past the end.
    package subscript(safe index: Int) -> Element? {
        indices.contains(index) ? self[index] : nil
    }
}

extension String {
    /// The text before and after the first `=`, or nil without one.
    ///
    /// Why bytes and not `firstIndex(of:)`: a Character search runs the grapheme-breaking code
    /// and reads its Unicode tables, which a one-shot run would map only for this.
    package func splitAtFirstEquals() -> (before: String, after: String)? {
        guard let equals = utf8.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        return (
            String(decoding: utf8[..<equals], as: UTF8.self),
            String(decoding: utf8[utf8.index(after: equals)...], as: UTF8.self)
        )
    }
}

// The build tool of the OptionLists plugin (Plugins/OptionLists): reads the Swift files of the
// command line and writes, for every type that declares option keys, its `options` list in the
// order the keys are declared, so that an option is declared once: its key is the list, as a
// `@Flag` or `@Option` declaration of swift-argument-parser is. Nothing is read at run time.
//
//   OptionListGenerator OUTPUT FILE...
//
// In a type's body, `static let NAME = INITIALIZER` (no type annotation) declares:
//   - an option, when INITIALIZER starts with `Flag(`, `Option(`, `Option<…>(` or
//     `RepeatableOption(`, or is another option with a modifier (`Other.key.help(…)`,
//     `.required()`, `.only(…)`, `.short(…)`, or `.taken` for the option as it is);
//   - a group of options spliced in at that place, when it starts with `OptionGroup(`.
// Anything else (a name, a number, a list with a type annotation) is not an option. Each such
// type gets `static let options: [OptionSpec]` (its options and groups, in order) and
// `static let declaredKeys: [any OptionKey]` (its own options, without the groups). The
// compiler checks the rest: a name listed here that is no option does not compile.

#if canImport(Glibc)
    import Glibc
#endif

/// One token of Swift source, as far as the generator needs: names, punctuation, and string
/// literals (their content dropped).
enum Token: Equatable {
    case name(String)
    case punctuation(Character)
    case string
}

/// Splits Swift source into tokens, dropping comments and the text of string literals
/// (interpolations included), so that braces inside them do not count.
struct Lexer {
    let characters: [Character]
    var index = 0
    var tokens: [Token] = []

    init(_ text: String) { characters = Array(text) }

    func peek(_ offset: Int = 0) -> Character? {
        index + offset < characters.count ? characters[index + offset] : nil
    }

    mutating func run() throws -> [Token] {
        while let character = peek() {
            if character == "/" && peek(1) == "/" {
                while let next = peek(), next != "\n" { index += 1 }
            } else if character == "/" && peek(1) == "*" {
                try skipBlockComment()
            } else if character == "#" || character == "\"" {
                if try !skipString() {
                    tokens.append(.punctuation(character))
                    index += 1
                }
            } else if character.isLetter || character == "_" {
                var name = ""
                while let next = peek(), next.isLetter || next.isNumber || next == "_" {
                    name.append(next)
                    index += 1
                }
                tokens.append(.name(name))
            } else if character.isWhitespace || character.isNumber {
                index += 1
            } else {
                tokens.append(.punctuation(character))
                index += 1
            }
        }
        return tokens
    }

    mutating func skipBlockComment() throws {
        var depth = 0
        repeat {
            guard index < characters.count else { throw GeneratorError("a block comment does not end") }
            if peek() == "/" && peek(1) == "*" {
                depth += 1
                index += 2
            } else if peek() == "*" && peek(1) == "/" {
                depth -= 1
                index += 2
            } else {
                index += 1
            }
        } while depth > 0
    }

    /// Skips a string literal at `index` (`"…"`, `"""…"""`, `#"…"#`, with interpolations);
    /// false when `#` starts no string (`#if`, `#available`).
    mutating func skipString() throws -> Bool {
        var hashes = 0
        while peek(hashes) == "#" { hashes += 1 }
        guard peek(hashes) == "\"" else { return false }
        index += hashes
        let multiline = peek() == "\"" && peek(1) == "\"" && peek(2) == "\""
        index += multiline ? 3 : 1
        let escape = "\\" + String(repeating: "#", count: hashes)
        while true {
            guard let character = peek() else { throw GeneratorError("a string literal does not end") }
            if character == "\\" && matches(escape) {
                index += escape.count
                if peek() == "(" {
                    try skipInterpolation()
                } else {
                    index += 1
                }
            } else if character == "\"" && matches((multiline ? "\"\"\"" : "\"") + String(repeating: "#", count: hashes)) {
                index += (multiline ? 3 : 1) + hashes
                tokens.append(.string)
                return true
            } else {
                index += 1
            }
        }
    }

    /// Skips `(…)` of an interpolation, whose code may hold strings of its own.
    mutating func skipInterpolation() throws {
        var depth = 0
        repeat {
            guard let character = peek() else { throw GeneratorError("an interpolation does not end") }
            if character == "\"" || character == "#" {
                if try skipString() { continue }
            }
            if character == "(" { depth += 1 }
            if character == ")" { depth -= 1 }
            index += 1
        } while depth > 0
    }

    func matches(_ text: String) -> Bool {
        for (offset, character) in text.enumerated() where peek(offset) != character { return false }
        return true
    }
}

struct GeneratorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One entry of a type's list: its own option, or a group spliced in.
enum Entry: Equatable {
    case option(String)
    case group(String)
}

/// The types that declare options, with their entries in declaration order, in the order the
/// types are first met.
struct Declarations {
    var order: [String] = []
    var entries: [String: [Entry]] = [:]
    var files: [String: String] = [:]
    /// What the files import: the generated extensions need the types they extend.
    var modules: Set<String> = []
    /// `static let NAME = Type.member` with no modifier, by where it stands: an option taken
    /// as it is must say so (`.taken`), else it would not be listed (``checkPlainAliases()``).
    var plainAliases: [(file: String, declared: String, type: String, member: String)] = []

    /// Fails on a plain alias of another type's option: `static let keyring =
    /// KeyringOptions.keyring` reads like `static let name = SealCommand.name`, and would be
    /// left out of its command's list without a word.
    func checkPlainAliases() throws {
        for alias in plainAliases where entries[alias.type]?.contains(.option(alias.member)) == true {
            throw GeneratorError(
                "\(alias.file): 'static let \(alias.declared) = \(alias.type).\(alias.member)' names an option without a modifier: "
                    + "write '\(alias.type).\(alias.member).taken' to take it as it is (or give it its own help)")
        }
    }

    mutating func add(_ entry: Entry, to type: String, file: String) throws {
        if entries[type] == nil {
            order.append(type)
            files[type] = file
        } else if files[type] != file {
            throw GeneratorError(
                "\(file): \(type) declares options in \(files[type]!) too: keep a type's options in one file, in help's order")
        }
        entries[type, default: []].append(entry)
    }
}

/// Reads the declarations of one file's tokens, and the modules it imports.
func read(_ tokens: [Token], file: String, into declarations: inout Declarations) throws {
    for (position, token) in tokens.enumerated() where token == .name("import") && position + 1 < tokens.count {
        if case .name(let module) = tokens[position + 1], !["Glibc", "Musl", "Darwin"].contains(module) {
            declarations.modules.insert(module)
        }
    }
    // The scopes open at each point: a type's name, or nil for any other brace.
    var scopes: [String?] = []
    var pendingType: String?
    var index = 0
    func name(at position: Int) -> String? {
        guard position < tokens.count, case .name(let name) = tokens[position] else { return nil }
        return name
    }
    func isPunctuation(_ character: Character, at position: Int) -> Bool {
        position < tokens.count && tokens[position] == .punctuation(character)
    }
    while index < tokens.count {
        let token = tokens[index]
        switch token {
        case .name(let word) where ["struct", "enum", "class", "extension", "protocol", "actor"].contains(word):
            // `extension A.B`: the type's dotted name; nested types are named within their outer type.
            guard var typeName = name(at: index + 1) else { break }
            var next = index + 2
            while isPunctuation(".", at: next), let part = name(at: next + 1) {
                typeName += "." + part
                next += 2
            }
            // A type declared in a function's body has no name outside it: its options are no
            // command's (and nothing can extend it), so it is left out.
            if scopes.contains(where: { $0 == nil }) {
                pendingType = nil
            } else if word == "extension" || scopes.isEmpty {
                pendingType = typeName
            } else {
                pendingType = scopes.last!! + "." + typeName
            }
            index = next
            continue
        case .punctuation("{"):
            scopes.append(pendingType)
            pendingType = nil
        case .punctuation("}"):
            guard !scopes.isEmpty else { throw GeneratorError("\(file): a closing brace with no opening one") }
            scopes.removeLast()
        case .name("static") where name(at: index + 1) == "let":
            guard let type = scopes.last.flatMap({ $0 }), let declared = name(at: index + 2) else { break }
            // A type annotation: not an option.
            guard isPunctuation("=", at: index + 3) else { break }
            if let entry = try entry(for: declared, initializer: index + 4) {
                try declarations.add(entry, to: type, file: file)
            } else if let first = name(at: index + 4), isPunctuation(".", at: index + 5), let member = name(at: index + 6),
                !isPunctuation(".", at: index + 7), !isPunctuation("(", at: index + 7)
            {
                declarations.plainAliases.append((file, declared, first, member))
            }
        default:
            break
        }
        index += 1
    }
    guard scopes.isEmpty else { throw GeneratorError("\(file): \(scopes.count) braces are not closed") }

    /// What `static let declared = …` declares, from the tokens of its initializer at `start`.
    func entry(for declared: String, initializer start: Int) throws -> Entry? {
        guard let first = name(at: start) else { return nil }
        switch first {
        case "Flag", "RepeatableOption":
            return isPunctuation("(", at: start + 1) ? .option(declared) : nil
        case "Option":
            return isPunctuation("(", at: start + 1) || isPunctuation("<", at: start + 1) ? .option(declared) : nil
        case "OptionGroup":
            return isPunctuation("(", at: start + 1) ? .group(declared) : nil
        default:
            // `Other.key.modifier…`: a dotted path whose next member is a modifier of options.
            var position = start + 1
            var parts = [first]
            while isPunctuation(".", at: position), let part = name(at: position + 1) {
                parts.append(part)
                position += 2
                if ["help", "required", "only", "short", "taken"].contains(part), parts.count >= 3 {
                    return .option(declared)
                }
            }
            return nil
        }
    }
}

func generate(_ declarations: Declarations) -> String {
    var text = """
        // Generated by the OptionLists plugin (Sources/OptionListGenerator) from the declarations
        // of each type below: do not edit. Each list is in the order its options are declared.

        """
    // Internal but for KindlyPushCLI, whose `OptionSpec` and `OptionKey` the lists' types are
    // (in the modules of the binaries' own commands); the lists name no other module's types (a
    // package import the lists do not use is a warning in every build).
    for module in declarations.modules.sorted() { text += "\(module == "KindlyPushCLI" ? "package" : "internal") import \(module)\n" }
    for type in declarations.order {
        let entries = declarations.entries[type]!
        var parts: [String] = []
        var run: [String] = []
        for entry in entries {
            switch entry {
            case .option(let name): run.append("\(name).spec")
            case .group(let name):
                if !run.isEmpty { parts.append("[" + run.joined(separator: ", ") + "]") }
                run = []
                parts.append("\(name).specs")
            }
        }
        if !run.isEmpty || parts.isEmpty { parts.append("[" + run.joined(separator: ", ") + "]") }
        let keys = entries.compactMap { entry -> String? in
            if case .option(let name) = entry { return name }
            return nil
        }
        text += """

            extension \(type) {
                /// The options \(type) declares (\(declarations.files[type]!)), in their order, groups spliced in: what
                /// help, usage, completions and the man page list, and what the parser takes.
                package static let options: [OptionSpec] = \(parts.joined(separator: " + "))
                /// The options \(type) declares itself (no group's).
                package static let declaredKeys: [any OptionKey] = [\(keys.joined(separator: ", "))]
            }

            """
    }
    return text
}

/// The bytes of the file at `path`, or nil when it cannot be opened.
func contents(of path: String) -> [UInt8]? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { return bytes }
        bytes += buffer[..<count]
    }
}

func fail(_ message: String) -> Never {
    let line = Array("error: OptionListGenerator: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail("usage: OptionListGenerator OUTPUT FILE...") }
var declarations = Declarations()
for path in arguments.dropFirst(2).sorted() {
    guard let bytes = contents(of: path) else { fail("\(path): cannot open") }
    var lexer = Lexer(String(decoding: bytes, as: UTF8.self))
    let name = path.split(separator: "/").suffix(2).joined(separator: "/")
    do {
        try read(try lexer.run(), file: name, into: &declarations)
    } catch {
        fail("\(error)".hasPrefix(name) ? "\(error)" : "\(name): \(error)")
    }
}
do {
    try declarations.checkPlainAliases()
} catch {
    fail("\(error)")
}
let text = generate(declarations)
// Written only when it changed, so that an unchanged list does not rebuild the module.
if contents(of: arguments[1]) != Array(text.utf8) {
    guard let output = fopen(arguments[1], "w") else { fail("\(arguments[1]): cannot write") }
    fputs(text, output)
    fclose(output)
}

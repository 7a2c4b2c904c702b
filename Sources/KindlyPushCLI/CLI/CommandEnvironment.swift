#if canImport(Glibc)
    import Glibc
#endif

/// The environment a command runs with: names and values in the order of `environ`.
///
/// Why not `[String: String]`: building a dictionary of the whole environment hashes every
/// name, and that alone maps the standard library's hashing and dictionary code into every
/// one-shot run (about 0.4 MB of peak memory for `decrypt --key-file`, measured with
/// tools/bench-startup). A command reads a handful of variables once, so a list
/// read in order costs nothing that matters.
package struct CommandEnvironment: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    private var entries: [(key: String, value: String)]
    /// The table of the binary that runs (``kindlyPushMain(_:)`` sets it): the commands help
    /// lists and the services commands use. Not a variable: the sequence is the variables only.
    package var table = CommandTable.kindlyPush

    /// The entries of `dictionary`, sorted by name (a dictionary has no order of its own).
    package init(_ dictionary: [String: String]) {
        entries = dictionary.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
    }

    package init(dictionaryLiteral elements: (String, String)...) {
        self.init([:])
        for (name, value) in elements { self[name] = value }
    }

    /// The environment of this process, read from `environ` (no Foundation, so that a one-shot
    /// run does not load it). An entry without "=" is left out.
    package static func ofProcess() -> CommandEnvironment {
        var environment: CommandEnvironment = [:]
        var entry = environ
        while let pointer = entry.pointee {
            if let (name, value) = String(cString: pointer).splitAtFirstEquals() {
                environment.entries.append((name, value))
            }
            entry += 1
        }
        return environment
    }

    /// The value of the first entry named `name` (as `getenv` reads it); setting replaces that
    /// entry's value, or adds one, and nil removes every entry of that name.
    package subscript(name: String) -> String? {
        get { entries.first { $0.key == name }?.value }
        set {
            guard let newValue else {
                entries.removeAll { $0.key == name }
                return
            }
            if let index = entries.firstIndex(where: { $0.key == name }) {
                entries[index].value = newValue
            } else {
                entries.append((name, newValue))
            }
        }
    }

    /// The same variables as a dictionary, for the library's API (the first entry of a name wins).
    /// Each variable as `NAME=value`, in order: the environment of a program this one starts.
    package var assignments: [String] { entries.map { "\($0.key)=\($0.value)" } }

    package var dictionary: [String: String] {
        var dictionary: [String: String] = [:]
        for (name, value) in entries where dictionary[name] == nil { dictionary[name] = value }
        return dictionary
    }

    package func makeIterator() -> IndexingIterator<[(key: String, value: String)]> {
        entries.makeIterator()
    }
}

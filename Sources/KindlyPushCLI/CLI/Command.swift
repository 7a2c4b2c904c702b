package import KindlyPushBase
internal import KindlyPushCore

/// What every command declares: its name, its help and its options, which help, usage,
/// completions and the man page derive from (as a value: ``declaration``), and which binary its
/// run needs. Each command is declared in the module of the binary that runs it, as a
/// ``RunnableCommand``; other binaries know it by name (``CommandTable/Entry``).
package protocol Command: Sendable {
    static var name: String { get }
    static var abstract: String { get }
    static var discussion: String { get }
    static var options: [OptionSpec] { get }
    /// The arguments after the options in the usage line (`<path> ...`), or several forms of the
    /// command (`list`, `delete <kid>`); derived help, usage, completions and the man page read it.
    static var arguments: [String] { get }
    /// How the command is used, for its help's EXAMPLES and the man page's: at least one.
    static var examples: [Example] { get }

    /// Whether this run needs `kindly-push-desktop` (libsecret, GIO, SQLite).
    static func needsDesktop(_ arguments: ParsedArguments, environment: CommandEnvironment) -> Bool
}

/// A command that runs: made from its parsed arguments, then run.
package protocol RunnableCommand: Command {
    init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError)

    /// The command that runs for these arguments: `Self` unless an option selects another way of
    /// doing the job (`seal --recipients-inline`).
    static func make(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) -> any RunnableCommand

    /// Runs the command and returns the exit status.
    func run() -> Int32
}

/// What runs a command declared by another type (`Declaration`): `seal --recipients-inline`,
/// `seal`'s other way. Its name, help and options are the declaration's, not copies.
package protocol CommandImplementation: RunnableCommand {
    associatedtype Declaration: Command
}

extension CommandImplementation {
    package static var name: String { Declaration.name }
    package static var abstract: String { Declaration.abstract }
    package static var discussion: String { Declaration.discussion }
    package static var options: [OptionSpec] { Declaration.options }
    package static var arguments: [String] { Declaration.arguments }
    package static var examples: [Example] { Declaration.examples }

    package static func needsDesktop(_ arguments: ParsedArguments, environment: CommandEnvironment) -> Bool {
        Declaration.needsDesktop(arguments, environment: environment)
    }
}

/// One use of a command: what it does, and the shell command line that does it.
package struct Example: Sendable {
    /// What the example does, as a sentence without its full stop ("Decrypt a push with a key file").
    package let purpose: String
    /// The command line, as typed in a shell (`kindly-push decrypt --key-file device.json < push.json`).
    package let line: String

    package init(_ purpose: String, _ line: String) {
        self.purpose = purpose
        self.line = line
    }
}

extension Command {
    package static var discussion: String { "" }
    package static var arguments: [String] { [""] }
    package static var examples: [Example] { [] }

    /// The declaration as a value, for help, usage, completions and the man page.
    package static var declaration: CommandDeclaration {
        CommandDeclaration(
            name: name, abstract: abstract, discussion: discussion, options: options, arguments: arguments, examples: examples)
    }

    /// A command that takes `--keyring` needs the desktop services when the keyring it names is
    /// the Secret Service (``KeyringChoice/needsSecretService(_:environment:)``).
    package static func needsDesktop(_ arguments: ParsedArguments, environment: CommandEnvironment) -> Bool {
        options.contains(KeyringOptions.keyring) && KeyringChoice.needsSecretService(KeyringOptions(arguments), environment: environment)
    }
}

extension RunnableCommand {
    package static func make(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) -> any RunnableCommand {
        try Self(arguments, environment: environment)
    }
}

/// A command that turns one push (or plaintext) document into one output document:
/// `seal`, `check`, `decrypt`, `route`: its ``DocumentProcessor`` (the library's, for decrypt),
/// and the options that say where its documents come from. The same processor serves
/// single-document mode, every line of `--jsonl` on any number of threads, and every entry of a
/// `--redis` worker.
package protocol DocumentCommand: Sendable {
    /// The command's name, for a worker's start line and metrics.
    static var name: String { get }

    associatedtype Processor: DocumentProcessor
    /// What turns each document into its output.
    var processor: Processor { get }

    /// `--jsonl` and `--jobs`.
    var stream: StreamOptions { get }
}

extension DocumentCommand where Self: DocumentProcessor {
    /// A command that is its own processor (`seal`, `check`, `route`).
    package var processor: Self { self }
}

extension DocumentCommand {
    package func run() -> Int32 {
        if let redis = stream.redis { return stream.services.runWorker(self, options: redis) }
        return stream.isLineMode ? DocumentRunner.runLines(self) : DocumentRunner.runSingle(self)
    }
}

/// The options every command shares, and the lists the document commands share.
package enum SharedOptions {
    package static let help = Flag("--help", "Show help information.", short: "-h")
    /// Before a subcommand only (`kindly-push --version`).
    package static let version = Flag("--version", "Show the version.")

    package static func noPositionals(_ arguments: ParsedArguments, command: String) throws(CodedError) {
        if let extra = arguments.positionals.first {
            throw CodedError.usage("unexpected argument '\(extra)'", command: command)
        }
    }
}

/// The options of the commands that decrypt pushes (`decrypt`, `route`), after their own.
package enum DecryptionOptions {
    package static let keyring = OptionGroup(KeyringOptions.options)
    package static let stream = OptionGroup(StreamOptions.options)
    package static let redis = OptionGroup(RedisOptions.options)
    package static let help = SharedOptions.help.taken
}

/// How a document command reads its input and writes its output (docs/spec/streams.md, "Input and
/// output"): `--jsonl`, `--jobs N`, FILE arguments (`-` is standard input), `--output`,
/// `--quiet`, `--summary`; and `--redis` with its options (``RedisOptions``) for the commands
/// that declare them.
package struct StreamOptions: Sendable {
    package static let jsonl = Flag("--jsonl", "Read one JSON document per line and write one JSON object per line, in order.")
    package static let jobs = Option<Int>("--jobs", "N", "With --jsonl, process N lines at once (default: the number of cores).")
    package static let output = Option<String>(
        "--output", "PATH", "Write the output to this file (a temporary file renamed into place, mode 0600) instead of standard output.")
    package static let quiet = Flag("--quiet", "No progress line, even on a terminal.")
    package static let summary = Flag("--summary", "With --jsonl, print the count of each result code on standard error at the end.")

    /// `--jsonl` given.
    package let isLineMode: Bool
    /// `--jobs N` (lines processed at once); 1 is strictly sequential. Defaults to the number of
    /// cores, or 1 for a `--redis` worker.
    package let jobs: Int
    /// The files to read, in order, as one stream; empty means standard input.
    package let inputs: [String]
    /// `--output PATH`: the output goes there, atomically, instead of standard output.
    package let outputPath: String?
    /// `--quiet`: no progress line even on a terminal.
    package let isQuiet: Bool
    /// `--summary`: counts per result code on standard error at the end of a `--jsonl` run.
    package let showsSummary: Bool
    /// `--redis` and its options: the command runs as a Redis Streams worker, each entry a line.
    package let redis: RedisOptions?
    /// The services of this binary, that run the worker.
    package let services: CommandTable.Services

    /// `shared`: worker options the command also takes without `--redis`; `redisCAFile`: the
    /// option that names a `rediss://` server's authorities (see ``RedisOptions``).
    package init(
        _ arguments: ParsedArguments, command: String, environment: CommandEnvironment = [:], shared: [any OptionKey] = [],
        redisCAFile: Option<String> = RedisOptions.caFile
    ) throws(CodedError) {
        func usage(_ text: String) -> CodedError { .usage(text, command: command) }
        redis = try RedisOptions(arguments, command: command, environment: environment, shared: shared, caFile: redisCAFile)
        services = environment.table.services
        if redis != nil {
            for key in [Self.jsonl, Self.summary] where arguments[key] {
                throw usage("--redis reads entries, not lines: give no '\(key.name)'")
            }
            if arguments.isGiven(Self.output) {
                throw usage("--redis writes to its output stream: give no '\(Self.output.name)'")
            }
            if !arguments.positionals.isEmpty { throw usage("--redis reads its input stream: give no files") }
        }
        // A worker's entries are lines: the output of each is what --jsonl prints for it.
        isLineMode = arguments[Self.jsonl] || redis != nil
        inputs = arguments.positionals
        outputPath = arguments[Self.output]
        isQuiet = arguments[Self.quiet]
        showsSummary = arguments[Self.summary]
        if !isLineMode, inputs.count > 1 { throw usage("one document is one file: give --jsonl to read several files as one stream") }
        if showsSummary, !isLineMode { throw usage("'\(Self.summary.name)' goes with --jsonl") }
        if outputPath?.isEmpty == true { throw usage("'\(Self.output.name)' takes a path") }
        // A worker processes one entry at a time unless told otherwise: several run per host.
        guard arguments.isGiven(Self.jobs) else {
            jobs = redis == nil ? DocumentRunner.coreCount : 1
            return
        }
        guard let count = arguments[Self.jobs], (1...256).contains(count) else {
            throw usage("'\(Self.jobs.name)' takes a whole number from 1 to 256")
        }
        jobs = count
    }

    /// The options as they are, not parsed from arguments: a run its command sets up itself
    /// (`send --redis`'s worker, one entry at a time: `isLineMode` and `jobs` 1).
    package init(
        isLineMode: Bool, jobs: Int, inputs: [String] = [], outputPath: String? = nil, isQuiet: Bool = false, showsSummary: Bool = false,
        redis: RedisOptions? = nil, services: CommandTable.Services
    ) {
        self.isLineMode = isLineMode
        self.jobs = jobs
        self.inputs = inputs
        self.outputPath = outputPath
        self.isQuiet = isQuiet
        self.showsSummary = showsSummary
        self.redis = redis
        self.services = services
    }
}

extension CodedError {
    /// A usage error of `command`: `text`, then where its help is.
    package static func usage(_ text: String, command: String) -> CodedError {
        CodedError(.usage, "\(text) (see 'kindly-push \(command) --help')")
    }
}

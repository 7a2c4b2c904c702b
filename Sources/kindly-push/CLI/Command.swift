internal import KindlyPush
internal import KindlyPushCore

/// What every command declares: its name, its help, its options, and how it runs.
protocol Command: Sendable {
    static var name: String { get }
    static var abstract: String { get }
    static var usage: String { get }
    static var discussion: String { get }
    static var options: [OptionSpec] { get }

    init(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError)

    /// Runs the command and returns the exit status.
    func run() -> Int32
}

extension Command {
    static var discussion: String { "" }
}

/// A command that turns one push (or plaintext) document into one output document:
/// `seal`, `check`, `decrypt`, `route`. The same `process` serves single-document mode and
/// every line of `--jsonl`, on any number of threads.
protocol DocumentCommand: Command {
    /// `--jsonl` and `--jobs`.
    var stream: StreamOptions { get }

    /// Appends the output document for `document` (an object) to `output`.
    func process(_ document: JSONValue, into output: inout [UInt8]) throws(CLIError) -> Completion

    /// What one thread keeps from document to document (buffers to reuse); most commands keep
    /// nothing. The runner makes one per thread with ``makeScratch()``.
    associatedtype Scratch = Void
    func makeScratch() -> Scratch

    /// Zeroes what a thread's scratch holds (plaintexts) when the run ends; most keep nothing.
    func wipe(_ scratch: inout Scratch)

    /// Reads and processes one input document's bytes. The default reads the document with the
    /// strict reader and calls ``process(_:into:)``; a command may take a faster path that
    /// gives the same output for every input.
    func process(bytes: UnsafeRawBufferPointer, scratch: inout Scratch, into output: inout [UInt8]) throws(CLIError) -> Completion
}

extension DocumentCommand {
    func run() -> Int32 {
        stream.isLineMode ? DocumentRunner.runLines(self) : DocumentRunner.runSingle(self)
    }

    /// Reads and processes one input document's bytes with the strict reader.
    func process(bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(CLIError) -> Completion {
        let document = try StandardInput.parseObject(bytes)
        return try process(document, into: &output)
    }

    func process(bytes: UnsafeRawBufferPointer, scratch: inout Scratch, into output: inout [UInt8]) throws(CLIError) -> Completion {
        try process(bytes: bytes, into: &output)
    }
}

extension DocumentCommand where Scratch == Void {
    func makeScratch() {}
}

extension DocumentCommand {
    func wipe(_ scratch: inout Scratch) {}
}

/// The options every document command shares.
enum SharedOptions {
    static let jsonl = OptionSpec.flag("--jsonl", "Read one JSON document per line and write one JSON object per line, in order.")
    static let jobs = OptionSpec.value("--jobs", "N", "With --jsonl, process N lines at once (default: the number of cores).")
    static let keyFile = OptionSpec.value("--key-file", "PATH", "Read the device key from this key file instead of the keyring.")
    static let keyring = OptionSpec.value(
        "--keyring", "KIND", "Where keys live: auto (default), secret-service or file.", choices: KeyringChoice.allCases.map(\.rawValue))
    static let verbose = OptionSpec.flag("--verbose", "Say on standard error which keyring is used.")
    static let help = OptionSpec.flag("--help", "Show help information.")

    /// The options of the commands that decrypt pushes (`decrypt`, `route`), after their own.
    static let decryption = [keyFile, keyring, verbose, jsonl, jobs, help]

    static func noPositionals(_ arguments: ParsedArguments, command: String) throws(CLIError) {
        if let extra = arguments.positionals.first {
            throw CLIError(.usage, "unexpected argument '\(extra)' (see 'kindly-push \(command) --help')")
        }
    }
}

/// How a document command reads its input: `--jsonl` (one document per line) and `--jobs N`.
struct StreamOptions: Sendable {
    /// `--jsonl` given.
    let isLineMode: Bool
    /// `--jobs N` (lines processed at once); 1 is strictly sequential. Defaults to the number of cores.
    let jobs: Int

    init(_ arguments: ParsedArguments, command: String) throws(CLIError) {
        isLineMode = arguments.has("--jsonl")
        guard let text = arguments.value("--jobs") else {
            jobs = DocumentRunner.coreCount
            return
        }
        guard let count = Int(text), (1...256).contains(count) else {
            throw CLIError(.usage, "'--jobs' takes a whole number from 1 to 256 (see 'kindly-push \(command) --help')")
        }
        jobs = count
    }
}

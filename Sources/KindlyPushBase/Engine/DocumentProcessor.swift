/// One document in, its one output document out: what `seal` (and `--recipients-inline`),
/// `check`, `decrypt` (and `--apply`), `route` and the `send` worker each are. The line engine
/// (``LineEngine``) runs a processor over a document, a stream of lines or a worker's entries
/// alike, on any number of threads; a processor knows nothing of where its documents come from.
package protocol DocumentProcessor: Sendable {
    /// Appends the output document for `document` (an object) to `output`.
    func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome

    /// The largest input document (or line) this run reads; the 64 KiB of docs/spec/streams.md unless the
    /// processor says otherwise (`seal --fit`).
    var inputLimit: Int { get }

    /// What one thread keeps from document to document (buffers to reuse); most processors keep
    /// nothing. The engine makes one per thread with ``makeScratch()``.
    associatedtype Scratch = Void
    func makeScratch() -> Scratch

    /// Zeroes what a thread's scratch holds (plaintexts) when the run ends; most keep nothing.
    func wipe(_ scratch: inout Scratch)

    /// Reads and processes one input document's bytes. The default reads the document with the
    /// strict reader and calls ``process(_:into:)``; a processor may take a faster path that
    /// gives the same output for every input.
    func process(bytes: UnsafeRawBufferPointer, scratch: inout Scratch, into output: inout [UInt8]) throws(CodedError)
        -> LineEngine.LineOutcome

    /// The keyring the processor looks device keys up in, for a worker's start line and its
    /// refusal to start with no key at all; `nil` (the default) for one that reads none.
    var deviceKeyring: (any Keyring)? { get }

    /// More series for the worker's `--metrics` page (Prometheus's text format), read on the
    /// endpoint's thread; `nil` (the default) for none. `send`'s: its answers by status.
    var metricsText: (@Sendable () -> String)? { get }

    /// What a worker asks before it tells the service manager it is ready, besides Redis: `nil`
    /// when what the processor reaches answers, else why not (the worker asks again with
    /// backoff). `send`'s: a first connection to the push service. `nil` (the default): none.
    var readinessProbe: (@Sendable () -> String?)? { get }

    /// Called with the documents of a chunk (every line of it that ``process(bytes:scratch:into:)``
    /// will be called for, in the same order) before any of them is processed: a processor whose
    /// answers come later starts them all here, so that they are in flight at once, and each
    /// `process` then takes its own answer (`send`'s: the pushes of a worker's batch go out
    /// together, up to the server's stream limit, instead of one round trip each). The default
    /// does nothing. The buffers are valid only during the call.
    func begin(_ documents: [UnsafeRawBufferPointer])
    /// Whether ``begin(_:)`` does anything: only then does the engine gather a chunk's documents.
    static var beginsChunks: Bool { get }
}

extension DocumentProcessor {
    /// Reads and processes one input document's bytes with the strict reader.
    package func process(bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome {
        switch JSONReader.parseInputObject(bytes, what: "input") {
        case .success(let document): return try process(document, into: &output)
        case .failure(let problem): throw CodedError(problem)
        }
    }

    package func process(bytes: UnsafeRawBufferPointer, scratch: inout Scratch, into output: inout [UInt8]) throws(CodedError)
        -> LineEngine.LineOutcome
    {
        try process(bytes: bytes, into: &output)
    }

    package var inputLimit: Int { WireFormat.maximumInputSize }

    package var deviceKeyring: (any Keyring)? { nil }

    package func wipe(_ scratch: inout Scratch) {}
}

extension DocumentProcessor {
    package var metricsText: (@Sendable () -> String)? { nil }
    package var readinessProbe: (@Sendable () -> String?)? { nil }
    package func begin(_ documents: [UnsafeRawBufferPointer]) {}
    package static var beginsChunks: Bool { false }
}

extension DocumentProcessor where Scratch == Void {
    package func makeScratch() {}
}

/// A processor whose outcome is a decision for its sink to act on, not an output document:
/// `notify`'s, whose decision is the desktop presenter's plan and whose sink is the notification
/// server and the state store. The engine reads, limits and checks its lines as every
/// processor's (``LineEngine/decide(_:in:processor:lines:)``), and gives a failed line the same
/// ``CodedError`` a ``DocumentProcessor``'s line would carry in its error object.
package protocol DecisionProcessor: Sendable {
    /// What the sink acts on.
    associatedtype Decision

    /// Decides for one input document (an object).
    func decide(_ document: JSONValue) throws(CodedError) -> Decision

    /// The largest input document (or line) this run reads; the 64 KiB of docs/spec/streams.md by default.
    var inputLimit: Int { get }
}

extension DecisionProcessor {
    package var inputLimit: Int { WireFormat.maximumInputSize }
}

package import KindlyPushCore

/// The one line engine: a ``DocumentProcessor`` over lines. Each line gives exactly one output
/// line, the processor's output document or the error object that is the line's outcome, so a
/// bad line never stops the stream. `--jsonl` (``LineEngine/Work`` on the
/// ``OrderedBatchRunner``) and the Redis workers run it; what reads the lines and where the
/// output lines go are theirs.
package enum LineEngine {
    /// `64 KiB`, `1 MiB`: a limit as the errors name it.
    package static func sizeText(_ bytes: Int) -> String {
        bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB"
    }

    /// What became of one input line: the one outcome a processor gives (returned with its
    /// output document, or made by the engine from the ``CodedError`` it threw) and every sink
    /// decides from: the command's exit status and `--summary`, the stream's element, the
    /// worker's commit, hold or dead letter, `send`'s metrics. Nothing reads back the line.
    package struct LineOutcome: Sendable {
        /// The code of its error object; nil for a result.
        package var error: ErrorCode?
        /// A result for a push that is not Kindly's (`check`'s, which exits 1 for it).
        package var isNotKindly = false
        /// The line was a JSON document cut by its newline (``PushStreamResult/spreadDocumentAdvice``).
        package var spread = false
        /// The error may go away if asked again later (``CodedError/isTransient``).
        package var isTransient = false
        /// The transient failure is the input's own (``CodedError/countsAsDelivery``).
        package var countsAsDelivery = false
        /// The least wait before asking again, in milliseconds (``CodedError/retryAfter``).
        package var retryAfter: Int?
        /// The error object's message, for a dead-letter entry.
        package var message = ""
        /// The push's failure, when the error is one.
        package var failure: DecryptionFailure?

        /// A result: no error (a processing outside this module, `send`'s, fills in a failure).
        package init() {}

        /// The outcome of a line that failed with `error`: its error object.
        package init(_ error: CodedError) {
            self.error = error.code
            isTransient = error.isTransient
            countsAsDelivery = error.countsAsDelivery
            retryAfter = error.retryAfter
            message = error.message
            failure = error.decryptionFailure
        }

        /// The output is the processor's document. (Computed, as every line's step returns
        /// it: a stored static would be a lazy global, checked on each line.)
        package static var success: LineOutcome { LineOutcome() }

        /// The output is the document of a push that is not Kindly's, not an error object.
        package static var notKindly: LineOutcome {
            var outcome = LineOutcome()
            outcome.isNotKindly = true
            return outcome
        }

        /// The output is the line's error object, which the processor wrote itself (`seal
        /// --recipients-inline` and `send` put the line's `"id"` in it): `--summary` counts its
        /// code, a worker's dead letter carries its message.
        package static func errorObject(_ code: ErrorCode, message: String) -> LineOutcome {
            var outcome = LineOutcome()
            outcome.error = code
            outcome.message = message
            return outcome
        }

        /// A one-document run's exit status.
        package var exitStatus: Int32 {
            if let error { return error.exitStatus }
            return isNotKindly ? ErrorCode.decryption(.notKindly).exitStatus : 0
        }
    }

    /// The one per-line step under every front end: `body` on the line's bytes, and every way a
    /// line fails as the ``CodedError`` that is its outcome: a line over `limit`, the processor's
    /// error, and with `lines` a JSON document its newline cuts short, which gets
    /// ``PushStreamResult/spreadDocumentAdvice`` (known from the reading that failed: the line is
    /// not read again). `lines: false`: whole documents (a one-document run, the library's
    /// stream of documents), which are "the input".
    @inline(__always)
    package static func run<Value>(
        _ line: LineBatchReader.Line, in bytes: [UInt8], limit: Int, lines: Bool,
        _ body: (UnsafeRawBufferPointer) throws(CodedError) -> Value
    ) -> Result<Value, CodedError> {
        do throws(CodedError) {
            switch line {
            case .oversized:
                throw CodedError(.badInput, "the \(lines ? "line" : "input") is over \(sizeText(limit))")
            case .text(let range):
                return .success(
                    try bytes.withUnsafeBytes { raw in
                        Result { () throws(CodedError) in try body(UnsafeRawBufferPointer(rebasing: raw[range])) }
                    }.get())
            }
        } catch {
            guard lines, error.endsInsideDocument else { return .failure(error) }
            var spread = CodedError(.badInput, PushStreamResult.spreadDocumentAdvice)
            spread.endsInsideDocument = true
            return .failure(spread)
        }
    }

    /// What a ``DecisionProcessor`` decides for one line (`lines[index]` of a batch, or a whole
    /// document with `lines: false`), or the error that is the line's outcome
    /// (``run(_:in:limit:lines:_:)``): `notify`'s step.
    package static func decide<P: DecisionProcessor>(
        _ line: LineBatchReader.Line, in bytes: [UInt8], processor: P, lines: Bool = true
    ) -> Result<P.Decision, CodedError> {
        run(line, in: bytes, limit: processor.inputLimit, lines: lines) { raw throws(CodedError) in
            switch JSONReader.parseInputObject(raw, what: "input") {
            case .success(let document): return try processor.decide(document)
            case .failure(let problem): throw CodedError(problem)
            }
        }
    }

    /// Appends the output line (newline included) of `batch.lines[index]` to `output`, and says
    /// what it was: the processor's output document, or the error object of the line's outcome
    /// (``run(_:in:limit:lines:_:)``).
    @discardableResult
    package static func appendOutputLine<P: DocumentProcessor>(
        for batch: LineBatchReader.Batch, at index: Int, processor: P, scratch: inout P.Scratch, to output: inout [UInt8],
        lines: Bool = true
    ) -> LineOutcome {
        var outcome = LineOutcome()
        let start = output.count
        let result = run(batch.lines[index], in: batch.bytes, limit: processor.inputLimit, lines: lines) { raw throws(CodedError) in
            try processor.process(bytes: raw, scratch: &scratch, into: &output)
        }
        switch result {
        case .success(let processed):
            outcome = processed
        case .failure(let error):
            output.removeSubrange(start...)
            outcome = LineOutcome(error)
            outcome.spread = lines && error.endsInsideDocument
            error.appendErrorObject(to: &output)
        }
        output.append(0x0A)
        return outcome
    }

    /// A run of consecutive lines as the engine hands it to a sink (``LineSink``): their output
    /// lines, each ending in its newline, and what each was.
    package struct Chunk {
        package var bytes: [UInt8] = []
        /// A line of the chunk was a document that went on past its line.
        package var spread = false
        /// The outcome of each line, counted (`--summary`).
        package var outcomes = ResultCounts()
        /// With the work's `keepsLines`: each line's output in ``bytes``, without its newline,
        /// and what it was.
        package var lines: [(range: Range<Int>, outcome: LineOutcome)] = []

        /// An empty chunk (a processing outside this module, `send`'s, fills one and reuses it).
        package init() {}
    }

    /// What the runner's threads do for a processor: each chunk's output lines into its buffer.
    package struct Work<P: DocumentProcessor>: BatchWork {
        let processor: P
        /// `--summary`: each line's outcome is counted.
        let counts: Bool
        /// A Redis worker's and the library stream's: where each line's output is (without its
        /// newline), and what it was.
        let keepsLines: Bool
        /// The documents are lines (see ``LineEngine/appendOutputLine(for:at:processor:scratch:to:lines:)``).
        let lines: Bool
        package typealias Scratch = P.Scratch

        package init(processor: P, counts: Bool = false, keepsLines: Bool = false, lines: Bool = true) {
            self.processor = processor
            self.counts = counts
            self.keepsLines = keepsLines
            self.lines = lines
        }

        package typealias Output = LineEngine.Chunk

        package func makeScratch() -> P.Scratch { processor.makeScratch() }
        package func wipe(_ scratch: inout P.Scratch) { processor.wipe(&scratch) }
        package func makeOutput() -> Output { Output() }
        package func wipe(_ output: inout Output) { output.bytes.wipeCapacity() }

        package func process(_ batch: LineBatchReader.Batch, lines range: Range<Int>, scratch: inout P.Scratch, into output: inout Output) {
            output.bytes.removeAll(keepingCapacity: true)
            output.spread = false
            output.outcomes.removeAll()
            output.lines.removeAll(keepingCapacity: true)
            if P.beginsChunks {
                batch.bytes.withUnsafeBytes { raw in
                    processor.begin(
                        range.compactMap { index in
                            guard case .text(let text) = batch.lines[index] else { return nil }
                            return UnsafeRawBufferPointer(rebasing: raw[text])
                        })
                }
            }
            for index in range {
                let start = output.bytes.count
                let line = LineEngine.appendOutputLine(
                    for: batch, at: index, processor: processor, scratch: &scratch, to: &output.bytes, lines: lines)
                output.spread = line.spread || output.spread
                if counts { output.outcomes.count(line.error) }
                if keepsLines { output.lines.append((start..<output.bytes.count - 1, line)) }
            }
        }
    }
}

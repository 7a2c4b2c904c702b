package import KindlyPushCore

/// Where a front end's lines come from: standard input and files (``ReaderSource``), a Redis
/// stream's entries, `notify --follow`'s file or FIFO. The engine asks it for lines while it has
/// room for them (``LineEngine/drive(source:processing:sink:)``), and only when nothing is in
/// flight does it let a source wait.
package protocol LineSource: ~Copyable {
    /// Whether asking for lines now would wait: a live input with nothing to read yet. The engine
    /// then hands the sink what is finished before asking.
    mutating func wouldBlock() -> Bool

    /// Fills `batch` (emptied first) with the next lines, at most `maximumLines` and about
    /// `maximumBytes`; it may wait for input. `false`: the input has ended (the batch may still
    /// hold its last lines). An empty batch with `true`: nothing yet, asked again later. A read
    /// that fails throws its error, which ends the input; the lines read before it are processed.
    mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool

    /// A descriptor that is readable when lines may be there, for a processing that waits on
    /// its own (`send`'s, in its `poll`); `nil`: the source has none to wait on.
    var readiness: Int32? { get }

    /// How many bytes of input were read so far, for a progress line; 0 when it has no meaning.
    var bytesRead: Int { get }

    /// Called while the processing works on lines it took, before the engine waits for them: a
    /// source that asked for its next lines ahead takes the answer here, beside the processing's
    /// threads instead of after them (a Redis worker: the entries it read ahead and the answer
    /// of its last commit). The default does nothing.
    mutating func whileProcessing()
}

extension LineSource where Self: ~Copyable {
    package var readiness: Int32? { nil }
    package var bytesRead: Int { 0 }
    package mutating func whileProcessing() {}
}

/// Where each line's outcome goes, in input order: the command's output, the worker's commit
/// and dead letters, the agent's banner, `send`'s results and metrics. A chunk is a run of
/// consecutive lines: each line's output (its output document or its error object, ending in a
/// newline) and its ``LineEngine/LineOutcome``.
package protocol LineSink: ~Copyable {
    /// Takes one finished chunk; `bytesRead`: how far the source has read (``LineSource/bytesRead``).
    /// `false`: the sink cannot take more (its output failed): the engine reads no more input
    /// and ends once what is in flight is handed over.
    mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool

    /// Called before the engine lets its source wait with nothing in flight: what was accepted
    /// should be seen now (a live filter's output). `false` as for ``accept(_:)``.
    mutating func flush() -> Bool

    /// When the sink wants to be asked again (``flush()``) even though nothing finished: the
    /// monotonic millisecond by which it must write what it gathers; `nil`: no such time.
    var flushDeadline: Int? { get }

}

extension LineSink where Self: ~Copyable {
    package var flushDeadline: Int? { nil }
}

/// How the lines between a source and a sink are processed: on the ordered runner's threads
/// (``ThreadedLines``, every ``DocumentProcessor``) or by a processor whose answers come later
/// (`send`'s gateway: each line submitted now, its outcome finished when the push service
/// answers). The engine fills it from the source while it has room, hands what is finished to
/// the sink in input order, and waits with it.
package protocol LineProcessing: AnyObject {
    /// Whether another batch of lines may be taken now.
    var hasRoom: Bool { get }
    /// Whether nothing is in flight.
    var isIdle: Bool { get }
    /// The most lines, and about the most bytes, it takes in one batch.
    var batchLimits: (lines: Int, bytes: Int) { get }
    /// Gives `fill` an empty batch, then takes the lines it put there (none when it throws).
    func take<Failure: Error>(_ fill: (inout LineBatchReader.Batch) throws(Failure) -> Void) throws(Failure)
    /// Hands the sink what is finished, in input order; the threaded processing waits for its
    /// oldest batch. `false` when the sink said it can take no more. `bytesRead` is passed on
    /// (``LineSink/accept(_:bytesRead:)``).
    func deliver<Sink: LineSink & ~Copyable>(to sink: inout Sink, bytesRead: Int) -> Bool
    /// Waits until something may be finished or `input` is readable (`nil`: no input to wait
    /// for), for at most `timeout` milliseconds (`nil`: the sink sets no time; a processing
    /// that must look at something of its own, a stop signal, caps the wait itself); the threaded processing's
    /// ``deliver(to:bytesRead:)`` waits instead, and this returns at once.
    func wait(input: Int32?, timeout: Int?)
}

extension LineEngine {
    /// The one loop under every front end that reads lines: while `processing` has room and the
    /// input does not have to wait, lines from `source`; whatever is finished, in input order,
    /// to `sink`; and a wait (the processing's) only when nothing can move. A source is asked to
    /// wait for input only with nothing in flight, after the sink was flushed, so a live filter
    /// shows each result as soon as its line came. Returns the read error that ended the input,
    /// if one did (every line read before it still has its outcome in the sink). What the sink
    /// gathered last is the front end's to write (it ends its output as it ends).
    package static func drive<Source: LineSource & ~Copyable, Sink: LineSink & ~Copyable>(
        source: inout Source, processing: some LineProcessing, sink: inout Sink
    ) -> CodedError? {
        var readError: CodedError?
        var ended = false
        let limits = processing.batchLimits
        while true {
            while !ended, processing.hasRoom {
                if source.wouldBlock() {
                    if !processing.isIdle { break }
                    if !sink.flush() {
                        ended = true
                        break
                    }
                }
                var more = true
                do throws(CodedError) {
                    try processing.take { (batch) throws(CodedError) in
                        more = try source.next(into: &batch, maximumLines: limits.lines, maximumBytes: limits.bytes)
                    }
                } catch {
                    readError = error
                    more = false
                }
                if !more {
                    ended = true
                    break
                }
                // Nothing came (a live source read what there was): let the processing move.
                if processing.isIdle { break }
            }
            if !processing.isIdle { source.whileProcessing() }
            if !processing.deliver(to: &sink, bytesRead: source.bytesRead) { ended = true }
            if ended, processing.isIdle { break }
            var timeout: Int?
            if let deadline = sink.flushDeadline {
                let left = deadline - MonotonicClock.milliseconds()
                if left <= 0 {
                    if !sink.flush() { ended = true }
                    continue
                }
                timeout = left
            }
            let input = !ended && processing.hasRoom ? source.readiness : nil
            // Nothing in flight and no input to wait on: the source is asked again.
            if processing.isIdle, input == nil { continue }
            processing.wait(input: input, timeout: timeout)
        }
        return readError
    }
}

/// A ``LineSource`` over a ``LineBatchReader``: standard input and `--jsonl`'s files. Live: a
/// batch ends as soon as the next read would wait, so a line is handed over as soon as it came.
package struct ReaderSource: ~Copyable, LineSource {
    package var reader: LineBatchReader
    /// Reads at most this many times per batch (`send` reads once, so that its answers are
    /// written between reads); `.max` for a batch filled to its limits.
    let maximumReads: Int
    /// The descriptor to wait on when the input is standard input (`nil` for files, which never wait).
    package let readiness: Int32?

    package init(_ reader: consuming LineBatchReader, maximumReads: Int = .max, readiness: Int32? = nil) {
        self.reader = reader
        self.maximumReads = maximumReads
        self.readiness = readiness
    }

    package mutating func wouldBlock() -> Bool { reader.inputWouldBlock() }

    package var bytesRead: Int { reader.bytesRead }

    package mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool {
        do throws(Errno) {
            try reader.nextBatch(
                into: &batch, maximumLines: maximumLines, maximumBytes: maximumBytes, maximumReads: maximumReads, live: true)
        } catch {
            // The lines of a batch cut short by the error are not processed.
            batch.lines.removeAll()
            throw CodedError(.io, "cannot read standard input: \(error)")
        }
        if maximumReads == .max { return !batch.lines.isEmpty }
        return !reader.isAtEnd || !batch.lines.isEmpty
    }

    /// Zeroes what the reader holds (the last lines read may be plaintexts).
    package mutating func wipe() { reader.wipe() }
}

/// Every ``DocumentProcessor`` as a ``LineProcessing``: the lines of each batch on the ordered
/// runner's threads (``OrderedBatchRunner``: `jobs` threads take chunks of lines, oldest first,
/// from up to `batchesInFlight` batches), handed to the sink batch by batch in input order. The
/// only user of the runner.
package final class ThreadedLines<P: DocumentProcessor>: LineProcessing {
    package typealias Runner = OrderedBatchRunner<LineEngine.Work<P>>
    let runner: Runner
    package let batchLimits: (lines: Int, bytes: Int)
    /// A chunk's output buffer larger than this after it is handed over is let go, not kept.
    let keptOutputCapacity: Int?
    /// A worker's: each batch's documents and outputs are zeroed as soon as the sink took them.
    let wipesEachBatch: Bool

    /// `jobs` threads (none: this one processes each batch as it takes it).
    package init(
        _ work: LineEngine.Work<P>, jobs: Int, batchesInFlight: Int = StreamBatching.batchesInFlight,
        batchLines: Int = StreamBatching.batchLines, batchBytes: Int = StreamBatching.batchBytes,
        chunkLines: Int = StreamBatching.chunkLines, keptOutputCapacity: Int? = 1 << 18, wipesEachBatch: Bool = false
    ) {
        runner = Runner(work, jobs: jobs, batchesInFlight: batchesInFlight, maximumBatchLines: batchLines, chunkLines: chunkLines)
        batchLimits = (batchLines, batchBytes)
        self.keptOutputCapacity = keptOutputCapacity
        self.wipesEachBatch = wipesEachBatch
    }

    deinit { runner.finish() }

    package var hasRoom: Bool { runner.hasFreeSlot }
    package var isIdle: Bool { !runner.hasInFlight }

    package func take<Failure: Error>(_ fill: (inout LineBatchReader.Batch) throws(Failure) -> Void) throws(Failure) {
        guard let slot = runner.takeFreeSlot() else { return }
        do throws(Failure) {
            try fill(&slot.batch)
        } catch {
            runner.giveBack(slot)
            throw error
        }
        if slot.batch.lines.isEmpty {
            runner.giveBack(slot)
        } else {
            runner.publish(slot)
        }
    }

    package func deliver<Sink: LineSink & ~Copyable>(to sink: inout Sink, bytesRead: Int) -> Bool {
        guard runner.hasInFlight else { return true }
        return handOver(runner.waitForOldest(), to: &sink, bytesRead: bytesRead)
    }

    /// Hands the sink each chunk of `oldest`, a complete batch, then gives its slot back (its
    /// buffers wiped or let go as the run asks). `false` once the sink took no more.
    private func handOver<Sink: LineSink & ~Copyable>(_ oldest: Runner.Slot, to sink: inout Sink, bytesRead: Int) -> Bool {
        var open = true
        for chunk in 0..<oldest.chunkCount {
            if open { open = sink.accept(oldest[chunk], bytesRead: bytesRead) }
            if wipesEachBatch {
                oldest[chunk].bytes.wipeCapacity()
            } else if let keptOutputCapacity, oldest[chunk].bytes.capacity > keptOutputCapacity {
                oldest[chunk].bytes.wipeCapacity()
                oldest[chunk].bytes = []
            }
        }
        if wipesEachBatch { oldest.batch.bytes.wipeCapacity() }
        runner.giveBack(oldest)
        return open
    }

    package func wait(input: Int32?, timeout: Int?) {}

    /// ``deliver(to:bytesRead:)`` for an async front end (the library's stream): the task is
    /// suspended, no thread blocked, until the oldest batch is complete; a cancelled task's
    /// wait ends as soon as the threads finish the chunks they hold (``cancel()``).
    package func deliver<Sink: LineSink & ~Copyable>(to sink: inout Sink, bytesRead: Int = 0) async -> Bool {
        guard runner.hasInFlight else { return true }
        let runner = self.runner
        let oldest = await withTaskCancellationHandler {
            await runner.oldest()
        } onCancel: {
            runner.cancel()
        }
        return handOver(oldest, to: &sink, bytesRead: bytesRead)
    }

    /// From any thread: what is in flight and not begun is skipped, for a run that ends without
    /// using it.
    package func cancel() { runner.cancel() }

    /// Stops the threads and zeroes the buffers; nothing may be taken after.
    package func finish() { runner.finish() }
}

extension LineEngine {
    /// One line of a ``DecisionProcessor``'s run as its front end acts on it (``DecidedLines``):
    /// the line in its batch's bytes, and its decision, made when the sink asks for it.
    package struct DecidedLine<P: DecisionProcessor> {
        /// The line, in ``bytes``.
        package let line: LineBatchReader.Line
        /// The bytes of the line's batch.
        package let bytes: [UInt8]
        /// The processor that decides it.
        package let processor: P
        /// Whether it is the last line of what the source read at once: once the sink took it,
        /// every line read so far was handed over.
        package let isLast: Bool

        /// The line's decision, or the error that is its outcome (``LineEngine/decide(_:in:processor:lines:)``).
        package func decision() -> Result<P.Decision, CodedError> {
            LineEngine.decide(line, in: bytes, processor: processor)
        }

        /// The line's own bytes (`nil` for a line over the limit, whose bytes were not kept).
        package var text: ArraySlice<UInt8>? {
            guard case .text(let range) = line else { return nil }
            return bytes[range]
        }
    }
}

/// A ``DecisionProcessor``'s lines as a ``LineProcessing`` on this thread: what the source read at
/// once is one batch, each of whose lines goes, in input order, to the front end's `act`, which
/// has it decided as it acts on it (``LineEngine/DecidedLine/decision()``): a decision is acted
/// on, not written, so no output line reaches the sink, whose ``LineSink/flush()`` and
/// ``LineSink/flushDeadline`` still say when the run ends. `notify`'s: `act` shows on the
/// notification server and records in the state store, both this thread's. Its wait is the
/// front end's (`wait`): what else the run listens to while no line comes (taps, a host's calls,
/// a signal) is handled there.
package final class DecidedLines<P: DecisionProcessor>: LineProcessing {
    /// What decides each line, when `act` asks.
    let processor: P
    package let batchLimits: (lines: Int, bytes: Int)
    /// The lines read last, until they were acted on; zeroed as the next are read and at the end.
    var batch = LineBatchReader.Batch()
    /// Whether ``batch`` holds lines not acted on yet.
    var holdsLines = false
    /// The front end's action on each line (``deliver(to:bytesRead:)``).
    let acting: (LineEngine.DecidedLine<P>) -> Bool
    /// The front end's wait (``wait(input:timeout:)``).
    let waiting: (_ input: Int32?, _ timeout: Int?) -> Void

    /// `act`: acts on one line, in input order; `false` when the run takes no more (the rest of
    /// the read is let go). `wait`: waits until `input` (when given) is readable or something
    /// else the run listens to happened, for at most `timeout` milliseconds, and handles what
    /// happened.
    package init(
        _ processor: P, batchLines: Int = StreamBatching.batchLines, batchBytes: Int = StreamBatching.batchBytes,
        act: @escaping (LineEngine.DecidedLine<P>) -> Bool, wait: @escaping (_ input: Int32?, _ timeout: Int?) -> Void
    ) {
        self.processor = processor
        batchLimits = (batchLines, batchBytes)
        acting = act
        waiting = wait
    }

    deinit { batch.bytes.wipeCapacity() }

    package var hasRoom: Bool { !holdsLines }
    package var isIdle: Bool { !holdsLines }

    package func take<Failure: Error>(_ fill: (inout LineBatchReader.Batch) throws(Failure) -> Void) throws(Failure) {
        do throws(Failure) {
            try fill(&batch)
        } catch {
            // As on the ordered runner: the lines of a read that failed are not processed.
            batch.lines.removeAll(keepingCapacity: true)
            throw error
        }
        holdsLines = !batch.lines.isEmpty
    }

    /// Has each line of the batch acted on; once `act` takes no more, the rest are let go.
    package func deliver<Sink: LineSink & ~Copyable>(to sink: inout Sink, bytesRead: Int) -> Bool {
        guard holdsLines else { return true }
        holdsLines = false
        let last = batch.lines.count - 1
        for (index, line) in batch.lines.enumerated() {
            let decided = LineEngine.DecidedLine(line: line, bytes: batch.bytes, processor: processor, isLast: index == last)
            guard acting(decided) else { return false }
        }
        return true
    }

    package func wait(input: Int32?, timeout: Int?) { waiting(input, timeout) }
}

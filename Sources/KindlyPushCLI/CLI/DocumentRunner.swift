internal import KindlyPushBase
package import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a ``DocumentCommand`` over standard input.
package enum DocumentRunner {
    package static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Lines handed to a thread at a time.
    package static let chunkLines = 16
    /// A batch ends after this many lines or input bytes (plus the line that crosses it), so
    /// that memory stays flat whatever the stream holds.
    package static let batchLines = 512
    package static let batchBytes = 1 << 19
    /// Batches in flight with `--jobs` > 1: one being written while the others are processed.
    package static let batchesInFlight = 3
    /// An output buffer larger than this after a batch is let go rather than kept.
    package static let keptOutputCapacity = 1 << 18

    /// Single-document mode: the output document on standard output, or one error line on
    /// standard error and nothing on standard output.
    package static func runSingle<C: DocumentCommand>(_ command: C) -> Int32 {
        var output: [UInt8] = []
        var scratch = command.makeScratch()
        var input: [UInt8] = []
        // The input (a plaintext, for seal), the output (a payload, for decrypt) and the scratch
        // are zeroed when the run ends.
        defer {
            command.wipe(&scratch)
            input.wipeCapacity()
            output.wipeCapacity()
        }
        let completion: Completion
        do throws(CLIError) {
            let descriptor = try InputFiles.open(command.stream.inputs, lineMode: false)[0]
            defer { if descriptor != STDIN_FILENO { close(descriptor) } }
            input = try StandardInput.readDocument(descriptor: descriptor, limit: command.inputLimit)
            completion = try input.withUnsafeBytes { raw in
                Result { () throws(CLIError) in try command.process(bytes: raw, scratch: &scratch, into: &output) }
            }.get()
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        output.append(0x0A)
        let target: OutputTarget
        do throws(CLIError) {
            target = try OutputTarget(path: command.stream.outputPath)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        // One write of one document: a buffer of its size, not the 64 KiB a stream keeps (wiped
        // at the end, so every page of it would be touched).
        var stdout = OutputStream(descriptor: target.descriptor, capacity: output.count)
        stdout.write(output)
        return finish(&stdout, target) ?? completion.exitStatus
    }

    /// Flushes the output and puts an `--output` file in place, unless the run is `incomplete`
    /// (its input failed): then PATH keeps what it held, as after any other failure. The status
    /// when writing failed.
    private static func finish(_ stdout: inout OutputStream, _ target: consuming OutputTarget, incomplete: Bool = false) -> Int32? {
        let status = Terminal.finish(&stdout)
        stdout.wipe()
        guard status == 0, !incomplete else {
            target.abandon()
            return status
        }
        if let error = target.commit() {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        return nil
    }

    /// `--jsonl`: one output line per input line, in input order; a bad line gives its error
    /// object and the stream goes on. Lines are read in batches bounded in lines and bytes, so
    /// memory stays flat however long the stream. With `--jobs 1` everything happens on this
    /// thread, in order. With more, see ``runParallel(_:reader:stdout:)``.
    package static func runLines<C: DocumentCommand>(_ command: C) -> Int32 {
        let descriptors: [Int32]
        do throws(CLIError) {
            descriptors = try InputFiles.open(command.stream.inputs, lineMode: true)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        defer { for descriptor in descriptors where descriptor != STDIN_FILENO { close(descriptor) } }
        let target: OutputTarget
        do throws(CLIError) {
            target = try OutputTarget(path: command.stream.outputPath)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        var reader = LineBatchReader(descriptors: descriptors, maximumLineLength: command.inputLimit)
        var stdout = OutputStream(descriptor: target.descriptor)
        var tally = Tally(
            progress: ProgressLine(quiet: command.stream.isQuiet), counts: command.stream.showsSummary ? ResultCounts() : nil)
        let readError =
            command.stream.jobs == 1
            ? runSequential(command, reader: &reader, stdout: &stdout, tally: &tally)
            : runParallel(command, reader: &reader, stdout: &stdout, tally: &tally)
        tally.progress.clear()
        reader.wipe()
        let writeStatus = finish(&stdout, target, incomplete: readError != nil)
        if readError == nil, let writeStatus { return writeStatus }
        if let counts = tally.counts { Diagnostics.line("kindly-push: \(counts.line)") }
        if let readError {
            Diagnostics.report(readError)
            return readError.code.exitStatus
        }
        return 0
    }

    /// What a `--jsonl` run shows of itself: the progress line, the `--summary` counts, and
    /// once the note that a document went on past its line.
    package struct Tally {
        var progress: ProgressLine
        var counts: ResultCounts?
        var lines = 0
        var notedSpreadDocument = false

        /// Notes the output of `lineCount` lines just written; `spread`: one of them was a
        /// document that went on past the end of its line.
        mutating func written(_ output: [UInt8], lineCount: Int, spread: Bool) {
            if spread, !notedSpreadDocument {
                notedSpreadDocument = true
                progress.clear()
                Diagnostics.line("kindly-push: note: \(DocumentRunner.spreadDocumentAdvice)")
            }
            lines += lineCount
            counts?.count(output)
            progress.update(count: lines)
        }
    }

    /// Said for a line that ends inside its JSON document (`{` alone, as `jq .` writes it), in
    /// its error object and once per run on standard error. docs/spec/streams.md: every line still gives its
    /// own output line; the lines after it get the error that is theirs.
    package static let spreadDocumentAdvice =
        "a JSON document goes on past the end of its line, but --jsonl reads one document per line: compact pretty-printed JSON first, with jq -c"

    /// Standard input failed: an `io` error, as docs/spec/streams.md says for --jsonl.
    private static func readFailure(_ error: LineBatchReader.ReadError) -> CLIError {
        CLIError(.io, "cannot read standard input: \(error)")
    }

    /// `--jobs 1`: read, process and write one batch after another on this thread.
    private static func runSequential<C: DocumentCommand>(
        _ command: C, reader: inout LineBatchReader, stdout: inout OutputStream, tally: inout Tally
    ) -> CLIError? {
        var batch = LineBatchReader.Batch()
        var scratch = command.makeScratch()
        var output: [UInt8] = []
        defer {
            command.wipe(&scratch)
            output.wipeCapacity()
            batch.bytes.wipeCapacity()
        }
        while true {
            // A live filter: before a read that would wait, what is done goes out.
            if reader.inputWouldBlock(), !stdout.flush() { return nil }
            do throws(LineBatchReader.ReadError) {
                try reader.nextBatch(into: &batch, maximumLines: batchLines, maximumBytes: batchBytes, live: true)
            } catch {
                return readFailure(error)
            }
            if batch.lines.isEmpty { return nil }
            output.removeAll(keepingCapacity: true)
            var spread = false
            for index in batch.lines.indices {
                spread = appendOutputLine(for: batch, at: index, command: command, scratch: &scratch, to: &output) || spread
            }
            stdout.write(output)
            tally.written(output, lineCount: batch.lines.count, spread: spread)
            if output.capacity > keptOutputCapacity {
                output.wipeCapacity()
                output = []
            }
            if stdout.failed { return nil }
        }
    }

    /// A batch and the output of its chunks, shared by the threads that process it. Each chunk's
    /// output buffer is written by the one thread that took the chunk.
    private final class Slot: @unchecked Sendable {
        var batch = LineBatchReader.Batch()
        let outputs: UnsafeMutablePointer<[UInt8]>
        /// A line of the batch was a document that went on past its line.
        let spread = Locked<Bool>(false)
        /// Chunks not processed yet; the thread that takes it to zero signals `done`.
        let remaining = Locked<Int>(0)
        let done = Semaphore()
        static let maximumChunks = (DocumentRunner.batchLines + DocumentRunner.chunkLines - 1) / DocumentRunner.chunkLines

        init() {
            outputs = .allocate(capacity: Slot.maximumChunks)
            outputs.initialize(repeating: [], count: Slot.maximumChunks)
        }

        deinit {
            outputs.deinitialize(count: Slot.maximumChunks)
            outputs.deallocate()
        }

        var chunkCount: Int { (batch.lines.count + DocumentRunner.chunkLines - 1) / DocumentRunner.chunkLines }

        /// Zeroes the batch's input and the chunks' output, for the end of a run.
        func wipe() {
            batch.bytes.wipeCapacity()
            for chunk in 0..<Slot.maximumChunks { outputs[chunk].wipeCapacity() }
        }

        /// Processes one chunk; true when it was the batch's last.
        func process<C: DocumentCommand>(chunk: Int, _ command: C, scratch: UnsafeMutablePointer<C.Scratch>) -> Bool {
            let batch = self.batch
            outputs[chunk].removeAll(keepingCapacity: true)
            let lines = (chunk * DocumentRunner.chunkLines)..<min((chunk + 1) * DocumentRunner.chunkLines, batch.lines.count)
            var spread = false
            for index in lines {
                spread =
                    DocumentRunner.appendOutputLine(for: batch, at: index, command: command, scratch: &scratch.pointee, to: &outputs[chunk])
                    || spread
            }
            if spread { self.spread.withLock { $0 = true } }
            return remaining.withLock { remaining in
                remaining -= 1
                return remaining == 0
            }
        }

        /// Writes the chunks' output in order and empties the batch.
        func write(to stdout: inout OutputStream, tally: inout DocumentRunner.Tally) {
            let spread = self.spread.withLock { spread in
                defer { spread = false }
                return spread
            }
            for chunk in 0..<chunkCount {
                stdout.write(outputs[chunk])
                let lines = min(DocumentRunner.chunkLines, batch.lines.count - chunk * DocumentRunner.chunkLines)
                tally.written(outputs[chunk], lineCount: lines, spread: spread && chunk == 0)
                if outputs[chunk].capacity > DocumentRunner.keptOutputCapacity {
                    outputs[chunk].wipeCapacity()
                    outputs[chunk] = []
                }
            }
            batch.lines.removeAll(keepingCapacity: true)
        }
    }

    /// The chunks waiting for a thread, in input order, and the threads' scratch.
    private final class WorkQueue<C: DocumentCommand>: @unchecked Sendable {
        struct Item {
            /// `nil`: stop.
            let slot: Slot?
            let chunk: Int
        }

        let command: C
        private let items = Locked<[Item]>([])
        private let available = Semaphore()
        let scratches: UnsafeMutablePointer<C.Scratch>
        let jobs: Int

        init(_ command: C) {
            self.command = command
            jobs = command.stream.jobs
            scratches = .allocate(capacity: jobs)
            for index in 0..<jobs { (scratches + index).initialize(to: command.makeScratch()) }
        }

        deinit {
            for index in 0..<jobs { command.wipe(&scratches[index]) }
            scratches.deinitialize(count: jobs)
            scratches.deallocate()
        }

        /// Hands out every chunk of `slot`.
        func publish(_ slot: Slot) {
            let count = slot.chunkCount
            slot.remaining.withLock { $0 = count }
            items.withLock { items in
                for chunk in 0..<count { items.append(Item(slot: slot, chunk: chunk)) }
            }
            for _ in 0..<count { available.signal() }
        }

        /// Tells every thread to stop once the chunks before have been taken.
        func stop() {
            items.withLock { items in
                for _ in 0..<jobs { items.append(Item(slot: nil, chunk: 0)) }
            }
            for _ in 0..<jobs { available.signal() }
        }

        /// A thread's loop: take the oldest chunk, process it, signal its batch when it was the last.
        func work(worker: Int) {
            while true {
                available.wait()
                let item = items.withLock { items in
                    let item = items[0]
                    items.removeFirst()
                    return item
                }
                guard let slot = item.slot else { return }
                if slot.process(chunk: item.chunk, command, scratch: scratches + worker) { slot.done.signal() }
            }
        }
    }

    /// `--jobs N`, N > 1: N threads take chunks of 16 lines, oldest first, from up to
    /// ``batchesInFlight`` batches, while this thread reads batches ahead and writes each one
    /// as soon as all its chunks are done, in input order. No thread waits for another to
    /// finish a batch: one that is slowed down (a busy machine) holds up only the writing.
    private static func runParallel<C: DocumentCommand>(
        _ command: C, reader: inout LineBatchReader, stdout: inout OutputStream, tally: inout Tally
    ) -> CLIError? {
        let queue = WorkQueue(command)
        // Each thread has its own scratch; the chunks go to whichever threads did start.
        let threads = (0..<queue.jobs).compactMap { worker in WorkerThread { queue.work(worker: worker) } }
        guard !threads.isEmpty else {
            return runSequential(command, reader: &reader, stdout: &stdout, tally: &tally)
        }
        var free = (0..<batchesInFlight).map { _ in Slot() }
        var inFlight: [Slot] = []
        var readError: CLIError?
        var ended = false
        while true {
            while !ended, let slot = free.popLast() {
                // A live filter: rather than wait for input with batches in flight, write them
                // first; with none in flight, flush what was written before waiting.
                if reader.inputWouldBlock() {
                    if !inFlight.isEmpty {
                        free.append(slot)
                        break
                    }
                    if !stdout.flush() {
                        ended = true
                        free.append(slot)
                        break
                    }
                }
                do throws(LineBatchReader.ReadError) {
                    try reader.nextBatch(into: &slot.batch, maximumLines: batchLines, maximumBytes: batchBytes, live: true)
                } catch {
                    // As with --jobs 1: the lines of a batch cut short by the error are not processed.
                    readError = readFailure(error)
                    slot.batch.lines.removeAll()
                }
                if slot.batch.lines.isEmpty {
                    ended = true
                    free.append(slot)
                    break
                }
                queue.publish(slot)
                inFlight.append(slot)
            }
            guard !inFlight.isEmpty else { break }
            let oldest = inFlight.removeFirst()
            oldest.done.wait()
            oldest.write(to: &stdout, tally: &tally)
            free.append(oldest)
            if stdout.failed { ended = true }
        }
        queue.stop()
        for thread in threads { thread.join() }
        for slot in free + inFlight { slot.wipe() }
        return readError
    }

    /// Appends the output line (newline included) of `batch.lines[index]` to `output`; true when
    /// the line was a JSON document cut by its newline (``spreadDocumentAdvice``).
    @discardableResult
    package static func appendOutputLine<C: DocumentCommand>(
        for batch: LineBatchReader.Batch, at index: Int, command: C, scratch: inout C.Scratch, to output: inout [UInt8]
    ) -> Bool {
        var spread = false
        let start = output.count
        do throws(CLIError) {
            switch batch.lines[index] {
            case .oversized:
                throw CLIError(.badInput, "the line is over \(StandardInput.sizeText(command.inputLimit))")
            case .text(let range):
                _ = try batch.bytes.withUnsafeBytes { raw in
                    Result { () throws(CLIError) in
                        try command.process(bytes: UnsafeRawBufferPointer(rebasing: raw[range]), scratch: &scratch, into: &output)
                    }
                }.get()
            }
        } catch {
            output.removeSubrange(start...)
            var error = error
            if error.code == .badInput, case .text(let range) = batch.lines[index],
                batch.bytes.withUnsafeBytes({ StandardInput.endsInsideDocument(UnsafeRawBufferPointer(rebasing: $0[range])) })
            {
                spread = true
                error = CLIError(.badInput, spreadDocumentAdvice)
            }
            JSONWriter.write(error.jsonObject, to: &output)
        }
        output.append(0x0A)
        return spread
    }
}

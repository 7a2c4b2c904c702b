import Dispatch
import KindlyPush
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a ``DocumentCommand`` over standard input.
enum DocumentRunner {
    static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Lines handed to a thread at a time, and written out together.
    static let chunkLines = 16
    /// A batch ends after this many lines or input bytes (plus the line that crosses it), so
    /// that memory stays flat whatever the stream holds.
    static let batchLines = 1024
    static let batchBytes = 1 << 20
    /// A chunk's output buffer larger than this after a batch is let go rather than kept.
    static let keptOutputCapacity = 1 << 18

    /// Single-document mode: the output document on standard output, or one error line on
    /// standard error and nothing on standard output.
    static func runSingle<C: DocumentCommand>(_ command: C) -> Int32 {
        var output: [UInt8] = []
        var scratch = command.makeScratch()
        let completion: Completion
        do throws(CLIError) {
            let input = try StandardInput.readDocument()
            completion = try input.withUnsafeBytes { raw in
                Result { () throws(CLIError) in try command.process(bytes: raw, scratch: &scratch, into: &output) }
            }.get()
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        output.append(0x0A)
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        stdout.write(output)
        guard stdout.flush() else {
            Diagnostics.report(CLIError(.io, "cannot write standard output: \(String(cString: strerror(errno)))"))
            return ErrorCode.io.exitStatus
        }
        return completion.exitStatus
    }

    /// `--jsonl`: one output line per input line, in input order; a bad line gives its error
    /// object and the stream goes on. Lines are read in batches bounded in lines and bytes, so
    /// memory stays flat however long the stream. With `--jobs 1` everything happens on this
    /// thread, in order. With more, a batch is cut into chunks that `jobs` threads (this one
    /// included) take in turn, while this thread writes the previous batch's output and reads
    /// the next batch; chunks are written in input order.
    static func runLines<C: DocumentCommand>(_ command: C) -> Int32 {
        var reader = LineBatchReader()
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        let readError =
            command.jobs == 1
            ? runSequential(command, reader: &reader, stdout: &stdout) : runParallel(command, reader: &reader, stdout: &stdout)
        guard stdout.flush() else {
            Diagnostics.report(CLIError(.io, "cannot write standard output: \(String(cString: strerror(errno)))"))
            return ErrorCode.io.exitStatus
        }
        if let readError {
            Diagnostics.report(readError)
            return readError.code.exitStatus
        }
        return 0
    }

    /// `--jobs 1`: read, process and write one batch after another on this thread.
    private static func runSequential<C: DocumentCommand>(
        _ command: C, reader: inout LineBatchReader, stdout: inout OutputStream
    ) -> CLIError? {
        var batch = LineBatchReader.Batch()
        var scratch = command.makeScratch()
        var output: [UInt8] = []
        while true {
            do throws(CLIError) {
                try reader.nextBatch(into: &batch, maximumLines: batchLines, maximumBytes: batchBytes)
            } catch {
                return error
            }
            if batch.lines.isEmpty { return nil }
            output.removeAll(keepingCapacity: true)
            for index in batch.lines.indices {
                appendOutputLine(for: batch, at: index, command: command, scratch: &scratch, to: &output)
            }
            stdout.write(output)
            if output.capacity > keptOutputCapacity { output = [] }
            if stdout.failed { return nil }
        }
    }

    /// A batch and the output of its chunks, shared by the threads that process it. Each chunk's
    /// output buffer is written by the one thread that took the chunk.
    private final class Slot: @unchecked Sendable {
        var batch = LineBatchReader.Batch()
        let outputs: UnsafeMutablePointer<[UInt8]>
        let nextChunk = Atomic<Int>(0)
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

        /// Takes chunks until none is left; safe on several threads at once, each with its own scratch.
        func work<C: DocumentCommand>(_ command: C, scratch: UnsafeMutablePointer<C.Scratch>) {
            let batch = self.batch
            let count = (batch.lines.count + DocumentRunner.chunkLines - 1) / DocumentRunner.chunkLines
            while true {
                let chunk = nextChunk.wrappingAdd(1, ordering: .relaxed).oldValue
                guard chunk < count else { return }
                outputs[chunk].removeAll(keepingCapacity: true)
                let lines = (chunk * DocumentRunner.chunkLines)..<min((chunk + 1) * DocumentRunner.chunkLines, batch.lines.count)
                for index in lines {
                    DocumentRunner.appendOutputLine(for: batch, at: index, command: command, scratch: &scratch.pointee, to: &outputs[chunk])
                }
            }
        }

        /// Writes the chunks' output in order and empties the batch.
        func write(to stdout: inout OutputStream) {
            for chunk in 0..<chunkCount {
                stdout.write(outputs[chunk])
                if outputs[chunk].capacity > DocumentRunner.keptOutputCapacity { outputs[chunk] = [] }
            }
            batch.lines.removeAll(keepingCapacity: true)
        }
    }

    /// `--jobs N`, N > 1: batch k is processed by N − 1 worker threads and this one, while this
    /// thread first writes batch k − 1 and reads batch k + 1.
    private static func runParallel<C: DocumentCommand>(
        _ command: C, reader: inout LineBatchReader, stdout: inout OutputStream
    ) -> CLIError? {
        let jobs = command.jobs
        let scratches = UnsafeMutablePointer<C.Scratch>.allocate(capacity: jobs)
        for index in 0..<jobs { (scratches + index).initialize(to: command.makeScratch()) }
        defer {
            scratches.deinitialize(count: jobs)
            scratches.deallocate()
        }
        nonisolated(unsafe) let workerScratches = scratches
        var current = Slot()
        var previous = Slot()
        var readError: CLIError?
        do throws(CLIError) {
            try reader.nextBatch(into: &current.batch, maximumLines: batchLines, maximumBytes: batchBytes)
        } catch {
            return error
        }
        let queue = DispatchQueue.global()
        while !current.batch.lines.isEmpty {
            current.nextChunk.store(0, ordering: .relaxed)
            let group = DispatchGroup()
            let slot = current
            for worker in 1..<min(jobs, slot.chunkCount) {
                queue.async(group: group) { slot.work(command, scratch: workerScratches + worker) }
            }
            previous.write(to: &stdout)
            if readError == nil, !stdout.failed {
                do throws(CLIError) {
                    try reader.nextBatch(into: &previous.batch, maximumLines: batchLines, maximumBytes: batchBytes)
                } catch {
                    // As with --jobs 1: the lines of a batch cut short by the error are not processed.
                    readError = error
                    previous.batch.lines.removeAll()
                }
            }
            slot.work(command, scratch: scratches)
            group.wait()
            swap(&current, &previous)
        }
        previous.write(to: &stdout)
        return readError
    }

    /// Appends the output line (newline included) of `batch.lines[index]` to `output`.
    static func appendOutputLine<C: DocumentCommand>(
        for batch: LineBatchReader.Batch, at index: Int, command: C, scratch: inout C.Scratch, to output: inout [UInt8]
    ) {
        let start = output.count
        do throws(CLIError) {
            switch batch.lines[index] {
            case .oversized:
                throw CLIError(.badInput, "the line is over 64 KiB")
            case .text(let range):
                _ = try batch.bytes.withUnsafeBytes { raw in
                    Result { () throws(CLIError) in
                        try command.process(bytes: UnsafeRawBufferPointer(rebasing: raw[range]), scratch: &scratch, into: &output)
                    }
                }.get()
            }
        } catch {
            output.removeSubrange(start...)
            JSONWriter.write(error.jsonObject, to: &output)
        }
        output.append(0x0A)
    }
}

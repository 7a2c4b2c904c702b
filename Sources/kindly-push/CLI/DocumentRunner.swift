import Dispatch
import KindlyPush

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a ``DocumentCommand`` over standard input.
enum DocumentRunner {
    static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Single-document mode: the output document on standard output, or one error line on
    /// standard error and nothing on standard output.
    static func runSingle<C: DocumentCommand>(_ command: C) -> Int32 {
        var output: [UInt8] = []
        let completion: Completion
        do throws(CLIError) {
            let input = try StandardInput.readDocument()
            completion = try input.withUnsafeBytes { raw in
                Result { () throws(CLIError) in try command.process(bytes: raw, into: &output) }
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
    /// object and the stream goes on. Lines are read in batches and a batch is spread over
    /// `jobs` threads, so memory stays flat however long the stream.
    static func runLines<C: DocumentCommand>(_ command: C) -> Int32 {
        var reader = LineBatchReader(maximumLineLength: StandardInput.maximumDocumentSize)
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        var batch = LineBatchReader.Batch()
        let batchSize = command.jobs == 1 ? 64 : 256 * command.jobs
        var outputs = [[UInt8]](repeating: [], count: batchSize)
        while true {
            do throws(LineBatchReader.ReadError) {
                try reader.nextBatch(into: &batch, maximumLines: batchSize)
            } catch {
                stdout.flush()
                Diagnostics.report(CLIError(.io, "cannot read standard input: \(error)"))
                return ErrorCode.io.exitStatus
            }
            if batch.lines.isEmpty { break }
            process(batch, with: command, into: &outputs)
            for index in batch.lines.indices {
                stdout.write(outputs[index])
            }
            guard !stdout.failed else { break }
        }
        guard stdout.flush() else {
            Diagnostics.report(CLIError(.io, "cannot write standard output: \(String(cString: strerror(errno)))"))
            return ErrorCode.io.exitStatus
        }
        return 0
    }

    /// Fills `outputs[i]` with the output line (newline included) of `batch.lines[i]`.
    private static func process<C: DocumentCommand>(_ batch: LineBatchReader.Batch, with command: C, into outputs: inout [[UInt8]]) {
        let count = batch.lines.count
        let jobs = min(command.jobs, count)
        if jobs <= 1 {
            for index in 0..<count { outputs[index] = outputLine(for: batch, at: index, command: command, reusing: outputs[index]) }
            return
        }
        // Each worker takes every jobs-th line and writes only its own slots.
        outputs.withUnsafeMutableBufferPointer { slots in
            nonisolated(unsafe) let slots = slots
            DispatchQueue.concurrentPerform(iterations: jobs) { worker in
                var index = worker
                while index < count {
                    slots[index] = outputLine(for: batch, at: index, command: command, reusing: slots[index])
                    index += jobs
                }
            }
        }
    }

    private static func outputLine<C: DocumentCommand>(
        for batch: LineBatchReader.Batch, at index: Int, command: C, reusing storage: [UInt8]
    ) -> [UInt8] {
        var output = storage
        output.removeAll(keepingCapacity: true)
        do throws(CLIError) {
            switch batch.lines[index] {
            case .oversized:
                throw CLIError(.badInput, "the line is over 64 KiB")
            case .text(let range):
                _ = try batch.bytes.withUnsafeBytes { raw in
                    Result { () throws(CLIError) in
                        try command.process(bytes: UnsafeRawBufferPointer(rebasing: raw[range]), into: &output)
                    }
                }.get()
            }
        } catch {
            output.removeAll(keepingCapacity: true)
            JSONWriter.write(error.jsonObject, to: &output)
        }
        output.append(0x0A)
        return output
    }
}

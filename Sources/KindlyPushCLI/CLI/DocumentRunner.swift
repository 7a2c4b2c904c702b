internal import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a ``DocumentCommand`` over standard input.
package enum DocumentRunner {
    package static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// An output buffer larger than this after a batch is let go rather than kept.
    package static let keptOutputCapacity = 1 << 18

    /// Single-document mode: the output document on standard output, or one error line on
    /// standard error and nothing on standard output.
    package static func runSingle<C: DocumentCommand>(_ command: C) -> Int32 {
        var output: [UInt8] = []
        let processor = command.processor
        var scratch = processor.makeScratch()
        var input: [UInt8] = []
        // The input (a plaintext, for seal), the output (a payload, for decrypt) and the scratch
        // are zeroed when the run ends.
        defer {
            processor.wipe(&scratch)
            input.wipeCapacity()
            output.wipeCapacity()
        }
        let completion: LineEngine.LineOutcome
        do throws(CodedError) {
            let descriptor = try InputFiles.open(command.stream.inputs, lineMode: false)[0]
            defer { if descriptor != STDIN_FILENO { FileDescriptor(rawValue: descriptor).close() } }
            input = try StandardInput.readDocument(descriptor: descriptor, limit: processor.inputLimit)
            completion = try input.withUnsafeBytes { raw in
                Result { () throws(CodedError) in try processor.process(bytes: raw, scratch: &scratch, into: &output) }
            }.get()
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        output.append(0x0A)
        let target: OutputTarget
        do throws(CodedError) {
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
    package static func finish(_ stdout: inout OutputStream, _ target: consuming OutputTarget, incomplete: Bool = false) -> Int32? {
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
    /// memory stays flat however long the stream; see ``runStream(_:reader:stdout:tally:)``.
    package static func runLines<C: DocumentCommand>(_ command: C) -> Int32 {
        let descriptors: [Int32]
        do throws(CodedError) {
            descriptors = try InputFiles.open(command.stream.inputs, lineMode: true)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        defer { for descriptor in descriptors where descriptor != STDIN_FILENO { FileDescriptor(rawValue: descriptor).close() } }
        let target: OutputTarget
        do throws(CodedError) {
            target = try OutputTarget(path: command.stream.outputPath)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        var source = ReaderSource(LineBatchReader(descriptors: descriptors, maximumLineLength: command.processor.inputLimit))
        var sink = OutputSink(
            stdout: OutputStream(descriptor: target.descriptor), tally: Tally(progress: ProgressLine(quiet: command.stream.isQuiet)))
        // Regular files only: their size is known, so the progress line shows the share read.
        let sizes = descriptors.compactMap { FileDescriptor(rawValue: $0).regularFileSize }
        if sizes.count == descriptors.count { sink.tally.progress.totalBytes = sizes.reduce(0, +) }
        // With `--jobs N`, N threads take chunks of 16 lines, oldest first, from up to
        // StreamBatching.batchesInFlight batches, while this thread reads batches ahead and
        // writes each one as soon as all its chunks are done, in input order. So with `--jobs 1`
        // one thread processes while this one reads and writes beside it, as the library's
        // stream with `jobs` 1 does. When the system gives no thread, the runner has none and
        // this one processes each batch as it takes it: read, process and write.
        let processing = ThreadedLines(LineEngine.Work(processor: command.processor, counts: true), jobs: command.stream.jobs)
        let readError = LineEngine.drive(source: &source, processing: processing, sink: &sink)
        processing.finish()
        var tally = sink.tally
        var stdout = sink.stdout
        tally.progress.clear()
        source.wipe()
        let writeStatus = finish(&stdout, target, incomplete: readError != nil)
        if readError == nil, let writeStatus { return writeStatus }
        if command.stream.showsSummary {
            Diagnostics.line("kindly-push: \(tally.counts.line)")
        } else if !command.stream.isQuiet, let note = tally.counts.failureNote {
            Diagnostics.line("kindly-push: \(note)")
        }
        if let readError {
            Diagnostics.report(readError)
            return readError.code.exitStatus
        }
        return 0
    }

    /// What a `--jsonl` run shows of itself: the progress line, the counts (all of them with
    /// `--summary`, the failures without), and once the note that a document went on past its line.
    package struct Tally {
        var progress: ProgressLine
        var counts = ResultCounts()
        var lines = 0
        var notedSpreadDocument = false

        /// Notes the output of `lineCount` lines just written, whose outcomes `outcomes` counted;
        /// `spread`: one of them was a document that went on past the end of its line.
        mutating func written(lineCount: Int, outcomes: ResultCounts, spread: Bool, bytesRead: Int) {
            if spread, !notedSpreadDocument {
                notedSpreadDocument = true
                progress.clear()
                Diagnostics.line("kindly-push: note: \(PushStreamResult.spreadDocumentAdvice)")
            }
            lines += lineCount
            counts.add(outcomes)
            progress.update(count: lines, bytesDone: bytesRead)
        }
    }

    /// `--jsonl`'s sink: each chunk's output lines on the output, counted, with the progress line.
    struct OutputSink: ~Copyable, LineSink {
        var stdout: OutputStream
        var tally: Tally

        mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool {
            stdout.write(chunk.bytes)
            tally.written(lineCount: chunk.outcomes.lines, outcomes: chunk.outcomes, spread: chunk.spread, bytesRead: bytesRead)
            return !stdout.failed
        }

        mutating func flush() -> Bool { stdout.flush() }
    }
}

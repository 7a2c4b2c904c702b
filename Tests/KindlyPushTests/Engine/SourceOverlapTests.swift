import Dispatch
import KindlyPushBase
import KindlyPushCore
import Testing

/// `LineSource.whileProcessing()`: a source that asked for its next lines ahead (a Redis worker's
/// read-ahead) takes the answer while the threads work on the lines it gave, not after them.
@Suite("A source's own work beside the engine's threads", .offThePool)
struct SourceOverlapTests {
    /// Holds each line until the gate opens, then echoes it; the gate stays open once opened.
    /// `guardSeconds` only keep an engine that never opens it from hanging the test: the first
    /// line that waits them out is counted and opens the gate for the rest.
    struct GatedEcho: DocumentProcessor {
        let gate: DispatchSemaphore
        let waitedOut: Locked<Int>
        static let guardSeconds = 30

        func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome {
            if gate.wait(timeout: .now() + .seconds(Self.guardSeconds)) == .timedOut {
                waitedOut.withLock { $0 += 1 }
            }
            gate.signal()
            output += Array((document["name"]?.stringValue ?? "").utf8)
            return .success
        }
    }

    /// One batch of `lines`, then the end; its `whileProcessing` opens the gate and is counted.
    struct OneBatch: LineSource {
        var lines: [String]
        let gate: DispatchSemaphore
        var calls = 0

        mutating func wouldBlock() -> Bool { false }

        mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool {
            batch.bytes.removeAll()
            batch.lines.removeAll()
            for line in lines {
                let start = batch.bytes.count
                batch.bytes += Array(line.utf8)
                batch.lines.append(.text(start..<batch.bytes.count))
            }
            lines.removeAll()
            return !batch.lines.isEmpty
        }

        mutating func whileProcessing() {
            calls += 1
            if calls == 1 { gate.signal() }
        }
    }

    /// Each output line, in order.
    struct Lines: LineSink {
        var lines: [String] = []
        mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool {
            for (range, _) in chunk.lines { lines.append(String(decoding: chunk.bytes[range], as: UTF8.self)) }
            return true
        }
        mutating func flush() -> Bool { true }
    }

    @Test(
        "the source's whileProcessing runs while the threads hold its lines: a line that waits for it is processed, none waits out its guard",
        arguments: [1, 2])
    func overlaps(jobs: Int) {
        let gate = DispatchSemaphore(value: 0)
        let waitedOut = Locked(0)
        var source = OneBatch(lines: [#"{"name":"a"}"#, #"{"name":"b"}"#, #"{"name":"c"}"#], gate: gate)
        var sink = Lines()
        let processing = ThreadedLines(
            LineEngine.Work(processor: GatedEcho(gate: gate, waitedOut: waitedOut), keepsLines: true), jobs: jobs)
        defer { processing.finish() }
        #expect(LineEngine.drive(source: &source, processing: processing, sink: &sink) == nil)
        #expect(sink.lines == ["a", "b", "c"])
        #expect(waitedOut.withLock { $0 } == 0, "the lines were processed only once their guard ran out")
        // Asked with the batch in flight, not again once nothing was.
        #expect(source.calls == 1)
    }
}

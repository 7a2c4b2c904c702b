import KindlyPushBase
import KindlyPushCore
import Testing

@Suite("A decision processor's lines on the engine (DecidedLines)", .offThePool)
struct DecidedLinesTests {
    /// Decides the `name` of each object; a document without one is its `bad_input` error.
    struct NameDecision: DecisionProcessor {
        func decide(_ document: JSONValue) throws(CodedError) -> String {
            guard let name = document["name"]?.stringValue else { throw CodedError(.badInput, "no name") }
            return name
        }
    }

    /// Hands out `batches` one read at a time (an empty one: nothing yet), then ends; says how
    /// often it was asked.
    struct Batches: ~Copyable, LineSource {
        var batches: [[String]]
        var readiness: Int32?
        var reads = 0

        mutating func wouldBlock() -> Bool { batches.first?.isEmpty ?? false }

        mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool {
            batch.bytes.removeAll()
            batch.lines.removeAll()
            reads += 1
            guard !batches.isEmpty else { return false }
            for line in batches.removeFirst() {
                let start = batch.bytes.count
                batch.bytes += Array(line.utf8)
                batch.lines.append(.text(start..<batch.bytes.count))
            }
            return true
        }
    }

    /// What the front end's action saw: each line's decision (or error code) and whether it
    /// ended its read; it takes `limit` lines at most, and holds back (does not decide) the lines
    /// `held` names.
    final class Recorder {
        var seen: [String] = []
        var limit = Int.max
        var held: Set<String> = []

        init(limit: Int = .max, held: Set<String> = []) {
            self.limit = limit
            self.held = held
        }

        func act(_ line: LineEngine.DecidedLine<NameDecision>) -> Bool {
            guard seen.count < limit else { return false }
            let text = line.text.map { String(decoding: $0, as: UTF8.self) } ?? ""
            let mark = line.isLast ? " (last)" : ""
            if held.contains(text) {
                seen.append("held \(text)\(mark)")
                return true
            }
            switch line.decision() {
            case .success(let decision): seen.append("\(decision)\(mark)")
            case .failure(let error): seen.append("\(error.code.rawValue)\(mark)")
            }
            return true
        }
    }

    /// A sink that no output line reaches and that never ends the run.
    struct NoOutput: LineSink {
        var chunks = 0
        mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool {
            chunks += 1
            return false
        }
        mutating func flush() -> Bool { true }
    }

    /// Drives `batches` through `recorder`'s action: how often the source was read, what the
    /// processing waited on (its front end's wait), and the read error.
    func run(_ batches: [[String]], readiness: Int32? = nil, recorder: Recorder) -> (reads: Int, waits: [Int32?], error: CodedError?) {
        var source = Batches(batches: batches, readiness: readiness)
        var sink = NoOutput()
        var waits: [Int32?] = []
        let processing = DecidedLines(NameDecision(), act: recorder.act, wait: { input, _ in waits.append(input) })
        let error = LineEngine.drive(source: &source, processing: processing, sink: &sink)
        #expect(sink.chunks == 0)
        return (source.reads, waits, error)
    }

    @Test("each line reaches the front end's action in input order, decided or as its error, the last of each read marked")
    func inOrder() {
        let recorder = Recorder()
        let run = run([[#"{"name":"a"}"#, "x"], [#"{"name":"b"}"#]], recorder: recorder)
        #expect(recorder.seen == ["a", "bad_input (last)", "b (last)"])
        #expect(run.error == nil)
        #expect(run.reads == 3)
    }

    @Test("a line the action holds back is not decided")
    func heldBack() {
        let recorder = Recorder(held: ["x"])
        let run = run([[#"{"name":"a"}"#, "x"]], recorder: recorder)
        #expect(recorder.seen == ["a", "held x (last)"])
        #expect(run.error == nil)
    }

    @Test("between reads (one that brought nothing, one whose lines were acted on) the front end waits, on the source's readiness")
    func waitsOnReadiness() {
        let recorder = Recorder()
        let run = run([[], [#"{"name":"a"}"#]], readiness: 7, recorder: recorder)
        #expect(recorder.seen == ["a (last)"])
        #expect(run.waits == [7, 7])
    }

    @Test("once the action takes no more, the rest of the read is let go and nothing more is read")
    func sinkStops() {
        let recorder = Recorder(limit: 1)
        let run = run([[#"{"name":"a"}"#, #"{"name":"b"}"#], [#"{"name":"c"}"#]], recorder: recorder)
        #expect(recorder.seen == ["a"])
        #expect(run.reads == 1)
    }
}

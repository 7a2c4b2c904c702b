package import KindlyPushBase
package import KindlyPushCore

/// `send`'s gateway as the engine's ``LineProcessing``: each line taken is submitted at once
/// (its push goes out as soon as a connection has room), and its result is finished when its
/// push service answers; the sink gets the results in input order, each line's outcome with
/// its result line. `send --jsonl` and the one document of `send` run on it
/// (``LineEngine/drive(source:processing:sink:)``), each with its own source and sink.
package final class GatewayLines: LineProcessing {
    /// The gateway, used from the driving thread only.
    package let gateway: PushGateway
    /// After SIGTERM, what is in flight ends once ``SendTiming/stopDrain`` is over
    /// (``PushGateway/endAfterStopDrain()``): `--jsonl`'s; the one document of a single run is
    /// waited for whatever comes.
    let endsAfterStopDrain: Bool
    /// Each line's ``LineEngine/LineOutcome`` in ``LineEngine/Chunk/lines`` too, not only counted.
    let keepsLines: Bool
    /// The batch the source fills, kept from one take to the next.
    private var batch = LineBatchReader.Batch()
    /// The results handed to the sink, kept from one delivery to the next.
    private var chunk = LineEngine.Chunk()
    /// The sink can take no more: what is still in flight is left unanswered, and the drive ends.
    private var abandoned = false

    package init(_ gateway: PushGateway, endsAfterStopDrain: Bool = true, keepsLines: Bool = false) {
        self.gateway = gateway
        self.endsAfterStopDrain = endsAfterStopDrain
        self.keepsLines = keepsLines
    }

    /// The lines of one read at most (``SendTiming/readAhead`` bounds those in flight).
    package var batchLimits: (lines: Int, bytes: Int) { (256, .max) }

    package var hasRoom: Bool { !abandoned && gateway.hasRoom }

    package var isIdle: Bool { abandoned || gateway.isIdle }

    package func take<Failure: Error>(_ fill: (inout LineBatchReader.Batch) throws(Failure) -> Void) throws(Failure) {
        batch.bytes.removeAll(keepingCapacity: true)
        batch.lines.removeAll(keepingCapacity: true)
        try fill(&batch)
        for line in batch.lines { gateway.submit(line, in: batch.bytes) }
    }

    /// Hands the sink every result answered in input order since the last call, as one chunk (an
    /// empty one too, so that a sink whose output failed since ends the run at once), and has it
    /// write what it gathers when nothing is left to answer or a stop signal came.
    package func deliver<Sink: LineSink & ~Copyable>(to sink: inout Sink, bytesRead: Int) -> Bool {
        if endsAfterStopDrain { gateway.endAfterStopDrain() }
        chunk.bytes.removeAll(keepingCapacity: true)
        chunk.outcomes.removeAll()
        chunk.lines.removeAll(keepingCapacity: true)
        var start = 0
        while let outcome = gateway.takeOne(into: &chunk.bytes) {
            if keepsLines {
                let line = Self.lineOutcome(outcome)
                chunk.outcomes.count(line.error)
                chunk.lines.append((start..<chunk.bytes.count - 1, line))
                start = chunk.bytes.count
            } else if case .failed(let error) = outcome {
                chunk.outcomes.count(error.code)
            } else {
                chunk.outcomes.count(nil)
            }
        }
        var open = sink.accept(chunk, bytesRead: bytesRead)
        if open, gateway.isIdle || StopSignals.requested { open = sink.flush() }
        if !open { abandoned = true }
        return open
    }

    /// Lets every sender work: waits up to `timeout` milliseconds (at most
    /// ``longestWait``: a stop signal is seen within it) for an answer or for `input` when a
    /// sender has something to wait for or there is input to wait on, else only takes what is
    /// there.
    package func wait(input: Int32?, timeout: Int?) {
        let waits = input != nil || gateway.hasWork
        _ = gateway.step(waitingFor: input ?? -1, timeout: waits ? min(timeout ?? Self.longestWait, Self.longestWait) : 0)
    }

    /// The longest wait in one step, in milliseconds.
    static let longestWait = 200

    /// What a push's ``SendOutcome`` is as a line's: an answer of the push service is a result
    /// whatever its status; no answer, or a document refused before anything was sent, is the
    /// line's error.
    static func lineOutcome(_ outcome: SendOutcome) -> LineEngine.LineOutcome {
        guard case .failed(let error) = outcome else { return .success }
        return LineEngine.LineOutcome(error)
    }
}

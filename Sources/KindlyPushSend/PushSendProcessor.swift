package import KindlyPushBase
internal import KindlyPushCore

/// `send` as the line engine runs it for a worker (`send --redis`): each document is sent, and
/// its result line (or error object) is the entry's output, which the Redis worker commits once
/// with its script, as it commits `seal`'s or `decrypt`'s.
///
/// A chunk at a time: the worker hands over a batch's documents together (``begin(_:)``), so its
/// pushes are in flight at once, as many as the server's stream limit allows, as with
/// `send --jsonl`; each entry's result is then taken in order, and the batch is committed once
/// all are answered. An entry taken over after a worker died is sent again: at least once, as
/// `send --jsonl` after a dropped connection.
package struct PushSendProcessor: DocumentProcessor {
    /// The gateway, used from the worker's one thread only, and how many documents handed over
    /// by ``begin(_:)`` are still to be taken by ``process(bytes:into:)``.
    final class Box: @unchecked Sendable {
        let sender: PushGateway
        var begun = 0
        init(_ sender: PushGateway) { self.sender = sender }
    }

    package static var beginsChunks: Bool { true }

    /// Hands every push of the chunk to the gateway at once.
    package func begin(_ documents: [UnsafeRawBufferPointer]) {
        for document in documents { box.sender.submit(document) }
        box.begun += documents.count
    }

    let box: Box
    /// A dead-letter stream is there: APNs's permanent refusals go to it instead of the results.
    let deadLetters: Bool

    /// `--metrics`: the sender's answers by status, on the worker's page.
    package let metricsText: (@Sendable () -> String)?

    package init(gateway: PushGateway, deadLetters: Bool, metrics: SendMetrics? = nil) {
        box = Box(gateway)
        self.deadLetters = deadLetters
        if let metrics {
            metricsText = { metrics.text() }
        } else {
            metricsText = nil
        }
    }

    /// A first connection to the push service (``PushSender/probe()``), before the worker says
    /// it is ready.
    package var readinessProbe: (@Sendable () -> String?)? {
        let box = box
        return { box.sender.probe() }
    }

    /// Takes one document's result line (or its error object): the document was handed over by
    /// ``begin(_:)``, or is sent now. Its bytes go to the gateway as they are, read once there
    /// (the engine reads no JSON of its own for it, so every entry given to ``begin(_:)`` is
    /// taken here); the line's fate is its typed ``SendOutcome``.
    package func process(bytes: UnsafeRawBufferPointer, scratch: inout Void, into output: inout [UInt8]) throws(CodedError)
        -> LineEngine.LineOutcome
    {
        let sender = box.sender
        if box.begun > 0 {
            box.begun -= 1
        } else {
            sender.submit(bytes)
        }
        // On a throw below, the engine takes back what was appended.
        var taken = sender.takeOne(into: &output)
        while taken == nil {
            // After SIGTERM's drain the push ends as `io`, a transient failure: the entry stays
            // pending (sent again later: at least once).
            sender.endAfterStopDrain()
            // A push's retries can take minutes (APNs unreachable: 5 attempts of up to 10 s
            // each): the worker's watchdog is fed meanwhile, as its loop feeds it while Redis
            // answers (a worker that found Redis gone does not feed it).
            ServiceNotifier.process?.feedWatchdog()
            _ = sender.step(waitingFor: -1, timeout: 200)
            taken = sender.takeOne(into: &output)
        }
        guard let outcome = taken else { preconditionFailure("taken above") }
        // The line's newline (``PushGateway/takeOne(into:)`` ends each line with one): the
        // engine ends the line itself.
        output.removeLast()
        // A JSON document its line cuts short: the engine's to say, with its advice.
        if case .failed(let error) = outcome, error.endsInsideDocument { throw error }
        try Self.check(outcome, deadLetters: deadLetters)
        // A result is a success whatever APNs answered; a refused document is its error object.
        guard case .failed(let error) = outcome else { return .success }
        return .errorObject(error.code, message: error.message)
    }

    /// What the worker must not commit as the entry's result: a push that reached no server
    /// after the sender's retries (`io`), or that its push service answered a status tried again
    /// to after them (``SendPlatform/isRetried(_:)``: 429 and 5xx, and on APNs a status APNs never
    /// answers with), is a transient failure (the entry stays pending and is sent again later: at
    /// least once); with dead letters, a permanent refusal (4xx other than 429 and the device
    /// gone) goes to the dead letters with its original document. A device gone (APNs's 410, Web
    /// Push's 404 and 410) is a result: the backend drops the device.
    package static func check(_ outcome: SendOutcome, deadLetters: Bool) throws(CodedError) {
        switch outcome {
        case .failed(let error):
            guard error.code == .io else { return }
            var failure = CodedError(.io, error.message)
            failure.isTransient = true
            throw failure
        case .answered(let status, let reason, let retryAfter, let platform):
            let gone = platform.isGone(status, reason: reason)
            let reason = reason.map { " \($0)" } ?? ""
            if platform.isRetried(status) {
                // An answer for this push: each later round counts toward --max-deliveries.
                var failure = CodedError(.io, "\(platform.service) answered \(status)\(reason) after the retries")
                failure.isTransient = true
                failure.countsAsDelivery = true
                // Its retry-after: the entry is not sent again before that.
                failure.retryAfter = retryAfter
                throw failure
            }
            if deadLetters, (400..<500).contains(status), !gone {
                throw CodedError(.badInput, "\(platform.service) refused the push: \(status)\(reason)")
            }
        }
    }

    /// A document already read (the engine hands the worker's entries to
    /// ``process(bytes:scratch:into:)`` instead): its compact text, sent as an entry's bytes are.
    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome {
        try JSONWriter.compactBytes(document).withBytes { (bytes) throws(CodedError) in
            var scratch: Void = ()
            return try process(bytes: bytes, scratch: &scratch, into: &output)
        }
    }
}

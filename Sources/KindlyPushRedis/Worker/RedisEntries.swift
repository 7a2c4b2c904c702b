internal import KindlyPushBase
internal import KindlyPushCore

/// A Redis worker's entries as the engine's ``LineSource``: each batch is the documents of the
/// entries the worker reads, takes over or retries (``RedisWorker/nextBatch(into:)``, which also
/// mends a lost connection and waits while there is nothing to read). The input ends on SIGTERM
/// or `--exit-when-idle`, with every batch committed; a worker that stops unable to reach Redis
/// ends it with that error.
struct RedisEntries<P: DocumentProcessor>: LineSource {
    let worker: RedisWorker<P>

    /// Never: the worker waits on its own (a read answers at once, a wait lasts at most 100 ms).
    mutating func wouldBlock() -> Bool { false }

    /// While the batch is processed (on `--jobs N` threads): the answers of the read ahead and
    /// of the last commit (``RedisWorker/receiveAhead()``).
    mutating func whileProcessing() { worker.receiveAhead() }

    /// The worker's next batch; its limits are `--batch`'s, which the read script applies.
    mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool {
        do throws(RedisWorker<P>.Fatal) {
            return try worker.nextBatch(into: &batch)
        } catch {
            throw error.error
        }
    }
}

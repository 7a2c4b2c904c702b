internal import KindlyPushBase

/// A Redis worker's commit as the engine's ``LineSink``: each entry's output line and outcome,
/// in entry order, gathered for the commit script's arguments (``RedisWorker/gather(_:)``), and
/// each batch's commit sent once its last line is in (``RedisWorker/complete(_:)``). It never
/// refuses a chunk: a lost connection is the worker's to mend before its next batch.
struct RedisCommit<P: DocumentProcessor>: LineSink {
    let worker: RedisWorker<P>

    mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool {
        worker.gather(chunk)
        return true
    }

    /// Nothing to show early: a batch's answers are written by its commit.
    mutating func flush() -> Bool { true }
}

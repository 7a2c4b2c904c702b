/// What the threads of an ``OrderedBatchRunner`` do with the lines of a batch: the one piece a
/// stream brings (decrypt, seal, route a line); the runner brings the threads, the order and the
/// bounded memory.
package protocol BatchWork: Sendable {
    /// What one thread keeps from line to line (buffers to reuse); one per thread.
    associatedtype Scratch
    /// What one chunk of lines gives; one per chunk of a slot, reused from batch to batch.
    associatedtype Output

    func makeScratch() -> Scratch
    /// Zeroes what a scratch holds (plaintexts) when the run ends.
    func wipe(_ scratch: inout Scratch)
    func makeOutput() -> Output
    /// Zeroes what an output holds when the run ends.
    func wipe(_ output: inout Output)
    /// Processes `lines` of `batch` into `output`, which holds the slot's last output for this
    /// chunk (the work empties it, keeping its capacity).
    func process(_ batch: LineBatchReader.Batch, lines: Range<Int>, scratch: inout Scratch, into output: inout Output)
}

/// A batch of lines and the outputs of its chunks, shared by the threads that process it. Each
/// chunk's output is written by the one thread that took the chunk, and read by the consumer once
/// the batch is complete (``OrderedBatchRunner/waitForOldest()``).
package final class BatchSlot<Work: BatchWork>: @unchecked Sendable {
    /// The lines to process; the consumer fills it before ``OrderedBatchRunner/publish(_:)``.
    package var batch = LineBatchReader.Batch()
    private let outputs: UnsafeMutablePointer<Work.Output>
    private let maximumChunks: Int
    package let chunkLines: Int
    private let progress = Locked(Progress())
    private let finished = Semaphore()

    /// Chunks not processed yet, and who waits for the last one.
    private struct Progress: Sendable {
        var remaining = 0
        var waiter: Waiter = .none
    }

    private enum Waiter: Sendable {
        case none
        case thread
        case task(UnsafeContinuation<Void, Never>)
    }

    init(_ work: Work, maximumLines: Int, chunkLines: Int) {
        self.chunkLines = chunkLines
        maximumChunks = (maximumLines + chunkLines - 1) / chunkLines
        outputs = .allocate(capacity: maximumChunks)
        for chunk in 0..<maximumChunks { (outputs + chunk).initialize(to: work.makeOutput()) }
    }

    deinit {
        outputs.deinitialize(count: maximumChunks)
        outputs.deallocate()
    }

    /// The number of chunks of the batch (the last may be short).
    package var chunkCount: Int { (batch.lines.count + chunkLines - 1) / chunkLines }

    /// The lines of `chunk`.
    package func lines(ofChunk chunk: Int) -> Range<Int> {
        (chunk * chunkLines)..<min((chunk + 1) * chunkLines, batch.lines.count)
    }

    /// The output of `chunk`: for the consumer, once the batch is complete.
    package subscript(chunk: Int) -> Work.Output {
        _read { yield outputs[chunk] }
        _modify { yield &outputs[chunk] }
    }

    func start() {
        let count = chunkCount
        progress.withLock { $0 = Progress(remaining: count) }
    }

    /// Processes one chunk and, when it was the batch's last, wakes whoever waits for it.
    func process(chunk: Int, _ work: Work, scratch: inout Work.Scratch) {
        work.process(batch, lines: lines(ofChunk: chunk), scratch: &scratch, into: &outputs[chunk])
        complete()
    }

    /// Counts one chunk as done (processed, or skipped by a cancelled runner) and, when it was
    /// the batch's last, wakes whoever waits for it.
    func complete() {
        let waiter = progress.withLock { progress -> Waiter in
            progress.remaining -= 1
            guard progress.remaining == 0 else { return .none }
            defer { progress.waiter = .none }
            return progress.waiter
        }
        switch waiter {
        case .none: break
        case .thread: finished.signal()
        case .task(let continuation): continuation.resume()
        }
    }

    /// Blocks this thread until every chunk is processed.
    func waitBlocking() {
        let waits = progress.withLock { progress -> Bool in
            guard progress.remaining > 0 else { return false }
            progress.waiter = .thread
            return true
        }
        if waits { finished.wait() }
    }

    /// Suspends the calling task (no thread is blocked) until every chunk is processed.
    func wait() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let done = progress.withLock { progress -> Bool in
                guard progress.remaining > 0 else { return true }
                progress.waiter = .task(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    func wipe(_ work: Work) {
        batch.bytes.wipeCapacity()
        for chunk in 0..<maximumChunks { work.wipe(&outputs[chunk]) }
    }
}

/// The bounds of every stream's batches, for the command and the library's stream alike.
package enum StreamBatching {
    /// Lines handed to a thread at a time.
    package static let chunkLines = 16
    /// A batch ends after this many lines or input bytes (plus the line that crosses it), so
    /// that memory stays flat whatever the stream holds.
    package static let batchLines = 512
    package static let batchBytes = 1 << 19
    /// Batches in flight: one being written (or given) while the others are processed.
    package static let batchesInFlight = 3
}

/// The ordered parallel runner of every stream (`kindly-push … --jsonl --jobs N`, and
/// ``KindlyPushDecryption/decryptStream(_:jobs:)`` in the library): `jobs` threads take chunks of
/// ``BatchSlot/chunkLines`` lines, oldest first, from up to `batchesInFlight` batches, while the
/// one consumer fills batches ahead and takes each one back, complete, in input order. Memory is
/// bounded by the slots: the consumer can fill a batch only when one is free (back-pressure).
///
/// No thread waits for another to finish a batch: one that is slowed down holds up only the
/// consumer. With no thread (`jobs` 0, or the system refused every one) the consumer processes
/// each batch itself when it publishes it. The consumer's methods are for one thread or task at a
/// time; ``finish()`` (or the runner's end) stops and joins the threads and wipes every buffer.
package final class OrderedBatchRunner<Work: BatchWork>: @unchecked Sendable {
    package typealias Slot = BatchSlot<Work>

    private struct Item: Sendable {
        /// `nil`: stop.
        let slot: Slot?
        let chunk: Int
    }

    package let work: Work
    private let items = Locked<[Item]>([])
    private let available = Semaphore()
    private let scratches: UnsafeMutablePointer<Work.Scratch>
    private let scratchCount: Int
    private var threads: [WorkerThread] = []
    private var free: [Slot]
    private var inFlight: [Slot] = []
    private var allSlots: [Slot]
    private var finished = false
    /// Set by ``cancel()``: the threads skip the chunks they take.
    private let cancelled = Locked(false)

    /// The count of running threads of the task that made this runner
    /// (``BatchRunnerThreads/counter``), if it bound one.
    private let taskCounter = BatchRunnerThreads.counter

    /// Starts up to `jobs` threads (as many as the system gives; see ``threadCount``).
    package init(_ work: Work, jobs: Int, batchesInFlight: Int, maximumBatchLines: Int, chunkLines: Int) {
        precondition(batchesInFlight > 0 && maximumBatchLines > 0 && chunkLines > 0)
        self.work = work
        scratchCount = max(1, jobs)
        scratches = .allocate(capacity: scratchCount)
        for index in 0..<scratchCount { (scratches + index).initialize(to: work.makeScratch()) }
        allSlots = (0..<batchesInFlight).map { _ in Slot(work, maximumLines: maximumBatchLines, chunkLines: chunkLines) }
        free = allSlots
        // Unowned: the threads end (joined by ``finish()``) before the runner does, and a strong
        // reference would keep a runner whose consumer is gone alive for ever.
        for worker in 0..<jobs {
            guard let thread = WorkerThread({ [unowned(unsafe) self] in self.runWorker(worker) }) else { break }
            threads.append(thread)
        }
    }

    deinit {
        finish()
        scratches.deinitialize(count: scratchCount)
        scratches.deallocate()
    }

    /// The threads that started: 0 means the consumer processes every batch itself.
    package var threadCount: Int { threads.count }

    /// Whether a batch is published and not yet taken back.
    package var hasInFlight: Bool { !inFlight.isEmpty }

    /// Whether a slot is free to fill (``takeFreeSlot()`` would give one).
    package var hasFreeSlot: Bool { !free.isEmpty }

    /// A free slot to fill, or `nil` when every slot is in flight (take the oldest back first).
    package func takeFreeSlot() -> Slot? { free.popLast() }

    /// Gives back a slot taken and not published (the input ended).
    package func giveBack(_ slot: Slot) {
        slot.batch.lines.removeAll(keepingCapacity: true)
        free.append(slot)
    }

    /// Hands the slot's batch to the threads (or, with none, processes it now).
    package func publish(_ slot: Slot) {
        slot.start()
        inFlight.append(slot)
        let count = slot.chunkCount
        guard !threads.isEmpty else {
            for chunk in 0..<count { slot.process(chunk: chunk, work, scratch: &scratches[0]) }
            return
        }
        items.withLock { items in
            for chunk in 0..<count { items.append(Item(slot: slot, chunk: chunk)) }
        }
        for _ in 0..<count { available.signal() }
    }

    /// The oldest published batch, complete, blocking this thread until it is. Give it back with
    /// ``giveBack(_:)`` once its output is used.
    package func waitForOldest() -> Slot {
        let slot = inFlight.removeFirst()
        slot.waitBlocking()
        return slot
    }

    /// The oldest published batch, complete; the task is suspended (no thread blocked) until it is.
    package func oldest() async -> Slot {
        let slot = inFlight.removeFirst()
        await slot.wait()
        return slot
    }

    /// From any thread: the chunks not processed yet are skipped (counted as done, so that a
    /// wait for a batch ends as soon as the threads finish the chunks they hold), for a run that
    /// ends without using what is in flight. ``finish()`` still stops and joins the threads.
    package func cancel() {
        cancelled.withLock { $0 = true }
    }

    /// Stops the threads (the chunks not taken yet are dropped), joins them and wipes every
    /// buffer. Once only; the runner's end calls it too.
    package func finish() {
        guard !finished else { return }
        finished = true
        let jobs = threads.count
        items.withLock { items in
            items.removeAll()
            for _ in 0..<jobs { items.append(Item(slot: nil, chunk: 0)) }
        }
        for _ in 0..<jobs { available.signal() }
        for thread in threads { thread.join() }
        threads = []
        for slot in allSlots { slot.wipe(work) }
        for index in 0..<scratchCount { work.wipe(&scratches[index]) }
    }

    /// A thread's loop: take the oldest chunk, process it, until told to stop.
    private func runWorker(_ worker: Int) {
        taskCounter?.withLock { $0 += 1 }
        defer { taskCounter?.withLock { $0 -= 1 } }
        while true {
            available.wait()
            let item = items.withLock { items in items.removeFirst() }
            guard let slot = item.slot else { return }
            if cancelled.withLock({ $0 }) {
                slot.complete()
            } else {
                slot.process(chunk: item.chunk, work, scratch: &scratches[worker])
            }
        }
    }
}

/// A count of runner threads for one task, for tests that a finished or abandoned stream leaves
/// none behind: a test binds its own with `$counter.withValue` (a process-wide count would see
/// the tests that Swift Testing runs beside it), and every runner made under it counts its
/// running threads there.
package enum BatchRunnerThreads {
    @TaskLocal package static var counter: Locked<Int>?
}

import KindlyPush
import KindlyPushBase
import KindlyPushCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Pushes from an array, counting how many the stream has pulled; `repeating`: the array again
/// and again, `count` documents in all.
struct CountingDocuments: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    typealias Failure = Never

    let documents: [[UInt8]]
    let count: Int
    let pulled = Locked(0)
    /// Iterators not yet destroyed: the stream's reading task holds one until it ends.
    let iterators = Locked(0)

    init(_ documents: [[UInt8]], count: Int? = nil) {
        self.documents = documents
        self.count = count ?? documents.count
    }

    func makeAsyncIterator() -> Iterator { Iterator(source: self) }

    struct Iterator: AsyncIteratorProtocol {
        typealias Failure = Never
        let source: CountingDocuments
        var index = 0
        let token: Token

        init(source: CountingDocuments) {
            self.source = source
            token = Token(source.iterators)
        }

        mutating func next(isolation actor: isolated (any Actor)? = #isolation) async -> [UInt8]? {
            guard index < source.count else { return nil }
            defer { index += 1 }
            source.pulled.withLock { $0 += 1 }
            return source.documents[index % source.documents.count]
        }

        mutating func next() async -> [UInt8]? { await next(isolation: nil) }
    }
}

/// Counts itself in `count` while it lives.
final class Token: Sendable {
    let count: Locked<Int>
    init(_ count: Locked<Int>) {
        self.count = count
        count.withLock { $0 += 1 }
    }
    deinit { count.withLock { $0 -= 1 } }
}

/// Lines whose text is their number; each takes longer or shorter to process, so that chunks
/// finish out of order.
struct UnevenWork: BatchWork {
    struct Output { var values: [Int] = [] }
    typealias Scratch = Void
    let wipes = Locked(0)

    func makeScratch() {}
    func wipe(_ scratch: inout Void) { wipes.withLock { $0 += 1 } }
    func makeOutput() -> Output { Output() }
    func wipe(_ output: inout Output) {
        output.values = []
        wipes.withLock { $0 += 1 }
    }

    func process(_ batch: LineBatchReader.Batch, lines: Range<Int>, scratch: inout Void, into output: inout Output) {
        output.values.removeAll(keepingCapacity: true)
        for index in lines {
            guard case .text(let range) = batch.lines[index] else { continue }
            let value = Int(String(decoding: batch.bytes[range], as: UTF8.self))!
            // Uneven: some lines are 30 times slower than others.
            usleep(UInt32((value * 7919) % 31) * 10)
            output.values.append(value)
        }
    }
}

@Suite("The stream engine: ordered parallel runner and decryptStream", .serialized, .offThePool)
struct PushStreamTests {
    static let key = DeviceKey.generate()
    static let other = DeviceKey.generate()

    /// Pushes of every kind: decrypting ones, another key's, a tampered one, a malformed
    /// envelope, another provider's, bad JSON, an empty document, a JSON array.
    static func mixedPushes(_ count: Int) throws -> [[UInt8]] {
        var pushes: [[UInt8]] = []
        for index in 0..<count {
            let payload = try DecryptedPayload(
                chatId: "c-\(index % 13)", title: "t\(index)", body: String(repeating: "b", count: index % 50))
            switch index % 10 {
            case 7: pushes.append(try KindlyPushSealer.seal(payload, for: other.publicKey))
            case 8:
                var push = try KindlyPushSealer.seal(payload, for: key.publicKey)
                let ct = Array("\"ct\":\"".utf8)
                let at = (0...(push.count - ct.count)).first { Array(push[$0..<($0 + ct.count)]) == ct }! + ct.count
                push[at] = push[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                pushes.append(push)
            case 9:
                let bad: [String] = [#"{"kindly":{"v":1,"kid":"x"}}"#, #"{"aps":{"alert":"hi"}}"#, "not json", "", "[1,2]", "{\"a\":"]
                pushes.append(Array(bad[index / 10 % bad.count].utf8))
            default: pushes.append(try KindlyPushSealer.seal(payload, for: key.publicKey))
            }
        }
        return pushes
    }

    @Test("the runner gives batches back in input order with uneven work on several threads")
    func runnerOrder() {
        let threads = Locked(0)
        BatchRunnerThreads.$counter.withValue(threads) { runOrdered() }
        #expect(threads.withLock { $0 } == 0)
    }

    func runOrdered() {
        let work = UnevenWork()
        let runner = OrderedBatchRunner(work, jobs: 3, batchesInFlight: 3, maximumBatchLines: 64, chunkLines: 4)
        #expect(runner.threadCount == 3)
        let total = 3000
        var next = 0
        var seen: [Int] = []
        while next < total || runner.hasInFlight {
            while next < total, let slot = runner.takeFreeSlot() {
                slot.batch = LineBatchReader.Batch()
                for value in next..<min(total, next + 64) {
                    let start = slot.batch.bytes.count
                    slot.batch.bytes.append(contentsOf: Array(String(value).utf8))
                    slot.batch.lines.append(.text(start..<slot.batch.bytes.count))
                }
                next = min(total, next + 64)
                runner.publish(slot)
            }
            let slot = runner.waitForOldest()
            for chunk in 0..<slot.chunkCount { seen += slot[chunk].values }
            runner.giveBack(slot)
        }
        runner.finish()
        let inputOrder: [Int] = Array(0..<total)
        #expect(seen == inputOrder)
        // Every scratch (3) and every chunk's output (3 slots of 16) was wiped.
        #expect(work.wipes.withLock { $0 } == 3 + 3 * 16)
    }

    @Test("decryptStream gives each push the general path's result, in input order, with jobs 1 and 3", arguments: [1, 3])
    func sameAsGeneralPath(jobs: Int) async throws {
        let pushes = try Self.mixedPushes(3000)
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        let threads = Locked(0)
        let results = await BatchRunnerThreads.$counter.withValue(threads) {
            var results: [PushStreamResult] = []
            for await result in decryption.decryptStream(CountingDocuments(pushes), jobs: jobs) { results.append(result) }
            return results
        }
        #expect(results.count == pushes.count)
        for (push, result) in zip(pushes, results) {
            switch push.withUnsafeBytes({ JSONReader.parseInputObject($0, what: "input") }) {
            case .failure(let problem):
                #expect(result.outcome == .badInput(problem.message))
            case .success(let document):
                switch decryption.decryptResult(userInfo: document) {
                case .success(let payload):
                    #expect(result.outcome == .decrypted)
                    #expect(result.payload == payload)
                    #expect(result.json == JSONWriter.compactBytes(.object(payload.object)))
                case .failure(let failure):
                    #expect(result.failure == failure)
                    #expect(result.code == failure.reason.code)
                }
            }
        }
        #expect(results.contains { $0.outcome == .decrypted } && results.contains { $0.failure?.reason == .notKindly })
        #expect(results.contains { $0.failure?.reason == .authenticationFailed } && results.contains { $0.code == "bad_input" })
        #expect(threads.withLock { $0 } == 0)
    }

    @Test("the stream reads a bounded number of pushes ahead of its consumer (back-pressure)")
    func boundedReadAhead() async throws {
        let pushes = try Self.mixedPushes(10)
        let documents = CountingDocuments(pushes, count: 100_000)
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        var iterator = decryption.decryptStream(documents, jobs: 2).makeAsyncIterator()
        #expect(try await iterator.next() != nil)
        try await Task.sleep(nanoseconds: 300_000_000)
        // Three batches of 512 in flight, 1,024 read ahead, one batch being taken.
        let pulled = documents.pulled.withLock { $0 }
        #expect(pulled > 0 && pulled <= 3 * 512 + 1024 + 512 + 1)
    }

    @Test("a consumer that stops iterating ends the stream's threads and its reading task")
    func consumerStops() async throws {
        let pushes = try Self.mixedPushes(10)
        let documents = CountingDocuments(pushes, count: .max)
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        let threads = Locked(0)
        await BatchRunnerThreads.$counter.withValue(threads) {
            var taken = 0
            for await _ in decryption.decryptStream(documents, jobs: 3) {
                taken += 1
                if taken == 100 { break }
            }
        }
        try await Self.expectEnded(documents, threads: threads)
    }

    @Test("cancelling the consumer's task ends an endless stream, its threads and its reading task")
    func cancelled() async throws {
        let pushes = try Self.mixedPushes(10)
        let documents = CountingDocuments(pushes, count: .max)
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        let taken = Locked(0)
        let threads = Locked(0)
        let task = BatchRunnerThreads.$counter.withValue(threads) {
            Task {
                for await _ in decryption.decryptStream(documents, jobs: 2) { taken.withLock { $0 += 1 } }
            }
        }
        // Cancelled while it is taking results.
        while taken.withLock({ $0 }) < 10 { try await Task.sleep(nanoseconds: 1_000_000) }
        task.cancel()
        await task.value
        #expect(taken.withLock { $0 } >= 10)
        try await Self.expectEnded(documents, threads: threads)
    }

    /// The stream's threads have ended, and its reading task has stopped pulling and let go of
    /// its iterator.
    /// Waits up to 30 s for both (a machine under load may take a while to run the ending), so
    /// only a stream that does not end fails.
    static func expectEnded(_ documents: CountingDocuments, threads: Locked<Int>) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while threads.withLock({ $0 }) != 0 || documents.iterators.withLock({ $0 }) != 0, ContinuousClock.now < deadline {
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        #expect(threads.withLock { $0 } == 0)
        let before = documents.pulled.withLock { $0 }
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(documents.pulled.withLock { $0 } <= before + 1)
        #expect(documents.iterators.withLock { $0 } == 0)
    }

    @Test("byte chunks are cut into the lines --jsonl reads, whatever the chunks' sizes")
    func lines() async throws {
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 70_000)
        let text = Array("a\n\nbc\n".utf8) + long + Array("\nlast".utf8)
        let expected: [[UInt8]] = [Array("a".utf8), [], Array("bc".utf8), Array(long[..<65_537]), Array("last".utf8)]
        for size in [1, 2, 3, 7, 4096, text.count] {
            let chunks = stride(from: 0, to: text.count, by: size).map { Array(text[$0..<min(text.count, $0 + size)]) }
            var lines: [[UInt8]] = []
            for await line in PushLines(CountingDocuments(chunks)) { lines.append(line) }
            #expect(lines == expected, "chunks of \(size) bytes")
        }
        var lines: [[UInt8]] = []
        for await line in PushLines(CountingDocuments([Array("a\n".utf8)])) { lines.append(line) }
        #expect(lines == [Array("a".utf8)])
    }

    @Test("decryptStream(jsonLines:) gives the over-64-KiB line bad_input and the lines around it their results")
    func jsonLines() async throws {
        let pushes = try Self.mixedPushes(3)
        let text = pushes[0] + [0x0A] + [UInt8](repeating: 0x20, count: 70_000) + [0x0A] + pushes[1] + [0x0A] + Array("{\n".utf8)
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        var results: [PushStreamResult] = []
        for await result in decryption.decryptStream(jsonLines: CountingDocuments([text]), jobs: 2) { results.append(result) }
        #expect(results.map(\.code) == ["decrypted", "bad_input", "decrypted", "bad_input"])
        #expect(results[1].outcome == .badInput("the line is over 64 KiB"))
        #expect(results[3].outcome == .badInput(PushStreamResult.spreadDocumentAdvice))
    }

    @Test("decryptStream of documents: one over 64 KiB is 'the input', one its end cuts short is plainly not JSON (no --jsonl advice)")
    func documentsAreInputs() async throws {
        let pushes = try Self.mixedPushes(2)
        let documents = [pushes[0], [UInt8](repeating: 0x20, count: 70_000), Array("{\"aps\":".utf8), pushes[1]]
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        var results: [PushStreamResult] = []
        for await result in decryption.decryptStream(CountingDocuments(documents), jobs: 2) { results.append(result) }
        #expect(results.map(\.code) == ["decrypted", "bad_input", "bad_input", "decrypted"])
        #expect(results[1].outcome == .badInput("the input is over 64 KiB"))
        guard case .failure(let problem) = documents[2].withUnsafeBytes({ JSONReader.parseInputObject($0, what: "input") }) else {
            Issue.record("the cut-short document parsed")
            return
        }
        #expect(problem.endsInsideDocument)
        #expect(results[2].outcome == .badInput(problem.message))
        #expect(results[2].outcome != .badInput(PushStreamResult.spreadDocumentAdvice))
    }

    @Test("the async look-ups of a keyring run on a thread of their own and keep their typed errors")
    func asyncKeyring() async throws {
        let keyring = ThreadRecordingKeyring(InMemoryKeyring(keys: [Self.key]))
        let caller = pthread_self()
        let key = try await keyring.key(for: Self.key.kid)
        #expect(key.kid == Self.key.kid)
        #expect(pthread_equal(keyring.lastThread.withLock { $0 }, caller) == 0)
        await #expect(throws: KeyringError.notFound(Self.other.kid)) { try await keyring.key(for: Self.other.kid) }
        #expect(try await keyring.pinnedSenders().isEmpty)
        #expect(try await keyring.list().count == 1)
    }
}

/// A keyring that records the thread of its last look-up.
final class ThreadRecordingKeyring: Keyring {
    let base: InMemoryKeyring
    let lastThread = Locked(pthread_t())
    var name: String { base.name }

    init(_ base: InMemoryKeyring) { self.base = base }

    func store(_ key: DeviceKey, label: String) throws(KeyringError) { try base.store(key, label: label) }
    func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        lastThread.withLock { $0 = pthread_self() }
        return try base.key(for: kid)
    }
    func list() throws(KeyringError) -> [KeyringEntry] { try base.list() }
    func delete(_ kid: KeyID) throws(KeyringError) { try base.delete(kid) }
    func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) { try base.pinSender(key, label: label) }
    func pinnedSenders() throws(KeyringError) -> [PinnedSender] { try base.pinnedSenders() }
    func unpinSender(_ sid: SenderID) throws(KeyringError) { try base.unpinSender(sid) }
}

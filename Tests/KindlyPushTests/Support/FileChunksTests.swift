import Foundation
import KindlyPush
import KindlyPushBase
import KindlyPushCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("FileChunks: a file read on demand, one chunk per request, into the stream", .offThePool)
struct FileChunksTests {
    static let key = PushStreamTests.key

    /// The lines of `pushes`, each ended by a newline.
    static func lines(_ pushes: [[UInt8]]) -> [UInt8] {
        pushes.flatMap { $0 + [0x0A] }
    }

    /// Every result of `stream`.
    static func results<Documents>(_ stream: PushResultStream<Documents>) async throws -> [PushStreamResult] {
        var results: [PushStreamResult] = []
        for try await result in stream { results.append(result) }
        return results
    }

    @Test("a file decrypted through FileChunks gives the results of the same bytes in memory, whatever the chunk size")
    func sameAsInMemory() async throws {
        let pushes = try PushStreamTests.mixedPushes(700)
        let text = Self.lines(pushes)
        let folder = try TemporaryFolder()
        let path = folder.path + "/pushes.jsonl"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text)))
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        let expected = try await Self.results(decryption.decryptStream(jsonLines: CountingDocuments([text]), jobs: 2))
        #expect(expected.count == pushes.count)
        #expect(expected.contains { $0.outcome == .decrypted } && expected.contains { $0.code == "bad_input" })

        for chunkSize in [65_536, 1_000] {
            let results = try await Self.results(decryption.decryptStream(jsonLines: FileChunks(path: path, chunkSize: chunkSize), jobs: 2))
            #expect(results == expected, "chunks of \(chunkSize) bytes")
            // The chunks themselves: the file's bytes, none empty, none over the size.
            var bytes: [UInt8] = []
            for try await chunk in FileChunks(path: path, chunkSize: chunkSize) {
                #expect(!chunk.isEmpty && chunk.count <= chunkSize)
                bytes += chunk
            }
            #expect(bytes == text)
        }

        // A descriptor the caller opened gives the same, and is left open.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let results = try await Self.results(decryption.decryptStream(jsonLines: FileChunks(descriptor: descriptor), jobs: 1))
        #expect(results == expected)
        #expect(fcntl(descriptor, F_GETFD) != -1)
    }

    @Test("a consumer that takes a few results holds the reading of a 20 MB file to a bounded part of it (back-pressure)")
    func backPressure() async throws {
        // Ten sealed pushes of different lengths, again and again: 20 MB of lines.
        var pushes: [[UInt8]] = []
        for index in 0..<10 {
            let payload = try DecryptedPayload(chatId: "c-\(index)", title: "t\(index)", body: String(repeating: "b", count: index * 20))
            pushes.append(try KindlyPushSealer.seal(payload, for: Self.key.publicKey))
        }
        let line = Self.lines(pushes)
        var text: [UInt8] = []
        text.reserveCapacity(20_000_000 + line.count)
        while text.count < 20_000_000 { text += line }
        let folder = try TemporaryFolder()
        let path = folder.path + "/large.jsonl"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text)))
        let longest = pushes.map(\.count).max()! + 1
        let shortest = pushes.map(\.count).min()! + 1
        let chunkSize = 65_536
        // What the stream may hold ahead of its consumer (docs/stream-engine.md): the batches in
        // flight, the pushes read ahead (1,024, or 1 MiB), one push waiting to be taken, one
        // line being cut and the chunk it came in.
        let readAheadLines = StreamBatching.batchesInFlight * StreamBatching.batchLines + 2 * StreamBatching.batchLines + 2
        let bound = readAheadLines * longest + 2 * chunkSize
        // What it reads ahead at least once its consumer waits: the 1,024 pushes it reads ahead.
        let filled = 1_024 * shortest
        #expect(bound < text.count / 10)

        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        var iterator: PushResultStream<PushLines<FileChunks>>.Iterator? =
            decryption.decryptStream(jsonLines: FileChunks(path: path, chunkSize: chunkSize), jobs: 2).makeAsyncIterator()
        var positions: [Int] = []
        var file: Int32 = -1
        for _ in 0..<5 {
            let result = try await iterator?.next()
            #expect(result?.outcome == .decrypted)
            if file < 0 { file = try #require(FileProbe.descriptors(naming: path).first) }
            positions.append(try #require(FileProbe.position(of: file)))
        }
        // The consumer waits: the stream reads ahead until it holds what it may, then stops.
        try await FileProbe.eventually { (FileProbe.position(of: file) ?? 0) >= filled }
        positions.append(try #require(FileProbe.position(of: file)))
        #expect(positions.last! >= filled)
        #expect(positions.allSatisfy { $0 <= bound }, "read \(positions) of \(text.count) bytes, bound \(bound)")

        // The consumer stops: the file is closed.
        iterator = nil
        try await FileProbe.eventually { FileProbe.descriptors(naming: path).isEmpty }
        #expect(FileProbe.descriptors(naming: path).isEmpty)
    }

    @Test("lines written one at a time to a FIFO are decrypted while its writer still holds it open")
    func fifo() async throws {
        let pushes = try PushStreamTests.mixedPushes(12)
        let folder = try TemporaryFolder()
        let path = folder.path + "/pushes.fifo"
        try #require(mkfifo(path, 0o600) == 0)
        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        let expected = try await Self.results(decryption.decryptStream(jsonLines: CountingDocuments([Self.lines(pushes)]), jobs: 2))

        let writer = FIFOWriter(path: path)
        var iterator = decryption.decryptStream(jsonLines: FileChunks(path: path), jobs: 2).makeAsyncIterator()
        for (index, push) in pushes.enumerated() {
            // The next line is written only once the last one's result has come.
            writer.write(push + [0x0A])
            let result = try await iterator.next()
            #expect(result == expected[index], "line \(index)")
            #expect(writer.isOpen, "line \(index)'s result came only once the writer had closed the FIFO")
        }
        writer.close()
        #expect(try await iterator.next() == nil)
        writer.join()
    }

    @Test("cancelling the task ends a read that waits on a silent FIFO: next() returns nil and the file is closed")
    func cancelledWhileWaiting() async throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/silent.fifo"
        try #require(mkfifo(path, 0o600) == 0)
        let writer = FIFOWriter(path: path)
        let task = Task {
            var chunks = 0
            for try await _ in FileChunks(path: path) { chunks += 1 }
            return chunks
        }
        // The writer's open returns once the reader has the FIFO open: the read then waits.
        try await FileProbe.eventually { writer.hasOpened }
        task.cancel()
        #expect(try await task.value == 0)
        #expect(writer.isOpen, "the read ended because the writer closed the FIFO, not because the task was cancelled")
        // The reader's descriptor is closed; the writer's is the only one left.
        let writers = [writer.descriptor]
        try await FileProbe.eventually { FileProbe.descriptors(naming: path) == writers }
        #expect(FileProbe.descriptors(naming: path) == writers)
        writer.close()
        writer.join()
    }

    @Test("a missing file and a folder give ReadError with the path, directly and through the stream")
    func errors() async throws {
        let folder = try TemporaryFolder()
        let missing = folder.path + "/missing.jsonl"
        var iterator = FileChunks(path: missing).makeAsyncIterator()
        do {
            _ = try await iterator.next()
            Issue.record("a missing file was read")
        } catch {
            #expect(error.path == missing)
            #expect(error.code == ENOENT)
            #expect(error.description == "cannot open \(missing): No such file or directory")
        }
        #expect(try await iterator.next() == nil)

        var folderIterator = FileChunks(path: folder.path).makeAsyncIterator()
        do {
            _ = try await folderIterator.next()
            Issue.record("a folder was read")
        } catch {
            #expect(error.path == folder.path)
            #expect(error.code == EISDIR)
            #expect(error.description == "cannot read \(folder.path): it is a folder, not a file")
        }
        try await FileProbe.eventually { FileProbe.descriptors(naming: folder.path).isEmpty }
        #expect(FileProbe.descriptors(naming: folder.path).isEmpty)

        let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))
        do {
            for try await _ in decryption.decryptStream(jsonLines: FileChunks(path: missing)) { Issue.record("a result came") }
            Issue.record("the stream of a missing file ended without its error")
        } catch {
            #expect(error.path == missing && error.code == ENOENT)
        }
    }

    @Test("a descriptor that is not open is ReadError EBADF at the first next(), not a wait; a chunk size under one reads one byte")
    func badArguments() async throws {
        var iterator = FileChunks(descriptor: -1).makeAsyncIterator()
        do {
            _ = try await iterator.next()
            Issue.record("descriptor -1 was read")
        } catch {
            #expect(error.code == EBADF && error.path == "descriptor -1", "\(error)")
        }
        let folder = try TemporaryFolder()
        let path = folder.path + "/two.txt"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("ab".utf8)))
        var chunks: [[UInt8]] = []
        for try await chunk in FileChunks(path: path, chunkSize: 0) { chunks.append(chunk) }
        #expect(chunks == [[0x61], [0x62]])
    }

    /// The file is closed by the reader's last owner, which may be the thread of its last read,
    /// an instant after the iteration resumed: each check waits for the close, then judges.
    @Test("an iteration that stops early closes its file; a descriptor the caller gave stays open")
    func stopsEarly() async throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/lines.jsonl"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x41, count: 1_000)))
        var iterator: FileChunks.Iterator? = FileChunks(path: path, chunkSize: 16).makeAsyncIterator()
        #expect(FileProbe.descriptors(naming: path).isEmpty)
        #expect(try await iterator?.next()?.count == 16)
        #expect(FileProbe.descriptors(naming: path).count == 1)
        iterator = nil
        try await FileProbe.eventually { FileProbe.descriptors(naming: path).isEmpty }
        #expect(FileProbe.descriptors(naming: path).isEmpty)

        for try await _ in FileChunks(path: path, chunkSize: 16) { break }
        try await FileProbe.eventually { FileProbe.descriptors(naming: path).isEmpty }
        #expect(FileProbe.descriptors(naming: path).isEmpty)

        // At the end of the file too.
        var whole = FileChunks(path: path).makeAsyncIterator()
        #expect(try await whole.next()?.count == 1_000)
        #expect(try await whole.next() == nil)
        try await FileProbe.eventually { FileProbe.descriptors(naming: path).isEmpty }
        #expect(FileProbe.descriptors(naming: path).isEmpty)

        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var given: FileChunks.Iterator? = FileChunks(descriptor: descriptor, chunkSize: 16).makeAsyncIterator()
        #expect(try await given?.next()?.count == 16)
        given = nil
        #expect(fcntl(descriptor, F_GETFD) != -1)
        var rest = 0
        for try await chunk in FileChunks(descriptor: descriptor) { rest += chunk.count }
        #expect(rest == 1_000 - 16)
        #expect(fcntl(descriptor, F_GETFD) != -1)
    }
}

/// What this process has open, read from /proc/self.
enum FileProbe {
    /// The descriptors of this process open on `path` (a file or a FIFO).
    static func descriptors(naming path: String) -> [Int32] {
        let target = canonical(path)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.compactMap { name -> Int32? in
            guard let descriptor = Int32(name),
                let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"), link == target
            else { return nil }
            return descriptor
        }.sorted()
    }

    /// `path` without `//` or links, as /proc/self/fd names files.
    static func canonical(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The file offset of `descriptor` (`pos:` in /proc/self/fdinfo): how far it has been read.
    static func position(of descriptor: Int32) -> Int? {
        let info = open("/proc/self/fdinfo/\(descriptor)", O_RDONLY | O_CLOEXEC)
        guard info >= 0 else { return nil }
        defer { close(info) }
        guard let bytes = try? FileDescriptor(rawValue: info).readAll(upTo: 1 << 16) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("pos:") }) else { return nil }
        return Int(line.dropFirst(4).trimmingCharacters(in: .whitespaces))
    }

    /// Waits until `condition` holds, or ``hangCap`` has passed (the verdict is the caller's).
    static func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + hangCap
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(nanoseconds: 1_000_000) }
    }
}

/// Writes a FIFO from a thread of its own, as another process would: opens it (which waits for
/// its reader), writes what it is given as it is given, and closes it when told. With nothing to
/// do for ``hangCap`` it closes it by itself, so that a reader that waits for the end of the FIFO
/// fails its test (``isOpen`` is then false) instead of hanging it.
final class FIFOWriter: @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var pending: [[UInt8]] = []
    private var closing = false
    private var opened: Int32 = -1
    private var closed = false
    private var thread: WorkerThread?

    init(path: String) {
        signal(SIGPIPE, SIG_IGN)
        thread = WorkerThread { [self] in run(path) }
    }

    /// Writes `bytes` (on the writer's thread).
    func write(_ bytes: [UInt8]) {
        condition.lock()
        pending.append(bytes)
        condition.signal()
        condition.unlock()
    }

    /// Closes the FIFO once what was given is written.
    func close() {
        condition.lock()
        closing = true
        condition.signal()
        condition.unlock()
    }

    /// Waits for the writer's thread to end.
    func join() { thread?.join() }

    /// Whether the writer's open has returned.
    var hasOpened: Bool { locked { opened >= 0 || closed } }
    /// Whether the writer holds the FIFO open.
    var isOpen: Bool { locked { opened >= 0 && !closed } }
    /// The writer's descriptor.
    var descriptor: Int32 { locked { opened } }

    private func locked<Value>(_ body: () -> Value) -> Value {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    private func run(_ path: String) {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        locked {
            opened = descriptor
            closed = descriptor < 0
        }
        guard descriptor >= 0 else { return }
        let cap = Double(hangCap.components.seconds)
        while true {
            condition.lock()
            while pending.isEmpty, !closing {
                if !condition.wait(until: Date().addingTimeInterval(cap)) { closing = true }
            }
            let bytes = pending
            pending = []
            let ends = closing
            if ends && bytes.isEmpty { closed = true }
            condition.unlock()
            for piece in bytes {
                _ = try? piece.withBytes { (raw) throws(Errno) in try FileDescriptor(rawValue: descriptor).writeAll(raw) }
            }
            if ends && bytes.isEmpty {
                Glibc.close(descriptor)
                return
            }
        }
    }
}

internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A file's bytes, read in chunks as they are asked for: the source to give
/// ``KindlyPushDecryption/decryptStream(jsonLines:jobs:)`` for a file, a FIFO, standard input or
/// a socket.
///
/// ```swift
/// let chunks = FileChunks(path: "/var/spool/app/pushes.jsonl")
/// for try await result in decryption.decryptStream(jsonLines: chunks, jobs: 2) {
///     if case .decrypted = result.outcome { try await send(result.json) }
/// }
/// ```
///
/// Each `next()` makes one `read(2)` of at most `chunkSize` bytes (a FIFO or a socket gives what
/// it has), on a thread of its own, never on the concurrency runtime's threads: a read that
/// waits for its writer blocks only that thread. Nothing is read ahead, so the stream's
/// back-pressure reaches the file: while the consumer takes no results, the stream stops
/// reading a bounded number of pushes ahead of it.
///
/// The file is opened, read-only and close-on-exec, by the first `next()` (opening a FIFO waits
/// for a writer, as `open(2)` does), and closed at its end, when a read fails, when the task is
/// cancelled, and when the iterator is dropped before the end. A folder is refused.
///
/// When the iterating task is cancelled, `next()` returns `nil` (as at the end of the file), at
/// once even while a read waits on a FIFO or a socket. A failure is thrown once as ``ReadError``;
/// `next()` returns `nil` after it.
public struct FileChunks: AsyncSequence, Sendable {
    /// Each element is the bytes of one read, never empty.
    public typealias Element = [UInt8]
    /// Why the file could not be opened or read.
    public typealias Failure = ReadError

    /// What is read: a path opened by the iterator, or a descriptor the caller owns.
    enum Source: Sendable {
        case path(String)
        case descriptor(Int32)
    }

    let source: Source
    let chunkSize: Int

    /// The file at `path` (a regular file, a FIFO, a character device), read at most `chunkSize`
    /// bytes at a time (at least one). Nothing is opened until the first `next()`.
    public init(path: String, chunkSize: Int = 65_536) {
        source = .path(path)
        self.chunkSize = Swift.max(1, chunkSize)
    }

    /// The bytes of `descriptor`, open and owned by the caller, who closes it: it is never closed
    /// here (standard input's `STDIN_FILENO`, a socket, a pipe). A non-blocking descriptor is
    /// waited for with `poll(2)`. Its errors name it `descriptor N`; iterate it once (iterators
    /// share its position).
    /// A descriptor that is not open fails the first `next()` (`EBADF`), as a read of it does.
    public init(descriptor: Int32, chunkSize: Int = 65_536) {
        source = .descriptor(descriptor)
        self.chunkSize = Swift.max(1, chunkSize)
    }

    /// An iterator that opens the file on its first `next()`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(source: source, chunkSize: chunkSize)
    }

    /// Reads the file, one `read(2)` per `next()`; dropped before the end, it closes the file.
    public struct Iterator: AsyncIteratorProtocol {
        /// Why the file could not be opened or read.
        public typealias Failure = ReadError
        let source: Source
        let chunkSize: Int
        /// The open file, from the first `next()` until the iteration ends.
        var reader: FileChunkReader?
        var ended = false

        init(source: Source, chunkSize: Int) {
            self.source = source
            self.chunkSize = chunkSize
        }

        /// The next chunk, or `nil` at the end of the file, after a failure, or once the task is
        /// cancelled.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(ReadError) -> [UInt8]? {
            guard !ended else { return nil }
            guard !Task.isCancelled else {
                end()
                return nil
            }
            let reader: FileChunkReader
            if let open = self.reader {
                reader = open
            } else {
                do {
                    reader = try FileChunkReader(source, chunkSize: chunkSize)
                } catch {
                    end()
                    throw error
                }
                self.reader = reader
            }
            // The read waits on a thread of its own; cancelling the task wakes it.
            let step = await withTaskCancellationHandler {
                await offTheCooperativePool { () -> Result<FileChunkReader.Step, ReadError> in
                    Result { () throws(ReadError) in try reader.read() }
                }
            } onCancel: {
                reader.wake()
            }
            switch step {
            case .success(.chunk(let chunk)):
                return chunk
            case .success(.end), .success(.cancelled):
                end()
                return nil
            case .failure(let error):
                end()
                throw error
            }
        }

        /// The next chunk, or `nil` at the end of the file.
        public mutating func next() async throws(ReadError) -> [UInt8]? {
            try await next(isolation: nil)
        }

        /// The iteration is over: the file is closed (unless the caller owns it).
        private mutating func end() {
            ended = true
            reader = nil
        }
    }

    /// Why a file could not be opened or read: its path and the system's error.
    public struct ReadError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The file's path, as given (`descriptor N` for ``FileChunks/init(descriptor:chunkSize:)``).
        public let path: String
        /// The system's error number (`errno`): `ENOENT` for a missing file, `EACCES`, `EISDIR`
        /// for a folder, `EIO`, …
        public let code: Int32
        /// Whether opening the file failed, rather than a read.
        let opening: Bool

        init(path: String, _ error: Errno, opening: Bool) {
            self.path = path
            code = error.rawValue
            self.opening = opening
        }

        /// What failed and the system's text for it: `cannot open PATH: No such file or
        /// directory`, `cannot read PATH: it is a folder, not a file`.
        public var description: String {
            if code == EISDIR { return "cannot read \(path): it is a folder, not a file" }
            return "cannot \(opening ? "open" : "read") \(path): \(Errno(code))"
        }
    }
}

/// One iteration's file, and the pair of sockets that wakes a read waiting on it. Used by one
/// `next()` at a time: its reading thread, or its task between reads (the continuation orders
/// them); only ``wake()`` comes from another thread, and it touches nothing that changes.
final class FileChunkReader: @unchecked Sendable {
    /// What one read gave.
    enum Step {
        case chunk([UInt8])
        case end
        case cancelled
    }

    private let source: FileChunks.Source
    private let chunkSize: Int
    /// The open file; -1 before the first read opens it and once it is closed.
    private var descriptor: Int32 = -1
    /// Whether the file has been closed (or, the caller's, let go of): nothing more is read.
    private var closed = false
    /// Whether ``descriptor`` is closed here (a path's file) or the caller's.
    private let owned: Bool
    /// A connected pair: ``wake()`` shuts the second down, which makes the first readable (at its
    /// end) for good. Closed only by deinit, so never while ``wake()`` may run.
    private let waker: (reading: Int32, writing: Int32)

    init(_ source: FileChunks.Source, chunkSize: Int) throws(FileChunks.ReadError) {
        self.source = source
        self.chunkSize = chunkSize
        var ends: [Int32] = [-1, -1]
        do {
            try nothingOrErrno { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) }
        } catch {
            throw FileChunks.ReadError(path: Self.name(of: source), error, opening: true)
        }
        waker = (ends[0], ends[1])
        switch source {
        case .path: owned = true
        case .descriptor(let descriptor):
            owned = false
            self.descriptor = descriptor
        }
    }

    deinit {
        closeFile()
        FileDescriptor(rawValue: waker.reading).close()
        FileDescriptor(rawValue: waker.writing).close()
    }

    /// How errors name the file.
    private static func name(of source: FileChunks.Source) -> String {
        switch source {
        case .path(let path): return path
        case .descriptor(let descriptor): return "descriptor \(descriptor)"
        }
    }

    /// Ends a read that waits, and every read after it (from any thread).
    func wake() {
        shutdown(waker.writing, Int32(SHUT_WR))
    }

    /// Opens the file on the first call, then makes one read of at most `chunkSize` bytes, once
    /// the file has something to read (at once for a regular file) or the reader is woken. The
    /// file is closed at its end, on a failure and when woken.
    func read() throws(FileChunks.ReadError) -> Step {
        // Closed already: the iteration has ended.
        guard !closed else { return .end }
        if descriptor < 0, case .path(let path) = source { try open(path) }
        // A caller's descriptor that is not one: poll(2) would skip it and wait for ever.
        guard descriptor >= 0 else { throw failure(Errno(rawValue: EBADF)) }
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        while true {
            var waits = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: waker.reading, events: Int16(POLLIN), revents: 0),
            ]
            do {
                try nothingOrErrno { poll(&waits, nfds_t(waits.count), -1) }
            } catch {
                throw failure(error)
            }
            if waits[1].revents != 0 {
                closeFile()
                return .cancelled
            }
            let count: Int
            do {
                let file = FileDescriptor(rawValue: descriptor)
                count = try chunk.withMutableBytes { (raw) throws(Errno) in try file.read(into: raw) }
            } catch {
                // A non-blocking descriptor that `poll` woke for nothing: wait again.
                if error == .wouldBlock { continue }
                throw failure(error)
            }
            guard count > 0 else {
                closeFile()
                return .end
            }
            chunk.removeSubrange(count...)
            return .chunk(chunk)
        }
    }

    /// Opens `path` read-only and close-on-exec; a folder is refused (`EISDIR`).
    private func open(_ path: String) throws(FileChunks.ReadError) {
        do {
            descriptor = try FileDescriptor.openForReading(path).rawValue
        } catch {
            closed = true
            throw FileChunks.ReadError(path: path, error, opening: true)
        }
    }

    /// A read's failure: the file is closed.
    private func failure(_ error: Errno) -> FileChunks.ReadError {
        closeFile()
        return FileChunks.ReadError(path: Self.name(of: source), error, opening: false)
    }

    /// Closes the file if it is this reader's; forgets it either way.
    private func closeFile() {
        if owned, descriptor >= 0 { FileDescriptor(rawValue: descriptor).close() }
        descriptor = -1
        closed = true
    }
}

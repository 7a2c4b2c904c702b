import Foundation
import KindlyPushCore
import Testing

/// A pipe whose ends the test closes (each end closed once, on `deinit` if still open).
private final class TestPipe {
    var reader: Int32
    var writer: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "pipe failed")
        (reader, writer) = (ends[0], ends[1])
    }

    func write(_ bytes: [UInt8]) {
        try! bytes.withBytes { (raw) throws(Errno) in try FileDescriptor(rawValue: writer).writeAll(raw) }
    }

    func closeWriter() {
        close(writer)
        writer = -1
    }

    deinit {
        if reader >= 0 { close(reader) }
        if writer >= 0 { close(writer) }
    }
}

@Suite("The platform layer: Errno, valueOrErrno, FileDescriptor", .offThePool)
struct SystemCallTests {
    @Test("Errno's description is strerror's text, for every error number and an unknown one")
    func errnoDescription() {
        #expect(Errno(rawValue: EPIPE).description == "Broken pipe")
        #expect(Errno.noSuchFileOrDirectory.description == "No such file or directory")
        for code in Int32(0)...Int32(140) {
            #expect(Errno(rawValue: code).description == String(cString: strerror(code)), "errno \(code)")
        }
        #expect(Errno(rawValue: 9999).description == "Unknown error 9999")
        errno = EACCES
        let current = Errno.current
        #expect(current == Errno(EACCES))
    }

    @Test("valueOrErrno makes the call again after EINTR when asked, and only then; -1 with any other errno is that Errno")
    func retriesInterruptedCalls() throws {
        func interruptedTwice(_ calls: inout Int) -> Int {
            calls += 1
            guard calls > 2 else {
                errno = EINTR
                return -1
            }
            return 7
        }
        var calls = 0
        #expect(try valueOrErrno { interruptedTwice(&calls) } == 7)
        #expect(calls == 3)
        calls = 0
        #expect(throws: Errno.interrupted) { try valueOrErrno(retryOnInterrupt: false) { interruptedTwice(&calls) } }
        #expect(calls == 1)
        calls = 0
        #expect(throws: Errno(EBADF)) {
            try nothingOrErrno { () -> Int32 in
                calls += 1
                errno = EBADF
                return -1
            }
        }
        #expect(calls == 1)
        // Only -1 is a failure: other negative values are values.
        #expect(try valueOrErrno { Int32(-2) } == -2)
    }

    @Test("a read that a real signal interrupts (a handler without SA_RESTART) is made again, and fails with EINTR when not asked to")
    func realSignalInterruptsRead() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        #expect(sigaction(SIGUSR1, &action, &previous) == 0)
        defer { sigaction(SIGUSR1, &previous, nil) }

        for retry in [true, false] {
            let pipe = TestPipe()
            let reader = pipe.reader
            // The reading thread, its number of read calls, and what it got.
            let state = Locked<(thread: pthread_t?, calls: Int, result: Result<[UInt8], Errno>?)>((nil, 0, nil))
            let worker = try #require(
                WorkerThread {
                    // The thread inherits the signal mask of the test's (a Dispatch worker's, all blocked).
                    var signals = sigset_t()
                    sigemptyset(&signals)
                    sigaddset(&signals, SIGUSR1)
                    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
                    state.withLock { $0.thread = pthread_self() }
                    var buffer = [UInt8](repeating: 0, count: 16)
                    let result = Result { () throws(Errno) -> [UInt8] in
                        let count = try buffer.withMutableBytes { (raw) throws(Errno) in
                            try valueOrErrno(retryOnInterrupt: retry) { () -> Int in
                                state.withLock { $0.calls += 1 }
                                return read(reader, raw.baseAddress, raw.count)
                            }
                        }
                        return Array(buffer[..<count])
                    }
                    state.withLock { $0.result = result }
                })
            // Signals until the thread has been interrupted in its read at least once.
            let start = ContinuousClock.now
            while ContinuousClock.now - start < .seconds(10) {
                let (thread, calls, result) = state.withLock { ($0.thread, $0.calls, $0.result) }
                if result != nil || calls > 1 { break }
                if let thread { pthread_kill(thread, SIGUSR1) }
                usleep(5_000)
            }
            pipe.write([1, 2, 3])
            worker.join()
            let (calls, result) = state.withLock { ($0.calls, $0.result) }
            if retry {
                #expect(calls > 1)
                #expect(result == .success([1, 2, 3]))
            } else {
                #expect(calls == 1)
                #expect(result == .failure(.interrupted))
            }
        }
    }

    @Test("readAll(upTo:) reads the whole input up to its limit, and one byte more when there is more, never further")
    func readAllIsBounded() throws {
        let pipe = TestPipe()
        pipe.write(Array(0..<10))
        pipe.closeWriter()
        #expect(try FileDescriptor(rawValue: pipe.reader).readAll(upTo: 10) == Array(0..<10))

        let longer = TestPipe()
        longer.write(Array(0..<13))
        longer.closeWriter()
        let input = FileDescriptor(rawValue: longer.reader)
        #expect(try input.readAll(upTo: 10, expectedSize: 3) == Array(0..<11))
        // What is past the byte after the limit is still unread.
        #expect(try input.readAll(upTo: 100) == [11, 12])
        #expect(try input.readAll(upTo: 100).isEmpty)

        // An expected size at or past the limit (a file that grew, a wrong hint) reads no further.
        for expectedSize in [10, 50] {
            let file = TestPipe()
            file.write(Array(0..<13))
            file.closeWriter()
            #expect(try FileDescriptor(rawValue: file.reader).readAll(upTo: 10, expectedSize: expectedSize) == Array(0..<11))
        }
    }

    @Test("readAll(upTo:) grows past its first read, from a writer that fills the pipe many times")
    func readAllOfALargeInput() throws {
        let pipe = TestPipe()
        let writer = pipe.writer
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let worker = try #require(
            WorkerThread {
                try! bytes.withBytes { (raw) throws(Errno) in try FileDescriptor(rawValue: writer).writeAll(raw) }
                close(writer)
            })
        let read = try FileDescriptor(rawValue: pipe.reader).readAll(upTo: 200_000)
        #expect(read == Array(bytes[...200_000]))
        // The rest: the writer must finish before the join.
        #expect(try FileDescriptor(rawValue: pipe.reader).readAll(upTo: 1 << 20) == Array(bytes[200_001...]))
        worker.join()
        pipe.writer = -1
    }

    @Test("readAll(into:filled:) fills a buffer from where it was, stops at the end, and says how far it got")
    func readAllIntoABuffer() throws {
        let pipe = TestPipe()
        pipe.write([5, 6, 7])
        pipe.closeWriter()
        var buffer = [UInt8](repeating: 0, count: 8)
        var filled = 2
        try buffer.withMutableBytes { (raw) throws(Errno) in try FileDescriptor(rawValue: pipe.reader).readAll(into: raw, filled: &filled) }
        #expect(filled == 5)
        #expect(buffer == [0, 0, 5, 6, 7, 0, 0, 0])

        // A descriptor open for writing only: EBADF, and nothing counted.
        filled = 0
        let wrong = TestPipe()
        #expect(throws: Errno(EBADF)) {
            try buffer.withMutableBytes { (raw) throws(Errno) in
                try FileDescriptor(rawValue: wrong.writer).readAll(into: raw, filled: &filled)
            }
        }
        #expect(filled == 0)
    }

    @Test("writeAll writes everything, and reports a closed pipe as EPIPE")
    func writeAll() throws {
        signal(SIGPIPE, SIG_IGN)
        let pipe = TestPipe()
        close(pipe.reader)
        pipe.reader = -1
        #expect(throws: Errno.brokenPipe) {
            try [UInt8](repeating: 1, count: 10).withBytes { (raw) throws(Errno) in try FileDescriptor(rawValue: pipe.writer).writeAll(raw)
            }
        }
        #expect(throws: Errno(EBADF)) {
            let wrong = TestPipe()
            try [UInt8(1)].withBytes { (raw) throws(Errno) in try FileDescriptor(rawValue: wrong.reader).writeAll(raw) }
        }
    }
}

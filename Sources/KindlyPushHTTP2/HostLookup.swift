internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A host name resolved on a thread of its own (``HTTP2Client/resolve(_:)``), so that a name
/// server that is slow, or never answers, holds only the connection that asked, never the one
/// loop that drives every connection: a push service a subscription names is looked up while
/// the other pushes go on. ``descriptor`` (a pipe's reading end) turns readable once
/// ``result`` is there, for the client's `poll`.
///
/// getaddrinfo cannot be cancelled: a connection that gives up (its connect time-out) drops the
/// lookup, and the thread ends when the name server answers or glibc's own time-out passes.
final class HostLookup: @unchecked Sendable {
    // @unchecked: the descriptors never change; the result is behind its lock.
    let descriptor: Int32
    private let writer: Int32
    private let outcome = Locked<Result<[[UInt8]], HTTP2Failure>?>(nil)

    /// Starts the lookup; nil when the system gives no pipe or no thread (the caller then
    /// resolves on its own thread).
    init?(_ lookup: HTTP2Client.Lookup) {
        guard let pipe = try? FileDescriptor.pipe() else { return nil }
        descriptor = pipe.reading.rawValue
        writer = pipe.writing.rawValue
        let flagsSet = [pipe.reading, pipe.writing].allSatisfy { end in (try? end.setNonBlocking()) != nil }
        // Failing from here on still runs deinit, which closes both ends.
        guard flagsSet else { return nil }
        let started = WorkerThread.detach { [self] in
            let result: Result<[[UInt8]], HTTP2Failure>
            do throws(HTTP2Failure) {
                result = .success(try HTTP2Client.resolve(lookup))
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            // One byte into an empty pipe: it cannot be full, nor fail while this object lives.
            var one: UInt8 = 1
            try? nothingOrErrno { Glibc.write(writer, &one, 1) }
        }
        guard started else { return nil }
    }

    deinit {
        FileDescriptor(rawValue: descriptor).close()
        FileDescriptor(rawValue: writer).close()
    }

    /// The addresses, or why there are none; nil while the name server has not answered.
    var result: Result<[[UInt8]], HTTP2Failure>? { outcome.withLock { $0 } }
}

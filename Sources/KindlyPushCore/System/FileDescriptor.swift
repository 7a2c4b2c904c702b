#if canImport(Glibc)
    import Glibc
#endif

/// An open file descriptor, as swift-system's `FileDescriptor`: reads and writes that retry on
/// `EINTR` and throw ``Errno``. It does not own the descriptor: closing it is the caller's job.
package struct FileDescriptor: RawRepresentable, Sendable, Hashable {
    package let rawValue: Int32

    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    package static var standardInput: FileDescriptor { FileDescriptor(rawValue: STDIN_FILENO) }
    package static var standardOutput: FileDescriptor { FileDescriptor(rawValue: STDOUT_FILENO) }
    package static var standardError: FileDescriptor { FileDescriptor(rawValue: STDERR_FILENO) }

    /// The size of the regular file open here; `nil` for anything else (a pipe, a terminal, a
    /// device) or when `fstat` fails.
    package var regularFileSize: Int? {
        var status = stat()
        guard fstat(rawValue, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(status.st_size)
    }

    /// Opens `path` to read it, close-on-exec; a folder is refused with `EISDIR` (its descriptor
    /// closed). The descriptor is the caller's to close.
    package static func openForReading(_ path: String) throws(Errno) -> FileDescriptor {
        let descriptor = try valueOrErrno { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
        var status = stat()
        do {
            try nothingOrErrno { fstat(descriptor, &status) }
        } catch {
            FileDescriptor(rawValue: descriptor).close()
            throw error
        }
        guard status.st_mode & S_IFMT != S_IFDIR else {
            FileDescriptor(rawValue: descriptor).close()
            throw Errno(rawValue: EISDIR)
        }
        return FileDescriptor(rawValue: descriptor)
    }

    /// A new pipe, both ends close-on-exec (set by `fcntl`: Swift's Glibc has no `pipe2`). The
    /// descriptors are the caller's to close.
    package static func pipe() throws(Errno) -> (reading: FileDescriptor, writing: FileDescriptor) {
        var ends: [Int32] = [-1, -1]
        try nothingOrErrno { Glibc.pipe(&ends) }
        let pipe = (reading: FileDescriptor(rawValue: ends[0]), writing: FileDescriptor(rawValue: ends[1]))
        do throws(Errno) {
            for end in ends { try nothingOrErrno { fcntl(end, F_SETFD, FD_CLOEXEC) } }
        } catch {
            pipe.reading.close()
            pipe.writing.close()
            throw error
        }
        return pipe
    }

    /// Waits up to `milliseconds` (`-1`: without end) for something to read, an error or a
    /// hang-up (`poll(2)`): whether one came. A signal ends the wait early (`false`), for the
    /// caller's loop to look at its deadline and stop flags.
    package func waitUntilReadable(milliseconds: Int32) throws(Errno) -> Bool {
        var entry = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
        do {
            return try valueOrErrno(retryOnInterrupt: false) { poll(&entry, 1, milliseconds) } > 0
        } catch {
            guard error == .interrupted else { throw error }
            return false
        }
    }

    /// Closes the descriptor, which Linux releases whatever close(2) answers (it is not tried
    /// again after `EINTR`). What close could report is an earlier write's failure: a
    /// descriptor only read from (or a socket) has none, and the project's writers learn theirs
    /// from `fsync` before they close, or are dropping what they wrote.
    package func close() {
        do throws(Errno) {
            try nothingOrErrno(retryOnInterrupt: false) { Glibc.close(rawValue) }
        } catch {
            // Released all the same: nothing to do.
        }
    }

    /// Makes reads and writes here return `EAGAIN` instead of waiting (`O_NONBLOCK`).
    package func setNonBlocking() throws(Errno) {
        let flags = try valueOrErrno { fcntl(rawValue, F_GETFL) }
        try nothingOrErrno { fcntl(rawValue, F_SETFL, flags | O_NONBLOCK) }
    }

    /// One `read(2)` into `buffer`: the number of bytes read, 0 at the end of the input.
    package func read(into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) -> Int {
        try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// One `write(2)` of `bytes`: the number of bytes written.
    package func write(_ bytes: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) -> Int {
        try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { Glibc.write(rawValue, bytes.baseAddress, bytes.count) }
    }

    /// Reads into `buffer` from byte `filled` on, until it is full or the input ends, advancing
    /// `filled` as it goes: when this throws, `filled` still says how much of `buffer` was written
    /// (to wipe it). Never reads past the end of `buffer`, and not at all when it is full.
    package func readAll(into buffer: UnsafeMutableRawBufferPointer, filled: inout Int) throws(Errno) {
        precondition(filled >= 0 && filled <= buffer.count, "the filled part must be within the buffer")
        while filled < buffer.count {
            let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            if count == 0 { return }
            filled += count
        }
    }

    /// The whole input, refusing to hold more than `limit` bytes: at most `limit + 1` bytes are
    /// read, so a result longer than `limit` says that the input goes on past it (and no more of it
    /// was read). The first read asks for `expectedSize + 1` bytes (a file's size from `fstat`),
    /// then 64 KiB more at a time.
    package func readAll(upTo limit: Int, expectedSize: Int = 0) throws(Errno) -> [UInt8] {
        precondition(limit >= 0, "the limit must not be negative")
        var bytes = [UInt8](repeating: 0, count: min(max(expectedSize, 0), limit) + 1)
        var length = 0
        while true {
            try bytes.withMutableBytes { (raw) throws(Errno) in try readAll(into: raw, filled: &length) }
            // The end of the input, or one byte past the limit.
            if length < bytes.count || length > limit { break }
            bytes += [UInt8](repeating: 0, count: min(1 << 16, limit + 1 - length))
        }
        bytes.removeSubrange(length...)
        return bytes
    }

    /// Writes all of `bytes`, however many `write(2)` calls that takes. A write that writes
    /// nothing is ``Errno/ioError``, as a full device would otherwise be tried for ever.
    package func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let count = try write(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            guard count > 0 else { throw .ioError }
            offset += count
        }
    }
}

package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Buffered writing to a file descriptor that reports failure (a closed pipe, a full disk)
/// instead of dying: SIGPIPE is ignored at start-up, so a write to a closed pipe fails with EPIPE.
package struct OutputStream: ~Copyable {
    package let descriptor: Int32
    private var buffer: [UInt8] = []
    /// Why the write that failed failed (a write that wrote nothing is EIO); nil while none has.
    private(set) var failure: Errno?
    /// Whether a write has failed: nothing more is written.
    var failed: Bool { failure != nil }
    private let capacity: Int

    package init(descriptor: Int32, capacity: Int = 1 << 16) {
        self.descriptor = descriptor
        self.capacity = capacity
        buffer.reserveCapacity(capacity)
    }

    package mutating func write(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= capacity { flush() }
    }

    package mutating func write(_ text: String) {
        write(Array(text.utf8))
    }

    /// Writes everything buffered; false once any write has failed.
    @discardableResult
    package mutating func flush() -> Bool {
        guard failure == nil else {
            buffer.removeAll(keepingCapacity: true)
            return false
        }
        let output = FileDescriptor(rawValue: descriptor)
        do throws(Errno) {
            try buffer.withBytes { (bytes) throws(Errno) in try output.writeAll(bytes) }
        } catch {
            failure = error
        }
        buffer.removeAll(keepingCapacity: true)
        return failure == nil
    }

    /// Zeroes the buffer's whole capacity: it held output (decrypted payloads) that is written now.
    package mutating func wipe() {
        buffer.wipeCapacity()
    }
}

/// Standard error lines: `kindly-push: CODE: TEXT`.
package enum Diagnostics {
    package static func report(_ error: CodedError) {
        line(error.reportLine)
    }

    /// Writes `text` as one line: anything in it that is not printable (text from outside: a path,
    /// a D-Bus error, a label) is escaped by ``Printable/escaped(_:)`` first.
    package static func line(_ text: String) {
        var stream = OutputStream(descriptor: STDERR_FILENO, capacity: 4096)
        stream.write(Printable.escaped(text) + "\n")
        stream.flush()
    }
}

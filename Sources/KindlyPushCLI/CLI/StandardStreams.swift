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

/// Standard error lines: `kindly-push: CODE: TEXT` for an error, `kindly-push: warning: TEXT`,
/// `kindly-push: TEXT` for a note.
///
/// When standard error is the systemd journal's stream (`JOURNAL_STREAM` names its device and
/// inode, systemd.exec(5)), each line starts with its level's syslog priority, as sd-daemon(3)
/// describes (`<3>` error, `<4>` warning, `<6>` note), which the journal keeps as the line's
/// priority (`journalctl -p warning`); elsewhere the lines are exactly as before.
package enum Diagnostics {
    package static func report(_ error: CodedError) {
        line(error.reportLine, level: .error)
    }

    /// Writes `text` as one line: anything in it that is not printable (text from outside: a path,
    /// a D-Bus error, a label) is escaped by ``Printable/escaped(_:)`` first. Its `level` is the
    /// line's own by default (``level(of:)``).
    package static func line(_ text: String, level: KindlyLogLevel? = nil) {
        var stream = OutputStream(descriptor: STDERR_FILENO, capacity: 4096)
        if toJournal { stream.write(priority(level ?? Self.level(of: text))) }
        stream.write(Printable.escaped(text) + "\n")
        stream.flush()
    }

    /// A line's level by its form: `kindly-push: CODE: …` (an error code) is an error,
    /// `kindly-push: warning: …` a warning, anything else a note.
    package static func level(of text: String) -> KindlyLogLevel {
        guard text.hasPrefix("kindly-push: ") else { return .info }
        let rest = text.dropFirst("kindly-push: ".count)
        let word = rest.prefix { $0 != ":" }
        guard word.endIndex < rest.endIndex else { return .info }
        if word == "warning" { return .warning }
        return ErrorCode.allCases.contains { $0.rawValue == word } ? .error : .info
    }

    /// sd-daemon(3)'s prefix for `level`.
    static func priority(_ level: KindlyLogLevel) -> String {
        switch level {
        case .error: "<3>"
        case .warning: "<4>"
        case .info: "<6>"
        case .debug: "<7>"
        }
    }

    /// Whether standard error is the journal's stream: `JOURNAL_STREAM` is `DEVICE:INODE` of the
    /// stream the service manager connected, and standard error is still that one (not a file
    /// or pipe that a child of the service was given instead).
    static let toJournal: Bool = {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard (try? nothingOrErrno { fstat(STDERR_FILENO, &status) }) != nil else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }()
}

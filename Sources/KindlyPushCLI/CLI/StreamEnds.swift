package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The ends of a document command's stream besides standard input and output: FILE arguments,
/// `--output`, the progress line and `--summary` (docs/spec/streams.md, "Input and output").
package enum InputFiles {
    /// The descriptors of `paths` in order (`-` is standard input); standard input when empty.
    /// A path that cannot be opened, or a folder, is `io`. Standard input on a terminal is
    /// noted on standard error (``StandardInput/noteIfTerminal(lineMode:)``).
    package static func open(_ paths: [String], lineMode: Bool) throws(CodedError) -> [Int32] {
        guard !paths.isEmpty else {
            StandardInput.noteIfTerminal(lineMode: lineMode)
            return [STDIN_FILENO]
        }
        if paths.contains("-") { StandardInput.noteIfTerminal(lineMode: lineMode) }
        var descriptors: [Int32] = []
        for path in paths {
            if path == "-" {
                descriptors.append(STDIN_FILENO)
                continue
            }
            do throws(Errno) {
                descriptors.append(try FileDescriptor.openForReading(path).rawValue)
            } catch {
                for opened in descriptors where opened != STDIN_FILENO { FileDescriptor(rawValue: opened).close() }
                throw CodedError(
                    .io, error.rawValue == EISDIR ? "cannot read '\(path)': it is a folder" : "cannot open '\(path)': \(error)")
            }
        }
        return descriptors
    }
}

/// Where the output goes: standard output (also `--output -`), or with `--output PATH` a new
/// file (mode 0600) that replaces PATH only when the run succeeds, so that PATH never holds a
/// partial result. A FIFO or a character device at PATH (`/dev/null`, a terminal) is written
/// directly, as a shell redirection would: it is never replaced by a file.
///
/// The new file has no name while the run lasts (Linux `O_TMPFILE`): a run that is killed, as a
/// live filter ended by a signal is, leaves nothing behind. At the end it is linked under a
/// hidden name beside PATH and renamed over it. Where a nameless file cannot be made or named
/// (another system, no `/proc`, or `KINDLY_PUSH_TEST_NO_O_TMPFILE=1` for the tests) it is a
/// hidden named file from the start (`.NAME.kindly-push-XXXXXX`, see
/// ``PrivateFile/TemporaryFile``): removed on failure and on SIGTERM, SIGINT and SIGHUP, and
/// locked while its run lives, so that a run killed outright (SIGKILL, a crash) leaves one that
/// the next `--output` into the same folder removes (``sweep(beside:)``).
///
/// A journal (``init(journalFor:)``, `send`'s results) is the other way round: its lines record
/// what cannot be undone, so none may be lost to a kill. It is written as `PATH.partial`, a
/// visible file, as each line is known, and renamed to PATH when the run ends, however it ends
/// but killed outright; a killed run's `PATH.partial` keeps every line written (the last may be
/// cut short: SIGKILL stops a write between two pages), and the next run into PATH refuses to
/// start until it has been moved away.
package struct OutputTarget: ~Copyable {
    package let descriptor: Int32
    /// The named temporary file; nil for standard output, a nameless file and a direct write.
    private let temporary: PrivateFile.TemporaryFile?
    /// PATH when it is replaced at the end; nil for standard output and a direct write.
    private let path: String?
    /// A journal's `PATH.partial`.
    private let journal: String?

    /// Standard output, or a new file for `path` (`-` is standard output).
    package init(path: String?) throws(CodedError) {
        (descriptor, temporary, self.path) = try Self.open(path)
        journal = nil
    }

    /// Standard output, or the journal `PATH.partial` for `path`: `io` when it exists (a killed
    /// run's lines, never overwritten).
    package init(journalFor path: String?) throws(CodedError) {
        (descriptor, temporary, self.path, journal) = try Self.openJournal(path)
    }

    private static func openJournal(_ path: String?) throws(CodedError) -> (Int32, PrivateFile.TemporaryFile?, String?, String?) {
        // A path that is not there yet is a file to be; one that is, only a regular file.
        let existing = path.flatMap { try? FileStatus.of($0) }
        guard let path, path != "-", existing.map({ $0.st_mode & S_IFMT == S_IFREG }) ?? true else {
            // Standard output, a FIFO, a device: written directly.
            let (descriptor, temporary, named) = try open(path)
            return (descriptor, temporary, named, nil)
        }
        let partial = path + ".partial"
        let opened: Int32
        do throws(Errno) {
            opened = try valueOrErrno { Glibc.open(partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0o600) }
        } catch {
            if error.rawValue == EEXIST {
                throw CodedError(
                    .io,
                    "'\(partial)' holds the results of a run that did not finish (killed): they record pushes that were sent; move it away, then run again"
                )
            }
            throw CodedError(.io, "cannot write '\(partial)': \(error)")
        }
        // The umask may have cut the mode; a file system that refuses keeps it as created.
        try? nothingOrErrno { fchmod(opened, 0o600) }
        return (opened, nil, path, partial)
    }

    private static func open(_ path: String?) throws(CodedError) -> (Int32, PrivateFile.TemporaryFile?, String?) {
        guard let path, path != "-" else { return (STDOUT_FILENO, nil, nil) }
        func failure(_ error: Errno) -> CodedError { CodedError(.io, "cannot write '\(path)': \(error)") }
        if let status = try? FileStatus.of(path), status.st_mode & S_IFMT == S_IFIFO || status.st_mode & S_IFMT == S_IFCHR {
            do throws(Errno) {
                return (try valueOrErrno { Glibc.open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY) }, nil, nil)
            } catch {
                throw failure(error)
            }
        }
        sweep(beside: path)
        if PrivateFile.usesNamelessFiles, access("/proc/self/fd", X_OK) == 0,
            let descriptor = PrivateFile.openNameless(in: PrivateFile.folderName(of: path))
        {
            // Locked while the run lives, so that a sweep never takes the name it gets at the end
            // (a file no one else can have open: the lock cannot wait, nor fail but for memory).
            try? nothingOrErrno { flock(descriptor, LOCK_EX) }
            // O_TMPFILE makes the file 0600 before the umask; say so whatever it did (on a file
            // system that refuses, it stays as created: 0600 or less).
            try? nothingOrErrno { fchmod(descriptor, 0o600) }
            return (descriptor, nil, path)
        }
        do throws(PrivateFileError) {
            let file = try PrivateFile.TemporaryFile(template: hiddenName(beside: path, suffix: "XXXXXX"), for: path)
            fchmod(file.descriptor, 0o600)
            return (file.descriptor, file, path)
        } catch {
            if case .system(_, _, let code) = error { throw failure(Errno(code)) }
            throw failure(.ioError)
        }
    }

    /// `.NAME.kindly-push-SUFFIX` in PATH's folder: hidden, and never taken for the output.
    private static func hiddenName(beside path: String, suffix: String) -> String {
        "\(PrivateFile.folderName(of: path))/.\(baseName(of: path)).kindly-push-\(suffix)"
    }

    private static func baseName(of path: String) -> String {
        path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(decoding: path.utf8[path.utf8.index(after: $0)...], as: UTF8.self) } ?? path
    }

    /// Removes what killed runs left beside PATH's folder: hidden files `.NAME.kindly-push-XXXXXX`
    /// (any NAME, six letters or digits) that are regular files of this user and whose lock no
    /// live run holds. Returns their paths.
    @discardableResult
    package static func sweep(beside path: String) -> [String] {
        PrivateFile.removeLeftovers(in: PrivateFile.folderName(of: path)) { name in
            let bytes = Array(name.utf8)
            let marker = Array(".kindly-push-".utf8)
            guard bytes.count > 1 + marker.count + 6, bytes.first == UInt8(ascii: ".") else { return false }
            return PrivateFile.isTemporarySuffix(bytes.suffix(6)) && Array(bytes.dropLast(6).suffix(marker.count)) == marker
        }
    }

    /// Puts the finished output in place (or leaves standard output as it is); `io` on failure.
    package consuming func commit() -> CodedError? {
        if let journal, let path {
            // A journal's lines are on disk already: the rename says the run ended.
            defer { FileDescriptor(rawValue: descriptor).close() }
            do throws(Errno) {
                try nothingOrErrno { fsync(descriptor) }
                try nothingOrErrno { rename(journal, path) }
            } catch {
                return CodedError(.io, "cannot put '\(journal)' in place of '\(path)': \(error) (the lines are in '\(journal)')")
            }
            PrivateFile.syncFolder(PrivateFile.folderName(of: path))
            return nil
        }
        guard let path else {
            if descriptor != STDOUT_FILENO { FileDescriptor(rawValue: descriptor).close() }
            return nil
        }
        defer {
            if let temporary { temporary.close() } else { FileDescriptor(rawValue: descriptor).close() }
        }
        func failure(_ error: Errno) -> CodedError { CodedError(.io, "cannot write '\(path)': \(error)") }
        do throws(Errno) {
            try nothingOrErrno { fsync(descriptor) }
        } catch {
            if let temporary { try? nothingOrErrno { unlink(temporary.path) } }
            return failure(error)
        }
        var named = temporary?.path
        if named == nil {
            // linkat cannot replace PATH: link under a fresh hidden name, then rename over PATH.
            let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
            for _ in 0..<100 {
                let suffix = String(decoding: (0..<6).map { _ in letters.randomElement()! }, as: UTF8.self)
                let candidate = Self.hiddenName(beside: path, suffix: suffix)
                do throws(Errno) {
                    try nothingOrErrno { linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, candidate, AT_SYMLINK_FOLLOW) }
                    named = candidate
                    break
                } catch {
                    // A name taken: another suffix.
                    guard error.rawValue == EEXIST else { return CodedError(.io, "cannot write '\(path)': \(error)") }
                }
            }
        }
        // A hundred names taken.
        guard let named else { return failure(Errno(EEXIST)) }
        do throws(Errno) {
            try nothingOrErrno { rename(named, path) }
        } catch {
            try? nothingOrErrno { unlink(named) }
            return failure(error)
        }
        PrivateFile.syncFolder(PrivateFile.folderName(of: path))
        return nil
    }

    /// Drops an output that holds nothing, a journal too: PATH keeps what it held before.
    package consuming func discard() {
        if let journal {
            try? nothingOrErrno { unlink(journal) }
            FileDescriptor(rawValue: descriptor).close()
            return
        }
        abandon()
    }

    /// Drops the unfinished output: PATH keeps what it held before. A journal is put in place
    /// all the same (what it records happened), or left as `PATH.partial` when it cannot be.
    package consuming func abandon() {
        if journal != nil {
            if let error = commit() { Diagnostics.report(error) }
            return
        }
        if let temporary {
            try? nothingOrErrno { unlink(temporary.path) }
            temporary.close()
        } else if descriptor != STDOUT_FILENO {
            FileDescriptor(rawValue: descriptor).close()
        }
    }
}

/// The one-line progress of a long run on a terminal: count, rate and elapsed time, redrawn a
/// few times a second on standard error and cleared at the end; with a known size of the input
/// (regular files), the share read and the time left too. Never when standard error is not a
/// terminal, or with `--quiet`. On a terminal that `TERM=dumb` (or no `TERM`) says knows no
/// escape sequences, the line is redrawn and cleared with a carriage return and spaces only.
package struct ProgressLine {
    package let isShown: Bool
    private let start = ContinuousClock.now
    private var lastDraw = ContinuousClock.now
    private var drawn = false
    private let noun: String
    /// Whether "erase to the end of the line" (`ESC [ K`) may be written.
    private let erases: Bool
    /// The length of the last line drawn, which spaces cover where `erases` is false.
    private var drawnLength = 0

    package init(quiet: Bool, noun: String = "lines") {
        isShown = !quiet && isatty(STDERR_FILENO) == 1
        self.noun = noun
        let term = getenv("TERM").map { String(cString: $0) } ?? ""
        erases = !term.isEmpty && term != "dumb"
    }

    /// The input's size in bytes, when it is known (regular files): the line shows the share
    /// read and the time left.
    package var totalBytes: Int?

    /// Redraws with `count` (and `bytesDone` of ``totalBytes``) when the last drawing is at least
    /// 0.2 s old.
    package mutating func update(count: Int, bytesDone: Int? = nil, force: Bool = false) {
        guard isShown else { return }
        let now = ContinuousClock.now
        guard force || now - lastDraw >= .milliseconds(200) else { return }
        lastDraw = now
        let elapsed = now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let share = totalBytes.flatMap { total in bytesDone.map { total > 0 ? min(1, Double($0) / Double(total)) : 1 } }
        let text = Self.text(count: count, noun: noun, seconds: seconds, share: share)
        if erases {
            write("\r\u{1B}[K" + text)
        } else {
            write("\r" + text + String(repeating: " ", count: max(0, drawnLength - text.utf8.count)))
        }
        drawnLength = text.utf8.count
        drawn = true
    }

    /// `1200 lines, 6000/s, 0.2 s`; with the `share` of a known size read,
    /// `1200 lines, 6000/s, 0.2 s, 40 %, 0.3 s left` (the time left once a hundredth is read).
    package static func text(count: Int, noun: String, seconds: Double, share: Double? = nil) -> String {
        let rate = seconds > 0 ? Int(Double(count) / seconds) : 0
        var text = "\(count) \(noun), \(rate)/s, \(tenths(seconds)) s"
        if let share {
            text += ", \(Int(share * 100)) %"
            if share >= 0.01, share < 1 { text += ", \(tenths(seconds * (1 - share) / share)) s left" }
        }
        return text
    }

    /// `12.3`: seconds to a tenth, rounded down.
    private static func tenths(_ seconds: Double) -> String {
        let tenths = Int(seconds * 10)
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// Clears the line, leaving the terminal as it was.
    package mutating func clear() {
        guard isShown, drawn else { return }
        write(erases ? "\r\u{1B}[K" : "\r" + String(repeating: " ", count: drawnLength) + "\r")
        drawn = false
    }

    private func write(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

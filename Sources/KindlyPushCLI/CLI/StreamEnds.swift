internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The ends of a document command's stream besides standard input and output: FILE arguments,
/// `--output`, the progress line and `--summary` (cli.md, "General conventions").
package enum InputFiles {
    /// The descriptors of `paths` in order (`-` is standard input); standard input when empty.
    /// A path that cannot be opened, or a folder, is `io`.
    static func open(_ paths: [String]) throws(CLIError) -> [Int32] {
        guard !paths.isEmpty else { return [STDIN_FILENO] }
        var descriptors: [Int32] = []
        for path in paths {
            if path == "-" {
                descriptors.append(STDIN_FILENO)
                continue
            }
            let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                let reason = String(cString: strerror(errno))
                for opened in descriptors where opened != STDIN_FILENO { close(opened) }
                throw CLIError(.io, "cannot open '\(path)': \(reason)")
            }
            var status = stat()
            if fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
                close(descriptor)
                for opened in descriptors where opened != STDIN_FILENO { close(opened) }
                throw CLIError(.io, "cannot read '\(path)': it is a folder")
            }
            descriptors.append(descriptor)
        }
        return descriptors
    }
}

/// Where the output goes: standard output, or with `--output PATH` a temporary file beside PATH
/// (mode 0600) that is renamed over PATH only when the run succeeds, so that PATH never holds a
/// partial result.
package struct OutputTarget: ~Copyable {
    package let descriptor: Int32
    private let temporaryPath: String?
    private let path: String?

    /// Standard output, or a new temporary file for `path`.
    package init(path: String?) throws(CLIError) {
        guard let path else {
            descriptor = STDOUT_FILENO
            temporaryPath = nil
            self.path = nil
            return
        }
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var template = Array((folder + "." + name + ".kindly-push-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw CLIError(.io, "cannot write '\(path)': \(String(cString: strerror(errno)))")
        }
        // mkstemp makes the file 0600; say so whatever the umask did.
        fchmod(descriptor, 0o600)
        self.descriptor = descriptor
        temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        self.path = path
    }

    /// Puts the finished output in place (or leaves standard output as it is); `io` on failure.
    consuming func commit() -> CLIError? {
        guard let temporaryPath, let path else { return nil }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0, rename(temporaryPath, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporaryPath)
            return CLIError(.io, "cannot write '\(path)': \(reason)")
        }
        return nil
    }

    /// Drops the unfinished output: PATH keeps what it held before.
    consuming func abandon() {
        guard let temporaryPath else { return }
        close(descriptor)
        unlink(temporaryPath)
    }
}

/// The one-line progress of a long run on a terminal: count, rate and elapsed time, redrawn a
/// few times a second on standard error and cleared at the end. Never when standard error is not
/// a terminal, or with `--quiet`.
package struct ProgressLine {
    package let isShown: Bool
    private let start = ContinuousClock.now
    private var lastDraw = ContinuousClock.now
    private var drawn = false
    private let noun: String

    package init(quiet: Bool, noun: String = "lines") {
        isShown = !quiet && isatty(STDERR_FILENO) == 1
        self.noun = noun
    }

    /// Redraws with `count` when the last drawing is at least 0.2 s old.
    package mutating func update(count: Int, force: Bool = false) {
        guard isShown else { return }
        let now = ContinuousClock.now
        guard force || now - lastDraw >= .milliseconds(200) else { return }
        lastDraw = now
        let elapsed = now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Int(Double(count) / seconds) : 0
        let text = "\r\u{1B}[K\(count) \(noun), \(rate)/s, \(String(Int(seconds * 10) / 10)).\(Int(seconds * 10) % 10) s"
        write(text)
        drawn = true
    }

    /// Clears the line, leaving the terminal as it was.
    package mutating func clear() {
        guard isShown, drawn else { return }
        write("\r\u{1B}[K")
        drawn = false
    }

    private func write(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

/// `--summary`: how many output lines each result code had (`ok` for a result, the error's code
/// for an error object), read from the lines as they are written.
package struct ResultCounts {
    private(set) var counts: [String: Int] = [:]
    private(set) var lines = 0
    private static let errorPrefix = Array(#"{"error":{"code":""#.utf8)

    /// Counts the lines of `output` (whole lines, each ending with a newline).
    package mutating func count(_ output: [UInt8]) {
        var start = 0
        while start < output.count {
            var end = start
            while end < output.count, output[end] != 0x0A { end += 1 }
            lines += 1
            counts[code(of: output[start..<end]), default: 0] += 1
            start = end + 1
        }
    }

    private func code(of line: ArraySlice<UInt8>) -> String {
        let prefix = ResultCounts.errorPrefix
        guard line.count > prefix.count, line.starts(with: prefix) else { return "ok" }
        let rest = line.dropFirst(prefix.count)
        guard let quote = rest.firstIndex(of: UInt8(ascii: "\"")) else { return "ok" }
        return String(decoding: rest[..<quote], as: UTF8.self)
    }

    /// `summary: 1000 lines: 998 ok, 2 bad_input` (codes in the order of cli.md's table).
    package var line: String {
        let order = ["ok"] + ErrorCode.allCases.map(\.rawValue)
        let known = order.compactMap { code in counts[code].map { "\($0) \(code)" } }
        let others = counts.keys.filter { !order.contains($0) }.sorted().map { "\(counts[$0]!) \($0)" }
        return "summary: \(lines) lines: " + (known + others).joined(separator: ", ")
    }
}

internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushDesktop

#if canImport(Glibc)
    import Glibc
#endif

/// The input of `--jsonl` and `--follow`: standard input, a FIFO, or a FILE followed as
/// `tail -F` follows it (appended lines as they are written, across rotation and truncation),
/// split into lines. A line is handed on only once its newline arrived, except at the real end
/// of standard input (a FIFO or a FILE has none while followed). The line engine's source: it
/// never waits; the engine waits on its ``readiness``.
struct FollowedInput: ~Copyable, LineSource {
    enum Source: Sendable, Equatable {
        case standardInput
        case path(String)
    }

    private let source: Source
    private var file: Int32
    /// A FIFO is held open for writing too, so that its writers may come and go without an end.
    private var fifoWriter: Int32 = -1
    /// For a FILE: inotify on its folder (a new file, a rename, a write), else -1.
    private var watch: Int32 = -1
    private var isRegularFile = false
    private var offset: Int64 = 0
    private var splitter = LineSplitter(maximumLineLength: StandardInput.maximumDocumentSize)
    private(set) var isAtEnd = false
    /// Where the lines handed on so far end, as of the last read that handed some on.
    let lastRead = LastRead()

    /// A followed FILE's ``FollowedInput/position`` as of its last read that handed lines on,
    /// shared with the sink, which records it once it handled those lines.
    final class LastRead {
        /// `nil` for standard input and a FIFO, or while an oversized line is being skipped.
        var position: SQLiteDeduplicator.FollowPosition?
    }

    init(_ source: Source, follows: Bool) throws(CodedError) {
        self.source = source
        switch source {
        case .standardInput:
            try Self.makeStandardInputNonBlocking()
            file = STDIN_FILENO
        case .path(let path):
            let descriptor: Int32
            var status = stat()
            do throws(Errno) {
                descriptor = try valueOrErrno { open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }
            } catch {
                throw CodedError(.io, "\(path): cannot open: \(error)")
            }
            do throws(Errno) {
                try nothingOrErrno { fstat(descriptor, &status) }
            } catch {
                FileDescriptor(rawValue: descriptor).close()
                throw CodedError(.io, "\(path): cannot open: \(error)")
            }
            // A device (/dev/zero, or a link to it) never ends and never
            // waits; only a regular file or a FIFO is followed.
            guard [S_IFIFO, S_IFREG].contains(status.st_mode & S_IFMT) else {
                FileDescriptor(rawValue: descriptor).close()
                throw CodedError(
                    .usage, "\(path) is neither a regular file nor a FIFO: --follow reads only those (or - for standard input)")
            }
            if let problem = Self.writableByOthers(path) {
                FileDescriptor(rawValue: descriptor).close()
                throw CodedError(.io, problem)
            }
            file = descriptor
            if status.st_mode & S_IFMT == S_IFIFO {
                fifoWriter = (try? valueOrErrno { open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC) }) ?? -1
            } else if status.st_mode & S_IFMT == S_IFREG {
                isRegularFile = true
                let folder = PrivateFile.folderName(of: path)
                watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
                if watch >= 0 {
                    let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
                    if inotify_add_watch(watch, folder, mask) < 0 {
                        FileDescriptor(rawValue: watch).close()
                        watch = -1
                    }
                }
            }
        }
    }

    /// Standard input's reads return at once when there is nothing to read (the agent polls).
    private static func makeStandardInputNonBlocking() throws(CodedError) {
        do throws(Errno) {
            try FileDescriptor.standardInput.setNonBlocking()
        } catch {
            throw CodedError(.io, "standard input: cannot read: \(error)")
        }
    }

    /// The bytes one ``next(into:maximumLines:maximumBytes:)`` reads at most (1 MiB): notify's
    /// batch, after which the engine's wait looks at signals and taps.
    static let readBudget = 1 << 20

    /// How often a FILE that inotify cannot watch is read again, in milliseconds.
    static let rereadInterval = 50

    /// Why `path` may not be followed, or `nil`: another user can write it,
    /// or a folder on its way, by OpenSSH's rule for its own files (`secure_permissions`): the
    /// file and every folder of its real path are owned by this user or root, writable by no
    /// other user, and group-writable only when the group's one member is the owner (a user
    /// private group, as with umask 002). A folder others may write is allowed when it is root's
    /// and sticky (`/tmp`: nobody else can rename or remove what is ours in it).
    static func writableByOthers(_ path: String) -> String? {
        if let link = Self.othersLink(on: path) {
            return "the link \(link) on the way to \(path) belongs to another user: it is not followed"
        }
        guard let real = realpath(path, nil) else { return nil }  // open says why
        defer { free(real) }
        var current = String(cString: real)
        guard var status = try? FileStatus.of(current) else { return nil }
        if status.st_uid != geteuid() && status.st_uid != 0 { return "\(path) belongs to another user: it is not followed" }
        if !writableOnlyByOwner(status) {
            return "\(path) can be written by other users (mode \(String(status.st_mode & 0o777, radix: 8))): it is not followed"
        }
        while current != "/" {
            current = PrivateFile.folderName(of: current)
            guard let folder = try? FileStatus.of(current) else { return nil }
            status = folder
            let mine = status.st_uid == geteuid() || status.st_uid == 0
            let rootSticky = status.st_uid == 0 && status.st_mode & S_ISVTX != 0
            if !mine || (!writableOnlyByOwner(status) && !rootSticky) {
                return "the folder \(current) on the way to \(path) can be changed by other users: it is not followed"
            }
        }
        return nil
    }

    /// The first symbolic link on `path` as given (its folders and itself) that another user than
    /// this one or root owns: its owner can point it elsewhere at any time, so the real path's
    /// checks would say nothing of what is read after a rotation.
    private static func othersLink(on path: String) -> String? {
        var absolute = path
        if !absolute.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            guard getcwd(&buffer, buffer.count) != nil else { return nil }
            absolute = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path
        }
        var prefix = ""
        for part in absolute.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + part
            guard let status = try? FileStatus.ofLink(prefix) else { return nil }
            if status.st_mode & S_IFMT == S_IFLNK, status.st_uid != geteuid(), status.st_uid != 0 { return prefix }
        }
        return nil
    }

    /// Whether only the owner can write what `status` describes: not writable by others, and
    /// writable by its group only when that group has exactly one member, the owner.
    private static func writableOnlyByOwner(_ status: stat) -> Bool {
        if status.st_mode & 0o002 != 0 { return false }
        guard status.st_mode & 0o020 != 0 else { return true }
        guard let group = getgrgid(status.st_gid), let owner = getpwuid(status.st_uid) else { return false }
        let ownerName = String(cString: owner.pointee.pw_name)
        var members = owner.pointee.pw_gid == status.st_gid ? 1 : 0
        var member = group.pointee.gr_mem
        while let name = member?.pointee {
            guard String(cString: name) == ownerName else { return false }
            if owner.pointee.pw_gid != status.st_gid { members += 1 }
            member = member?.advanced(by: 1)
        }
        return members == 1
    }

    deinit {
        if file != STDIN_FILENO { FileDescriptor(rawValue: file).close() }
        if fifoWriter >= 0 { FileDescriptor(rawValue: fifoWriter).close() }
        if watch >= 0 { FileDescriptor(rawValue: watch).close() }
    }

    /// `standard input`, `the FIFO PATH`, `the file PATH` (`from byte N` when it goes on where
    /// the last run stopped): for the agent's start line.
    var description: String {
        switch source {
        case .standardInput: return "standard input"
        case .path(let path):
            guard isRegularFile else { return "the FIFO \(path)" }
            return "the file \(path)" + (resumedAt.map { " from byte \($0), where the last run stopped" } ?? "")
        }
    }

    /// The offset ``resume(from:)`` went on from, if it did.
    private(set) var resumedAt: Int64?

    /// For a FILE: its device and inode, and the offset where the lines handed on so far end
    /// (`nil` while an oversized line is being skipped, or for standard input and a FIFO).
    var position: SQLiteDeduplicator.FollowPosition? {
        guard isRegularFile, !splitter.isInOversizedLine, let status = try? FileStatus.of(descriptor: file) else { return nil }
        return .init(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), offset: offset - Int64(splitter.partialLineCount))
    }

    /// Goes on from `position` when it is this FILE's (same device and inode) and within it;
    /// otherwise the FILE is read from its start, as before.
    mutating func resume(from position: SQLiteDeduplicator.FollowPosition) {
        guard isRegularFile, offset == 0, let status = try? FileStatus.of(descriptor: file), UInt64(status.st_dev) == position.device,
            UInt64(status.st_ino) == position.inode, position.offset > 0, position.offset <= Int64(status.st_size),
            lseek(file, off_t(position.offset), SEEK_SET) == off_t(position.offset)
        else { return }
        offset = position.offset
        resumedAt = position.offset
    }

    /// What the engine waits on: the input itself for standard input and a FIFO; for a FILE,
    /// the FILE itself (always readable) while what it holds is still to be read (before its
    /// first read, and after a read that stopped at the budget), else the inotify descriptor,
    /// or -1 when there is none (the wait then looks again within ``rereadInterval``).
    var readiness: Int32? {
        guard isRegularFile else { return file }
        return unread ? file : watch
    }

    /// Whether nothing is there to read now (nothing says a FILE without inotify grew).
    mutating func wouldBlock() -> Bool {
        guard let descriptor = readiness, descriptor >= 0 else { return true }
        do throws(Errno) {
            return try !FileDescriptor(rawValue: descriptor).waitUntilReadable(milliseconds: 0)
        } catch {
            // The read says what failed.
            return false
        }
    }

    /// The whole lines that arrived (``readLines(into:budget:)``), at most `maximumBytes` read;
    /// `false` at the real end of standard input. Never waits.
    mutating func next(into batch: inout LineBatchReader.Batch, maximumLines: Int, maximumBytes: Int) throws(CodedError) -> Bool {
        try readLines(into: &batch, budget: maximumBytes)
        if !batch.lines.isEmpty { lastRead.position = position }
        return !isAtEnd
    }

    /// Whether what a FILE held before any inotify event is still to be read.
    private var unread = true

    /// The whole lines that arrived, oldest first, into `lines` (its bytes zeroed and cleared
    /// first): the line engine reads each from there. Never blocks.
    private mutating func readLines(into lines: inout LineBatchReader.Batch, budget: Int) throws(CodedError) {
        lines.bytes.wipeCapacity()
        lines.bytes.removeAll(keepingCapacity: true)
        lines.lines.removeAll(keepingCapacity: true)
        unread = false
        if watch >= 0 {
            var events = [UInt8](repeating: 0, count: 4096)
            let inotify = FileDescriptor(rawValue: watch)
            // The events only say that something changed: read until none is left.
            while (try? events.withUnsafeMutableBytes { (raw) throws(Errno) in try inotify.read(into: raw) }) ?? 0 > 0 {}
        }
        // At most a read budget at a time, so that the engine looks at signals between reads;
        // a FILE with more to read is read again without waiting.
        guard try drain(into: &lines, budget: budget) else {
            unread = isRegularFile
            return
        }
        if isRegularFile, case .path(let path) = source {
            let current = try? FileStatus.of(descriptor: file)
            if let current, let now = try? FileStatus.of(path), now.st_ino != current.st_ino || now.st_dev != current.st_dev {
                // Rotated: the old file was read to its end above; the new one is read from its start,
                // when it is a regular file (a link to a device put in its place is not read).
                // It passes the first open's rule too: a file another user put there, or reached
                // through another user's link, is not read.
                let fresh = (try? valueOrErrno { open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }) ?? -1
                let freshIsRegular = fresh >= 0 && (try? FileStatus.of(descriptor: fresh)).map { $0.st_mode & S_IFMT == S_IFREG } == true
                if fresh >= 0, !freshIsRegular || Self.writableByOthers(path) != nil {
                    FileDescriptor(rawValue: fresh).close()
                } else if fresh >= 0 {
                    FileDescriptor(rawValue: file).close()
                    file = fresh
                    offset = 0
                    unread = try !drain(into: &lines, budget: budget)
                }
            } else if Int64(current?.st_size ?? 0) < offset {
                // Truncated (copytruncate): read it again from the start.
                do throws(Errno) {
                    try nothingOrErrno { lseek(file, 0, SEEK_SET) }
                } catch {
                    throw CodedError(.io, "cannot read the input: \(error)")
                }
                offset = 0
                splitter.discardPartialLine()
                unread = try !drain(into: &lines, budget: budget)
            }
        }
    }

    /// Reads what is there, up to `budget` bytes: `false` when the budget ran out first.
    private mutating func drain(into lines: inout LineBatchReader.Batch, budget: Int) throws(CodedError) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let input = FileDescriptor(rawValue: file)
        var budget = budget
        while true {
            guard budget > 0 else { return false }
            budget -= chunk.count
            let count: Int
            do throws(Errno) {
                count = try chunk.withMutableBytes { (raw) throws(Errno) in try input.read(into: raw) }
            } catch {
                if error == .wouldBlock || error == Errno(EWOULDBLOCK) { return true }
                throw CodedError(.io, "cannot read the input: \(error)")
            }
            if count == 0 {
                // The end of a FILE or a FIFO is only the end of what was written so far.
                if isRegularFile || fifoWriter >= 0 { return true }
                isAtEnd = true
                splitter.finish(into: &lines)
                return true
            }
            offset += Int64(count)
            var start = 0
            chunk.withUnsafeBytes { raw in
                let bytes = UnsafeRawBufferPointer(rebasing: raw[..<count])
                while splitter.takeLine(from: bytes, start: &start, into: &lines) {}
            }
        }
    }
}

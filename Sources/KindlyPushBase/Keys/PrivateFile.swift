internal import CProcessGuard
package import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Why a private file (a key file, a keyring entry) could not be read or written.
/// Messages name the path and the cause, never the contents.
public enum PrivateFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// There is no file at the path.
    case missing(path: String)
    /// A file is there already and is never replaced.
    case exists(path: String)
    /// Group or others may read the file (its mode is given): refused, as ssh refuses such keys.
    case tooOpen(path: String, mode: UInt32)
    /// The path is a folder, a link, a FIFO or another non-regular file.
    case notRegularFile(path: String)
    /// The file is larger than any key file can be.
    case tooLarge(path: String)
    /// The file is not a key file; the reason never quotes its content.
    case malformed(path: String, reason: String)
    /// A system call failed (`operation`, with its `errno`).
    case system(path: String, operation: String, errno: Int32)
    /// The file or folder belongs to another user than the one running (uid `owner`).
    case notOwned(path: String, owner: UInt32)
    /// The folder holding a key lets others replace what is in it (writable by group or others,
    /// without the sticky bit).
    case unsafeFolder(path: String, mode: UInt32)

    public var description: String { described(as: "key file") }

    /// The description for a file that holds another secret than a key (`noun`: "password
    /// file"): its rules are a key file's, its messages name it for what it is.
    package func described(as noun: String) -> String {
        switch self {
        case .tooOpen(let path, let mode) where mode & UInt32(S_IFMT) != UInt32(S_IFDIR):
            return "\(path): permissions \(String(mode & 0o777, radix: 8)) are too open; a \(noun) must be 0600 (chmod 600 \(path))"
        case .tooLarge(let path): return "\(path): too large for a \(noun)"
        case .notOwned(let path, let owner) where noun != "key file":
            let user = geteuid()
            return "\(path): owned by \(PrivateFile.userName(owner)) (uid \(owner)), not by \(PrivateFile.userName(user)) (uid \(user)), "
                + "who runs kindly-push; a \(noun) of another user is refused"
        default: return keyFileDescription
        }
    }

    private var keyFileDescription: String {
        switch self {
        case .missing(let path): return "\(path): no such file"
        case .exists(let path): return "\(path): already exists; refusing to overwrite a key"
        case .tooOpen(let path, let mode):
            let permissions = String(mode & 0o777, radix: 8)
            if mode & UInt32(S_IFMT) == UInt32(S_IFDIR) {
                return "\(path): permissions \(permissions) are too open; a key folder must be 0700 (chmod 700 \(path))"
            }
            return "\(path): permissions \(permissions) are too open; a key file must be 0600 (chmod 600 \(path))"
        case .notRegularFile(let path): return "\(path): not a regular file"
        case .tooLarge(let path): return "\(path): too large for a key file"
        case .malformed(let path, let reason): return "\(path): \(reason)"
        case .system(let path, let operation, let code):
            return "\(path): \(operation) failed: \(Errno(code))"
        case .notOwned(let path, let owner):
            let user = geteuid()
            return "\(path): owned by \(PrivateFile.userName(owner)) (uid \(owner)), not by \(PrivateFile.userName(user)) (uid \(user)), "
                + "who runs kindly-push; keys and key folders of another user are refused"
        case .unsafeFolder(let path, let mode):
            let permissions = String(mode & 0o7777, radix: 8)
            return "\(path): permissions \(permissions) let other users replace the keys in it; "
                + "a folder holding keys must not be writable by group or others (chmod go-w \(path))"
        }
    }
}

/// Files only their owner may read: created 0600 whatever the umask, written atomically
/// (temporary file, fsync, rename or link, fsync of the folder) so that a crash never leaves
/// a torn or lost key, and refused when group or others can read them, as ssh does. As ssh does
/// too, a file or folder owned by another user than the effective one is refused (root uses
/// root's files only), and so is a folder that others may write to (unless sticky, as /tmp).
package enum PrivateFile {
    static let maximumSize = 64 * 1024

    /// The start of the name of every temporary file a write makes (and of those older versions
    /// made): a file whose name begins so is never a key, and is removed by
    /// ``removeLeftovers(in:)`` once its writer is gone.
    package static let temporaryPrefix = ".kindly-push-"

    private static let namelessFiles = Locked(true)

    /// Whether ``write(_:to:)`` writes a new file nameless first (Linux `O_TMPFILE`) where the
    /// system can. Tests turn it off to run the named-temporary-file fallback.
    package static var usesNamelessFiles: Bool {
        get { namelessFiles.withLock { $0 } }
        set { namelessFiles.withLock { $0 = newValue } }
    }

    /// The name of the user `uid` in the password database, or `uid N`.
    static func userName(_ uid: uid_t) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else {
            return "uid \(uid)"
        }
        return String(cString: name)
    }

    /// The home folder of the effective user in the password database, or `nil`.
    package static func passwordDatabaseHome() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil, let home = entry.pw_dir else {
            return nil
        }
        let text = String(cString: home)
        return text.isEmpty ? nil : text
    }

    /// `body`'s value (a system call that returns -1 and sets `errno` on failure, made again when
    /// a signal interrupts it: ``valueOrErrno(retryOnInterrupt:_:)``), or its `errno` as the
    /// failure of `operation` on `path`; an `errno` in `allowed` is taken as success (-1).
    @discardableResult
    private static func system<I: FixedWidthInteger>(
        _ path: String, _ operation: String, allowing allowed: Set<Int32> = [], _ body: () -> I
    ) throws(PrivateFileError) -> I {
        do throws(Errno) {
            return try valueOrErrno(body)
        } catch {
            guard allowed.contains(error.rawValue) else { throw .system(path: path, operation: operation, errno: error.rawValue) }
            return -1
        }
    }

    /// Refuses `status` (of `path`) unless the effective user owns it.
    private static func checkOwner(_ status: stat, path: String) throws(PrivateFileError) {
        guard status.st_uid == geteuid() else { throw .notOwned(path: path, owner: status.st_uid) }
    }

    /// Refuses the folder holding `path` when another user could replace what is in it: it is
    /// writable by group or others without the sticky bit, or owned by another user than the
    /// effective one or root.
    static func checkParent(of path: String) throws(PrivateFileError) {
        let folder = folderName(of: path)
        var status = stat()
        try system(folder, "stat") { stat(folder, &status) }
        guard status.st_uid == geteuid() || status.st_uid == 0 else { throw .notOwned(path: folder, owner: status.st_uid) }
        if status.st_mode & 0o022 != 0, status.st_mode & S_ISVTX == 0 {
            throw .unsafeFolder(path: folder, mode: UInt32(status.st_mode))
        }
    }

    /// The text of `path`, checked as ``read(_:)`` checks it (a password file).
    package static func readText(_ path: String) throws(PrivateFileError) -> String {
        try read(path).withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// What `parse` makes of the contents of `path`, read as ``read(_:)`` reads them (into a
    /// buffer wiped once `parse` returns); `parse` is given the path too, for its errors. The one
    /// shape of every key file's reader.
    package static func read<Value>(
        _ path: String, parsing parse: (UnsafeRawBufferPointer, String) throws(PrivateFileError) -> Value
    ) throws(PrivateFileError) -> Value {
        try read(path).withUnsafeBytes { (bytes) throws(PrivateFileError) in try parse(bytes, path) }
    }

    /// The contents of `path` in a wiped buffer, after checking that it is a regular file that
    /// only its owner can access.
    package static func read(_ path: String) throws(PrivateFileError) -> SecureBytes {
        let descriptor: Int32
        do throws(Errno) {
            descriptor = try valueOrErrno { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
        } catch {
            if error.rawValue == ENOENT { throw .missing(path: path) }
            // A symbolic link (O_NOFOLLOW).
            if error.rawValue == ELOOP { throw .notRegularFile(path: path) }
            throw .system(path: path, operation: "open", errno: error.rawValue)
        }
        defer { FileDescriptor(rawValue: descriptor).close() }
        var status = stat()
        try system(path, "stat") { fstat(descriptor, &status) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path: path) }
        try checkOwner(status, path: path)
        guard status.st_mode & 0o077 == 0 else { throw .tooOpen(path: path, mode: UInt32(status.st_mode)) }
        try checkParent(of: path)
        guard status.st_size <= maximumSize else { throw .tooLarge(path: path) }
        let size = Int(status.st_size)
        var readError: PrivateFileError?
        let contents = SecureBytes(count: size) { buffer in
            var filled = 0
            do throws(Errno) {
                try FileDescriptor(rawValue: descriptor).readAll(into: buffer, filled: &filled)
                // The file ended before its size: as a failed read.
                if filled < size { throw .ioError }
            } catch {
                readError = .system(path: path, operation: "read", errno: error.rawValue)
            }
        }
        if let readError { throw readError }
        return contents
    }

    /// Writes `contents` to `path` atomically with mode 0600: the file appears under its name
    /// only complete and flushed, and its folder entry is flushed before this returns.
    ///
    /// A new file is written nameless first (Linux `O_TMPFILE`) and named with `linkat`, so a
    /// crash or `kill -9` at any moment leaves either nothing or the whole file, never a partial
    /// key and never a stray temporary copy of a secret. Where that is unavailable (another
    /// system, a file system without `O_TMPFILE`, no `/proc`) a hidden temporary file
    /// (`.kindly-push-tmp-XXXXXX`, which no reader takes for a key) is written under an exclusive
    /// lock and renamed into place without replacing anything (`renameat2` with
    /// `RENAME_NOREPLACE`), so the key never has a second name. A kill before the rename leaves
    /// the temporary file; the keyring removes it the next time it is opened
    /// (``removeLeftovers(in:)``). Only where the file system cannot rename without replacing is
    /// it linked and then unlinked, and a kill between the two leaves a second name, removed the
    /// same way. An existing file at `path` is an error and is left untouched: a key is never
    /// replaced.
    ///
    /// Before writing, the temporary files that killed writes left in the folder
    /// (`.kindly-push-tmp-XXXXXX` whose lock no live writer holds) are removed, so that a key
    /// file's folder, like a keyring's, never keeps a stray copy of a secret for long.
    package static func write(_ contents: UnsafeRawBufferPointer, to path: String) throws(PrivateFileError) {
        let folder = folderName(of: path)
        _ = removeLeftovers(in: folder, where: isWriteLeftover)
        if usesNamelessFiles, let descriptor = openNameless(in: folder) {
            defer { FileDescriptor(rawValue: descriptor).close() }
            try fill(descriptor, with: contents, path: path)
            // linkat fails when the target exists, so an existing key is never replaced.
            do throws(Errno) {
                try nothingOrErrno { linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, path, AT_SYMLINK_FOLLOW) }
                syncFolder(folder)
                return
            } catch {
                if error.rawValue == EEXIST { throw .exists(path: path) }
                // Cannot name it here (no /proc): the named temporary file below does the job.
            }
        }

        let temporary = try TemporaryFile(template: "\(folder)/\(temporaryPrefix)tmp-XXXXXX", for: path)
        let descriptor = temporary.descriptor
        let temporaryPath = temporary.path
        var committed = false
        defer {
            if !committed { unlink(temporaryPath) }
            temporary.close()
        }
        try fill(descriptor, with: contents, path: path)
        switch renameWithoutReplacing(temporaryPath, path)?.rawValue {
        case nil:
            break
        case EEXIST:
            throw .exists(path: path)
        case EINVAL, ENOSYS, ENOTSUP:
            // The file system cannot rename without replacing: link() fails when the target
            // exists, so an existing key is never replaced.
            if try system(path, "link", allowing: [EEXIST], { link(temporaryPath, path) }) != 0 { throw .exists(path: path) }
            unlink(temporaryPath)
        case let code?:
            throw .system(path: path, operation: "rename", errno: code)
        }
        committed = true
        syncFolder(folder)
    }

    /// A hidden temporary file (`kp_temporary_file_create`): 0600, locked while it lives (so
    /// that ``removeLeftovers(in:)`` leaves it alone) and removed if the process is ended by
    /// SIGTERM, SIGINT or SIGHUP before ``close()``.
    package struct TemporaryFile {
        package let descriptor: Int32
        package let path: String
        private let slot: Int32

        /// Creates it from `template` (ending in `XXXXXX`); errors name `target`.
        package init(template: String, for target: String) throws(PrivateFileError) {
            var bytes = Array(template.utf8CString)
            var slot: Int32 = -1
            let descriptor = try PrivateFile.system(target, "create a temporary file") {
                bytes.withUnsafeMutableBufferPointer { kp_temporary_file_create($0.baseAddress!, &slot) }
            }
            self.descriptor = descriptor
            self.slot = slot
            path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }

        /// Forgets the file for the signal handler (it was renamed or removed) and closes it.
        package func close() {
            kp_temporary_file_forget(slot)
            FileDescriptor(rawValue: descriptor).close()
        }
    }

    private typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32) -> Int32

    /// glibc's renameat2 (2.28 and later), which the Glibc module does not export.
    private static let renameat2: RenameAt2? = dlsym(nil, "renameat2").map { unsafeBitCast($0, to: RenameAt2.self) }

    /// Renames `source` to `target` unless `target` exists: nil, or the error (EEXIST when it
    /// exists; EINVAL or ENOSYS where the system or file system cannot do it).
    private static func renameWithoutReplacing(_ source: String, _ target: String) -> Errno? {
        guard let renameat2 else { return Errno(ENOSYS) }
        let renameNoReplace: UInt32 = 1
        do throws(Errno) {
            try nothingOrErrno { renameat2(AT_FDCWD, source, AT_FDCWD, target, renameNoReplace) }
            return nil
        } catch {
            return error
        }
    }

    /// Removes the temporary files that interrupted writes left in `folder` (names beginning with
    /// ``temporaryPrefix``) and returns their paths. A file whose writer is still at work (it
    /// holds the file's lock) is left alone.
    /// Whether `name` is that of a temporary file ``write(_:to:)`` makes:
    /// `.kindly-push-tmp-` and six letters or digits.
    static func isWriteLeftover(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        let prefix = Array("\(temporaryPrefix)tmp-".utf8)
        return bytes.count == prefix.count + 6 && bytes.starts(with: prefix) && isTemporarySuffix(bytes.suffix(6))
    }

    /// Whether `bytes` are six letters or digits, as mkstemp puts in place of `XXXXXX`.
    package static func isTemporarySuffix(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.count == 6 && bytes.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    package static func removeLeftovers(in folder: String) -> [String] {
        removeLeftovers(in: folder) { $0.hasPrefix(temporaryPrefix) }
    }

    /// Removes the files of `folder` whose names `isLeftover` accepts, as
    /// ``removeLeftovers(in:)`` does, and only those of the effective user (the folder may be
    /// shared, as an `--output` folder is). Returns their paths.
    package static func removeLeftovers(in folder: String, where isLeftover: (String) -> Bool) -> [String] {
        guard let names = (try? entryNames(in: folder))?.filter(isLeftover) else { return [] }
        var removed: [String] = []
        for name in names.sorted() {
            let path = "\(folder)/\(name)"
            guard let status = try? FileStatus.ofLink(path), status.st_mode & S_IFMT != S_IFDIR, status.st_uid == geteuid() else {
                continue
            }
            if status.st_mode & S_IFMT == S_IFREG {
                // One another process holds (locked) is in use, not left over.
                guard let descriptor = try? valueOrErrno({ open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }) else { continue }
                defer { FileDescriptor(rawValue: descriptor).close() }
                guard (try? nothingOrErrno({ flock(descriptor, LOCK_EX | LOCK_NB) })) != nil else { continue }
            }
            if (try? nothingOrErrno({ unlink(path) })) != nil { removed.append(path) }
        }
        if !removed.isEmpty { syncFolder(folder) }
        return removed
    }

    /// The names in `folder` (without `.` and `..`), in no order; `nil` when it cannot be opened
    /// (`errno` says why).
    package static func entryNames(in folder: String) throws(Errno) -> [String] {
        let directory = try pointerOrErrno { opendir(folder) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = entryName(entry)
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// The name of a `readdir` entry, read where it lies: a record is only as long as its name
    /// (copying `d_name`, a 256-byte field, reads past the end of the last record of a buffer).
    /// `entry` is what `readdir` returned.
    package static func entryName(_ entry: UnsafeRawPointer) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return String(cString: (entry + offset).assumingMemoryBound(to: CChar.self))
    }

    /// A new file without a name in `folder` (opened for writing, close-on-exec, mode 0600
    /// before the umask), or nil where the system cannot make one.
    package static func openNameless(in folder: String) -> Int32? {
        #if os(Linux) && (arch(x86_64) || arch(arm64))
            // O_TMPFILE is __O_TMPFILE | O_DIRECTORY; Glibc's module does not export it (it needs
            // _GNU_SOURCE). __O_TMPFILE is 020000000 on these architectures.
            let temporaryFile: Int32 = 0o20000000 | O_DIRECTORY
            let descriptor = open(folder, temporaryFile | O_WRONLY | O_CLOEXEC, 0o600)
            return descriptor >= 0 ? descriptor : nil
        #else
            return nil
        #endif
    }

    /// Makes the open file `descriptor` 0600 whatever the umask did, writes all of `contents`
    /// and flushes it to disk.
    private static func fill(_ descriptor: Int32, with contents: UnsafeRawBufferPointer, path: String) throws(PrivateFileError) {
        try system(path, "chmod") { fchmod(descriptor, 0o600) }
        do throws(Errno) {
            try FileDescriptor(rawValue: descriptor).writeAll(contents)
        } catch {
            throw .system(path: path, operation: "write", errno: error.rawValue)
        }
        try system(path, "fsync") { fsync(descriptor) }
    }

    /// Makes `path` (and its parents) a folder only its owner can enter, or checks that it is one.
    package static func makePrivateFolder(_ path: String) throws(PrivateFileError) {
        if (try? FileStatus.of(path)) == nil {
            let parent = folderName(of: path)
            if parent != path, (try? FileStatus.of(parent)) == nil {
                try makeFolder(parent, mode: 0o700)
            }
            try checkParent(of: path)
            try system(path, "mkdir", allowing: [EEXIST]) { mkdir(path, 0o700) }
            // mkdir's mode is cut by the umask: the folder is made exactly 0700.
            try system(path, "chmod") { chmod(path, 0o700) }
            // The new folder's own entry must reach the disk too, or a crash could lose the
            // folder with the first key in it.
            syncFolder(parent)
        }
        try checkPrivateFolder(path)
    }

    /// Checks that `path` is a folder only its owner can enter; `.missing` only when it does not exist.
    static func checkPrivateFolder(_ path: String) throws(PrivateFileError) {
        var status = stat()
        if try system(path, "stat", allowing: [ENOENT], { stat(path, &status) }) != 0 { throw .missing(path: path) }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw .malformed(path: path, reason: "not a folder") }
        try checkOwner(status, path: path)
        guard status.st_mode & 0o077 == 0 else { throw .tooOpen(path: path, mode: UInt32(status.st_mode)) }
        try checkParent(of: path)
    }

    private static func makeFolder(_ path: String, mode: mode_t) throws(PrivateFileError) {
        if (try? FileStatus.of(path)) != nil { return }
        let parent = folderName(of: path)
        if parent != path { try makeFolder(parent, mode: 0o755) }
        try system(path, "mkdir", allowing: [EEXIST]) { mkdir(path, mode) }
    }

    /// The folder that holds `path`: "." for a bare name, "/" for a file at the root. Split on
    /// the last "/" byte, as the kernel reads a path (a Character search would also run the
    /// grapheme-breaking code, which a one-shot decrypt need not map).
    package static func folderName(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == path.utf8.startIndex { return "/" }
        return String(decoding: path.utf8[..<slash], as: UTF8.self)
    }

    /// Makes a rename or link durable: the folder entry is flushed too. Best effort, by
    /// design: it runs after the rename or link took effect, so a failure here (a folder that
    /// cannot be opened or flushed) cannot undo it, and reporting the write as failed would
    /// make a caller believe the file is not there when it is.
    package static func syncFolder(_ folder: String) {
        guard let descriptor = try? valueOrErrno({ open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) else { return }
        defer { FileDescriptor(rawValue: descriptor).close() }
        // Its failure is the best effort's: nothing to undo (see above).
        try? nothingOrErrno { fsync(descriptor) }
    }
}

internal import KindlyPushCore

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

    public var description: String {
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
            return "\(path): \(operation) failed: \(String(cString: strerror(code)))"
        }
    }
}

/// Files only their owner may read: created 0600 whatever the umask, written atomically
/// (temporary file, fsync, rename or link, fsync of the folder) so that a crash never leaves
/// a torn or lost key, and refused when group or others can read them, as ssh does.
package enum PrivateFile {
    static let maximumSize = 64 * 1024

    /// The contents of `path` in a wiped buffer, after checking that it is a regular file that
    /// only its owner can access.
    static func read(_ path: String) throws(PrivateFileError) -> SecureBytes {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT { throw .missing(path: path) }
            if code == ELOOP { throw .notRegularFile(path: path) }
            throw .system(path: path, operation: "open", errno: code)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .system(path: path, operation: "stat", errno: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path: path) }
        guard status.st_mode & 0o077 == 0 else { throw .tooOpen(path: path, mode: UInt32(status.st_mode)) }
        guard status.st_size <= maximumSize else { throw .tooLarge(path: path) }
        let size = Int(status.st_size)
        var readError: PrivateFileError?
        let contents = SecureBytes(count: size) { buffer in
            var offset = 0
            while offset < size {
                let count = Glibc.read(descriptor, buffer.baseAddress! + offset, size - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else {
                    readError = .system(path: path, operation: "read", errno: count < 0 ? errno : EIO)
                    return
                }
                offset += count
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
    /// (`.kindly-push-XXXXXX`, which no reader takes for a key) is written and linked or renamed.
    /// An existing file at `path` is an error and is left untouched: a key is never replaced.
    static func write(_ contents: UnsafeRawBufferPointer, to path: String) throws(PrivateFileError) {
        let folder = folderName(of: path)
        if let descriptor = openNameless(in: folder) {
            defer { close(descriptor) }
            try fill(descriptor, with: contents, path: path)
            // linkat fails when the target exists, so an existing key is never replaced.
            let linked = linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, path, AT_SYMLINK_FOLLOW)
            let code = errno
            if linked == 0 {
                syncFolder(folder)
                return
            }
            if code == EEXIST { throw .exists(path: path) }
            // Cannot name it here (no /proc): the named temporary file below does the job.
        }

        var template = Array("\(folder)/.kindly-push-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw .system(path: path, operation: "create a temporary file", errno: errno) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        let temporaryPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var committed = false
        defer {
            if !committed { unlink(temporaryPath) }
        }
        do {
            defer { close(descriptor) }
            try fill(descriptor, with: contents, path: path)
        }
        // link() fails when the target exists, so an existing key is never replaced.
        guard link(temporaryPath, path) == 0 else {
            let code = errno
            if code == EEXIST { throw .exists(path: path) }
            throw .system(path: path, operation: "link", errno: code)
        }
        unlink(temporaryPath)
        committed = true
        syncFolder(folder)
    }

    /// A new file without a name in `folder`, or nil where the system cannot make one.
    private static func openNameless(in folder: String) -> Int32? {
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
        guard fchmod(descriptor, 0o600) == 0 else { throw .system(path: path, operation: "chmod", errno: errno) }
        var offset = 0
        while offset < contents.count {
            let count = Glibc.write(descriptor, contents.baseAddress! + offset, contents.count - offset)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .system(path: path, operation: "write", errno: count < 0 ? errno : EIO) }
            offset += count
        }
        guard fsync(descriptor) == 0 else { throw .system(path: path, operation: "fsync", errno: errno) }
    }

    /// Makes `path` (and its parents) a folder only its owner can enter, or checks that it is one.
    package static func makePrivateFolder(_ path: String) throws(PrivateFileError) {
        var status = stat()
        if stat(path, &status) != 0 {
            let parent = folderName(of: path)
            if parent != path, stat(parent, &status) != 0 {
                try makeFolder(parent, mode: 0o700)
            }
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                throw .system(path: path, operation: "mkdir", errno: errno)
            }
            _ = chmod(path, 0o700)
            // The new folder's own entry must reach the disk too, or a crash could lose the
            // folder with the first key in it.
            syncFolder(parent)
        }
        try checkPrivateFolder(path)
    }

    /// Checks that `path` is a folder only its owner can enter; `.missing` only when it does not exist.
    static func checkPrivateFolder(_ path: String) throws(PrivateFileError) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let code = errno
            if code == ENOENT { throw .missing(path: path) }
            throw .system(path: path, operation: "stat", errno: code)
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw .malformed(path: path, reason: "not a folder") }
        guard status.st_mode & 0o077 == 0 else { throw .tooOpen(path: path, mode: UInt32(status.st_mode)) }
    }

    private static func makeFolder(_ path: String, mode: mode_t) throws(PrivateFileError) {
        var status = stat()
        if stat(path, &status) == 0 { return }
        let parent = folderName(of: path)
        if parent != path { try makeFolder(parent, mode: 0o755) }
        guard mkdir(path, mode) == 0 || errno == EEXIST else { throw .system(path: path, operation: "mkdir", errno: errno) }
    }

    package static func folderName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Makes a rename or link durable: the folder entry is flushed too.
    static func syncFolder(_ folder: String) {
        let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }
}

#if canImport(Glibc)
    package import Glibc
#endif

/// What `stat(2)` and its kin say of a file, through ``valueOrErrno(retryOnInterrupt:_:)``: the
/// one way the project asks, so that a failure is an ``Errno`` and never a return value to
/// compare.
package enum FileStatus {
    /// `stat(2)`: the file at `path`, symbolic links followed.
    package static func of(_ path: String) throws(Errno) -> stat {
        var status = stat()
        try nothingOrErrno { stat(path, &status) }
        return status
    }

    /// `lstat(2)`: `path` itself, a symbolic link not followed.
    package static func ofLink(_ path: String) throws(Errno) -> stat {
        var status = stat()
        try nothingOrErrno { lstat(path, &status) }
        return status
    }

    /// `fstat(2)`: the file open at `descriptor`.
    package static func of(descriptor: Int32) throws(Errno) -> stat {
        var status = stat()
        try nothingOrErrno { fstat(descriptor, &status) }
        return status
    }
}

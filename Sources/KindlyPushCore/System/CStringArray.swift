#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with `strings` as a NULL-terminated array of C strings, as `execve`,
/// `posix_spawn` (`argv`, `envp`) and GLib's string lists take them; the copies are freed after.
package func withCStringArray<Result>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result) -> Result {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
    defer {
        for copy in copies { free(copy) }
    }
    return copies.withUnsafeBufferPointer { body($0.baseAddress!) }
}

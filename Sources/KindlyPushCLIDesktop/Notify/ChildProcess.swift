internal import KindlyPushCLI
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Commands that `kindly-push` starts on the user's behalf (`notify --on-open`).
enum ChildProcess {
    /// Starts `/bin/sh -c command` with exactly `environment`, standard input on `/dev/null` (it
    /// never reads the pushes meant for notify), standard output on `/dev/null` (notify's own
    /// carries the opened events only, and a long-lived program started by the command must not
    /// hold that pipe open after notify ends), standard error inherited, and no other descriptor
    /// (where glibc can close them, 2.34 and later). Does not wait.
    static func spawnShell(_ command: String, environment: CommandEnvironment) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        let initialized = posix_spawn_file_actions_init(&actions)
        guard initialized == 0 else { return .failure(SpawnError(code: initialized)) }
        defer {
            // It only frees what the actions hold: glibc's never fails.
            let destroyed = posix_spawn_file_actions_destroy(&actions)
            assert(destroyed == 0)
        }
        // Each action's error (the library's memory ran out) is the spawn's.
        let added = [
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0),
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0),
            // Nothing else of notify's: no descriptor it inherited or opened (the bus, the store)
            // stays open in a program that may run for long after it.
            addCloseFrom?(&actions, STDERR_FILENO + 1) ?? 0,
        ]
        if let failed = added.first(where: { $0 != 0 }) { return .failure(SpawnError(code: failed)) }
        let arguments: [UnsafeMutablePointer<CChar>?] = ["sh", "-c", command].map { (text: String) in strdup(text) }
        let variables: [UnsafeMutablePointer<CChar>?] = environment.map { (name, value) in strdup("\(name)=\(value)") }
        defer {
            for copy in arguments + variables { free(copy) }
        }
        var pid: pid_t = 0
        let status = (arguments + [nil]).withUnsafeBufferPointer { argv in
            (variables + [nil]).withUnsafeBufferPointer { envp in
                posix_spawn(&pid, "/bin/sh", &actions, nil, argv.baseAddress!, envp.baseAddress!)
            }
        }
        guard status == 0 else { return .failure(SpawnError(code: status)) }
        return .success(pid)
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// glibc's posix_spawn_file_actions_addclosefrom_np (2.34 and later), which the Glibc module
    /// does not export (it is a GNU extension).
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }

    /// Whether `pid` has ended (and is reaped now). Never waits.
    static func reap(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        // An error (no such child) counts as ended: nothing is left to wait for.
        return (try? valueOrErrno { waitpid(pid, &status, WNOHANG) }) != 0
    }

    struct SpawnError: Error, CustomStringConvertible {
        let code: Int32
        var description: String { Errno(code).description }
    }
}

package import KindlyPushCore

#if canImport(Glibc)
    package import Glibc
#endif

/// Programs a command starts: the user's (`notify --on-open`) and a sibling binary asked for its
/// declarations (``SiblingBinary/declarations(environment:)``). Each gets exactly the environment
/// it is given, standard input on `/dev/null`, standard error inherited and no other descriptor
/// of ours (where glibc can close them, 2.34 and later).
package enum ChildProcess {
    /// Starts `/bin/sh -c command`, standard output on `/dev/null` (notify's own carries the
    /// opened events only, and a long-lived program started by the command must not hold that
    /// pipe open after notify ends). Does not wait.
    package static func spawnShell(_ command: String, environment: CommandEnvironment) -> Result<pid_t, SpawnError> {
        spawn("/bin/sh", ["sh", "-c", command], environment: environment, standardOutput: nil)
    }

    /// Runs `path` with `arguments` (the first is its name) and returns what it printed on
    /// standard output once it has exited 0; a failure to start, a read error or another exit
    /// is the error.
    package static func output(
        of path: String, _ arguments: [String], environment: CommandEnvironment
    ) -> Result<[UInt8], SpawnError> {
        let pipe: (reading: FileDescriptor, writing: FileDescriptor)
        do throws(Errno) {
            pipe = try FileDescriptor.pipe()
        } catch {
            return .failure(.system(error))
        }
        let started = spawn(path, arguments, environment: environment, standardOutput: pipe.writing.rawValue)
        pipe.writing.close()
        let pid: pid_t
        switch started {
        case .success(let started): pid = started
        case .failure(let error):
            pipe.reading.close()
            return .failure(error)
        }
        let read = Result<[UInt8], Errno> { () throws(Errno) in try pipe.reading.readAll(upTo: Self.mostOutput) }
        // Closed before the wait: a child with more to print then ends on EPIPE, never blocks.
        pipe.reading.close()
        var status: Int32 = 0
        do throws(Errno) {
            _ = try valueOrErrno { waitpid(pid, &status, 0) }
        } catch {
            return .failure(.system(error))
        }
        let output: [UInt8]
        switch read {
        case .success(let bytes) where bytes.count <= Self.mostOutput: output = bytes
        case .success: return .failure(.ended("it printed more than \(Self.mostOutput) bytes"))
        case .failure(let error): return .failure(.system(error))
        }
        // WIFEXITED, WEXITSTATUS and WTERMSIG, which Swift's Glibc does not export: the low 7
        // bits are the signal that ended it (0: it exited), the next 8 its exit status.
        guard status & 0x7F == 0 else { return .failure(.ended("it was ended by signal \(status & 0x7F)")) }
        guard (status >> 8) & 0xFF == 0 else { return .failure(.ended("it exited with status \((status >> 8) & 0xFF)")) }
        return .success(output)
    }

    /// The most ``output(of:_:environment:)`` reads: 1 MiB.
    static let mostOutput = 1 << 20

    /// Starts `path` with `arguments` and exactly `environment`; standard output on
    /// `standardOutput` (a descriptor, moved to 1 in the child) or on `/dev/null`.
    private static func spawn(
        _ path: String, _ arguments: [String], environment: CommandEnvironment, standardOutput: Int32?
    ) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        let initialized = posix_spawn_file_actions_init(&actions)
        guard initialized == 0 else { return .failure(.system(Errno(rawValue: initialized))) }
        defer {
            // It only frees what the actions hold: glibc's never fails.
            let destroyed = posix_spawn_file_actions_destroy(&actions)
            assert(destroyed == 0)
        }
        // Each action's error (the library's memory ran out) is the spawn's.
        let added = [
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0),
            standardOutput.map { posix_spawn_file_actions_adddup2(&actions, $0, STDOUT_FILENO) }
                ?? posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0),
            // Nothing else of ours: no descriptor we inherited or opened (the bus, the store)
            // stays open in a program that may run for long after us.
            addCloseFrom?(&actions, STDERR_FILENO + 1) ?? 0,
        ]
        if let failed = added.first(where: { $0 != 0 }) { return .failure(.system(Errno(rawValue: failed))) }
        var pid: pid_t = 0
        let status = withCStringArray(arguments) { argv in
            withCStringArray(environment.assignments) { envp in posix_spawn(&pid, path, &actions, nil, argv, envp) }
        }
        guard status == 0 else { return .failure(.system(Errno(rawValue: status))) }
        return .success(pid)
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// glibc's posix_spawn_file_actions_addclosefrom_np (2.34 and later), which the Glibc module
    /// does not export (it is a GNU extension).
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }

    /// Whether `pid` has ended (and is reaped now). Never waits.
    package static func reap(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        // An error (no such child) counts as ended: nothing is left to wait for.
        return (try? valueOrErrno { waitpid(pid, &status, WNOHANG) }) != 0
    }

    /// Why a program did not start or did not finish well.
    package enum SpawnError: Error, CustomStringConvertible {
        /// A call to start it, read what it printed or wait for it failed.
        case system(Errno)
        /// It ran, and ended otherwise than the caller needs (a signal, a status, too much output).
        case ended(String)

        package var description: String {
            switch self {
            case .system(let error): error.description
            case .ended(let why): why
            }
        }
    }
}

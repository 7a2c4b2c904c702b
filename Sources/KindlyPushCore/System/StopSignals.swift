#if canImport(Glibc)
    import Glibc
#endif

/// SIGTERM and SIGINT as a request to stop, for the commands that run until told (the Redis
/// workers, `send`): the handler only sets a flag, which they read between two pieces of work,
/// so that what is in hand is finished and committed first.
package enum StopSignals {
    /// Installs the handler for both signals and unblocks them: a parent (a test runner) or
    /// ``hold(_:)`` may have blocked them, and one that came meanwhile arrives now.
    package static func install() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in stopFlag = signal }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGTERM, &action, nil)
        sigaction(SIGINT, &action, nil)
        hold(false)
    }

    /// Blocks both signals (`held`) or unblocks them: `kindly-push` holds them from before it
    /// runs a worker's binary until that binary's handler is in place, so a stop during start-up
    /// stops the worker before it reads anything.
    package static func hold(_ held: Bool = true) {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(held ? SIG_BLOCK : SIG_UNBLOCK, &signals, nil)
    }

    /// Whether SIGTERM or SIGINT came since ``install()``.
    package static var requested: Bool { stopFlag != 0 }

    /// The signal that asked, for a stop line: `SIGTERM` or `SIGINT` (the last of them to come).
    package static var name: String { stopFlag == SIGINT ? "SIGINT" : "SIGTERM" }
}

/// The signal that asked to stop (0 for none); set by the handler only (async-signal-safe).
nonisolated(unsafe) private var stopFlag: sig_atomic_t = 0

internal import CProcessGuard
internal import KindlyPushCLI
internal import KindlyPushCLIDesktop
internal import KindlyPushRedis

#if canImport(Glibc)
    import Glibc
#endif

// `kindly-push-redis`: the commands of `kindly-push` with the Redis Streams workers (hiredis) and
// the desktop services of `kindly-push-desktop` (so that a worker can use the Secret Service).
// `kindly-push` runs it when a command is given `--redis`; it can be run directly too.

// First, as `kindly-push` does (see "Hardening (round 2)" in the README): standard streams held,
// the process not dumpable, crash handlers that dump nothing.
_ = kp_hold_standard_streams()
_ = kp_make_undumpable()
_ = kp_install_crash_handlers()

DesktopBinary.installed = DesktopServicesImplementation()
RedisBinary.installed = RedisWorkerServices()

// A closed pipe or socket must give EPIPE (hiredis then reconnects), not kill the process.
signal(SIGPIPE, SIG_IGN)
exit(runKindlyPush(Array(CommandLine.arguments.dropFirst()), environment: .ofProcess()))

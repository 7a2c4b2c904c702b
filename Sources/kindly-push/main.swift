internal import CProcessGuard
internal import KindlyPushCLI

#if canImport(Glibc)
    import Glibc
#endif

// `kindly-push`: links neither Foundation nor libsecret, GIO or SQLite, so that a one-shot run
// starts fast; what needs them runs in `kindly-push-desktop` (see DesktopServices).

// First, before any file is opened or any key is read (see "Hardening (round 2)" in the README):
// closed standard streams are held on /dev/null, so no file takes their numbers; the process is
// not dumpable (no core file, no reading of its memory by other processes of the user); a crash
// prints one fixed line and exits 70, instead of the Swift runtime's report, which dumps memory
// around each register.
_ = kp_hold_standard_streams()
_ = kp_make_undumpable()
_ = kp_install_crash_handlers()

// A closed pipe must give EPIPE (a quiet end, or io), not kill the process silently.
signal(SIGPIPE, SIG_IGN)
exit(runKindlyPush(Array(CommandLine.arguments.dropFirst()), environment: .ofProcess()))

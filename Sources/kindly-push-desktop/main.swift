internal import CProcessGuard
internal import KindlyPushCLI
internal import KindlyPushCLIDesktop

#if canImport(Glibc)
    import Glibc
#endif

// `kindly-push-desktop`: the commands of `kindly-push` with the services that need libsecret,
// GIO and SQLite (the Secret Service keyring, notify, doctor). `kindly-push` runs it when a
// command needs them; it can be run directly too.

// First, before any file is opened or any key is read (see "Hardening (round 2)" in the README):
// closed standard streams are held on /dev/null, so no file takes their numbers; the process is
// not dumpable (no core file, no reading of its memory by other processes of the user); a crash
// prints one fixed line and exits 70, instead of the Swift runtime's report, which dumps memory
// around each register.
_ = kp_hold_standard_streams()
_ = kp_make_undumpable()
_ = kp_install_crash_handlers()

DesktopBinary.installed = DesktopServicesImplementation()

// A closed pipe must give EPIPE (a quiet end, or io), not kill the process silently.
signal(SIGPIPE, SIG_IGN)
exit(runKindlyPush(Array(CommandLine.arguments.dropFirst()), environment: .ofProcess()))

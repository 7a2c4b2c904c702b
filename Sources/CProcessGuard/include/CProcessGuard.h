// What the command does first, before it reads a key: the few process-wide settings that Swift
// cannot make (prctl is C-variadic) or should not make (a signal handler must be
// async-signal-safe, which only plain C code can promise).
#ifndef KINDLY_PUSH_PROCESS_GUARD_H
#define KINDLY_PUSH_PROCESS_GUARD_H

/// Opens /dev/null, read-only, on each of the descriptors 0, 1 and 2 that is closed, so that no
/// file the command opens later takes a standard stream's number, and a write to a standard
/// output or error that was closed at start fails (EBADF) instead of going to that file.
/// Returns 0, or the errno of the call that failed.
int kp_hold_standard_streams(void);

/// Makes the process non-dumpable (prctl(PR_SET_DUMPABLE, 0)): no core file, and no other
/// process of the same user may read its memory (ptrace, /proc/PID/mem). Returns 0 or errno.
int kp_make_undumpable(void);

/// Replaces the crash handlers (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP; the Swift
/// runtime's backtracer installs its own for these) with one that writes the fixed line
/// `kindly-push: crashed (SIGNAME)` to standard error and ends the process with _exit(70),
/// on an alternate stack. Nothing from memory or registers is printed. Not installed in a build
/// under AddressSanitizer or ThreadSanitizer, whose own reports are wanted there.
/// Returns 0 or errno.
int kp_install_crash_handlers(void);

#endif

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

/// How many temporary files may be registered at once (kp_temporary_file_create).
#define KP_TEMPORARY_FILE_SLOTS 64

/// Creates a hidden temporary file from `template_path` (a path ending in "XXXXXX", which is
/// replaced in place, as mkstemp does): mode 0600, close-on-exec, opened for reading and
/// writing, with an exclusive flock held on it (so that a sweep of leftovers, which takes the
/// lock first, never removes it: a file swept between its creation and its lock is made again).
/// The path is registered in a fixed table: if the process is then ended by SIGTERM, SIGINT or
/// SIGHUP, a handler (async-signal-safe: unlink(2) on each registered path, then death by the
/// same signal) removes the file. The handlers are installed on the first call, for each of the
/// three signals whose disposition is the default one (an ignored signal stays ignored, and a
/// handler of the host program is left alone).
///
/// Returns the descriptor and sets `*slot` (to pass to kp_temporary_file_forget), or returns -1
/// with errno set (EMFILE when the table is full: the file is then not made).
int kp_temporary_file_create(char *template_path, int *slot);

/// Forgets the registered file of `slot` (after it was renamed into place or removed); a
/// negative slot is ignored.
void kp_temporary_file_forget(int slot);

/// 1 when the caller runs on Dispatch's main queue, where the main actor runs (a job of the main
/// actor, a block on the main queue, or the main thread outside any queue); 0 otherwise. On
/// libdispatch's C entry points, which the Swift runtime links already: the command does not
/// link Dispatch's Swift overlay for it. (Not the main thread's id: under `dispatchMain()`, as in
/// an async `main`, Linux's Dispatch runs the main queue on another thread.)
int kp_on_main_queue(void);

#endif

#define _GNU_SOURCE
#include "CProcessGuard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int kp_hold_standard_streams(void) {
    for (int descriptor = 0; descriptor <= 2; descriptor++) {
        if (fcntl(descriptor, F_GETFD) != -1 || errno != EBADF) continue;
        // The lowest free number is taken, and the lower ones are open by now: it is `descriptor`.
        int opened = open("/dev/null", O_RDONLY);
        if (opened < 0) return errno;
        if (opened != descriptor) {
            int moved = dup2(opened, descriptor);
            int code = errno;
            close(opened);
            if (moved < 0) return code;
        }
    }
    return 0;
}

int kp_make_undumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : errno;
}

#define LINE(name) "kindly-push: crashed (" name ")\n"

// Async-signal-safe: a fixed string, write(2) and _exit(2), nothing else.
static void crashed(int signal) {
    const char *line;
    switch (signal) {
    case SIGSEGV: line = LINE("SIGSEGV"); break;
    case SIGBUS: line = LINE("SIGBUS"); break;
    case SIGILL: line = LINE("SIGILL"); break;
    case SIGFPE: line = LINE("SIGFPE"); break;
    case SIGABRT: line = LINE("SIGABRT"); break;
    case SIGTRAP: line = LINE("SIGTRAP"); break;
    default: line = LINE("signal"); break;
    }
    size_t length = 0;
    while (line[length] != '\0') length++;
    ssize_t written = write(STDERR_FILENO, line, length);
    (void)written;
    _exit(70);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KP_SANITIZED 1
#endif
#endif

int kp_install_crash_handlers(void) {
    // SIGQUIT is the Swift runtime's backtracer's too, which would report (and wait) instead of
    // ending the run: back to its default, unless the parent ignores it, so that it ends the
    // process as SIGTERM does (temporary files removed first, below).
    struct sigaction quit;
    if (sigaction(SIGQUIT, NULL, &quit) == 0) {
        int ignored = !(quit.sa_flags & SA_SIGINFO) && quit.sa_handler == SIG_IGN;
        if (!ignored) signal(SIGQUIT, SIG_DFL);
    }
#ifdef KP_SANITIZED
    return 0;
#else
    // The handler runs on this stack when the main thread's own is exhausted.
    static char alternate[64 * 1024];
    stack_t stack;
    memset(&stack, 0, sizeof stack);
    stack.ss_sp = alternate;
    stack.ss_size = sizeof alternate;
    if (sigaltstack(&stack, NULL) != 0) return errno;

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = crashed;
    // A fault inside the handler gets the default action (death by the signal; no core, since the
    // process is not dumpable), never a loop.
    action.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigfillset(&action.sa_mask);
    const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
    for (size_t index = 0; index < sizeof signals / sizeof signals[0]; index++) {
        if (sigaction(signals[index], &action, NULL) != 0) return errno;
    }
    return 0;
#endif
}

// MARK: Temporary files removed on every signal whose default action ends the process

// A slot is free (0), being filled (1) or holds a path to remove (2). The handler reads only
// slots in state 2, whose path is complete: it was written before the state was stored.
static char temporary_paths[KP_TEMPORARY_FILE_SLOTS][PATH_MAX];
static atomic_int temporary_states[KP_TEMPORARY_FILE_SLOTS];
// Registrations under way, and whether a handler started: with both sequentially consistent,
// either a registration sees `terminating` and backs out, or the handler sees it under way and
// waits for it (Dekker's handshake), so no file is made after the handler's sweep.
static atomic_int temporary_registering;
static atomic_int temporary_terminating;
// Every signal whose default action ends the process, but the crash signals (which have handlers
// of their own, above) and SIGKILL: SIGTERM, SIGINT and SIGHUP, and also SIGUSR1, SIGALRM or
// SIGXFSZ (from `ulimit -f`), which once ended a run with its plaintext left behind.
// The real-time signals too (their default action is to terminate), added at run time.
static const int temporary_signals[] = {
    SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGPOLL, SIGSTKFLT, SIGPWR,
};

// The set of those signals, the real-time ones included.
static void temporary_signal_set(sigset_t *set) {
    sigemptyset(set);
    for (size_t index = 0; index < sizeof temporary_signals / sizeof temporary_signals[0]; index++) {
        sigaddset(set, temporary_signals[index]);
    }
    for (int signal = SIGRTMIN; signal <= SIGRTMAX; signal++) sigaddset(set, signal);
}
static pthread_once_t temporary_handlers_once = PTHREAD_ONCE_INIT;

// Async-signal-safe: atomics, nanosleep, unlink, sigaction, sigprocmask, raise, _exit.
static void remove_temporary_files(int signal) {
    atomic_store(&temporary_terminating, 1);
    // A registration under way on another thread finishes in microseconds; wait for it (at most
    // about 1 s, should that thread be stopped).
    for (int waited = 0; waited < 1000 && atomic_load(&temporary_registering) > 0; waited++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    for (int index = 0; index < KP_TEMPORARY_FILE_SLOTS; index++) {
        if (atomic_load(&temporary_states[index]) == 2) unlink(temporary_paths[index]);
    }
    // Die of the signal, as without this handler.
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(signal);
    _exit(128 + signal);
}

static void install_temporary_handlers(void) {
    sigset_t all;
    temporary_signal_set(&all);
    for (int signal = 1; signal < NSIG; signal++) {
        if (sigismember(&all, signal) != 1) continue;
        struct sigaction current;
        if (sigaction(signal, NULL, &current) != 0) continue;
        // A signal the process ignores or handles itself (SIGPIPE is ignored) keeps that.
        if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) continue;
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = remove_temporary_files;
        // The others wait while one runs: the files are removed once, then the process dies.
        action.sa_mask = all;
        action.sa_flags = SA_RESTART;
        sigaction(signal, &action, NULL);
    }
}

int kp_temporary_file_create(char *template_path, int *slot) {
    *slot = -1;
    size_t length = strlen(template_path);
    if (length >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    pthread_once(&temporary_handlers_once, install_temporary_handlers);
    // Not interrupted by the handler on this thread between mkstemp and the registration.
    sigset_t blocked, previous;
    temporary_signal_set(&blocked);
    pthread_sigmask(SIG_BLOCK, &blocked, &previous);
    atomic_fetch_add(&temporary_registering, 1);
    int descriptor = -1;
    int code = 0;
    int chosen = -1;
    if (atomic_load(&temporary_terminating)) {
        code = EINTR;
        goto done;
    }
    for (int index = 0; index < KP_TEMPORARY_FILE_SLOTS; index++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&temporary_states[index], &expected, 1)) {
            chosen = index;
            break;
        }
    }
    if (chosen < 0) {
        code = EMFILE;
        goto done;
    }
    char original[PATH_MAX];
    memcpy(original, template_path, length + 1);
    for (int attempt = 0; attempt < 100; attempt++) {
        memcpy(template_path, original, length + 1);
        descriptor = mkostemp(template_path, O_CLOEXEC);
        if (descriptor < 0) {
            code = errno;
            break;
        }
        // Registered at once, before the lock can wait: a signal now removes it.
        memcpy(temporary_paths[chosen], template_path, length + 1);
        atomic_store(&temporary_states[chosen], 2);
        int locked;
        do {
            locked = flock(descriptor, LOCK_EX);
        } while (locked != 0 && errno == EINTR);
        struct stat status;
        if (locked == 0 && fstat(descriptor, &status) == 0 && status.st_nlink > 0) break;
        // Swept by another run between mkstemp and the lock (or the lock failed): again.
        atomic_store(&temporary_states[chosen], 1);
        if (locked != 0) unlink(template_path);
        close(descriptor);
        descriptor = -1;
        code = EAGAIN;
    }
    if (descriptor < 0) {
        atomic_store(&temporary_states[chosen], 0);
    } else {
        *slot = chosen;
        code = 0;
    }
done:
    atomic_fetch_sub(&temporary_registering, 1);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (descriptor < 0) errno = code;
    return descriptor;
}

void kp_temporary_file_forget(int slot) {
    if (slot < 0 || slot >= KP_TEMPORARY_FILE_SLOTS) return;
    atomic_store(&temporary_states[slot], 0);
}

// libdispatch's C API, declared here rather than included: its header is not on a C target's
// include path, and only these three entry points are needed.
struct dispatch_queue_s;
extern struct dispatch_queue_s _dispatch_main_q;  // dispatch_get_main_queue()
void *dispatch_get_specific(const void *key);
void dispatch_queue_set_specific(struct dispatch_queue_s *queue, const void *key, void *context,
                                 void (*destructor)(void *));

static char main_queue_key;
static pthread_once_t main_queue_marked = PTHREAD_ONCE_INIT;

static void mark_main_queue(void) {
    dispatch_queue_set_specific(&_dispatch_main_q, &main_queue_key, &main_queue_key, NULL);
}

int kp_on_main_queue(void) {
    pthread_once(&main_queue_marked, mark_main_queue);
    return dispatch_get_specific(&main_queue_key) == &main_queue_key;
}

#define _GNU_SOURCE
#include "CProcessGuard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
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

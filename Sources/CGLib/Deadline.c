// The time budgets of CSecretShim and CDesktopShim (CGLib.h).
#include <gio/gio.h>

#include "CGLib.h"

struct KpgDeadline {
    GCancellable *cancellable;
    GSource *timer;
};

static gpointer run_timers(gpointer context) {
    GMainLoop *loop = g_main_loop_new(context, FALSE);
    g_main_loop_run(loop);  // for the life of the process
    return NULL;
}

// A context of its own on a thread of its own: a timer on a shared pool (Dispatch's global
// queues, which also run Swift's tasks) fires late when blocking calls hold every worker.
static gpointer start_timer_thread(gpointer unused) {
    (void)unused;
    GMainContext *context = g_main_context_new();
    g_thread_unref(g_thread_new("kindly-push-timers", run_timers, context));
    return context;
}

static GMainContext *timer_context(void) {
    static GOnce once = G_ONCE_INIT;
    return g_once(&once, start_timer_thread, NULL);
}

static gboolean cancel_now(gpointer cancellable) {
    g_cancellable_cancel(cancellable);
    return G_SOURCE_REMOVE;
}

KpgDeadline *kpg_deadline_new(guint milliseconds) {
    KpgDeadline *deadline = g_new0(KpgDeadline, 1);
    deadline->cancellable = g_cancellable_new();
    deadline->timer = g_timeout_source_new(milliseconds);
    g_source_set_callback(deadline->timer, cancel_now, g_object_ref(deadline->cancellable), g_object_unref);
    g_source_attach(deadline->timer, timer_context());
    return deadline;
}

GCancellable *kpg_deadline_cancellable(KpgDeadline *deadline) {
    return deadline->cancellable;
}

void kpg_deadline_free(KpgDeadline *deadline) {
    g_source_destroy(deadline->timer);
    g_source_unref(deadline->timer);
    g_object_unref(deadline->cancellable);
    g_free(deadline);
}

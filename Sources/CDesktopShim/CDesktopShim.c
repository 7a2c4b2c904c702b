#define _GNU_SOURCE  // pipe2
#include <gio/gio.h>

#include "CDesktopShim.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <string.h>
#include <unistd.h>

static const char bus_name[] = "org.freedesktop.Notifications";
static const char object_path[] = "/org/freedesktop/Notifications";
static const char interface_name[] = "org.freedesktop.Notifications";

// MARK: Connections

GDBusConnection *kpd_connection_open(const char *address, GCancellable *cancellable, GError **error) {
    return g_dbus_connection_new_for_address_sync(
        address, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
        NULL, cancellable, error);
}

void kpd_connection_close(GDBusConnection *connection) {
    // Closing explicitly releases the socket now rather than whenever GDBus's worker lets go.
    g_dbus_connection_close(connection, NULL, NULL, NULL);
    g_object_unref(connection);
}

// MARK: Calls

static GVariant *call(GDBusConnection *connection, const char *method, GVariant *parameters, const char *reply_type,
                      gint timeout_ms, GCancellable *cancellable, GError **error) {
    return g_dbus_connection_call_sync(connection, bus_name, object_path, interface_name, method, parameters,
                                       G_VARIANT_TYPE(reply_type), G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable,
                                       error);
}

gboolean kpd_add_match(GDBusConnection *connection, gint timeout_ms, GCancellable *cancellable, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch",
        g_variant_new("(s)", "type='signal',sender='org.freedesktop.Notifications',"
                             "path='/org/freedesktop/Notifications',interface='org.freedesktop.Notifications'"),
        NULL, G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable, error);
    if (reply == NULL) return FALSE;
    g_variant_unref(reply);
    return TRUE;
}

gchar *kpd_server_identity(GDBusConnection *connection, gint timeout_ms, GCancellable *cancellable, GError **error) {
    GVariant *id = g_dbus_connection_call_sync(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                               "org.freedesktop.DBus", "GetId", NULL, G_VARIANT_TYPE("(s)"),
                                               G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable, error);
    if (id == NULL) return NULL;
    GVariant *owner = g_dbus_connection_call_sync(
        connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
        g_variant_new("(s)", bus_name), G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable, error);
    if (owner == NULL) {
        g_variant_unref(id);
        return NULL;
    }
    const char *bus_id = NULL, *unique_name = NULL;
    g_variant_get(id, "(&s)", &bus_id);
    g_variant_get(owner, "(&s)", &unique_name);
    gchar *identity = g_strdup_printf("%s/%s", bus_id, unique_name);
    g_variant_unref(id);
    g_variant_unref(owner);
    return identity;
}

gchar **kpd_get_capabilities(GDBusConnection *connection, gint timeout_ms, GCancellable *cancellable, GError **error) {
    GVariant *reply = call(connection, "GetCapabilities", NULL, "(as)", timeout_ms, cancellable, error);
    if (reply == NULL) return NULL;
    gchar **capabilities = NULL;
    g_variant_get(reply, "(^as)", &capabilities);
    g_variant_unref(reply);
    return capabilities;
}

gboolean kpd_get_server_information(GDBusConnection *connection, gint timeout_ms, GCancellable *cancellable,
                                    gchar **name, gchar **vendor, gchar **version, gchar **spec_version,
                                    GError **error) {
    GVariant *reply = call(connection, "GetServerInformation", NULL, "(ssss)", timeout_ms, cancellable, error);
    if (reply == NULL) return FALSE;
    g_variant_get(reply, "(ssss)", name, vendor, version, spec_version);
    g_variant_unref(reply);
    return TRUE;
}

guint32 kpd_notify(GDBusConnection *connection, const char *app_name, guint32 replaces_id, const char *app_icon,
                   const char *summary, const char *body, const char *const *actions, const char *category,
                   const char *desktop_entry, const char *stack_tag, const char *image_path, gint32 expire_timeout, gint timeout_ms,
                   GCancellable *cancellable, gchar **server, GError **error) {
    GVariantBuilder action_list;
    g_variant_builder_init(&action_list, G_VARIANT_TYPE("as"));
    for (const char *const *each = actions; each != NULL && *each != NULL; each++) {
        g_variant_builder_add(&action_list, "s", *each);
    }
    GVariantBuilder hints;
    g_variant_builder_init(&hints, G_VARIANT_TYPE("a{sv}"));
    if (category != NULL) g_variant_builder_add(&hints, "{sv}", "category", g_variant_new_string(category));
    if (desktop_entry != NULL) {
        g_variant_builder_add(&hints, "{sv}", "desktop-entry", g_variant_new_string(desktop_entry));
    }
    if (stack_tag != NULL) {
        // dunst's hint: a new notification with the tag (and the app name) of one on screen or
        // waiting takes its place. (notify-osd's x-canonical-private-synchronous also changes how
        // it is drawn, so it is not sent.)
        g_variant_builder_add(&hints, "{sv}", "x-dunst-stack-tag", g_variant_new_string(stack_tag));
    }
    if (image_path != NULL) g_variant_builder_add(&hints, "{sv}", "image-path", g_variant_new_string(image_path));
    GVariant *parameters = g_variant_new("(susssasa{sv}i)", app_name, replaces_id, app_icon, summary, body,
                                         &action_list, &hints, expire_timeout);

    // Sent as a message (not g_dbus_connection_call_sync) to learn which connection answered:
    // the server's unique name, the only sender whose signals count.
    GDBusMessage *message = g_dbus_message_new_method_call(bus_name, object_path, interface_name, "Notify");
    g_dbus_message_set_body(message, parameters);
    GDBusMessage *reply = g_dbus_connection_send_message_with_reply_sync(
        connection, message, G_DBUS_SEND_MESSAGE_FLAGS_NONE, timeout_ms, NULL, cancellable, error);
    g_object_unref(message);
    if (reply == NULL) return 0;
    guint32 id = 0;
    if (g_dbus_message_to_gerror(reply, error)) {
        g_object_unref(reply);
        return 0;
    }
    GVariant *reply_body = g_dbus_message_get_body(reply);
    if (reply_body == NULL || !g_variant_is_of_type(reply_body, G_VARIANT_TYPE("(u)"))) {
        g_set_error_literal(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_SIGNATURE,
                            "the notification server answered Notify with something other than an id");
        g_object_unref(reply);
        return 0;
    }
    g_variant_get(reply_body, "(u)", &id);
    if (id == 0) {
        g_set_error_literal(error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED, "the notification server answered Notify with id 0");
    } else if (server != NULL) {
        *server = g_strdup(g_dbus_message_get_sender(reply));
    }
    g_object_unref(reply);
    return id;
}

gboolean kpd_close_notification(GDBusConnection *connection, guint32 id, gint timeout_ms, GCancellable *cancellable,
                                GError **error) {
    GVariant *reply = call(connection, "CloseNotification", g_variant_new("(u)", id), "()", timeout_ms, cancellable,
                           error);
    if (reply == NULL) return FALSE;
    g_variant_unref(reply);
    return TRUE;
}

// MARK: Queues behind an eventfd (the listener's signals, the service's calls)

// Queues `item` and makes `fd` readable. Call with the queue's lock held.
static void queue_push_locked(GQueue *queue, int fd, gpointer item) {
    g_queue_push_tail(queue, item);
    uint64_t one = 1;
    ssize_t written;
    do {
        written = write(fd, &one, sizeof one);
    } while (written < 0 && errno == EINTR);
}

// The oldest item, or NULL; once none is left `fd` stops being readable (it is non-blocking).
// Call with the queue's lock held.
static gpointer queue_pop_locked(GQueue *queue, int fd) {
    gpointer head = g_queue_pop_head(queue);
    if (g_queue_is_empty(queue)) {
        uint64_t count;
        ssize_t got;
        do {
            got = read(fd, &count, sizeof count);
        } while (got < 0 && errno == EINTR);
    }
    return head;
}

// MARK: Signals

void kpd_event_clear(KpdEvent *event) {
    g_free(event->action);
    event->action = NULL;
}

struct KpdListener {
    gint references;
    // A pthread mutex, not a GMutex: GLib's is a bare futex that ThreadSanitizer cannot see,
    // and the queue is shared with GDBus's worker thread.
    pthread_mutex_t lock;
    GQueue events;  // of KpdEvent *
    int fd;
    gchar *server;
    GDBusConnection *connection;
    guint filter;
};

static void listener_unref(gpointer data) {
    KpdListener *listener = data;
    if (!g_atomic_int_dec_and_test(&listener->references)) return;
    KpdEvent *event;
    while ((event = g_queue_pop_head(&listener->events)) != NULL) {
        kpd_event_clear(event);
        g_free(event);
    }
    g_free(listener->server);
    close(listener->fd);
    pthread_mutex_destroy(&listener->lock);
    g_free(listener);
}

// Runs on GDBus's worker thread for every message: it only looks, and passes every message on.
static GDBusMessage *filter(GDBusConnection *connection, GDBusMessage *message, gboolean incoming, gpointer data) {
    (void)connection;
    KpdListener *listener = data;
    if (!incoming || g_dbus_message_get_message_type(message) != G_DBUS_MESSAGE_TYPE_SIGNAL) return message;
    if (g_strcmp0(g_dbus_message_get_interface(message), interface_name) != 0
        || g_strcmp0(g_dbus_message_get_path(message), object_path) != 0) {
        return message;
    }
    const char *member = g_dbus_message_get_member(message);
    GVariant *body = g_dbus_message_get_body(message);
    KpdEvent event = {0};
    if (g_strcmp0(member, "ActionInvoked") == 0 && body != NULL && g_variant_is_of_type(body, G_VARIANT_TYPE("(us)"))) {
        event.kind = KPD_EVENT_ACTION_INVOKED;
        g_variant_get(body, "(us)", &event.id, &event.action);
    } else if (g_strcmp0(member, "NotificationClosed") == 0 && body != NULL
               && g_variant_is_of_type(body, G_VARIANT_TYPE("(uu)"))) {
        event.kind = KPD_EVENT_CLOSED;
        g_variant_get(body, "(uu)", &event.id, &event.reason);
    } else {
        return message;
    }
    pthread_mutex_lock(&listener->lock);
    if (listener->server != NULL && g_strcmp0(g_dbus_message_get_sender(message), listener->server) == 0) {
        queue_push_locked(&listener->events, listener->fd, g_memdup2(&event, sizeof event));
    } else {
        kpd_event_clear(&event);
    }
    pthread_mutex_unlock(&listener->lock);
    return message;
}

KpdListener *kpd_listener_new(GDBusConnection *connection, GError **error) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) {
        int code = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(code), "eventfd: %s", g_strerror(code));
        return NULL;
    }
    KpdListener *listener = g_new0(KpdListener, 1);
    listener->references = 2;  // the caller's, and the filter's (dropped by GDBus when it lets go)
    pthread_mutex_init(&listener->lock, NULL);
    g_queue_init(&listener->events);
    listener->fd = fd;
    listener->connection = g_object_ref(connection);
    listener->filter = g_dbus_connection_add_filter(connection, filter, listener, listener_unref);
    return listener;
}

int kpd_listener_fd(KpdListener *listener) {
    return listener->fd;
}

void kpd_listener_set_server(KpdListener *listener, const char *unique_name) {
    pthread_mutex_lock(&listener->lock);
    if (g_strcmp0(listener->server, unique_name) != 0) {
        g_free(listener->server);
        listener->server = g_strdup(unique_name);
    }
    pthread_mutex_unlock(&listener->lock);
}

gboolean kpd_listener_take(KpdListener *listener, KpdEvent *event) {
    pthread_mutex_lock(&listener->lock);
    KpdEvent *head = queue_pop_locked(&listener->events, listener->fd);
    pthread_mutex_unlock(&listener->lock);
    if (head == NULL) return FALSE;
    *event = *head;
    g_free(head);
    return TRUE;
}

void kpd_listener_free(KpdListener *listener) {
    GDBusConnection *connection = listener->connection;
    g_dbus_connection_remove_filter(connection, listener->filter);
    listener_unref(listener);
    g_object_unref(connection);
}

// MARK: Errors

KpdErrorKind kpd_error_kind(const GError *error) {
    if (error == NULL) return KPD_ERROR_OTHER;
    if (error->domain == G_IO_ERROR) {
        switch (error->code) {
        case G_IO_ERROR_CANCELLED:
        case G_IO_ERROR_TIMED_OUT:
            return KPD_ERROR_CANCELLED;
        case G_IO_ERROR_CLOSED:
        case G_IO_ERROR_BROKEN_PIPE:
        case G_IO_ERROR_CONNECTION_REFUSED:
        case G_IO_ERROR_NOT_CONNECTED:
        case G_IO_ERROR_NOT_FOUND:
        case G_IO_ERROR_HOST_UNREACHABLE:
        case G_IO_ERROR_NETWORK_UNREACHABLE:
            return KPD_ERROR_UNREACHABLE;
        default:
            return KPD_ERROR_OTHER;
        }
    }
    if (error->domain == G_DBUS_ERROR) {
        switch (error->code) {
        case G_DBUS_ERROR_NO_REPLY:
        case G_DBUS_ERROR_TIMEOUT:
        case G_DBUS_ERROR_TIMED_OUT:
            return KPD_ERROR_CANCELLED;
        case G_DBUS_ERROR_SERVICE_UNKNOWN:
        case G_DBUS_ERROR_NAME_HAS_NO_OWNER:
        case G_DBUS_ERROR_DISCONNECTED:
        case G_DBUS_ERROR_NO_SERVER:
        case G_DBUS_ERROR_NO_NETWORK:
        case G_DBUS_ERROR_SPAWN_EXEC_FAILED:
        case G_DBUS_ERROR_SPAWN_FORK_FAILED:
        case G_DBUS_ERROR_SPAWN_CHILD_EXITED:
        case G_DBUS_ERROR_SPAWN_CHILD_SIGNALED:
        case G_DBUS_ERROR_SPAWN_FAILED:
        case G_DBUS_ERROR_SPAWN_SETUP_FAILED:
        case G_DBUS_ERROR_SPAWN_CONFIG_INVALID:
        case G_DBUS_ERROR_SPAWN_SERVICE_INVALID:
        case G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND:
        case G_DBUS_ERROR_SPAWN_PERMISSIONS_INVALID:
        case G_DBUS_ERROR_SPAWN_FILE_INVALID:
        case G_DBUS_ERROR_SPAWN_NO_MEMORY:
            return KPD_ERROR_UNREACHABLE;
        default:
            return KPD_ERROR_OTHER;
        }
    }
    return KPD_ERROR_OTHER;
}

// MARK: The agent's own service (ai.kindly.Push1)

static const char service_name[] = "ai.kindly.Push1";
static const char service_path[] = "/ai/kindly/Push1";

// The interface of data/dbus/ai.kindly.Push1.xml (a test compares the two).
static const char service_xml[] =
    "<node>"
    "  <interface name='ai.kindly.Push1'>"
    "    <method name='SetAppState'>"
    "      <arg name='state' type='s' direction='in'/>"
    "      <arg name='chat_id' type='s' direction='in'/>"
    "    </method>"
    "    <method name='Started'/>"
    "    <signal name='Opened'>"
    "      <arg name='chat_id' type='s'/>"
    "    </signal>"
    "  </interface>"
    "</node>";

const char *kpd_service_introspection_xml(void) {
    return service_xml;
}

void kpd_service_call_clear(KpdServiceCall *call) {
    g_free(call->state);
    g_free(call->chat_id);
    call->state = NULL;
    call->chat_id = NULL;
}

// A bus object exported on a private connection and answered on a thread of its own (no GLib
// main loop needed in the caller), its calls queued behind an eventfd: the agent's service and
// the UnifiedPush connector are each one.
typedef struct {
    GDBusConnection *connection;
    GMainContext *context;
    GMainLoop *loop;
    GThread *thread;
    guint registration;
    pthread_mutex_t lock;
    GQueue calls;  // of the owner's call structs
    int fd;
    void (*clear)(gpointer call);  // frees what a queued call holds
} KpdExport;

static gpointer run_export(gpointer data) {
    KpdExport *export = data;
    g_main_context_push_thread_default(export->context);
    g_main_loop_run(export->loop);
    g_main_context_pop_thread_default(export->context);
    return NULL;
}

static gboolean quit_loop(gpointer loop) {
    g_main_loop_quit(loop);
    return G_SOURCE_REMOVE;
}

static void export_close(KpdExport *export) {
    if (export->thread != NULL) {
        // Quit from inside the loop: a quit made before the thread reached g_main_loop_run
        // would be lost, and the join would wait for ever.
        GSource *quit = g_idle_source_new();
        g_source_set_callback(quit, quit_loop, export->loop, NULL);
        g_source_attach(quit, export->context);
        g_source_unref(quit);
        g_thread_join(export->thread);
    }
    if (export->registration != 0) g_dbus_connection_unregister_object(export->connection, export->registration);
    if (export->connection != NULL) kpd_connection_close(export->connection);
    // Callbacks still queued on the context (none run once the loop stopped) are dropped with it.
    if (export->loop != NULL) g_main_loop_unref(export->loop);
    if (export->context != NULL) g_main_context_unref(export->context);
    gpointer call;
    while ((call = g_queue_pop_head(&export->calls)) != NULL) {
        export->clear(call);
        g_free(call);
    }
    if (export->fd >= 0) close(export->fd);
    pthread_mutex_destroy(&export->lock);
}

// Connects to `address`, exports `xml`'s first interface at `path` (its calls go to `vtable`
// with `data`, on the export's thread) and requests `name` with the bus's `flags`: the
// RequestName result (1 primary owner, 2 in the queue, 3 exists, 4 owned already), or 0 with
// `error` set. On 0 the export is closed already.
static guint32 export_open(KpdExport *export, void (*clear)(gpointer), const char *address, const char *xml,
                           const char *path, const GDBusInterfaceVTable *vtable, gpointer data, const char *name,
                           guint32 flags, const char *thread_name, GCancellable *cancellable, GError **error) {
    memset(export, 0, sizeof *export);
    export->clear = clear;
    pthread_mutex_init(&export->lock, NULL);
    g_queue_init(&export->calls);
    export->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (export->fd < 0) {
        int code = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(code), "eventfd: %s", g_strerror(code));
        export_close(export);
        return 0;
    }
    export->context = g_main_context_new();
    export->loop = g_main_loop_new(export->context, FALSE);
    export->connection = kpd_connection_open(address, cancellable, error);
    GDBusNodeInfo *node = export->connection == NULL ? NULL : g_dbus_node_info_new_for_xml(xml, error);
    if (node == NULL) {
        export_close(export);
        return 0;
    }
    // Registered with the export's context as the thread-default one: its calls are dispatched
    // there, on the export's thread.
    g_main_context_push_thread_default(export->context);
    export->registration =
        g_dbus_connection_register_object(export->connection, path, node->interfaces[0], vtable, data, NULL, error);
    g_main_context_pop_thread_default(export->context);
    g_dbus_node_info_unref(node);
    if (export->registration == 0) {
        export_close(export);
        return 0;
    }
    export->thread = g_thread_new(thread_name, run_export, export);
    GVariant *reply = g_dbus_connection_call_sync(
        export->connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
        g_variant_new("(su)", name, flags), G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, 2000, cancellable, error);
    if (reply == NULL) {
        export_close(export);
        return 0;
    }
    guint32 result = 0;
    g_variant_get(reply, "(u)", &result);
    g_variant_unref(reply);
    return result;
}

// Queues a copy of the `size` bytes of `call`, or answers the invocation with LimitsExceeded
// (and clears the call) when KPD_SERVICE_MAX_QUEUED calls wait already (without a bound, a
// flood of calls took the agent to 900 MB). TRUE when queued.
static gboolean export_queue(KpdExport *export, gpointer call, gsize size, GDBusMethodInvocation *invocation) {
    pthread_mutex_lock(&export->lock);
    gboolean room = g_queue_get_length(&export->calls) < KPD_SERVICE_MAX_QUEUED;
    if (room) queue_push_locked(&export->calls, export->fd, g_memdup2(call, size));
    pthread_mutex_unlock(&export->lock);
    if (!room) {
        export->clear(call);
        g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED,
                                              "%d calls wait for the agent already: try again", KPD_SERVICE_MAX_QUEUED);
    }
    return room;
}

// Moves the oldest queued call (of `size` bytes) into `out`; FALSE when there is none.
static gboolean export_take(KpdExport *export, gpointer out, gsize size) {
    pthread_mutex_lock(&export->lock);
    gpointer head = queue_pop_locked(&export->calls, export->fd);
    pthread_mutex_unlock(&export->lock);
    if (head == NULL) return FALSE;
    memcpy(out, head, size);
    g_free(head);
    return TRUE;
}

// export_open, then TRUE when the connection owns `name` (or, with `queue_ok`, waits in its
// queue); otherwise FALSE with `error` set (`*name_taken` when another connection holds it:
// `taken` says so) and the export closed.
static gboolean export_own(KpdExport *export, void (*clear)(gpointer), const char *address, const char *xml,
                           const char *path, const GDBusInterfaceVTable *vtable, gpointer data, const char *name,
                           guint32 flags, gboolean queue_ok, const char *thread_name, const char *taken,
                           GCancellable *cancellable, gboolean *name_taken, GError **error) {
    *name_taken = FALSE;
    guint32 result =
        export_open(export, clear, address, xml, path, vtable, data, name, flags, thread_name, cancellable, error);
    if (result == 0) return FALSE;
    // 1: primary owner, 4: owned already by this connection, 2: in the queue.
    if (result == 1 || result == 4 || (queue_ok && result == 2)) return TRUE;
    *name_taken = TRUE;
    g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_ADDRESS_IN_USE, "the name %s is taken on the session bus: %s", name,
                taken);
    export_close(export);
    return FALSE;
}

struct KpdService {
    KpdExport export;
};

static void service_call_clear(gpointer call) {
    kpd_service_call_clear(call);
}

static gboolean service_queue(KpdService *service, KpdServiceCall call, GDBusMethodInvocation *invocation) {
    return export_queue(&service->export, &call, sizeof call, invocation);
}

// Runs on the service's thread. The call is queued before it is answered, so that a host whose
// call returned knows that the next push is decided in the new state.
static void service_method_call(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                                const gchar *interface, const gchar *method, GVariant *parameters,
                                GDBusMethodInvocation *invocation, gpointer data) {
    (void)connection, (void)sender, (void)object_path, (void)interface;
    KpdService *service = data;
    if (g_strcmp0(method, "SetAppState") == 0) {
        const char *state = NULL, *chat_id = NULL;
        g_variant_get(parameters, "(&s&s)", &state, &chat_id);
        if (g_strcmp0(state, "killed") != 0 && g_strcmp0(state, "background") != 0
            && g_strcmp0(state, "foreground") != 0) {
            g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                                  "state must be killed, background or foreground");
            return;
        }
        if (strlen(chat_id) > KPD_SERVICE_MAX_CHAT_ID) {
            g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                                  "chat_id is over %d bytes: no push carries one that long",
                                                  KPD_SERVICE_MAX_CHAT_ID);
            return;
        }
        KpdServiceCall call = {KPD_SERVICE_SET_APP_STATE, g_strdup(state), g_strdup(chat_id)};
        if (!service_queue(service, call, invocation)) return;
    } else if (g_strcmp0(method, "Started") == 0) {
        KpdServiceCall call = {KPD_SERVICE_STARTED, NULL, NULL};
        if (!service_queue(service, call, invocation)) return;
    } else {
        g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD, "no method %s",
                                              method);
        return;
    }
    g_dbus_method_invocation_return_value(invocation, NULL);
}

static const GDBusInterfaceVTable service_vtable = {service_method_call, NULL, NULL, {0}};

KpdService *kpd_service_new(const char *address, GCancellable *cancellable, gboolean *name_taken, GError **error) {
    KpdService *service = g_new0(KpdService, 1);
    // DBUS_NAME_FLAG_DO_NOT_QUEUE (4): either this connection owns the name now, or it fails.
    if (!export_own(&service->export, service_call_clear, address, service_xml, service_path, &service_vtable, service,
                    service_name, 4u, FALSE, "kindly-push-agent-bus", "another agent runs already", cancellable,
                    name_taken, error)) {
        g_free(service);
        return NULL;
    }
    return service;
}

int kpd_service_fd(KpdService *service) {
    return service->export.fd;
}

gboolean kpd_service_take(KpdService *service, KpdServiceCall *call) {
    return export_take(&service->export, call, sizeof *call);
}

gboolean kpd_service_emit_opened(KpdService *service, const char *chat_id, GError **error) {
    GDBusConnection *connection = service->export.connection;
    if (!g_dbus_connection_emit_signal(connection, NULL, service_path, service_name, "Opened",
                                       g_variant_new("(s)", chat_id), error)) {
        return FALSE;
    }
    // Sent now, not whenever GDBus's worker gets to it: a host that waits for it sees it at once.
    return g_dbus_connection_flush_sync(connection, NULL, error);
}

void kpd_service_free(KpdService *service) {
    export_close(&service->export);
    g_free(service);
}

// MARK: Ending cleanly

static int signal_write_end = -1;

static void note_signal(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    (void)!write(signal_write_end, &byte, 1);  // async-signal-safe; a full pipe already says enough
    errno = saved;
}

int kpd_signal_pipe(void) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    signal_write_end = ends[1];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = note_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    // A parent may have left them blocked (a blocked signal would never reach the handler).
    sigset_t wanted;
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGTERM);
    sigaddset(&wanted, SIGINT);
    pthread_sigmask(SIG_UNBLOCK, &wanted, NULL);
    return ends[0];
}

// MARK: The UnifiedPush connector (org.unifiedpush.Connector2)

// Each method of Connector2 takes an a{sv} and answers one.
#define CONNECTOR_METHOD(name)                                                                             \
    "<method name='" name "'><arg name='args' type='a{sv}' direction='in'/>"                                 \
    "<arg name='result' type='a{sv}' direction='out'/></method>"

// The interface of UnifiedPush's org.unifiedpush.Connector2.xml (DBUS 0.3.0), on its path; and the
// distributor's side.
static const char connector_xml[] = "<node><interface name='org.unifiedpush.Connector2'>" CONNECTOR_METHOD(
    "Message") CONNECTOR_METHOD("NewEndpoint") CONNECTOR_METHOD("Unregistered") "</interface></node>";
static const char connector_path[] = "/org/unifiedpush/Connector";
static const char distributor_path[] = "/org/unifiedpush/Distributor";
static const char distributor_interface[] = "org.unifiedpush.Distributor2";
static const char distributor_prefix[] = "org.unifiedpush.Distributor.";

void kpd_connector_call_clear(KpdConnectorCall *call) {
    g_free(call->sender);
    g_free(call->token);
    g_free(call->endpoint);
    g_free(call->id);
    if (call->message != NULL) {
        // A message is encrypted, but what it carries is the device's: no copy lingers.
        memset(call->message, 0, call->message_length);
        g_free(call->message);
    }
    call->sender = call->token = call->endpoint = call->id = NULL;
    call->message = NULL;
    call->message_length = 0;
}

struct KpdConnector {
    KpdExport export;
};

static void connector_call_clear(gpointer call) {
    kpd_connector_call_clear(call);
}

// A string member of an a{sv}, or NULL (not there, or not a string).
static const char *dictionary_string(GVariant *dictionary, const char *key) {
    const char *value = NULL;
    if (!g_variant_lookup(dictionary, key, "&s", &value)) return NULL;
    return value;
}

static void connector_method_call(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                                  const gchar *interface, const gchar *method, GVariant *parameters,
                                  GDBusMethodInvocation *invocation, gpointer data) {
    (void)connection, (void)object_path, (void)interface;
    KpdConnector *connector = data;
    GVariant *arguments = g_variant_get_child_value(parameters, 0);
    KpdConnectorCall call = {0};
    const char *token = dictionary_string(arguments, "token");
    GVariant *answer = NULL;
    if (token == NULL) {
        g_variant_unref(arguments);
        g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                              "%s takes a{sv} with \"token\" s", method);
        return;
    }
    if (g_strcmp0(method, "Message") == 0) {
        const char *id = dictionary_string(arguments, "id");
        GVariant *message = g_variant_lookup_value(arguments, "message", G_VARIANT_TYPE("ay"));
        gsize length = message == NULL ? 0 : g_variant_get_size(message);
        if (id == NULL || message == NULL || length < 1 || length > KPD_CONNECTOR_MAX_MESSAGE) {
            if (message != NULL) g_variant_unref(message);
            g_variant_unref(arguments);
            g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                                  "Message takes \"token\" s, \"message\" ay of 1 to %d bytes, \"id\" s",
                                                  KPD_CONNECTOR_MAX_MESSAGE);
            return;
        }
        call.kind = KPD_CONNECTOR_MESSAGE;
        call.id = g_strdup(id);
        call.message = g_memdup2(g_variant_get_data(message), length);
        call.message_length = length;
        g_variant_unref(message);
        GVariantBuilder builder;
        g_variant_builder_init(&builder, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&builder, "{sv}", "id", g_variant_new_string(id));
        answer = g_variant_new("(a{sv})", &builder);
    } else if (g_strcmp0(method, "NewEndpoint") == 0) {
        const char *endpoint = dictionary_string(arguments, "endpoint");
        if (endpoint == NULL) {
            g_variant_unref(arguments);
            g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                                  "NewEndpoint takes \"token\" s, \"endpoint\" s");
            return;
        }
        call.kind = KPD_CONNECTOR_NEW_ENDPOINT;
        call.endpoint = g_strdup(endpoint);
    } else if (g_strcmp0(method, "Unregistered") == 0) {
        call.kind = KPD_CONNECTOR_UNREGISTERED;
    } else {
        g_variant_unref(arguments);
        g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD, "no method %s",
                                              method);
        return;
    }
    call.token = g_strdup(token);
    call.sender = g_strdup(sender);
    g_variant_unref(arguments);
    if (!export_queue(&connector->export, &call, sizeof call, invocation)) {
        if (answer != NULL) g_variant_unref(g_variant_ref_sink(answer));
        return;
    }
    if (answer == NULL) answer = g_variant_new_parsed("(@a{sv} {},)");
    g_dbus_method_invocation_return_value(invocation, answer);
}

static const GDBusInterfaceVTable connector_vtable = {connector_method_call, NULL, NULL, {0}};

int kpd_connector_fd(KpdConnector *connector) {
    return connector->export.fd;
}

gboolean kpd_connector_take(KpdConnector *connector, KpdConnectorCall *call) {
    return export_take(&connector->export, call, sizeof *call);
}

KpdConnector *kpd_connector_new(const char *address, const char *name, gboolean replace, GCancellable *cancellable,
                                gboolean *name_taken, GError **error) {
    KpdConnector *connector = g_new0(KpdConnector, 1);
    // The agent: ALLOW_REPLACEMENT (1), queued while a registration holds the name, and its owner
    // again once that ends. A registration: REPLACE_EXISTING (2) | DO_NOT_QUEUE (4).
    if (export_own(&connector->export, connector_call_clear, address, connector_xml, connector_path,
                    &connector_vtable, connector, name, replace ? 6u : 1u, !replace, "kindly-push-connector",
                    "its owner does not let it go", cancellable, name_taken, error)) {
        return connector;
    }
    g_free(connector);
    return NULL;
}

gchar *kpd_connector_name_owner(KpdConnector *connector, const char *name, gint timeout_ms, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(connector->export.connection, "org.freedesktop.DBus",
                                                  "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                                                  g_variant_new("(s)", name), G_VARIANT_TYPE("(s)"),
                                                  G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, error);
    if (reply == NULL) return NULL;
    gchar *owner = NULL;
    g_variant_get(reply, "(s)", &owner);
    g_variant_unref(reply);
    return owner;
}

gchar **kpd_connector_distributors(KpdConnector *connector, gint timeout_ms, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(connector->export.connection, "org.freedesktop.DBus",
                                                  "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames", NULL,
                                                  G_VARIANT_TYPE("(as)"), G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL,
                                                  error);
    if (reply == NULL) return NULL;
    GPtrArray *found = g_ptr_array_new();
    GVariantIter *names;
    const char *name;
    g_variant_get(reply, "(as)", &names);
    while (g_variant_iter_next(names, "&s", &name)) {
        if (g_str_has_prefix(name, distributor_prefix) && strlen(name) > strlen(distributor_prefix)) {
            g_ptr_array_add(found, g_strdup(name));
        }
    }
    g_variant_iter_free(names);
    g_variant_unref(reply);
    g_ptr_array_add(found, NULL);
    return (gchar **)g_ptr_array_free(found, FALSE);
}

gboolean kpd_connector_register(KpdConnector *connector, const char *distributor, const char *service,
                                const char *token, const char *description, const char *vapid, gint timeout_ms,
                                gchar **success, gchar **reason, GError **error) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{sv}"));
    g_variant_builder_add(&builder, "{sv}", "service", g_variant_new_string(service));
    g_variant_builder_add(&builder, "{sv}", "token", g_variant_new_string(token));
    if (description != NULL) g_variant_builder_add(&builder, "{sv}", "description", g_variant_new_string(description));
    if (vapid != NULL) g_variant_builder_add(&builder, "{sv}", "vapid", g_variant_new_string(vapid));
    GVariant *reply = g_dbus_connection_call_sync(connector->export.connection, distributor, distributor_path,
                                                  distributor_interface, "Register", g_variant_new("(a{sv})", &builder),
                                                  G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL,
                                                  error);
    if (reply == NULL) return FALSE;
    GVariant *answer = g_variant_get_child_value(reply, 0);
    const char *text = dictionary_string(answer, "success");
    *success = g_strdup(text != NULL ? text : "");
    text = dictionary_string(answer, "reason");
    *reason = text != NULL ? g_strdup(text) : NULL;
    g_variant_unref(answer);
    g_variant_unref(reply);
    return TRUE;
}

gboolean kpd_connector_unregister(KpdConnector *connector, const char *distributor, const char *token,
                                  gint timeout_ms, GError **error) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{sv}"));
    g_variant_builder_add(&builder, "{sv}", "token", g_variant_new_string(token));
    GVariant *reply = g_dbus_connection_call_sync(connector->export.connection, distributor, distributor_path,
                                                  distributor_interface, "Unregister",
                                                  g_variant_new("(a{sv})", &builder), G_VARIANT_TYPE("(a{sv})"),
                                                  G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, error);
    if (reply == NULL) return FALSE;
    g_variant_unref(reply);
    return TRUE;
}

void kpd_connector_free(KpdConnector *connector) {
    export_close(&connector->export);
    g_free(connector);
}

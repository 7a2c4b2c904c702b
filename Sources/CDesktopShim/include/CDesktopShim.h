// A thin C layer between GDBus and Swift for the freedesktop Notifications client
// (C library -> this shim -> Swift), holding only what Swift cannot express or call directly:
// - the C-variadic GVariant constructors (the Notify arguments, the replies' tuples);
// - a message filter that runs on GDBus's worker thread and queues the server's signals
//   (ActionInvoked, NotificationClosed) behind an eventfd, so that a host can poll for them from
//   its own event loop with no GLib main loop;
// - GError classification by domain and code (the domains are macros);
//
// Swift imports this header with no include flag, so it names GIO's types through CGLib.h, and
// CDesktopShim.c includes <gio/gio.h> before it (see CGLib.h for why); the time budgets are
// CGLib's.
#ifndef KINDLY_PUSH_DESKTOP_SHIM_H
#define KINDLY_PUSH_DESKTOP_SHIM_H

#include "CGLib.h"

#ifdef __cplusplus
extern "C" {
#endif

// MARK: Connections

/// A private connection to the message bus at `address`: not the process-wide session bus
/// singleton, so closing it never exits the process. Honours `cancellable` throughout
/// connecting and authenticating.
GDBusConnection *kpd_connection_open(const char *address, GCancellable *cancellable, GError **error);

/// Closes the connection now (without waiting) and drops the reference.
void kpd_connection_close(GDBusConnection *connection);

// MARK: Calls (all on /org/freedesktop/Notifications, org.freedesktop.Notifications)

/// Asks the bus to route the Notifications service's broadcast signals to this connection
/// (servers that broadcast ActionInvoked instead of sending it to the notification's client).
gboolean kpd_add_match(GDBusConnection *connection, gint timeout_ms, GCancellable *cancellable, GError **error);

/// Who serves notifications now: the bus's id (org.freedesktop.DBus.GetId, new for every bus)
/// and the unique name of org.freedesktop.Notifications' owner, as "BUS-ID/UNIQUE-NAME" (g_free);
/// NULL with `error` set when there is no owner.
gchar *kpd_server_identity(GDBusConnection *connection, gint timeout_ms, GCancellable *cancellable, GError **error);

/// GetCapabilities: a NULL-terminated array (g_strfreev), or NULL with `error` set.
gchar **kpd_get_capabilities(GDBusConnection *connection, gint timeout_ms, GCancellable *cancellable, GError **error);

/// GetServerInformation: four strings (each g_free), or FALSE with `error` set.
gboolean kpd_get_server_information(GDBusConnection *connection, gint timeout_ms, GCancellable *cancellable,
                                    gchar **name, gchar **vendor, gchar **version, gchar **spec_version,
                                    GError **error);

/// Notify. `actions` is a NULL-terminated list of key, label, key, label...; `category`,
/// `desktop_entry`, `stack_tag` (x-dunst-stack-tag) and `image_path` (image-path) are hints, left out when NULL. Returns the server's id (never 0) and, in
/// `server`, the unique bus name of the server that answered (g_free); 0 with `error` set.
guint32 kpd_notify(GDBusConnection *connection, const char *app_name, guint32 replaces_id, const char *app_icon,
                   const char *summary, const char *body, const char *const *actions, const char *category,
                   const char *desktop_entry, const char *stack_tag, const char *image_path, gint32 expire_timeout, gint timeout_ms,
                   GCancellable *cancellable, gchar **server, GError **error);

/// CloseNotification.
gboolean kpd_close_notification(GDBusConnection *connection, guint32 id, gint timeout_ms, GCancellable *cancellable,
                                GError **error);

// MARK: Signals

/// What the server said about one of the notifications.
typedef enum {
    KPD_EVENT_ACTION_INVOKED = 1,
    KPD_EVENT_CLOSED = 2,
} KpdEventKind;

typedef struct {
    KpdEventKind kind;
    guint32 id;
    /// NotificationClosed's reason (1 expired, 2 dismissed, 3 closed by a call, 4 undefined).
    guint32 reason;
    /// ActionInvoked's action key (free with kpd_event_clear); NULL otherwise.
    gchar *action;
} KpdEvent;

void kpd_event_clear(KpdEvent *event);

/// Queues the Notifications signals that reach `connection` from the server set with
/// kpd_listener_set_server, and makes kpd_listener_fd readable while any are queued.
typedef struct KpdListener KpdListener;

KpdListener *kpd_listener_new(GDBusConnection *connection, GError **error);

/// An eventfd, readable while events are queued.
int kpd_listener_fd(KpdListener *listener);

/// Signals are taken only from this unique bus name (the server that answered Notify): nobody
/// else on the bus can forge a tap.
void kpd_listener_set_server(KpdListener *listener, const char *unique_name);

/// Takes the oldest queued event into `event`; FALSE when there is none.
gboolean kpd_listener_take(KpdListener *listener, KpdEvent *event);

/// Stops listening and releases the listener (its memory goes when GDBus's thread lets go).
void kpd_listener_free(KpdListener *listener);

// MARK: The agent's own service (ai.kindly.Push1)

/// What a host asked of the agent over D-Bus.
typedef enum {
    KPD_SERVICE_SET_APP_STATE = 1,
    KPD_SERVICE_STARTED = 2,
} KpdServiceCallKind;

typedef struct {
    KpdServiceCallKind kind;
    /// SetAppState's state ("killed", "background" or "foreground": checked before it is queued)
    /// and chat id (free both with kpd_service_call_clear); NULL for Started.
    gchar *state;
    gchar *chat_id;
} KpdServiceCall;

void kpd_service_call_clear(KpdServiceCall *call);

/// The longest chat id SetAppState takes, in bytes: no push (4096 bytes at most) carries a longer
/// one. A longer one is refused with org.freedesktop.DBus.Error.InvalidArgs, and never kept.
#define KPD_SERVICE_MAX_CHAT_ID 4096
/// The most calls that wait for the agent to take them; one more is refused with
/// org.freedesktop.DBus.Error.LimitsExceeded (a host tries again once the agent caught up).
#define KPD_SERVICE_MAX_QUEUED 64

/// The object /ai/kindly/Push1 with interface ai.kindly.Push1 (SetAppState, Started, signal
/// Opened), exported on a private connection to the bus at `address`, and the well-known name
/// ai.kindly.Push1 requested without queueing. Its calls are answered on a thread of its own (no
/// GLib main loop needed in the caller) and queued behind an eventfd, as the listener's signals.
typedef struct KpdService KpdService;

/// The service, or NULL with `error` set; `*name_taken` is TRUE when another connection owns
/// the name already (the error says so).
KpdService *kpd_service_new(const char *address, GCancellable *cancellable, gboolean *name_taken, GError **error);

/// The introspection XML the service exports (static, never freed).
const char *kpd_service_introspection_xml(void);

/// An eventfd, readable while calls are queued.
int kpd_service_fd(KpdService *service);

/// Takes the oldest queued call into `call`; FALSE when there is none.
gboolean kpd_service_take(KpdService *service, KpdServiceCall *call);

/// Emits the signal Opened(chat_id) from the object; FALSE with `error` set when it could not be sent.
gboolean kpd_service_emit_opened(KpdService *service, const char *chat_id, GError **error);

/// Releases the name, unexports the object, closes the connection.
void kpd_service_free(KpdService *service);

// MARK: The UnifiedPush connector (org.unifiedpush.Connector2, UnifiedPush's DBUS 0.3.0)

/// What a distributor called on the connector.
typedef enum {
    KPD_CONNECTOR_MESSAGE = 1,
    KPD_CONNECTOR_NEW_ENDPOINT = 2,
    KPD_CONNECTOR_UNREGISTERED = 3,
} KpdConnectorCallKind;

typedef struct {
    KpdConnectorCallKind kind;
    /// The caller's unique bus name (":1.42"), as the bus daemon vouches for it.
    gchar *sender;
    /// Every call's token; NewEndpoint's endpoint; Message's id and bytes (wiped and freed with
    /// kpd_connector_call_clear). NULL when the call has none.
    gchar *token;
    gchar *endpoint;
    gchar *id;
    uint8_t *message;
    gsize message_length;
} KpdConnectorCall;

void kpd_connector_call_clear(KpdConnectorCall *call);

/// The longest Message the connector takes, in bytes (the spec's 4096); a longer or empty one
/// is refused with org.freedesktop.DBus.Error.InvalidArgs.
#define KPD_CONNECTOR_MAX_MESSAGE 4096

/// The object /org/unifiedpush/Connector with interface org.unifiedpush.Connector2, exported on
/// a private connection to the bus at `address`, which requests `name`: with `replace`, taking
/// it from an owner that allows it and never queueing (a registration, for as long as it runs);
/// without, allowing replacement and waiting in the queue meanwhile (the agent, which gets the
/// name back when the registration ends). Calls are answered on a thread of its own (Message
/// with {"id": its id}) and queued behind an eventfd, as the service's.
typedef struct KpdConnector KpdConnector;

KpdConnector *kpd_connector_new(const char *address, const char *name, gboolean replace, GCancellable *cancellable,
                                gboolean *name_taken, GError **error);

/// An eventfd, readable while calls are queued.
int kpd_connector_fd(KpdConnector *connector);

/// Takes the oldest queued call into `call`; FALSE when there is none.
gboolean kpd_connector_take(KpdConnector *connector, KpdConnectorCall *call);

/// The unique name that owns `name` now (GetNameOwner; g_free), or NULL with `error` set
/// (org.freedesktop.DBus.Error.NameHasNoOwner when nobody does).
gchar *kpd_connector_name_owner(KpdConnector *connector, const char *name, gint timeout_ms, GError **error);

/// The bus names that begin with org.unifiedpush.Distributor. (NULL-terminated, g_strfreev),
/// or NULL with `error` set.
gchar **kpd_connector_distributors(KpdConnector *connector, gint timeout_ms, GError **error);

/// Distributor2.Register on `distributor` from this connection, with `service`, `token` and,
/// when not NULL, `description` and `vapid`: its answer's "success" and "reason" (each g_free;
/// `reason` NULL when there is none), or FALSE with `error` set.
gboolean kpd_connector_register(KpdConnector *connector, const char *distributor, const char *service,
                                const char *token, const char *description, const char *vapid, gint timeout_ms,
                                gchar **success, gchar **reason, GError **error);

/// Distributor2.Unregister on `distributor` with `token`; FALSE with `error` set.
gboolean kpd_connector_unregister(KpdConnector *connector, const char *distributor, const char *token,
                                  gint timeout_ms, GError **error);

/// Releases the name, unexports the object, closes the connection.
void kpd_connector_free(KpdConnector *connector);

// MARK: Ending cleanly

/// Installs a handler for SIGTERM and SIGINT that only writes the signal's number (one byte) to
/// a non-blocking pipe, and returns the pipe's read end (-1 with errno set): an agent polls it
/// beside its input and ends between two pushes, whichever thread the signal reached.
int kpd_signal_pipe(void);

// MARK: Errors

typedef enum {
    /// Anything else (the server refused the call, a protocol error).
    KPD_ERROR_OTHER = 0,
    /// The time budget ran out.
    KPD_ERROR_CANCELLED = 1,
    /// No bus, no notification server on the bus, or the connection broke.
    KPD_ERROR_UNREACHABLE = 2,
} KpdErrorKind;

KpdErrorKind kpd_error_kind(const GError *error);

#ifdef __cplusplus
}
#endif

#endif

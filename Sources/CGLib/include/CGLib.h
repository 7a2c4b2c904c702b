// The part of GLib and GIO that Swift sees, declared here rather than imported from glib.h, and
// the time budgets that CSecretShim and CDesktopShim share.
//
// Why own declarations: glib's headers are found only through pkg-config's include flags, and
// SwiftPM passes a dependency's flags only as `unsafeFlags` (refused for a dependency pinned by
// version) or through `.systemLibrary(pkgConfig:)`, which prints glib's "prohibited flag(s):
// -pthread" warning in the build of every package that depends on this one, even one that links
// only KindlyPush. So the C shims compile against the real headers (found through
// `headerSearchPath`, see Sources/SystemHeaders/README.md), and the Swift targets import only
// headers that need no include flag at all: this one, CSecretShim.h and CDesktopShim.h.
//
// Each function is declared with glib's own prototype, and every C shim includes glib's headers
// before this one, so the compiler checks each declaration against the real one. Adding a
// function Swift needs is one line in the list below. The types are declared only where glib's
// headers are absent (Swift's view); the opaque ones get a placeholder member so that Swift
// imports typed pointers to them: Swift never reads or makes one.
#ifndef KINDLY_PUSH_GLIB_H
#define KINDLY_PUSH_GLIB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Every C shim includes <gio/gio.h> before this header; Swift sees these instead.
#ifndef __G_IO_H__
typedef char gchar;
typedef int gint;
typedef unsigned int guint;
typedef int32_t gint32;
typedef uint32_t guint32;
typedef uint64_t guint64;
typedef gint gboolean;
typedef void *gpointer;
typedef const void *gconstpointer;
typedef size_t gsize;
typedef ptrdiff_t gssize;
typedef guint32 GQuark;

/// glib's GError, field for field (glib/gerror.h): Swift reads its message.
typedef struct _GError {
    GQuark domain;
    gint code;
    gchar *message;
} GError;

// Opaque in glib too (Swift: OpaquePointer).
typedef struct _GHashTable GHashTable;
typedef struct _GAsyncResult GAsyncResult;
typedef struct _GDBusConnection GDBusConnection;

// Instance structs in glib; here placeholders, so that Swift imports typed pointers as before.
typedef struct _GObject {
    char kp_opaque;
} GObject;
typedef struct _GCancellable {
    char kp_opaque;
} GCancellable;

typedef void (*GAsyncReadyCallback)(GObject *source_object, GAsyncResult *res, gpointer data);
#endif

// GLib (glib-2.0, gobject-2.0)
void g_free(gpointer mem);
void g_strfreev(gchar **str_array);
void g_error_free(GError *error);
void g_object_unref(gpointer object);
gpointer g_hash_table_lookup(GHashTable *hash_table, gconstpointer key);
void g_hash_table_unref(GHashTable *hash_table);

// GIO (gio-2.0)
gboolean g_dbus_connection_is_closed(GDBusConnection *connection);
void g_dbus_connection_close(GDBusConnection *connection, GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data);
gboolean g_variant_is_object_path(const gchar *string);

// MARK: Time budgets

/// One operation's time budget: a cancellable that is cancelled `milliseconds` after it is made.
typedef struct KpgDeadline KpgDeadline;

/// Starts a time budget. Its timer runs on a thread of its own that only waits for timers, so it
/// fires on time however busy the other threads are.
KpgDeadline *kpg_deadline_new(guint milliseconds);

/// The cancellable to pass to every call of the operation.
GCancellable *kpg_deadline_cancellable(KpgDeadline *deadline);

/// Stops the timer and releases the budget.
void kpg_deadline_free(KpgDeadline *deadline);

#ifdef __cplusplus
}
#endif

#endif

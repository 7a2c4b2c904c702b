// A thin C layer between libsecret and Swift (C library -> this shim -> Swift), holding only
// what Swift cannot express or call directly:
// - one-time, thread-safe registration of libsecret's GLib types (they are registered lazily and
//   not thread-safely, and their getters are G_GNUC_CONST, so a plain call may be dropped);
// - the project's schema as a static;
// - a SecretService subclass that refuses every prompt instead of showing one;
// - the C-variadic GObject and GVariant constructors (g_initable_new, g_variant_new);
// - GError classification by domain and code (the domains are macros);
// - the version of libsecret's headers (macros).
//
// Swift imports this header with no include flag: it declares the part of libsecret that Swift
// calls itself, with libsecret's own prototypes (checked against them where CSecretShim.c
// includes <libsecret/secret.h> first; see CGLib.h for why). Adding one is one line.
#ifndef KINDLY_PUSH_SECRET_SHIM_H
#define KINDLY_PUSH_SECRET_SHIM_H

#include "CGLib.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef __SECRET_H__
// Opaque in libsecret too (Swift: OpaquePointer).
typedef struct _SecretValue SecretValue;

// Instance structs in libsecret; here placeholders, so that Swift imports typed pointers.
typedef struct _SecretSchema {
    char kp_opaque;
} SecretSchema;
typedef struct _SecretService {
    char kp_opaque;
} SecretService;
typedef struct _SecretCollection {
    char kp_opaque;
} SecretCollection;
typedef struct _SecretItem {
    char kp_opaque;
} SecretItem;

typedef enum {
    SECRET_ITEM_CREATE_NONE = 0,
    SECRET_ITEM_CREATE_REPLACE = 1 << 1,
} SecretItemCreateFlags;
typedef enum {
    SECRET_COLLECTION_NONE = 0,
    SECRET_COLLECTION_LOAD_ITEMS = 1 << 1,
} SecretCollectionFlags;
#endif

// libsecret (secret-1), as Swift calls it.
SecretValue *secret_value_new(const gchar *secret, gssize length, const gchar *content_type);
const gchar *secret_value_get(SecretValue *value, gsize *length);
void secret_value_unref(gpointer value);
SecretItem *secret_item_create_sync(SecretCollection *collection, const SecretSchema *schema, GHashTable *attributes,
                                    const gchar *label, SecretValue *value, SecretItemCreateFlags flags,
                                    GCancellable *cancellable, GError **error);
gboolean secret_item_get_locked(SecretItem *self);
GHashTable *secret_item_get_attributes(SecretItem *self);
gboolean secret_item_load_secret_sync(SecretItem *self, GCancellable *cancellable, GError **error);
SecretValue *secret_item_get_secret(SecretItem *self);
gboolean secret_item_delete_sync(SecretItem *self, GCancellable *cancellable, GError **error);
SecretCollection *secret_collection_for_alias_sync(SecretService *service, const gchar *alias,
                                                   SecretCollectionFlags flags, GCancellable *cancellable,
                                                   GError **error);
gboolean secret_collection_get_locked(SecretCollection *self);

/// The version of libsecret's headers the shim was built with (SECRET_MAJOR_VERSION and so on).
void kps_libsecret_version(guint *major, guint *minor, guint *micro);

/// Registers every GLib type that libsecret and this shim use, exactly once, whichever thread
/// gets here first. Every other function of this shim calls it; calling it again is cheap.
void kps_secret_init(void);

/// The schema `ai.kindly.push.DeviceKey` with the string attributes `kid`, `label`, `created`
/// and `public_key`.
const SecretSchema *kps_schema(void);

/// The schema `ai.kindly.push.SenderKey` of pinned sender keys (docs/spec/wire-format.md section 7.1), with
/// the string attributes `sid`, `label`, `created` and `public_key`.
const SecretSchema *kps_sender_schema(void);
/// The schema of the device's UnifiedPush registration (its Web Push keys): ai.kindly.push.UnifiedPushRegistration.
const SecretSchema *kps_unifiedpush_schema(void);

/// A new attribute table (string keys to string values, both copied).
GHashTable *kps_attributes_new(void);

/// Sets `key` to `value` in a table made by kps_attributes_new.
void kps_attributes_set(GHashTable *attributes, const char *key, const char *value);

/// A private connection to the message bus at `address` (a D-Bus address string). It is not the
/// process-wide session bus singleton, so closing it never exits the process and a test can
/// point it anywhere. Honours `cancellable` throughout connecting and authenticating.
GDBusConnection *kps_connection_open(const char *address, GCancellable *cancellable, GError **error);

/// A Secret Service proxy on `connection` that never prompts: a prompt the service asks for
/// fails at once with SECRET_ERROR_IS_LOCKED. Only asks the bus for the name's owner; it loads
/// no properties and opens no session until a secret is transferred.
SecretService *kps_service_new(GDBusConnection *connection, GCancellable *cancellable, GError **error);

/// Asks the service to close the transfer session `service` opened, if it opened one, without
/// waiting for the answer. The connection outlives the proxy (it is cached), so without this
/// every operation that loaded a secret would leave a session open in the service.
void kps_service_close_session(SecretService *service, GDBusConnection *connection);

/// The collection at D-Bus object path `path`. This and the two functions below use libsecret's
/// path-level calls, which it declares only under SECRET_API_SUBJECT_TO_CHANGE; the shim
/// confines that here.
SecretCollection *kps_collection_for_path(SecretService *service, const char *path,
                                          GCancellable *cancellable, GError **error);

/// The object paths of the items of the project's schema in `collection` that match
/// `attributes` (a NULL-terminated array to free with g_strfreev). Never unlocks, never prompts.
gchar **kps_collection_search_paths(SecretCollection *collection, GHashTable *attributes,
                                    GCancellable *cancellable, GError **error);

/// The same for the items of `schema` (the project's device-key or sender-key schema).
gchar **kps_collection_search_schema_paths(SecretCollection *collection, const SecretSchema *schema,
                                           GHashTable *attributes, GCancellable *cancellable, GError **error);

/// The `Modified` property (Unix seconds) of the item at `path` of `collection`'s service, read
/// with one `Properties.Get` on the collection's connection; FALSE with `error` set.
gboolean kps_item_modified(SecretCollection *collection, const char *path, guint64 *modified,
                           GCancellable *cancellable, GError **error);

/// The item at D-Bus object path `path`, its properties loaded, its secret not.
SecretItem *kps_item_for_path(SecretService *service, const char *path,
                              GCancellable *cancellable, GError **error);

/// Whether `name` has an owner on the bus (KPS_NAME_RUNNING), has none but the bus starts it at
/// the first call to it (KPS_NAME_ACTIVATABLE), or neither (KPS_NAME_ABSENT, also on an error,
/// with `error` set). Asks the bus only: starts nothing.
typedef enum { KPS_NAME_ABSENT = 0, KPS_NAME_RUNNING = 1, KPS_NAME_ACTIVATABLE = 2 } KpsNameState;
KpsNameState kps_bus_name_state(GDBusConnection *connection, const char *name,
                                GCancellable *cancellable, GError **error);

/// What a GError means for a keyring.
typedef enum {
    /// Anything else (an I/O failure of the service, a protocol error).
    KPS_ERROR_OTHER = 0,
    /// The operation was cancelled: its time budget ran out.
    KPS_ERROR_CANCELLED = 1,
    /// The collection or item is locked, or unlocking it would need a prompt.
    KPS_ERROR_LOCKED = 2,
    /// No bus, no service on the bus, or the connection broke.
    KPS_ERROR_UNREACHABLE = 3,
} KpsErrorKind;

KpsErrorKind kps_error_kind(const GError *error);

/// Whether opening a collection (or item) failed because it is not there: the service says there
/// is no such object, or libsecret found no properties at the path (which it reports as
/// UnknownMethod, "No such secret collection at path").
gboolean kps_error_means_missing(const GError *error);

#ifdef __cplusplus
}
#endif

#endif

// libsecret declares its path-level calls (secret-paths.h) only for "unstable" API users; they
// have been there unchanged since 0.x.
#define SECRET_API_SUBJECT_TO_CHANGE

#include <libsecret/secret.h>

#include "CSecretShim.h"

// MARK: One-time type registration

GType kps_service_get_type(void);

static gpointer register_types(gpointer unused) {
    (void)unused;
    // libsecret's enum and flags getters come from an old glib-mkenums template
    // (`static GType etype = 0; if (etype == 0) ...`), which races when two threads get there
    // first together: the loser can see a half-registered type, and a schema check then fails
    // silently (a store returns FALSE with no GError). g_type_ensure calls each getter in a way
    // the compiler may not drop, although the getters are declared G_GNUC_CONST.
    g_type_ensure(secret_backend_flags_get_type());
    g_type_ensure(secret_collection_flags_get_type());
    g_type_ensure(secret_collection_create_flags_get_type());
    g_type_ensure(secret_item_flags_get_type());
    g_type_ensure(secret_item_create_flags_get_type());
    g_type_ensure(secret_schema_attribute_type_get_type());
    g_type_ensure(secret_schema_flags_get_type());
    g_type_ensure(secret_schema_type_get_type());
    g_type_ensure(secret_service_flags_get_type());
    g_type_ensure(secret_error_get_type());
    g_type_ensure(secret_search_flags_get_type());
    g_type_ensure(secret_schema_get_type());
    g_type_ensure(secret_schema_attribute_get_type());
    g_type_ensure(secret_value_get_type());
    g_type_ensure(secret_prompt_get_type());
    g_type_ensure(secret_item_get_type());
    g_type_ensure(secret_collection_get_type());
    g_type_ensure(secret_service_get_type());
    // Maps the Secret Service's D-Bus error names (IsLocked, NoSuchObject) to SECRET_ERROR codes.
    (void)secret_error_get_quark();
    g_type_ensure(kps_service_get_type());
    return NULL;
}

void kps_secret_init(void) {
    static GOnce once = G_ONCE_INIT;
    g_once(&once, register_types, NULL);
}

void kps_libsecret_version(guint *major, guint *minor, guint *micro) {
    *major = SECRET_MAJOR_VERSION;
    *minor = SECRET_MINOR_VERSION;
    *micro = SECRET_MICRO_VERSION;
}

// MARK: Schema

static const SecretSchema schema = {
    "ai.kindly.push.DeviceKey",
    SECRET_SCHEMA_NONE,
    {
        { "kid", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "label", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "created", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "public_key", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { NULL, 0 },
    },
};

const SecretSchema *kps_schema(void) {
    kps_secret_init();
    return &schema;
}

static const SecretSchema sender_schema = {
    "ai.kindly.push.SenderKey",
    SECRET_SCHEMA_NONE,
    {
        { "sid", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "label", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "created", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "public_key", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { NULL, 0 },
    },
};

const SecretSchema *kps_sender_schema(void) {
    kps_secret_init();
    return &sender_schema;
}

static const SecretSchema unifiedpush_schema = {
    "ai.kindly.push.UnifiedPushRegistration",
    SECRET_SCHEMA_NONE,
    {
        { "token", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "distributor", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { NULL, 0 },
    },
};

const SecretSchema *kps_unifiedpush_schema(void) {
    kps_secret_init();
    return &unifiedpush_schema;
}

GHashTable *kps_attributes_new(void) {
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

void kps_attributes_set(GHashTable *attributes, const char *key, const char *value) {
    g_hash_table_replace(attributes, g_strdup(key), g_strdup(value));
}

// MARK: A Secret Service that never prompts

// libsecret shows a prompt (on a desktop: an unlock dialog) whenever the service asks for one,
// and waits for the user. A notification path must never do that, so every prompt fails at
// once as "locked", which the keyring reports as key_unavailable.
typedef struct {
    SecretService parent;
} KpsService;

typedef struct {
    SecretServiceClass parent_class;
} KpsServiceClass;

G_DEFINE_TYPE(KpsService, kps_service, SECRET_TYPE_SERVICE)

static const char refused_prompt[] =
    "the Secret Service asked to prompt (the keyring is locked); KindlyPush never prompts";

static GVariant *kps_service_prompt_sync(SecretService *self, SecretPrompt *prompt,
                                         GCancellable *cancellable, const GVariantType *return_type,
                                         GError **error) {
    (void)self; (void)prompt; (void)cancellable; (void)return_type;
    g_set_error_literal(error, SECRET_ERROR, SECRET_ERROR_IS_LOCKED, refused_prompt);
    return NULL;
}

static void kps_service_prompt_async(SecretService *self, SecretPrompt *prompt,
                                     const GVariantType *return_type, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data) {
    (void)prompt; (void)return_type; (void)cancellable;
    g_task_report_new_error(self, callback, user_data, kps_service_prompt_async,
                            SECRET_ERROR, SECRET_ERROR_IS_LOCKED, "%s", refused_prompt);
}

static GVariant *kps_service_prompt_finish(SecretService *self, GAsyncResult *result, GError **error) {
    (void)self;
    return g_task_propagate_pointer(G_TASK(result), error);
}

// libsecret's own constructor (0.20 and later) overwrites the proxy's construct properties with
// the process-wide session bus and its defaults, whatever the caller passed. This class wants its
// own connection and flags, so it constructs as GDBusProxy does and skips that override; the
// override only sets properties, so nothing else is lost.
static GObject *kps_service_constructor(GType type, guint n_properties, GObjectConstructParam *properties) {
    GObjectClass *proxy_class = g_type_class_peek(G_TYPE_DBUS_PROXY);
    return proxy_class->constructor(type, n_properties, properties);
}

static void kps_service_class_init(KpsServiceClass *klass) {
    G_OBJECT_CLASS(klass)->constructor = kps_service_constructor;
    SecretServiceClass *service_class = SECRET_SERVICE_CLASS(klass);
    service_class->prompt_sync = kps_service_prompt_sync;
    service_class->prompt_async = kps_service_prompt_async;
    service_class->prompt_finish = kps_service_prompt_finish;
}

static void kps_service_init(KpsService *self) {
    (void)self;
}

// MARK: Connections

GDBusConnection *kps_connection_open(const char *address, GCancellable *cancellable, GError **error) {
    kps_secret_init();
    return g_dbus_connection_new_for_address_sync(
        address,
        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
        NULL, cancellable, error);
}

SecretService *kps_service_new(GDBusConnection *connection, GCancellable *cancellable, GError **error) {
    kps_secret_init();
    // As secret_service_open does, but on our own connection. No properties and no signals:
    // the keyring reads what it needs (collections, items) fresh for every operation.
    return g_initable_new(kps_service_get_type(), cancellable, error,
                          "g-flags", G_DBUS_PROXY_FLAGS_DO_NOT_LOAD_PROPERTIES | G_DBUS_PROXY_FLAGS_DO_NOT_CONNECT_SIGNALS,
                          "g-name", "org.freedesktop.secrets",
                          "g-connection", connection,
                          "g-object-path", "/org/freedesktop/secrets",
                          "g-interface-name", "org.freedesktop.Secret.Service",
                          "flags", SECRET_SERVICE_NONE,
                          NULL);
}

void kps_service_close_session(SecretService *service, GDBusConnection *connection) {
    const gchar *path = secret_service_get_session_dbus_path(service);
    if (path == NULL) return;
    // Fire and forget: no callback, so nothing waits and no main loop is needed.
    g_dbus_connection_call(connection, "org.freedesktop.secrets", path, "org.freedesktop.Secret.Session", "Close",
                           NULL, NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, 1000, NULL, NULL, NULL);
}

SecretCollection *kps_collection_for_path(SecretService *service, const char *path,
                                          GCancellable *cancellable, GError **error) {
    return secret_collection_new_for_dbus_path_sync(service, path, SECRET_COLLECTION_NONE, cancellable, error);
}

gchar **kps_collection_search_paths(SecretCollection *collection, GHashTable *attributes,
                                    GCancellable *cancellable, GError **error) {
    return kps_collection_search_schema_paths(collection, kps_schema(), attributes, cancellable, error);
}

gchar **kps_collection_search_schema_paths(SecretCollection *collection, const SecretSchema *schema,
                                           GHashTable *attributes, GCancellable *cancellable, GError **error) {
    return secret_collection_search_for_dbus_paths_sync(collection, schema, attributes, cancellable, error);
}

gboolean kps_item_modified(SecretCollection *collection, const char *path, guint64 *modified,
                           GCancellable *cancellable, GError **error) {
    GDBusProxy *proxy = G_DBUS_PROXY(collection);
    GVariant *reply = g_dbus_connection_call_sync(
        g_dbus_proxy_get_connection(proxy), g_dbus_proxy_get_name(proxy), path, "org.freedesktop.DBus.Properties", "Get",
        g_variant_new("(ss)", "org.freedesktop.Secret.Item", "Modified"), G_VARIANT_TYPE("(v)"),
        G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return FALSE;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    gboolean ok = g_variant_is_of_type(value, G_VARIANT_TYPE_UINT64);
    if (ok) {
        *modified = g_variant_get_uint64(value);
    } else {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "an item's Modified property is not a uint64");
    }
    g_variant_unref(value);
    g_variant_unref(reply);
    return ok;
}

SecretItem *kps_item_for_path(SecretService *service, const char *path,
                              GCancellable *cancellable, GError **error) {
    return secret_item_new_for_dbus_path_sync(service, path, SECRET_ITEM_NONE, cancellable, error);
}

KpsNameState kps_bus_name_state(GDBusConnection *connection, const char *name,
                                GCancellable *cancellable, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
        "NameHasOwner", g_variant_new("(s)", name), G_VARIANT_TYPE("(b)"),
        G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return KPS_NAME_ABSENT;
    gboolean owned = FALSE;
    g_variant_get(reply, "(b)", &owned);
    g_variant_unref(reply);
    if (owned) return KPS_NAME_RUNNING;

    reply = g_dbus_connection_call_sync(
        connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
        "ListActivatableNames", NULL, G_VARIANT_TYPE("(as)"),
        G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return KPS_NAME_ABSENT;
    gboolean activatable = FALSE;
    GVariantIter *names = NULL;
    const char *each = NULL;
    g_variant_get(reply, "(as)", &names);
    while (g_variant_iter_loop(names, "&s", &each)) {
        if (g_strcmp0(each, name) == 0) activatable = TRUE;
    }
    g_variant_iter_free(names);
    g_variant_unref(reply);
    return activatable ? KPS_NAME_ACTIVATABLE : KPS_NAME_ABSENT;
}

// MARK: Errors

KpsErrorKind kps_error_kind(const GError *error) {
    if (error == NULL) return KPS_ERROR_OTHER;
    if (error->domain == G_IO_ERROR) {
        switch (error->code) {
        case G_IO_ERROR_CANCELLED:
            return KPS_ERROR_CANCELLED;
        case G_IO_ERROR_CLOSED:
        case G_IO_ERROR_BROKEN_PIPE:
        case G_IO_ERROR_CONNECTION_REFUSED:
        case G_IO_ERROR_NOT_CONNECTED:
        case G_IO_ERROR_TIMED_OUT:
        case G_IO_ERROR_HOST_UNREACHABLE:
        case G_IO_ERROR_NETWORK_UNREACHABLE:
            return KPS_ERROR_UNREACHABLE;
        default:
            return KPS_ERROR_OTHER;
        }
    }
    if (g_error_matches(error, SECRET_ERROR, SECRET_ERROR_IS_LOCKED)) return KPS_ERROR_LOCKED;
    if (error->domain == G_DBUS_ERROR) {
        switch (error->code) {
        case G_DBUS_ERROR_SERVICE_UNKNOWN:
        case G_DBUS_ERROR_NAME_HAS_NO_OWNER:
        case G_DBUS_ERROR_NO_REPLY:
        case G_DBUS_ERROR_TIMEOUT:
        case G_DBUS_ERROR_TIMED_OUT:
        case G_DBUS_ERROR_DISCONNECTED:
        case G_DBUS_ERROR_NO_SERVER:
        case G_DBUS_ERROR_NO_NETWORK:
        // The bus could not start the service.
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
            return KPS_ERROR_UNREACHABLE;
        default:
            return KPS_ERROR_OTHER;
        }
    }
    return KPS_ERROR_OTHER;
}

gboolean kps_error_means_missing(const GError *error) {
    return g_error_matches(error, SECRET_ERROR, SECRET_ERROR_NO_SUCH_OBJECT)
        || g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_OBJECT)
        || g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD);
}

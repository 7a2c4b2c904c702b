#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

#include "CHTTPServer.h"

struct kp_http_server {
    struct MHD_Daemon *daemon;
    kp_http_handler handler;
    kp_http_notify notify;
    void *context;
};

static enum MHD_Result kp_access(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size, void **request) {
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)request;
    kp_http_server *server = cls;
    return server->handler(server->context, connection, url, method) ? MHD_YES : MHD_NO;
}

static void kp_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                      enum MHD_ConnectionNotificationCode event) {
    (void)socket_context;
    kp_http_server *server = cls;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    server->notify(server->context, connection, info == NULL ? -1 : (int)info->connect_fd,
                   event == MHD_CONNECTION_NOTIFY_STARTED);
}

kp_http_server *kp_http_start(int listener, unsigned int limit, unsigned int idle_seconds, size_t memory,
                              kp_http_handler handler, kp_http_notify notify, void *context) {
    kp_http_server *server = calloc(1, sizeof *server);
    if (server == NULL) return NULL;
    server->handler = handler;
    server->notify = notify;
    server->context = context;
    // MHD_start_daemon is C-variadic: the one set of options, here. No log of MHD's own.
    server->daemon = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, kp_access, server,
                                      MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listener,
                                      MHD_OPTION_CONNECTION_LIMIT, limit,
                                      MHD_OPTION_CONNECTION_TIMEOUT, idle_seconds,
                                      MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory,
                                      MHD_OPTION_NOTIFY_CONNECTION, kp_notify, server,
                                      MHD_OPTION_END);
    if (server->daemon == NULL) {
        free(server);
        return NULL;
    }
    return server;
}

int kp_http_run_wait(kp_http_server *server, int32_t milliseconds) {
    return MHD_run_wait(server->daemon, milliseconds) == MHD_YES;
}

int kp_http_respond(void *connection, unsigned int status, const char *type, const void *body, size_t length, int allow) {
    struct MHD_Response *response = MHD_create_response_from_buffer(length, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL) return 0;
    MHD_add_response_header(response, "Content-Type", type);
    MHD_add_response_header(response, "Connection", "close");
    if (allow) MHD_add_response_header(response, "Allow", "GET, HEAD");
    enum MHD_Result queued = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return queued == MHD_YES;
}

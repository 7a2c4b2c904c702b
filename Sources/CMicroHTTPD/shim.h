// libmicrohttpd, from Debian's libmicrohttpd-dev (its header is on the compiler's default path),
// for the endpoints the workers serve (`--metrics`: /metrics and /healthz).
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

// MHD_start_daemon is C-variadic: the one set of options the endpoints use. No thread of its own
// (the caller's thread runs MHD_run_wait), epoll, the caller's bound listening socket, at most
// `limit` connections, each closed after `idle_seconds` without activity, `memory` bytes per
// connection (which bounds a request's head), and `notify` told of each connection's start and
// end (the caller's per-request deadline). MHD writes no log of its own.
static inline struct MHD_Daemon *kp_mhd_start(int listener, unsigned int limit, unsigned int idle_seconds,
                                               size_t memory, MHD_AccessHandlerCallback handler,
                                               MHD_NotifyConnectionCallback notify, void *context) {
    return MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, handler, context,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listener,
                            MHD_OPTION_CONNECTION_LIMIT, limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, context,
                            MHD_OPTION_END);
}

// The descriptor of a connection (MHD_get_connection_info returns a union).
static inline int kp_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

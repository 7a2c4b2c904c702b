// The HTTP server of what the workers serve (`--metrics`), on libmicrohttpd (Debian
// libmicrohttpd-dev). A C layer of its own, kept thin: microhttpd.h (and the socket headers it
// includes) stays in the .c file, so that no other module's view of the system headers changes,
// and Swift sees four calls and two callbacks.
#ifndef KINDLY_PUSH_HTTP_SERVER_H
#define KINDLY_PUSH_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kp_http_server kp_http_server;

/// A request whose head has arrived: answer it with kp_http_respond (its result is returned).
typedef int (*kp_http_handler)(void *context, void *connection, const char *url, const char *method);
/// A connection accepted (`started` 1, with its descriptor) or closed (`started` 0).
typedef void (*kp_http_notify)(void *context, void *connection, int descriptor, int started);

/// Serves on `listener` (bound and listening) with no thread of its own (the caller runs
/// kp_http_run_wait), epoll, at most `limit` connections, each closed after `idle_seconds`
/// without activity and given `memory` bytes (which bound a request's head). NULL on failure.
kp_http_server *kp_http_start(int listener, unsigned int limit, unsigned int idle_seconds, size_t memory,
                              kp_http_handler handler, kp_http_notify notify, void *context);

/// Serves what is ready, waiting up to `milliseconds` for something to do. 1 on success.
int kp_http_run_wait(kp_http_server *server, int32_t milliseconds);

/// Queues the answer of `connection`: `status`, Content-Type `type`, `body`, and Connection:
/// close (each request has its connection); with `allow`, `Allow: GET, HEAD`. 1 on success.
int kp_http_respond(void *connection, unsigned int status, const char *type, const void *body, size_t length, int allow);

#ifdef __cplusplus
}
#endif

#endif

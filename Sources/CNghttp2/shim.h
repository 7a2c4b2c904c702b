// nghttp2 (Debian libnghttp2-dev; its header is on the compiler's default path): the HTTP/2
// framing, HPACK and stream state of the client of KindlyPushHTTP2, driven through its memory
// interface (nghttp2_session_mem_recv, nghttp2_session_mem_send) over OpenSSL's TLS. Every call
// Swift makes is a plain C function: no wrapper is needed.
#include <nghttp2/nghttp2.h>

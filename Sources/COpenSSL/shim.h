// OpenSSL's TLS (Debian libssl-dev), for rediss:// (hiredis 0.14 has no TLS of its own: the
// worker runs hiredis's protocol reader over an OpenSSL connection).
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

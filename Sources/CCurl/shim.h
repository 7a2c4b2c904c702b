// libcurl, from Debian's libcurl4-openssl-dev (its header is on the compiler's default path):
// HTTP/2 through nghttp2, TLS through OpenSSL, for `kindly-push send`.
#include <curl/curl.h>

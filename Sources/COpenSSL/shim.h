// OpenSSL (Debian libssl-dev; its headers are on the compiler's default path). TLS for
// rediss:// (hiredis 0.14 has no TLS of its own: the worker runs hiredis's protocol reader over
// an OpenSSL connection), and libcrypto for the ES256 signature of the APNs provider token, the
// one primitive libsodium does not have (P-256 ECDSA).
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

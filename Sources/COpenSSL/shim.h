// OpenSSL (Debian libssl-dev; its headers are on the compiler's default path). TLS for
// rediss:// (hiredis 0.14 has no TLS of its own: the worker runs hiredis's protocol reader over
// an OpenSSL connection), and libcrypto for what libsodium does not have: P-256 (ECDSA for the
// APNs provider token and VAPID, ECDH for Web Push) and AES-128-GCM (Web Push's aes128gcm).
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// The selections of EVP_PKEY_fromdata, compound macros that Swift does not import.
static inline int kp_evp_pkey_keypair(void) { return EVP_PKEY_KEYPAIR; }
static inline int kp_evp_pkey_public_key(void) { return EVP_PKEY_PUBLIC_KEY; }

// OpenSSL's libcrypto, from Debian's libssl-dev (its headers are on the compiler's default path):
// the ES256 signature of the APNs provider token, the one primitive libsodium does not have
// (P-256 ECDSA). Nothing else of the project uses it.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>

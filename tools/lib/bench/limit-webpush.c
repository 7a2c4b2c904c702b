// The limit for Web Push's encryption (RFC 8291, aes128gcm): only the cryptography, with OpenSSL's
// libcrypto alone, on plaintexts and subscriptions read beforehand, one thread.
//
// Input (written by `kindly-push-bench webpush-corpus`): per message p256dh (65) || auth (16) ||
// u32le length || plaintext.
// Per message: the subscription's point parsed (on the curve), an ephemeral P-256 key pair and its
// uncompressed point, ECDH, a random salt, HKDF-SHA256 (five HMAC-SHA256: PRK_key, IKM, PRK, CEK,
// NONCE), the header, and one AES-128-GCM record of plaintext || 0x02.
// Prints: messages, seconds, messages per second, CPU seconds of the loop.
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// The clocks and read_all (it includes sodium.h: compiled with libsodium's flags too).
#include "bench-common.h"

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "limit-webpush: %s failed\n", #x); exit(1); } } while (0)

// HMAC-SHA256(key, a || b || c || d), cut to out_length.
static void hmac(unsigned char *out, size_t out_length, const unsigned char *key, size_t key_length,
                 const unsigned char *a, size_t a_length, const unsigned char *b, size_t b_length,
                 const unsigned char *c, size_t c_length) {
    unsigned char message[256], tag[32];
    memcpy(message, a, a_length);
    memcpy(message + a_length, b, b_length);
    memcpy(message + a_length + b_length, c, c_length);
    unsigned int tag_length = 0;
    CHECK(HMAC(EVP_sha256(), key, (int)key_length, message, a_length + b_length + c_length, tag, &tag_length));
    memcpy(out, tag, out_length);
    OPENSSL_cleanse(tag, sizeof tag);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: limit-webpush CORPUS.bin\n"); return 64; }
    size_t length;
    unsigned char *data = read_all(argv[1], &length);
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    CHECK(cipher);
    static const unsigned char info[] = "WebPush: info";  // and its NUL
    static const unsigned char cek_info[] = "Content-Encoding: aes128gcm\0\1";
    static const unsigned char nonce_info[] = "Content-Encoding: nonce\0\1";
    static unsigned char message[4096 + 256];
    size_t offset = 0, messages = 0, written = 0;
    double start = now(), cpu_start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    while (offset < length) {
        const unsigned char *p256dh = data + offset, *auth = data + offset + 65;
        uint32_t plaintext_length;
        memcpy(&plaintext_length, data + offset + 81, 4);
        const unsigned char *plaintext = data + offset + 85;
        offset += 85 + plaintext_length;
        messages++;

        // The subscription's point.
        OSSL_PARAM peer_params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0),
            OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)p256dh, 65), OSSL_PARAM_construct_end()};
        EVP_PKEY_CTX *from = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
        EVP_PKEY *peer = NULL;
        CHECK(from && EVP_PKEY_fromdata_init(from) == 1 && EVP_PKEY_fromdata(from, &peer, EVP_PKEY_PUBLIC_KEY, peer_params) == 1);
        EVP_PKEY_CTX_free(from);

        // The ephemeral key pair.
        EVP_PKEY_CTX *generate = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
        EVP_PKEY *ephemeral = NULL;
        CHECK(generate && EVP_PKEY_keygen_init(generate) == 1 && EVP_PKEY_CTX_set_group_name(generate, "P-256") == 1
              && EVP_PKEY_generate(generate, &ephemeral) == 1);
        EVP_PKEY_CTX_free(generate);
        unsigned char as_public[65];
        size_t as_public_length = 0;
        CHECK(EVP_PKEY_get_octet_string_param(ephemeral, OSSL_PKEY_PARAM_PUB_KEY, as_public, sizeof as_public, &as_public_length) == 1
              && as_public_length == 65);

        // ECDH.
        unsigned char secret[32];
        size_t secret_length = sizeof secret;
        EVP_PKEY_CTX *derive = EVP_PKEY_CTX_new_from_pkey(NULL, ephemeral, NULL);
        CHECK(derive && EVP_PKEY_derive_init(derive) == 1 && EVP_PKEY_derive_set_peer(derive, peer) == 1
              && EVP_PKEY_derive(derive, secret, &secret_length) == 1 && secret_length == 32);
        EVP_PKEY_CTX_free(derive);
        EVP_PKEY_free(ephemeral);
        EVP_PKEY_free(peer);

        // The key schedule: RFC 8291 section 3.4, then RFC 8188's CEK and NONCE.
        unsigned char salt[16], key_prk[32], ikm[32], prk[32], cek[16], nonce[12];
        CHECK(RAND_bytes(salt, sizeof salt) == 1);
        hmac(key_prk, 32, auth, 16, secret, 32, NULL, 0, NULL, 0);
        unsigned char key_info[sizeof info + 65 + 65 + 1];
        memcpy(key_info, info, sizeof info);
        memcpy(key_info + sizeof info, p256dh, 65);
        memcpy(key_info + sizeof info + 65, as_public, 65);
        key_info[sizeof key_info - 1] = 1;
        hmac(ikm, 32, key_prk, 32, key_info, sizeof key_info, NULL, 0, NULL, 0);
        hmac(prk, 32, salt, 16, ikm, 32, NULL, 0, NULL, 0);
        hmac(cek, 16, prk, 32, cek_info, sizeof cek_info - 1, NULL, 0, NULL, 0);
        hmac(nonce, 12, prk, 32, nonce_info, sizeof nonce_info - 1, NULL, 0, NULL, 0);

        // The header and the one record.
        memcpy(message, salt, 16);
        message[16] = 0, message[17] = 0, message[18] = 0x10, message[19] = 0, message[20] = 65;
        memcpy(message + 21, as_public, 65);
        unsigned char *record = message + 86;
        memcpy(record, plaintext, plaintext_length);
        record[plaintext_length] = 2;
        EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
        int out = 0, final = 0;
        CHECK(context && EVP_EncryptInit_ex(context, cipher, NULL, cek, nonce) == 1
              && EVP_EncryptUpdate(context, record, &out, record, (int)plaintext_length + 1) == 1
              && EVP_EncryptFinal_ex(context, record + out, &final) == 1
              && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, record + plaintext_length + 1) == 1);
        EVP_CIPHER_CTX_free(context);
        OPENSSL_cleanse(secret, sizeof secret);
        OPENSSL_cleanse(key_prk, sizeof key_prk);
        OPENSSL_cleanse(ikm, sizeof ikm);
        OPENSSL_cleanse(prk, sizeof prk);
        OPENSSL_cleanse(cek, sizeof cek);
        OPENSSL_cleanse(nonce, sizeof nonce);
        written += 86 + plaintext_length + 17;
    }
    double seconds = now() - start, cpu_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    if (written == 0) return 1;
    printf("%zu %.6f %.1f %.6f\n", messages, seconds, (double)messages / seconds, cpu_seconds);
    EVP_CIPHER_free(cipher);
    return 0;
}

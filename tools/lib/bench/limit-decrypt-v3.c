// The limit for `kindly-push decrypt` on version 3 pushes (wire format section 8: HPKE, RFC 9180,
// DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305): only libsodium's part, on inputs
// decoded beforehand (no JSON, no base64, no output), one thread.
//
// Input (written by corpus.py decrypt-binary-v3): the device's 32-byte secret and public keys,
// the sender public key (32 zero bytes for mode_base) and a mode byte (0 mode_base, 2
// mode_auth), then per push: kid (8) || sid (8, zeros in mode_base) || enc (32) || u32le ct
// length || ct.
// Once, before the loop, as the library does: the key-schedule context (mode || psk_id_hash ||
// info_hash, constants) and, in mode_auth, DH(sk, spk) (the same for every push from one
// sender). Per push: in mode_auth the sid compared with the pinned key's; DH(sk, enc);
// eae_prk = LabeledExtract, shared_secret = LabeledExpand (kem_context enc || pk (|| spk));
// secret = LabeledExtract; key and base_nonce = LabeledExpand (five HMAC-SHA256s); the
// ChaCha20-Poly1305 open with aad LABEL3 || kid (|| sid); unpad.
// Prints: pushes, seconds, pushes per second, CPU seconds of the loop.
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-common.h"

static const unsigned char LABEL3[14] = "kindly-push/v3";
static const unsigned char KEM_SUITE[5] = {'K', 'E', 'M', 0x00, 0x20};
static const unsigned char SUITE[10] = {'H', 'P', 'K', 'E', 0x00, 0x20, 0x00, 0x01, 0x00, 0x03};

// HMAC-SHA256(key, "HPKE-v1" || suite || label || a || b || c) (RFC 9180 LabeledExtract when
// prefix is NULL; LabeledExpand's T(1) with the two-byte length prefix and the 0x01 counter).
static void labeled(unsigned char out[32], const unsigned char *key, size_t key_length, const unsigned char *prefix,
                    const unsigned char *suite, size_t suite_length, const char *label, const unsigned char *a,
                    size_t a_length, const unsigned char *b, size_t b_length, const unsigned char *c, size_t c_length,
                    int counter) {
    static const unsigned char zeros[32];
    crypto_auth_hmacsha256_state state;
    crypto_auth_hmacsha256_init(&state, key_length ? key : zeros, key_length ? key_length : 32);
    if (prefix) crypto_auth_hmacsha256_update(&state, prefix, 2);
    crypto_auth_hmacsha256_update(&state, (const unsigned char *)"HPKE-v1", 7);
    crypto_auth_hmacsha256_update(&state, suite, suite_length);
    crypto_auth_hmacsha256_update(&state, (const unsigned char *)label, strlen(label));
    if (a_length) crypto_auth_hmacsha256_update(&state, a, a_length);
    if (b_length) crypto_auth_hmacsha256_update(&state, b, b_length);
    if (c_length) crypto_auth_hmacsha256_update(&state, c, c_length);
    if (counter) {
        unsigned char one = 1;
        crypto_auth_hmacsha256_update(&state, &one, 1);
    }
    crypto_auth_hmacsha256_final(&state, out);
    sodium_memzero(&state, sizeof state);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: limit-decrypt-v3 CORPUS.bin\n"); return 64; }
    if (sodium_init() < 0) return 1;
    size_t length;
    unsigned char *data = read_all(argv[1], &length);
    const unsigned char *sk = data, *pk = data + 32, *spk = data + 64;
    int mode = data[96];
    size_t offset = 97, pushes = 0, failures = 0, plaintext_bytes = 0;
    unsigned char message[70000], sid[8], dh[64], context[65];
    const unsigned char len32[2] = {0, 32}, len12[2] = {0, 12};
    double start = now(), cpu_start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    context[0] = (unsigned char)mode;
    labeled(context + 1, NULL, 0, NULL, SUITE, sizeof SUITE, "psk_id_hash", NULL, 0, NULL, 0, NULL, 0, 0);
    labeled(context + 33, NULL, 0, NULL, SUITE, sizeof SUITE, "info_hash", LABEL3, sizeof LABEL3, NULL, 0, NULL, 0, 0);
    if (mode == 2) {
        crypto_generichash(sid, sizeof sid, spk, 32, NULL, 0);
        if (crypto_scalarmult(dh + 32, sk, spk) != 0) { fprintf(stderr, "limit-decrypt-v3: low-order sender key\n"); return 1; }
    }
    size_t dh_length = mode == 2 ? 64 : 32;
    while (offset < length) {
        const unsigned char *kid = data + offset, *push_sid = kid + 8, *enc = push_sid + 8;
        uint32_t ct_length;
        memcpy(&ct_length, enc + 32, 4);
        const unsigned char *ct = enc + 36;
        offset += 8 + 8 + 32 + 4 + ct_length;
        pushes++;
        if (mode == 2 && memcmp(push_sid, sid, 8) != 0) { failures++; continue; }

        unsigned char prk[32], shared[32], secret[32], key[32], nonce[32], aad[14 + 8 + 8];
        if (crypto_scalarmult(dh, sk, enc) != 0) { failures++; continue; }
        labeled(prk, NULL, 0, NULL, KEM_SUITE, sizeof KEM_SUITE, "eae_prk", dh, dh_length, NULL, 0, NULL, 0, 0);
        labeled(shared, prk, 32, len32, KEM_SUITE, sizeof KEM_SUITE, "shared_secret", enc, 32, pk, 32, spk,
                mode == 2 ? 32 : 0, 1);
        labeled(secret, shared, 32, NULL, SUITE, sizeof SUITE, "secret", NULL, 0, NULL, 0, NULL, 0, 0);
        labeled(key, secret, 32, len32, SUITE, sizeof SUITE, "key", context, sizeof context, NULL, 0, NULL, 0, 1);
        labeled(nonce, secret, 32, len12, SUITE, sizeof SUITE, "base_nonce", context, sizeof context, NULL, 0, NULL, 0, 1);
        memcpy(aad, LABEL3, 14);
        memcpy(aad + 14, kid, 8);
        memcpy(aad + 22, push_sid, 8);
        unsigned long long message_length;
        int status = crypto_aead_chacha20poly1305_ietf_decrypt(
            message, &message_length, NULL, ct, ct_length, aad, mode == 2 ? 30 : 22, nonce, key);
        sodium_memzero(dh, 32);
        sodium_memzero(prk, sizeof prk);
        sodium_memzero(shared, sizeof shared);
        sodium_memzero(secret, sizeof secret);
        sodium_memzero(key, sizeof key);
        sodium_memzero(nonce, sizeof nonce);
        size_t unpadded;
        if (status != 0 || sodium_unpad(&unpadded, message, (size_t)message_length, 64) != 0) { failures++; continue; }
        plaintext_bytes += unpadded;
    }
    double seconds = now() - start, cpu_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    sodium_memzero(dh, sizeof dh);
    if (failures) { fprintf(stderr, "limit-decrypt-v3: %zu pushes failed\n", failures); return 1; }
    printf("%zu %.6f %.1f %.6f\n", pushes, seconds, (double)pushes / seconds, cpu_seconds);
    return 0;
}

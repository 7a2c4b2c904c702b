// The limit for `kindly-push decrypt` on version 2 pushes: only the cryptography of wire format
// section 7.3, on inputs decoded beforehand (no JSON, no base64, no output), one thread.
//
// Input (written by corpus.py decrypt-binary-v2): the device's 32-byte secret and public keys
// and the pinned sender public key, then per push:
// kid (8) || sid (8) || epk (32) || n (24) || u32le ct length || ct.
// Once, before the loop: ss_s = X25519(sk, spk), kept as the library keeps it (section 7: the
// second shared secret is the same for every push from one sender). Per push: the sid compared
// with the pinned key's, X25519(sk, epk), BLAKE2b-256(LABEL2 || ss_e || ss_s || epk || pk || spk),
// XChaCha20-Poly1305 open with aad LABEL2 || kid || sid, unpad.
// Prints: pushes, seconds, pushes per second, CPU seconds of the loop.
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-common.h"

static const unsigned char LABEL2[14] = "kindly-push/v2";

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: limit-decrypt-v2 CORPUS.bin\n"); return 64; }
    if (sodium_init() < 0) return 1;
    size_t length;
    unsigned char *data = read_all(argv[1], &length);
    const unsigned char *sk = data, *pk = data + 32, *spk = data + 64;
    size_t offset = 96, pushes = 0, failures = 0, plaintext_bytes = 0;
    unsigned char message[70000], sid[8], ss_s[32];
    double start = now(), cpu_start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    crypto_generichash(sid, sizeof sid, spk, 32, NULL, 0);
    if (crypto_scalarmult(ss_s, sk, spk) != 0) { fprintf(stderr, "limit-decrypt-v2: low-order sender key\n"); return 1; }
    while (offset < length) {
        const unsigned char *kid = data + offset, *push_sid = kid + 8, *epk = push_sid + 8, *nonce = epk + 32;
        uint32_t ct_length;
        memcpy(&ct_length, nonce + 24, 4);
        const unsigned char *ct = nonce + 28;
        offset += 8 + 8 + 32 + 24 + 4 + ct_length;
        pushes++;
        if (memcmp(push_sid, sid, 8) != 0) { failures++; continue; }

        unsigned char ss[32], key[32], aad[14 + 8 + 8];
        if (crypto_scalarmult(ss, sk, epk) != 0) { failures++; continue; }
        crypto_generichash_state state;
        crypto_generichash_init(&state, NULL, 0, 32);
        crypto_generichash_update(&state, LABEL2, sizeof LABEL2);
        crypto_generichash_update(&state, ss, 32);
        crypto_generichash_update(&state, ss_s, 32);
        crypto_generichash_update(&state, epk, 32);
        crypto_generichash_update(&state, pk, 32);
        crypto_generichash_update(&state, spk, 32);
        crypto_generichash_final(&state, key, 32);
        memcpy(aad, LABEL2, 14);
        memcpy(aad + 14, kid, 8);
        memcpy(aad + 22, push_sid, 8);
        unsigned long long message_length;
        int status = crypto_aead_xchacha20poly1305_ietf_decrypt(
            message, &message_length, NULL, ct, ct_length, aad, sizeof aad, nonce, key);
        sodium_memzero(ss, sizeof ss);
        sodium_memzero(key, sizeof key);
        size_t unpadded;
        if (status != 0 || sodium_unpad(&unpadded, message, (size_t)message_length, 64) != 0) { failures++; continue; }
        plaintext_bytes += unpadded;
    }
    double seconds = now() - start, cpu_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    sodium_memzero(ss_s, sizeof ss_s);
    if (failures) { fprintf(stderr, "limit-decrypt-v2: %zu pushes failed\n", failures); return 1; }
    printf("%zu %.6f %.1f %.6f\n", pushes, seconds, (double)pushes / seconds, cpu_seconds);
    return 0;
}

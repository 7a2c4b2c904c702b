// The limit for `kindly-push decrypt`: only the cryptography of wire format v1, section 5,
// on inputs decoded beforehand (no JSON, no base64, no output), one thread.
//
// Input (written by corpus.py binary): the device's 32-byte secret and public keys, then
// per push: kid (8) || epk (32) || n (24) || u32le ct length || ct.
// Per push: X25519, BLAKE2b-256(LABEL || ss || epk || pk), XChaCha20-Poly1305 open, unpad.
// Prints: pushes, seconds, pushes per second, CPU seconds of the loop.
// With --latency, times each push on its own instead and prints: p50_us p99_us mean_us, the
// floor for the library's per-push latency figures on this machine at this moment.
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-common.h"

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int latency = argc == 3 && strcmp(argv[1], "--latency") == 0;
    if (argc != 2 && !latency) { fprintf(stderr, "usage: limit-decrypt [--latency] CORPUS.bin\n"); return 64; }
    if (sodium_init() < 0) return 1;
    size_t length;
    unsigned char *data = read_all(argv[argc - 1], &length);
    double *samples = latency ? malloc(sizeof(double) * (length / 100 + 1)) : NULL;
    const unsigned char *sk = data, *pk = data + 32;
    size_t offset = 64, pushes = 0, failures = 0, plaintext_bytes = 0;
    unsigned char message[70000];
    double start = now(), cpu_start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    while (offset < length) {
        const unsigned char *kid = data + offset, *epk = kid + 8, *nonce = epk + 32;
        uint32_t ct_length;
        memcpy(&ct_length, nonce + 24, 4);
        const unsigned char *ct = nonce + 28;
        offset += 8 + 32 + 24 + 4 + ct_length;
        pushes++;
        double push_start = latency ? now() : 0;

        unsigned char ss[32], key[32], aad[14 + 8];
        if (crypto_scalarmult(ss, sk, epk) != 0) { failures++; continue; }
        derive_key(key, ss, epk, pk);
        memcpy(aad, LABEL, 14);
        memcpy(aad + 14, kid, 8);
        unsigned long long message_length;
        int status = crypto_aead_xchacha20poly1305_ietf_decrypt(
            message, &message_length, NULL, ct, ct_length, aad, sizeof aad, nonce, key);
        sodium_memzero(ss, sizeof ss);
        sodium_memzero(key, sizeof key);
        size_t unpadded;
        if (status != 0 || sodium_unpad(&unpadded, message, (size_t)message_length, 64) != 0) { failures++; continue; }
        plaintext_bytes += unpadded;
        if (latency) samples[pushes - 1] = now() - push_start;
    }
    double seconds = now() - start, cpu_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    if (failures) { fprintf(stderr, "limit-decrypt: %zu pushes failed\n", failures); return 1; }
    if (latency) {
        qsort(samples, pushes, sizeof(double), compare);
        printf("%.2f %.2f %.2f\n", samples[pushes / 2] * 1e6, samples[pushes * 99 / 100] * 1e6, seconds / pushes * 1e6);
        return 0;
    }
    printf("%zu %.6f %.1f %.6f\n", pushes, seconds, (double)pushes / seconds, cpu_seconds);
    return 0;
}

// What the C limit programs share: the label, the clocks, reading a corpus file.
#ifndef KINDLY_PUSH_BENCH_COMMON_H
#define KINDLY_PUSH_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sodium.h>

static const unsigned char LABEL[14] = "kindly-push/v1";

static double clock_seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static double now(void) { return clock_seconds(CLOCK_MONOTONIC); }

static unsigned char *read_all(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(74); }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)size);
    if (fread(data, 1, (size_t)size, file) != (size_t)size) { perror(path); exit(74); }
    fclose(file);
    *length = (size_t)size;
    return data;
}


/* k = BLAKE2b-256(LABEL || ss || epk || pk), docs/spec/wire-format.md section 2, step 3. */
static void derive_key(unsigned char key[32], const unsigned char ss[32], const unsigned char epk[32],
                       const unsigned char pk[32]) {
    crypto_generichash_state state;
    crypto_generichash_init(&state, NULL, 0, 32);
    crypto_generichash_update(&state, LABEL, sizeof LABEL);
    crypto_generichash_update(&state, ss, 32);
    crypto_generichash_update(&state, epk, 32);
    crypto_generichash_update(&state, pk, 32);
    crypto_generichash_final(&state, key, 32);
}

#endif

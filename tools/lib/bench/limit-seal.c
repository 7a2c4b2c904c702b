// The limit for `kindly-push seal`: only the cryptography of wire format v1, section 2, on
// plaintext texts read beforehand (no JSON, no base64, no output), one thread.
//
// Input (written by corpus.py plaintexts-binary): the device's 32-byte public key, then per
// push: u32le length || the compact plaintext JSON text.
// Per push: ephemeral key pair, X25519, BLAKE2b-256(LABEL || ss || epk || pk), random nonce,
// pad to 64, XChaCha20-Poly1305 seal.
// Prints: pushes, seconds, pushes per second, CPU seconds of the loop.
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-common.h"

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: limit-seal CORPUS.bin\n"); return 64; }
    if (sodium_init() < 0) return 1;
    size_t length;
    unsigned char *data = read_all(argv[1], &length);
    const unsigned char *pk = data;
    unsigned char kid[8], aad[14 + 8];
    crypto_generichash(kid, 8, pk, 32, NULL, 0);
    memcpy(aad, LABEL, 14);
    memcpy(aad + 14, kid, 8);
    size_t offset = 32, pushes = 0, sealed_bytes = 0;
    static unsigned char padded[70000], sealed[70000 + 16];
    double start = now(), cpu_start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    while (offset < length) {
        uint32_t message_length;
        memcpy(&message_length, data + offset, 4);
        const unsigned char *message = data + offset + 4;
        offset += 4 + message_length;
        pushes++;

        unsigned char esk[32], epk[32], ss[32], key[32], nonce[24];
        crypto_box_keypair(epk, esk);
        if (crypto_scalarmult(ss, esk, pk) != 0) return 1;
        derive_key(key, ss, epk, pk);
        randombytes_buf(nonce, sizeof nonce);
        memcpy(padded, message, message_length);
        size_t padded_length;
        sodium_pad(&padded_length, padded, message_length, 64, sizeof padded);
        unsigned long long sealed_length;
        crypto_aead_xchacha20poly1305_ietf_encrypt(
            sealed, &sealed_length, padded, padded_length, aad, sizeof aad, NULL, nonce, key);
        sodium_memzero(esk, sizeof esk);
        sodium_memzero(ss, sizeof ss);
        sodium_memzero(key, sizeof key);
        sealed_bytes += sealed_length;
    }
    double seconds = now() - start, cpu_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    if (sealed_bytes == 0) return 1;
    printf("%zu %.6f %.1f %.6f\n", pushes, seconds, (double)pushes / seconds, cpu_seconds);
    return 0;
}

// The loops over text that run sixteen bytes at a time where the CPU has vector instructions
// (SSE2, and SSSE3 when the CPU has it; thirty-two with AVX2 when it has that; elsewhere the
// portable forms, or nothing): the scans of JSON string text and base64's decoding, which
// Swift's SIMD types cannot yet be compiled to (their comparisons become a loop over the lanes).
// Each only does faster part of what its Swift caller's loop does, and stops where that loop must
// look: at, or before, the first byte that needs it.
#ifndef KINDLY_PUSH_VECTOR_TEXT_H
#define KINDLY_PUSH_VECTOR_TEXT_H

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/// kp_plain_ascii_prefix where there is no SSE2 (and its reference in tests on x86-64): eight
/// bytes at a time in a 64-bit word, then one at a time.
static inline size_t kp_plain_ascii_prefix_portable(const uint8_t *bytes, size_t count) {
    size_t index = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (index + 8 <= count) {
        uint64_t word;
        __builtin_memcpy(&word, bytes + index, 8);
        // Per byte, its high bit: the byte is non-ASCII, below 0x20, `"` or `\`. Exact for the
        // lowest such byte (a borrow only ever marks bytes above a marked one); `"` and `\`
        // have their high bit clear, so `~word` stands for `~(word ^ c)` in the equality tests.
        uint64_t stops = ((((word - ones * 0x20) | ((word ^ (ones * 0x22)) - ones) | ((word ^ (ones * 0x5C)) - ones)) & ~word) | word) & highs;
        if (stops != 0) return index + (size_t)(__builtin_ctzll(stops) >> 3);
        index += 8;
    }
#endif
    while (index < count) {
        uint8_t byte = bytes[index];
        if (byte < 0x20 || byte >= 0x80 || byte == '"' || byte == '\\') break;
        index++;
    }
    return index;
}

#if defined(__SSE2__)
/// Of the sixteen bytes at `at`, a bit for each that is not plain ASCII (a control character, a
/// byte from 0x80 up, `"` or `\`).
static inline unsigned kp_plain_ascii_stops_sse2(const uint8_t *at) {
    // As signed bytes, everything from 0x80 up is negative: one comparison finds the control
    // characters and the non-ASCII bytes.
    const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    __m128i block = _mm_loadu_si128((const __m128i *)at);
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(
        _mm_cmplt_epi8(block, space), _mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash))));
}

/// kp_plain_ascii_prefix's SSE2 loop from `index` (a multiple of 16 below `count`, whose bytes
/// before it have passed; `count` at least 16).
static inline size_t kp_plain_ascii_prefix_sse2(const uint8_t *bytes, size_t count, size_t index) {
    for (;;) {
        // The last block overlaps the one before rather than leave a tail: the bytes it reads
        // again have passed already.
        size_t at = index + 16 <= count ? index : count - 16;
        unsigned mask = kp_plain_ascii_stops_sse2(bytes + at);
        if (mask != 0) return at + (size_t)__builtin_ctz(mask);
        if (at + 16 == count) return count;
        index = at + 16;
    }
}
#endif

/// kp_plain_ascii_prefix past its first sixteen bytes (which have passed), for `count` of at
/// least 48: thirty-two bytes at a time where the CPU has AVX2, else the SSE2 loop.
size_t kp_plain_ascii_prefix_long(const uint8_t *bytes, size_t count);

/// The length of the longest prefix of `bytes[0..<count]` that is printable ASCII other than
/// `"` and `\`: where a JSON string's text first needs a look (its closing quote, an escape, a
/// control character, a byte of a multi-byte character). Its first sixteen bytes are looked at
/// inline, so that a short string (a member name) costs no call; a longer text goes on in
/// kp_plain_ascii_prefix_long.
static inline size_t kp_plain_ascii_prefix(const uint8_t *bytes, size_t count) {
#if defined(__SSE2__)
    if (count >= 16) {
        unsigned mask = kp_plain_ascii_stops_sse2(bytes);
        if (mask != 0) return (size_t)__builtin_ctz(mask);
        if (count == 16) return 16;
        return count >= 48 ? kp_plain_ascii_prefix_long(bytes, count) : kp_plain_ascii_prefix_sse2(bytes, count, 16);
    }
#endif
    return kp_plain_ascii_prefix_portable(bytes, count);
}

/// A length, at most `count`, that ends at the start of a character, such that
/// `bytes[0..<length]` is well-formed UTF-8 (RFC 3629) with no `"`, `\` or control character:
/// found thirty-two bytes at a time (AVX2) and sixteen at a time from a block with a mistake or
/// where fewer than thirty-two are left (SSSE3), and 0 where the CPU has no such instructions or
/// `count` is below 16. It is the whole of the longest such prefix when a `"`, `\` or control
/// character ends it within the blocks read; otherwise it may stop up to nineteen bytes short
/// (a sixteen-byte block with a mistake, the last bytes), never past it. `bytes` must start at
/// the start of a character.
size_t kp_plain_text_prefix(const uint8_t *bytes, size_t count);

/// kp_plain_text_prefix with the SSSE3 loop alone, as a CPU without AVX2 runs it (and its
/// reference in tests on one that has it).
size_t kp_plain_text_prefix_narrow(const uint8_t *bytes, size_t count);

/// Decodes whole blocks of base64url characters from the start of `text` (`count` characters,
/// no padding among them) into `output`, three bytes for each four characters, while a block has
/// only characters of the URL-safe alphabet and `output` has room for the block's store: a block
/// of thirty-two characters (AVX2) stores exactly its twenty-four bytes, a block of sixteen
/// (SSSE3; where thirty-two do not fit, or from a block of thirty-two it did not take) stores
/// sixteen, the last four of which the next block writes again. Nothing is written at or past
/// `output_count`. Returns the number of characters decoded, a multiple of sixteen (0 where the
/// CPU has no SSSE3), and sets `alphabets` to 2 when they held `-` or `_`, 0 otherwise. The
/// standard alphabet (`+`, `/`) stops it.
size_t kp_base64_decode_blocks(const uint8_t *text, size_t count, uint8_t *output, size_t output_count, unsigned *alphabets);

/// kp_base64_decode_blocks with the SSSE3 loop alone, as a CPU without AVX2 runs it (and its
/// reference in tests on one that has it): every block stores sixteen bytes.
size_t kp_base64_decode_blocks_narrow(
    const uint8_t *text, size_t count, uint8_t *output, size_t output_count, unsigned *alphabets);

#endif

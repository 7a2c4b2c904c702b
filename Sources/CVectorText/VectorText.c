#include "CVectorText.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <tmmintrin.h>

// The UTF-8 check of Keiser and Lemire ("Validating UTF-8 In Less Than One Instruction Per
// Byte", 2021; simdjson's `lookup` algorithm, tables as there): each byte's error bits looked
// up by the high nibble and low nibble of the byte before it and the high nibble of the byte
// itself, ANDed; a third or fourth byte of a sequence is checked against the bytes two and
// three before.
enum {
    TOO_SHORT = 1 << 0,   // 11______ 0_______, 11______ 11______
    TOO_LONG = 1 << 1,    // 0_______ 10______
    OVERLONG_3 = 1 << 2,  // 11100000 100_____
    TOO_LARGE = 1 << 3,   // 11110100 1001____ and above
    SURROGATE = 1 << 4,   // 11101101 101_____
    OVERLONG_2 = 1 << 5,  // 1100000_ 10______
    TOO_LARGE_1000 = 1 << 6,
    OVERLONG_4 = 1 << 6,  // 11110000 1000____
    TWO_CONTS = 1 << 7,   // 10______ 10______
    CARRY = TOO_SHORT | TOO_LONG | TWO_CONTS,
};

// Each byte's error bits, ANDed from three tables read by nibble.
static const uint8_t byte_1_high_table[16] = {
    // 0_______ ________: ASCII first
    TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
    // 10______ ________: a continuation first
    TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS,
    TOO_SHORT | OVERLONG_2,                              // 1100____: two-byte lead
    TOO_SHORT,                                           // 1101____: two-byte lead
    TOO_SHORT | OVERLONG_3 | SURROGATE,                  // 1110____: three-byte lead
    TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4, // 1111____: four-byte lead (or more)
};
static const uint8_t byte_1_low_table[16] = {
    CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,        // ____0000
    CARRY | OVERLONG_2,                                  // ____0001
    CARRY, CARRY,                                        // ____001_
    CARRY | TOO_LARGE,                                   // ____0100
    CARRY | TOO_LARGE | TOO_LARGE_1000,                  // ____0101
    CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,      // ____1101
    CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
};
static const uint8_t byte_2_high_table[16] = {
    // ________ 0_______: ASCII second
    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
    TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4, // 1000____
    TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,                   // 1001____
    TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,                    // 101_____
    TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
    // ________ 11______: a lead second
    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
};

// From `index` (0, or where the AVX2 loop below stopped, a multiple of 32 whose blocks before it
// passed), so that its blocks are those it would have read from the start.
__attribute__((target("ssse3"))) static size_t plain_text_prefix_ssse3(const uint8_t *bytes, size_t count, size_t index) {
    const __m128i byte_1_high = _mm_loadu_si128((const __m128i *)byte_1_high_table);
    const __m128i byte_1_low = _mm_loadu_si128((const __m128i *)byte_1_low_table);
    const __m128i byte_2_high = _mm_loadu_si128((const __m128i *)byte_2_high_table);
    const __m128i low_nibble = _mm_set1_epi8(0x0F);
    const __m128i third_byte = _mm_set1_epi8((char)(0xE0 - 0x80)), fourth_byte = _mm_set1_epi8((char)(0xF0 - 0x80));
    const __m128i high_bits = _mm_set1_epi8((char)0x80);
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), last_control = _mm_set1_epi8(0x1F);
    const __m128i zero = _mm_setzero_si128();

    __m128i previous = index >= 16 ? _mm_loadu_si128((const __m128i *)(bytes + index - 16)) : zero;
    while (index + 16 <= count) {
        __m128i block = _mm_loadu_si128((const __m128i *)(bytes + index));
        // `"`, `\`, or a control character (unsigned, at most 0x1F).
        __m128i stops = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)),
            _mm_cmpeq_epi8(_mm_min_epu8(block, last_control), block));
        __m128i prev1 = _mm_alignr_epi8(block, previous, 15);
        __m128i special = _mm_and_si128(
            _mm_and_si128(
                _mm_shuffle_epi8(byte_1_high, _mm_and_si128(_mm_srli_epi16(prev1, 4), low_nibble)),
                _mm_shuffle_epi8(byte_1_low, _mm_and_si128(prev1, low_nibble))),
            _mm_shuffle_epi8(byte_2_high, _mm_and_si128(_mm_srli_epi16(block, 4), low_nibble)));
        __m128i prev2 = _mm_alignr_epi8(block, previous, 14), prev3 = _mm_alignr_epi8(block, previous, 13);
        __m128i must_continue = _mm_and_si128(
            _mm_or_si128(_mm_subs_epu8(prev2, third_byte), _mm_subs_epu8(prev3, fourth_byte)), high_bits);
        // Per byte, whether the sequence it is in (or, for an ASCII byte, the one before it)
        // is not well-formed.
        unsigned errors = 0xFFFFu ^ (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_xor_si128(must_continue, special), zero));
        unsigned stop_mask = (unsigned)_mm_movemask_epi8(stops);
        if ((errors | stop_mask) != 0) {
            if (stop_mask == 0) break;
            // A stop is ASCII, so its own error bit says whether the character before it is
            // finished: the text up to it is plain when no byte up to it and it has one.
            unsigned stop = (unsigned)__builtin_ctz(stop_mask);
            if ((errors & ((2u << stop) - 1)) != 0) break;
            return index + stop;
        }
        previous = block;
        index += 16;
    }
    // The last block's last character may be unfinished (it is checked with the next block):
    // back to its first byte, which the caller's loop reads again.
    if (index > 0 && bytes[index - 1] >= 0x80) {
        size_t lead = index - 1;
        while ((bytes[lead] & 0xC0) == 0x80) {
            if (lead == 0 || index - lead >= 4) return 0;
            lead--;
        }
        index = lead;
    }
    return index;
}

// The same check thirty-two bytes at a time (AVX2), as simdjson's haswell kernel: the byte
// before each one comes from across the two 128-bit lanes by one permute. It stops at the start
// of a block that has a mistake or a stop it cannot answer for, or where fewer than 32 bytes are
// left (`*done` 0), for the SSSE3 loop to go on from there sixteen bytes at a time (and to back
// up over a character the blocks left unfinished); `*done` is 1 when it found the stop that ends
// the text.
__attribute__((target("avx2"))) static size_t plain_text_prefix_avx2(const uint8_t *bytes, size_t count, int *done) {
    const __m256i byte_1_high = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)byte_1_high_table));
    const __m256i byte_1_low = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)byte_1_low_table));
    const __m256i byte_2_high = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)byte_2_high_table));
    const __m256i low_nibble = _mm256_set1_epi8(0x0F);
    const __m256i third_byte = _mm256_set1_epi8((char)(0xE0 - 0x80)), fourth_byte = _mm256_set1_epi8((char)(0xF0 - 0x80));
    const __m256i high_bits = _mm256_set1_epi8((char)0x80);
    const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\'), last_control = _mm256_set1_epi8(0x1F);
    const __m256i zero = _mm256_setzero_si256();

    __m256i previous = zero;
    size_t index = 0;
    *done = 0;
    while (index + 32 <= count) {
        __m256i block = _mm256_loadu_si256((const __m256i *)(bytes + index));
        __m256i stops = _mm256_or_si256(
            _mm256_or_si256(_mm256_cmpeq_epi8(block, quote), _mm256_cmpeq_epi8(block, backslash)),
            _mm256_cmpeq_epi8(_mm256_min_epu8(block, last_control), block));
        // The previous block's high lane beside this block's low lane: the bytes before each lane.
        __m256i before = _mm256_permute2x128_si256(previous, block, 0x21);
        __m256i prev1 = _mm256_alignr_epi8(block, before, 15);
        __m256i special = _mm256_and_si256(
            _mm256_and_si256(
                _mm256_shuffle_epi8(byte_1_high, _mm256_and_si256(_mm256_srli_epi16(prev1, 4), low_nibble)),
                _mm256_shuffle_epi8(byte_1_low, _mm256_and_si256(prev1, low_nibble))),
            _mm256_shuffle_epi8(byte_2_high, _mm256_and_si256(_mm256_srli_epi16(block, 4), low_nibble)));
        __m256i prev2 = _mm256_alignr_epi8(block, before, 14), prev3 = _mm256_alignr_epi8(block, before, 13);
        __m256i must_continue = _mm256_and_si256(
            _mm256_or_si256(_mm256_subs_epu8(prev2, third_byte), _mm256_subs_epu8(prev3, fourth_byte)), high_bits);
        uint64_t errors =
            0xFFFFFFFFu ^ (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_xor_si256(must_continue, special), zero));
        uint64_t stop_mask = (uint32_t)_mm256_movemask_epi8(stops);
        if ((errors | stop_mask) != 0) {
            if (stop_mask == 0) break;
            unsigned stop = (unsigned)__builtin_ctzll(stop_mask);
            if ((errors & ((2ull << stop) - 1)) != 0) break;
            *done = 1;
            return index + stop;
        }
        previous = block;
        index += 32;
    }
    return index;
}

// Base64url sixteen characters at a time, as Mula and Lemire decode base64 ("Faster Base64
// Encoding and Decoding Using AVX2 Instructions", 2018; here in SSSE3, for the URL-safe
// alphabet): a character is valid when the classes its high nibble allows and the classes its
// low nibble rules out share no bit; its sextet is the character plus an offset looked up by its
// high nibble (`_` corrected); the sextets are packed by two multiply-adds and one shuffle. A
// block with `+` or `/` stops it: the standard alphabet is left to the caller's loop.
enum {
    DASH = 1 << 0,        // high nibble 2: `-` only
    DIGITS = 1 << 1,      // 3: `0` to `9`
    LETTERS = 1 << 2,     // 4 and 6: `A` to `O`, `a` to `o`
    UPPER_P_Z = 1 << 3,   // 5: `P` to `Z`, and `_`
    LOWER_P_Z = 1 << 4,   // 7: `p` to `z`
    NONE = 1 << 5,        // any other: nothing
};

// By high nibble, its class.
static const uint8_t base64_classes[16] = {
    NONE, NONE, DASH, DIGITS, LETTERS, UPPER_P_Z, LETTERS, LOWER_P_Z, NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE,
};
// By low nibble, the classes in which it is not a character of the alphabet.
static const uint8_t base64_ruled_out[16] = {
    NONE | DASH | LETTERS,                          // 0: `@`, backquote
    NONE | DASH, NONE | DASH, NONE | DASH, NONE | DASH, NONE | DASH, NONE | DASH, NONE | DASH, NONE | DASH, NONE | DASH,
    NONE | DASH | DIGITS,                           // A: `:`
    NONE | DASH | DIGITS | UPPER_P_Z | LOWER_P_Z,   // B: `+` `;` `[` `{`
    NONE | DASH | DIGITS | UPPER_P_Z | LOWER_P_Z,   // C
    NONE | DIGITS | UPPER_P_Z | LOWER_P_Z,          // D: `-` is one
    NONE | DASH | DIGITS | UPPER_P_Z | LOWER_P_Z,   // E
    NONE | DASH | DIGITS | LOWER_P_Z,               // F: `_` is one; `/`, `?`, DEL are not
};

__attribute__((target("ssse3"))) static size_t base64_decode_blocks_ssse3(
    const uint8_t *text, size_t count, uint8_t *output, size_t output_count, unsigned *alphabets) {
    const __m128i classes = _mm_loadu_si128((const __m128i *)base64_classes);
    const __m128i ruled_out = _mm_loadu_si128((const __m128i *)base64_ruled_out);
    const __m128i offsets = _mm_setr_epi8(0, 0, 62 - '-', 52 - '0', -'A', -'A', 26 - 'a', 26 - 'a', 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i low_nibble = _mm_set1_epi8(0x0F), zero = _mm_setzero_si128();
    const __m128i dash = _mm_set1_epi8('-'), underscore = _mm_set1_epi8('_');
    const __m128i underscore_fix = _mm_set1_epi8(63 - '_' + 'A');
    const __m128i pairs = _mm_set1_epi32(0x01400140), quads = _mm_set1_epi32(0x00011000);
    const __m128i order = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    __m128i url = zero;
    size_t in = 0, out = 0;
    while (in + 16 <= count && out + 16 <= output_count) {
        __m128i block = _mm_loadu_si128((const __m128i *)(text + in));
        __m128i high = _mm_and_si128(_mm_srli_epi32(block, 4), low_nibble);
        __m128i invalid = _mm_and_si128(_mm_shuffle_epi8(classes, high), _mm_shuffle_epi8(ruled_out, _mm_and_si128(block, low_nibble)));
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(invalid, zero)) != 0xFFFF) break;
        __m128i is_underscore = _mm_cmpeq_epi8(block, underscore);
        __m128i sextets = _mm_add_epi8(
            _mm_add_epi8(block, _mm_shuffle_epi8(offsets, high)), _mm_and_si128(is_underscore, underscore_fix));
        // Two sextets to twelve bits in each 16-bit lane, two of those to 24 bits in each 32-bit
        // lane, then each lane's three bytes, most significant first.
        __m128i words = _mm_madd_epi16(_mm_maddubs_epi16(sextets, pairs), quads);
        _mm_storeu_si128((__m128i *)(output + out), _mm_shuffle_epi8(words, order));
        url = _mm_or_si128(url, _mm_or_si128(is_underscore, _mm_cmpeq_epi8(block, dash)));
        in += 16;
        out += 12;
    }
    *alphabets = _mm_movemask_epi8(url) != 0 ? 2u : 0u;
    return in;
}

// The same thirty-two characters at a time (AVX2): the tables in both 128-bit lanes, each
// lane's twelve bytes gathered by one permute, and exactly twenty-four bytes stored, so a block
// needs twenty-four bytes of room (not thirty-two). It stops at a block with a character it does
// not take, for the SSSE3 loop to go on sixteen at a time.
__attribute__((target("avx2"))) static size_t base64_decode_blocks_avx2(
    const uint8_t *text, size_t count, uint8_t *output, size_t output_count, unsigned *alphabets) {
    const __m256i classes = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)base64_classes));
    const __m256i ruled_out = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)base64_ruled_out));
    const __m256i offsets = _mm256_setr_epi8(
        0, 0, 62 - '-', 52 - '0', -'A', -'A', 26 - 'a', 26 - 'a', 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 62 - '-', 52 - '0', -'A', -'A', 26 - 'a', 26 - 'a', 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i low_nibble = _mm256_set1_epi8(0x0F), zero = _mm256_setzero_si256();
    const __m256i dash = _mm256_set1_epi8('-'), underscore = _mm256_set1_epi8('_');
    const __m256i underscore_fix = _mm256_set1_epi8(63 - '_' + 'A');
    const __m256i pairs = _mm256_set1_epi32(0x01400140), quads = _mm256_set1_epi32(0x00011000);
    const __m256i order = _mm256_setr_epi8(
        2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
        2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    // Each lane's twelve bytes (its first three 32-bit words) side by side.
    const __m256i gather = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);
    __m256i url = zero;
    size_t in = 0, out = 0;
    while (in + 32 <= count && out + 24 <= output_count) {
        __m256i block = _mm256_loadu_si256((const __m256i *)(text + in));
        __m256i high = _mm256_and_si256(_mm256_srli_epi32(block, 4), low_nibble);
        __m256i invalid = _mm256_and_si256(
            _mm256_shuffle_epi8(classes, high), _mm256_shuffle_epi8(ruled_out, _mm256_and_si256(block, low_nibble)));
        if ((uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(invalid, zero)) != 0xFFFFFFFFu) break;
        __m256i is_underscore = _mm256_cmpeq_epi8(block, underscore);
        __m256i sextets = _mm256_add_epi8(
            _mm256_add_epi8(block, _mm256_shuffle_epi8(offsets, high)), _mm256_and_si256(is_underscore, underscore_fix));
        __m256i words = _mm256_madd_epi16(_mm256_maddubs_epi16(sextets, pairs), quads);
        __m256i packed = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(words, order), gather);
        _mm_storeu_si128((__m128i *)(output + out), _mm256_castsi256_si128(packed));
        _mm_storel_epi64((__m128i *)(output + out + 16), _mm256_extracti128_si256(packed, 1));
        url = _mm256_or_si256(url, _mm256_or_si256(is_underscore, _mm256_cmpeq_epi8(block, dash)));
        in += 32;
        out += 24;
    }
    *alphabets = _mm256_movemask_epi8(url) != 0 ? 2u : 0u;
    return in;
}

// kp_plain_ascii_prefix's loop thirty-two bytes at a time, from byte 16; the last block
// overlaps the one before, as in the SSE2 loop.
__attribute__((target("avx2"))) static size_t plain_ascii_prefix_avx2(const uint8_t *bytes, size_t count) {
    const __m256i space = _mm256_set1_epi8(0x20), quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\');
    size_t index = 16;
    for (;;) {
        size_t at = index + 32 <= count ? index : count - 32;
        __m256i block = _mm256_loadu_si256((const __m256i *)(bytes + at));
        __m256i stops = _mm256_or_si256(
            _mm256_cmpgt_epi8(space, block), _mm256_or_si256(_mm256_cmpeq_epi8(block, quote), _mm256_cmpeq_epi8(block, backslash)));
        uint32_t mask = (uint32_t)_mm256_movemask_epi8(stops);
        if (mask != 0) return at + (size_t)__builtin_ctz(mask);
        if (at + 32 == count) return count;
        index = at + 32;
    }
}

size_t kp_plain_ascii_prefix_long(const uint8_t *bytes, size_t count) {
    if (__builtin_cpu_supports("avx2")) return plain_ascii_prefix_avx2(bytes, count);
#if defined(__SSE2__)
    return kp_plain_ascii_prefix_sse2(bytes, count, 16);
#else
    return 16 + kp_plain_ascii_prefix_portable(bytes + 16, count - 16);
#endif
}

size_t kp_plain_text_prefix_narrow(const uint8_t *bytes, size_t count) {
    if (count < 16 || !__builtin_cpu_supports("ssse3")) return 0;
    return plain_text_prefix_ssse3(bytes, count, 0);
}

size_t kp_plain_text_prefix(const uint8_t *bytes, size_t count) {
    if (count < 32 || !__builtin_cpu_supports("avx2")) return kp_plain_text_prefix_narrow(bytes, count);
    int done;
    size_t index = plain_text_prefix_avx2(bytes, count, &done);
    return done ? index : plain_text_prefix_ssse3(bytes, count, index);
}

size_t kp_base64_decode_blocks_narrow(
    const uint8_t *text, size_t count, uint8_t *output, size_t output_count, unsigned *alphabets) {
    *alphabets = 0;
    if (count < 16 || output_count < 16 || !__builtin_cpu_supports("ssse3")) return 0;
    return base64_decode_blocks_ssse3(text, count, output, output_count, alphabets);
}

size_t kp_base64_decode_blocks(const uint8_t *text, size_t count, uint8_t *output, size_t output_count, unsigned *alphabets) {
    if (count < 32 || output_count < 24 || !__builtin_cpu_supports("avx2")) {
        return kp_base64_decode_blocks_narrow(text, count, output, output_count, alphabets);
    }
    unsigned wide, narrow;
    size_t in = base64_decode_blocks_avx2(text, count, output, output_count, &wide);
    size_t out = in / 4 * 3;
    in += kp_base64_decode_blocks_narrow(text + in, count - in, output + out, output_count - out, &narrow);
    *alphabets = wide | narrow;
    return in;
}

#else

size_t kp_plain_ascii_prefix_long(const uint8_t *bytes, size_t count) {
    return 16 + kp_plain_ascii_prefix_portable(bytes + 16, count - 16);
}

size_t kp_base64_decode_blocks(const uint8_t *text, size_t count, uint8_t *output, size_t output_count, unsigned *alphabets) {
    (void)text;
    (void)count;
    (void)output;
    (void)output_count;
    *alphabets = 0;
    return 0;
}

size_t kp_plain_text_prefix(const uint8_t *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return 0;
}

size_t kp_plain_text_prefix_narrow(const uint8_t *bytes, size_t count) {
    return kp_plain_text_prefix(bytes, count);
}

size_t kp_base64_decode_blocks_narrow(
    const uint8_t *text, size_t count, uint8_t *output, size_t output_count, unsigned *alphabets) {
    return kp_base64_decode_blocks(text, count, output, output_count, alphabets);
}

#endif

/* The AWS event stream's arithmetic for the compiled scanner: CRC32 (zlib's: the IEEE
   polynomial, reflected), big-endian integers, the headers the scanner reads, and the base64
   of a Bedrock chunk.  The Python twin (_eventstream_py.py) uses zlib and binascii instead. */
#ifndef FASTSSE_EVENTSTREAM_H
#define FASTSSE_EVENTSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_simd.h"

static uint32_t fastsse_crc_table[8][256];
static signed char fastsse_base64_value[256];

static void fastsse_eventstream_init(void) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        fastsse_crc_table[0][i] = c;
    }
    for (int i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            fastsse_crc_table[t][i] = (fastsse_crc_table[t - 1][i] >> 8)
                                      ^ fastsse_crc_table[0][fastsse_crc_table[t - 1][i] & 0xFF];
    memset(fastsse_base64_value, -1, sizeof(fastsse_base64_value));
    for (int i = 0; i < 64; i++)
        fastsse_base64_value[(unsigned char)alphabet[i]] = (signed char)i;
}

/* The CRC register (not inverted) after p[0:n], eight bytes a step (slicing-by-8). */
static inline uint32_t fastsse_crc32_table(uint32_t crc, const unsigned char *p, size_t n) {
    while (n >= 8) {
        uint32_t a = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t b = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = fastsse_crc_table[7][a & 0xFF] ^ fastsse_crc_table[6][(a >> 8) & 0xFF]
              ^ fastsse_crc_table[5][(a >> 16) & 0xFF] ^ fastsse_crc_table[4][a >> 24]
              ^ fastsse_crc_table[3][b & 0xFF] ^ fastsse_crc_table[2][(b >> 8) & 0xFF]
              ^ fastsse_crc_table[1][(b >> 16) & 0xFF] ^ fastsse_crc_table[0][b >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = fastsse_crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FASTSSE_CLMUL 1
#include <immintrin.h>

/* pshufb masks, loaded from offset 16 + k: bytes shifted down by k (toward the start, zeros
   after); from offset k: up by 16 - k (zeros before).  0x80 makes a zero byte. */
static const unsigned char fastsse_crc_shift[48] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};

/* The CRC register after p[0:n] (n >= 64) by carry-less multiplication: four 128-bit lanes
   are folded forward 512 bits at a time, then into one lane, which takes the last bytes in
   and is reduced to 32 bits (Barrett).  This is the method of Gopal et al., "Fast CRC
   Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), for the
   reflected IEEE polynomial; the constants are powers of x modulo that polynomial, as the
   paper derives them: x^(4*128+32) and x^(4*128-32) mod P (folding by 512 bits), x^(128+32)
   and x^(128-32) mod P (by 128), x^64 mod P (128 to 64 bits), and P with floor(x^64 / P) for
   the reduction. */
__attribute__((target("pclmul,sse4.1")))
static uint32_t fastsse_crc32_clmul(uint32_t crc, const unsigned char *p, size_t n) {
    const __m128i fold512 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);
    const __m128i fold128 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
    const __m128i fold64 = _mm_set_epi64x(0, 0x0163cd6124LL);
    const __m128i barrett = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL);
    const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)crc));
    __m128i b = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i d = _mm_loadu_si128((const __m128i *)(p + 48));
    __m128i t;
    p += 64;
    n -= 64;
#define FASTSSE_FOLD(x, k, next) \
    (t = _mm_clmulepi64_si128((x), (k), 0x00), \
     _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128((x), (k), 0x11), t), (next)))
    while (n >= 64) {
        a = FASTSSE_FOLD(a, fold512, _mm_loadu_si128((const __m128i *)p));
        b = FASTSSE_FOLD(b, fold512, _mm_loadu_si128((const __m128i *)(p + 16)));
        c = FASTSSE_FOLD(c, fold512, _mm_loadu_si128((const __m128i *)(p + 32)));
        d = FASTSSE_FOLD(d, fold512, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    a = FASTSSE_FOLD(a, fold128, b);
    a = FASTSSE_FOLD(a, fold128, c);
    a = FASTSSE_FOLD(a, fold128, d);
    while (n >= 16) {
        a = FASTSSE_FOLD(a, fold128, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    if (n) {
        /* The lane and the last n bytes (1 to 15) are 16 + n bytes; with 16 - n zero bytes
           before them (which leave a remainder as it is) they are two blocks, folded as one:
           the first holds the lane's first n bytes, the second its other 16 - n and the n.
           The n are read as the end of the 16 bytes before the end, which were read already. */
        const __m128i up = _mm_loadu_si128((const __m128i *)(fastsse_crc_shift + n));
        const __m128i down = _mm_loadu_si128((const __m128i *)(fastsse_crc_shift + 16 + n));
        const __m128i last = _mm_loadu_si128((const __m128i *)(p + n - 16));
        a = FASTSSE_FOLD(_mm_shuffle_epi8(a, up), fold128,
                         _mm_blendv_epi8(last, _mm_shuffle_epi8(a, down), up));
    }
#undef FASTSSE_FOLD
    /* 128 bits to 64, then Barrett's reduction to 32 */
    t = _mm_clmulepi64_si128(a, fold128, 0x10);
    a = _mm_xor_si128(_mm_srli_si128(a, 8), t);
    t = _mm_srli_si128(a, 4);
    a = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(a, low32), fold64, 0x00), t);
    t = _mm_clmulepi64_si128(_mm_and_si128(a, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(a, t), 1);
}
#endif

/* The CRC32 of the bytes whose CRC32 is crc followed by p[0:n]: zlib's crc32(crc, p, n)
   (crc 0: of p[0:n] alone). */
static inline uint32_t fastsse_crc32(uint32_t crc, const unsigned char *p, size_t n) {
    crc = ~crc;
#ifdef FASTSSE_CLMUL
    if (n >= 64 && fastsse_cpu_has_clmul())
        return ~fastsse_crc32_clmul(crc, p, n);
#endif
    return ~fastsse_crc32_table(crc, p, n);
}

static inline uint32_t fastsse_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

typedef struct {
    const unsigned char *p; /* NULL: the header is absent */
    ptrdiff_t n;
} FastsseSpan;

enum { FASTSSE_H_MESSAGE_TYPE, FASTSSE_H_EVENT_TYPE, FASTSSE_H_EXCEPTION_TYPE, FASTSSE_H_ERROR_CODE,
       FASTSSE_N_HEADERS };

/* The values of the headers the scanner reads (string or byte-array headers; a repeated header's
   last value), from the headers block h[0:n]: 0, or -1 if the block is not well-formed. */
static inline int fastsse_headers(const unsigned char *h, ptrdiff_t n, FastsseSpan *found) {
    static const char *names[FASTSSE_N_HEADERS] = {":message-type", ":event-type", ":exception-type",
                                                   ":error-code"};
    static const unsigned char fixed[10] = {0, 0, 1, 2, 4, 8, 255, 255, 8, 16};
    ptrdiff_t pos = 0;
    for (int i = 0; i < FASTSSE_N_HEADERS; i++)
        found[i].p = NULL;
    while (pos < n) {
        ptrdiff_t name_len = h[pos++];
        const unsigned char *name = h + pos;
        unsigned char kind;
        if (pos + name_len + 1 > n) /* an empty name is a name: botocore reads it */
            return -1;
        pos += name_len;
        kind = h[pos++];
        if (kind == 6 || kind == 7) {
            ptrdiff_t size;
            if (pos + 2 > n)
                return -1;
            size = (ptrdiff_t)h[pos] << 8 | h[pos + 1];
            pos += 2;
            if (pos + size > n)
                return -1;
            for (int i = 0; i < FASTSSE_N_HEADERS; i++) {
                if ((ptrdiff_t)strlen(names[i]) == name_len && memcmp(names[i], name, name_len) == 0) {
                    found[i].p = h + pos;
                    found[i].n = size;
                }
            }
            pos += size;
        } else if (kind < 10) {
            pos += fixed[kind];
            if (pos > n)
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* The headers block a stream's frames last had, and where read_headers found its values: the
   frames of one stream mostly share it byte for byte (the same event type, content type and
   message type), and one compare then stands for reading it. */
enum { FASTSSE_HEADERS_KEPT = 128 };
typedef struct {
    ptrdiff_t n; /* 0: nothing kept */
    unsigned char bytes[FASTSSE_HEADERS_KEPT];
    ptrdiff_t at[FASTSSE_N_HEADERS]; /* -1: absent */
    ptrdiff_t len[FASTSSE_N_HEADERS];
} FastsseHeadersKept;

/* fastsse_headers, through kept: the same answer for every block. */
static inline int fastsse_headers_kept(FastsseHeadersKept *kept, const unsigned char *h, ptrdiff_t n,
                                       FastsseSpan *found) {
    int i;
    if (n && n == kept->n && memcmp(h, kept->bytes, n) == 0) {
        for (i = 0; i < FASTSSE_N_HEADERS; i++) {
            found[i].p = kept->at[i] < 0 ? NULL : h + kept->at[i];
            found[i].n = kept->len[i];
        }
        return 0;
    }
    if (fastsse_headers(h, n, found) < 0)
        return -1;
    kept->n = 0;
    if (n <= FASTSSE_HEADERS_KEPT) {
        memcpy(kept->bytes, h, n);
        kept->n = n;
        for (i = 0; i < FASTSSE_N_HEADERS; i++) {
            kept->at[i] = found[i].p == NULL ? -1 : found[i].p - h;
            kept->len[i] = found[i].p == NULL ? 0 : found[i].n;
        }
    }
    return 0;
}

/* The scalar decoder: the base64 text s[0:n] (standard alphabet, padded to a multiple of 4)
   decoded into out, which has room for n / 4 * 3 bytes: the decoded length, or -1 if s is not
   such text. */
static inline ptrdiff_t fastsse_base64_decode_scalar(const unsigned char *s, ptrdiff_t n, unsigned char *out) {
    const signed char *v = fastsse_base64_value;
    ptrdiff_t o = 0;
    if (n % 4)
        return -1;
    for (ptrdiff_t i = 0; i < n; i += 4) {
        int a = v[s[i]], b = v[s[i + 1]], c, d;
        int last = i + 4 == n;
        if (a < 0 || b < 0)
            return -1;
        if (last && s[i + 2] == '=') {
            if (s[i + 3] != '=')
                return -1;
            out[o++] = (unsigned char)(a << 2 | b >> 4);
            break;
        }
        c = v[s[i + 2]];
        if (c < 0)
            return -1;
        if (last && s[i + 3] == '=') {
            out[o++] = (unsigned char)(a << 2 | b >> 4);
            out[o++] = (unsigned char)(b << 4 | c >> 2);
            break;
        }
        d = v[s[i + 3]];
        if (d < 0)
            return -1;
        out[o++] = (unsigned char)(a << 2 | b >> 4);
        out[o++] = (unsigned char)(b << 4 | c >> 2);
        out[o++] = (unsigned char)(c << 6 | d);
    }
    return o;
}

#ifdef FASTSSE_CLMUL
/* How many bytes of s[0:n] (n a multiple of 4) are of the alphabet, decoded into out, which
   must have 4 bytes of room past the last of them: 16 bytes a step, the last step overlapping
   the one before it (n need not be a multiple of 16), up to the first block that holds anything
   else (padding too), from where the scalar decoder reads and judges the rest.  Each block is
   classified and translated by nibble lookups (pshufb), the scheme Wojciech Muła and Daniel
   Lemire describe in "Faster Base64 Encoding and Decoding Using AVX2 Instructions" (ACM TOW
   2018): a byte is in the alphabet when the flags its low nibble and its high nibble select
   share no bit, and its value is the byte plus an offset its high nibble selects ('/' shares
   its nibble with '+' and is told apart by one compare). */
__attribute__((target("ssse3")))
static ptrdiff_t fastsse_base64_blocks(const unsigned char *s, ptrdiff_t n, unsigned char *out) {
    const __m128i lut_lo = _mm_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                         0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
    const __m128i lut_hi = _mm_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10,
                                         0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    const __m128i lut_roll = _mm_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i slash = _mm_set1_epi8('/');
    /* 6-bit values a b c d -> (a << 18 | b << 12 | c << 6 | d) per 32-bit lane, whose three
       low bytes, high first, are the output */
    const __m128i pair = _mm_set1_epi32(0x01400140);
    const __m128i quad = _mm_set1_epi32(0x00011000);
    const __m128i pack = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    ptrdiff_t i = 0, last = n - 16;
    while (i <= last) {
        __m128i x = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i hi = _mm_and_si128(_mm_srli_epi32(x, 4), nibble);
        __m128i lo = _mm_and_si128(x, nibble);
        __m128i flags = _mm_and_si128(_mm_shuffle_epi8(lut_lo, lo), _mm_shuffle_epi8(lut_hi, hi));
        __m128i values;
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(flags, _mm_setzero_si128())) != 0xFFFF)
            return i;
        values = _mm_add_epi8(x, _mm_shuffle_epi8(lut_roll,
                                                  _mm_add_epi8(_mm_cmpeq_epi8(x, slash), hi)));
        values = _mm_madd_epi16(_mm_maddubs_epi16(values, pair), quad);
        _mm_storeu_si128((__m128i *)(out + i / 4 * 3), _mm_shuffle_epi8(values, pack));
        if (i == last)
            return n;
        i = i + 16 <= last ? i + 16 : last;
    }
    return 0;
}

/* The same as fastsse_base64_blocks, 32 bytes a step: the lookups act on each 16-byte lane
   alone, so the tables are the same twice; each lane packs its 12 bytes first, and one
   permutation of 32-bit words puts the two lanes' 12 bytes side by side.  out must have 8 bytes
   of room past the last decoded byte. */
__attribute__((target("avx2")))
static ptrdiff_t fastsse_base64_blocks_avx2(const unsigned char *s, ptrdiff_t n, unsigned char *out) {
    const __m256i lut_lo = _mm256_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                            0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A,
                                            0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                            0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
    const __m256i lut_hi = _mm256_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10,
                                            0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
                                            0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10,
                                            0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    const __m256i lut_roll = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0,
                                              0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i slash = _mm256_set1_epi8('/');
    const __m256i pair = _mm256_set1_epi32(0x01400140);
    const __m256i quad = _mm256_set1_epi32(0x00011000);
    const __m256i pack = _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
                                          2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
    ptrdiff_t i = 0, last = n - 32;
    while (i <= last) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i hi = _mm256_and_si256(_mm256_srli_epi32(x, 4), nibble);
        __m256i lo = _mm256_and_si256(x, nibble);
        __m256i flags = _mm256_and_si256(_mm256_shuffle_epi8(lut_lo, lo), _mm256_shuffle_epi8(lut_hi, hi));
        __m256i values;
        if (!_mm256_testz_si256(flags, flags))
            return i;
        values = _mm256_add_epi8(x, _mm256_shuffle_epi8(lut_roll, _mm256_add_epi8(_mm256_cmpeq_epi8(x, slash), hi)));
        values = _mm256_madd_epi16(_mm256_maddubs_epi16(values, pair), quad);
        values = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(values, pack), lanes);
        _mm256_storeu_si256((__m256i *)(out + i / 4 * 3), values);
        if (i == last)
            return n;
        i = i + 32 <= last ? i + 32 : last;
    }
    return 0;
}
#endif

/* The widest base64 blocks the decoder may use: 2 AVX2, 1 SSSE3, 0 none (the scalar decoder
   alone).  Tests lower it to hold each path to the same answers; the CPU may allow less. */
static int fastsse_base64_widest = 2;

/* Decode the base64 text s[0:n] (standard alphabet, padded to a multiple of 4) into out, which
   must hold n / 4 * 3 + 8 bytes: the decoded length, or -1 if s is not such base64.  Whole
   blocks of the alphabet go 32 bytes a step where the CPU has AVX2, else 16 with SSSE3; the
   scalar decoder reads the rest, the padding included, and gives the same answer for every
   input. */
static inline ptrdiff_t fastsse_base64_decode(const unsigned char *s, ptrdiff_t n, unsigned char *out) {
    ptrdiff_t done = 0, rest;
    if (n % 4)
        return -1;
#ifdef FASTSSE_CLMUL
    if (n > 16) {
        if (n > 32 && fastsse_base64_widest >= 2 && fastsse_cpu_has_avx2())
            done = fastsse_base64_blocks_avx2(s, n - 4, out);  /* the last quad may be padded */
        else if (fastsse_base64_widest >= 1 && fastsse_cpu_has_ssse3())
            done = fastsse_base64_blocks(s, n - 4, out);
    }
#endif
    rest = fastsse_base64_decode_scalar(s + done, n - done, out + done / 4 * 3);
    return rest < 0 ? -1 : done / 4 * 3 + rest;
}

#endif

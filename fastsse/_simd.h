/* Byte-class scans for the compiled scanner.  SSE2 where the compiler has it (every x86_64),
   a plain loop elsewhere; both give the same answer. */
#ifndef FASTSSE_SIMD_H
#define FASTSSE_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Whether a byte ends a JSON string's plain run: '"', '\\' or below 0x20. */
static inline int fastsse_is_stop(unsigned char c) {
    return c == '"' || c == '\\' || c < 0x20;
}

#if defined(__SSE2__)
/* The bits of the 16 bytes at p that fastsse_is_stop says end a plain run. */
static inline int fastsse_stop_mask(const unsigned char *p) {
    const __m128i below_space = _mm_set1_epi8(0x1F);
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    return _mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
        _mm_cmpeq_epi8(_mm_max_epu8(x, below_space), below_space)));
}
#endif

/* Length of the longest prefix of p[0:n] holding no '"', no '\\' and no byte below 0x20:
   the run of a JSON string that needs no attention. */
static inline ptrdiff_t fastsse_plain_run(const unsigned char *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16) {
        int mask = fastsse_stop_mask(p + i);
        if (mask)
            return i + __builtin_ctz((unsigned)mask);
    }
    if (i < n && n >= 16) {
        /* the last 16 bytes, overlapping the ones found plain already */
        int mask = fastsse_stop_mask(p + n - 16);
        return mask ? n - 16 + __builtin_ctz((unsigned)mask) : n;
    }
#endif
    while (i < n && !fastsse_is_stop(p[i]))
        i++;
    return i;
}

/* Where the last byte of p[0:n] that is '"', '\\' or below 0x20 is, or -1: the end of the
   last run of a JSON string that needs no attention, looked for from its end. */
static inline ptrdiff_t fastsse_last_stop(const unsigned char *p, ptrdiff_t n) {
#if defined(__SSE2__)
    for (; n >= 16; n -= 16) {
        int mask = fastsse_stop_mask(p + n - 16);
        if (mask)
            return n - 16 + 31 - __builtin_clz((unsigned)mask);
    }
#endif
    while (n-- > 0)
        if (fastsse_is_stop(p[n]))
            return n;
    return -1;
}

/* Whether a[0:n] and b[0:n] hold the same bytes: memcmp for the short runs that replaying an
   event compares, inline and without ordering the bytes. */
static inline int fastsse_equal(const unsigned char *a, const unsigned char *b, ptrdiff_t n) {
#if defined(__SSE2__)
    if (n >= 16) {
        /* the differences of every 16-byte block, or-ed together: one test at the end */
        __m128i diff = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + n - 16)),
                                     _mm_loadu_si128((const __m128i *)(b + n - 16)));
        ptrdiff_t i = 0;
        for (; i + 32 <= n; i += 32) {
            diff = _mm_or_si128(diff, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + i)),
                                                    _mm_loadu_si128((const __m128i *)(b + i))));
            diff = _mm_or_si128(diff, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + i + 16)),
                                                    _mm_loadu_si128((const __m128i *)(b + i + 16))));
        }
        if (i + 16 <= n)
            diff = _mm_or_si128(diff, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + i)),
                                                    _mm_loadu_si128((const __m128i *)(b + i))));
        return _mm_movemask_epi8(_mm_cmpeq_epi8(diff, _mm_setzero_si128())) == 0xFFFF;
    }
#endif
    for (ptrdiff_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* fastsse_cpu_has_<name>(): whether the CPU has what `test` asks of __builtin_cpu_supports,
   asked at the first call (fastsse_has_<name> is -1 until then; each flag is set once, alone). */
#define FASTSSE_CPU_FEATURE(name, test)              \
    static int fastsse_has_##name = -1;              \
    static inline int fastsse_cpu_has_##name(void) { \
        if (fastsse_has_##name < 0) {                \
            __builtin_cpu_init();                    \
            fastsse_has_##name = (test) != 0;        \
        }                                            \
        return fastsse_has_##name;                   \
    }
FASTSSE_CPU_FEATURE(avx2, __builtin_cpu_supports("avx2"))    /* the 32-byte scans */
FASTSSE_CPU_FEATURE(ssse3, __builtin_cpu_supports("ssse3"))  /* base64's 16-byte blocks */
/* CRC32 by carry-less multiplication (_eventstream.h) */
FASTSSE_CPU_FEATURE(clmul, __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1"))
#undef FASTSSE_CPU_FEATURE
#endif

#if defined(__SSE2__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The same scans 32 bytes a step, for code compiled for AVX2 (FASTSSE_AVX2 functions, called
   only where fastsse_cpu_has_avx2 says the CPU has it). */
#define FASTSSE_AVX2 1
#include <immintrin.h>

__attribute__((target("avx2")))
static inline unsigned fastsse_stop_mask_avx2(const unsigned char *p) {
    const __m256i below_space = _mm256_set1_epi8(0x1F);
    __m256i x = _mm256_loadu_si256((const __m256i *)p);
    return (unsigned)_mm256_movemask_epi8(_mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('"')), _mm256_cmpeq_epi8(x, _mm256_set1_epi8('\\'))),
        _mm256_cmpeq_epi8(_mm256_max_epu8(x, below_space), below_space)));
}

/* fastsse_plain_run, 32 bytes a step (the last 31 or fewer 16). */
__attribute__((target("avx2")))
static inline ptrdiff_t fastsse_plain_run_avx2(const unsigned char *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
    for (; i + 32 <= n; i += 32) {
        unsigned mask = fastsse_stop_mask_avx2(p + i);
        if (mask)
            return i + __builtin_ctz(mask);
    }
    return i + fastsse_plain_run(p + i, n - i);
}

/* fastsse_equal, 32 bytes a step (fewer than 32 as fastsse_equal compares them). */
__attribute__((target("avx2")))
static inline int fastsse_equal_avx2(const unsigned char *a, const unsigned char *b, ptrdiff_t n) {
    if (n >= 32) {
        __m256i diff = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + n - 32)),
                                        _mm256_loadu_si256((const __m256i *)(b + n - 32)));
        for (ptrdiff_t i = 0; i + 32 <= n; i += 32)
            diff = _mm256_or_si256(diff, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + i)),
                                                          _mm256_loadu_si256((const __m256i *)(b + i))));
        return _mm256_testz_si256(diff, diff);
    }
    return fastsse_equal(a, b, n);
}

#endif

/* The length of the run of spaces and tabs that p[0:n] starts with. */
static inline ptrdiff_t fastsse_blank_run(const unsigned char *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' ');
    const __m128i tab = _mm_set1_epi8('\t');
    for (; i + 16 <= n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + i));
        int mask = ~_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, space), _mm_cmpeq_epi8(x, tab))) & 0xFFFF;
        if (mask)
            return i + __builtin_ctz((unsigned)mask);
    }
#endif
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return i;
}

/* Ask for p[0:n] to be brought into the cache ahead of its reading (a hint: p may be past the
   end of the data, prefetching never faults). */
static inline void fastsse_prefetch(const unsigned char *p, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i += 64)
        __builtin_prefetch(p + i);
}

#endif

/* Byte-class scans for the compiled scanner.  SSE2 where the compiler has it (every x86_64),
   a plain loop elsewhere; both give the same answer. */
#ifndef FASTSSE_SIMD_H
#define FASTSSE_SIMD_H

#include <stddef.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Length of the longest prefix of p[0:n] holding no '"', no '\\' and no byte below 0x20:
   the run of a JSON string that needs no attention. */
static inline ptrdiff_t fastsse_plain_run(const unsigned char *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i below_space = _mm_set1_epi8(0x1F);
    for (; i + 16 <= n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i stop = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
            _mm_cmpeq_epi8(_mm_max_epu8(x, below_space), below_space));
        int mask = _mm_movemask_epi8(stop);
        if (mask)
            return i + __builtin_ctz((unsigned)mask);
    }
#endif
    while (i < n && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20)
        i++;
    return i;
}

#endif

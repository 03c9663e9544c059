/* The AWS event stream's arithmetic for the compiled scanner: CRC32 (zlib's: the IEEE
   polynomial, reflected), big-endian integers, the headers the scanner reads, and the base64
   of a Bedrock chunk.  The Python twin (_eventstream_py.py) uses zlib and binascii instead. */
#ifndef FASTSSE_EVENTSTREAM_H
#define FASTSSE_EVENTSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* CRC32 of p[0:n], eight bytes a step (slicing-by-8). */
static inline uint32_t fastsse_crc32(const unsigned char *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
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
    return ~crc;
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

/* Decode the base64 text s[0:n] (standard alphabet, padded to a multiple of 4) into out, which
   has room for n / 4 * 3 bytes: the decoded length, or -1 if s is not such text. */
static inline ptrdiff_t fastsse_base64_decode(const unsigned char *s, ptrdiff_t n, unsigned char *out) {
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

#endif

/* Replaying the events that repeat a kept one, in a run: the compiled scanner's hot loop for
   a kept event whose holes are all strings, numbers and a sequence number (see _caches.pxd,
   Memo.plain).

   memo_match reads any kept event, one event a call, with what every kind of hole needs (the
   kept value tried first, numbers, arguments, sequence numbers, escapes).  Once a kept event
   has been replayed, most of its holes are strings that vary (the text), free strings as wide
   as the kept ones (a time stamp, HOP_FIXED), numbers no rule reads (Gemini's token counts)
   or a sequence number that must follow the last (Responses'); for such an event this loop
   counts every repeat in a chunk without leaving C, its counters in registers.  It takes an
   event only if memo_match would take it and count the same: where it cannot tell (a time
   stamp of another width, a control byte, a bad escape, a number with a sign, a fraction or
   an exponent, a sequence number that does not follow, a line past the bound), it stops
   before that event and memo_match looks at it. */
#ifndef FASTSSE_REPLAY_H
#define FASTSSE_REPLAY_H

#include <stddef.h>
#include <stdint.h>
#include "_simd.h"

/* A hole of a plain kept event is a string (_caches.pxd's HOP_STRING), a number or a string as
   wide as the kept one (_caches.pxd takes its HOP_NUMBER and HOP_FIXED from here). */
enum { FASTSSE_HOP_NUMBER = 1, FASTSSE_HOP_SEQ = 4, FASTSSE_HOP_FIXED = 5 };

/* Whether a run may use AVX2 where the CPU has it (1) or only SSE2 (0).  Tests lower it to
   hold each path to the same answers. */
static int fastsse_replay_widest = 1;

/* The scans of a run: 32 bytes a step where `avx2` (in code compiled for it), else 16. */
#ifdef FASTSSE_AVX2
#define FASTSSE_RUN_EQUAL(a, b, n) (avx2 ? fastsse_equal_avx2(a, b, n) : fastsse_equal(a, b, n))
#define FASTSSE_RUN_PLAIN(p, n) (avx2 ? fastsse_plain_run_avx2(p, n) : fastsse_plain_run(p, n))
/* Whether p[0:width] holds nothing that ends a plain string (room: the bytes readable from
   p, more than width): one step where it spans fewer than 32 bytes and 32 can be read. */
#define FASTSSE_RUN_ALL_PLAIN(p, width, room)                                                   \
    (avx2 && (width) < 32 && (room) >= 32 ? (fastsse_stop_mask_avx2(p) & ((1u << (width)) - 1u)) == 0 \
                                          : FASTSSE_RUN_PLAIN(p, width) == (width))
#else
#define FASTSSE_RUN_EQUAL(a, b, n) fastsse_equal(a, b, n)
#define FASTSSE_RUN_PLAIN(p, n) fastsse_plain_run(p, n)
#endif
#ifndef FASTSSE_RUN_ALL_PLAIN
#define FASTSSE_RUN_ALL_PLAIN(p, width, room) (FASTSSE_RUN_PLAIN(p, width) == (width))
#endif

/* The cache lines each event a run counts asks for, ahead of the reading: a fixed number, not
   a loop up to the event's end.  Such a loop runs two times or three as the events' lengths
   vary, a branch the CPU mispredicts event after event (its fixed count measured Ollama +16 to
   +19 %, Anthropic +4 %, the rest within noise, bench_builds.py); a line it does not ask for,
   past an event longer than these, is the hardware prefetcher's, which follows a sequential
   read.  (A hint: the lines may be past the end of the data, prefetching never faults.) */
enum { FASTSSE_RUN_PREFETCH_LINES = 4 };

/* The end of the plain integer at q (digits, no leading zero, at most 15 of them, no digit
   after them) before stop, its value in *value; or NULL: anything else is left to the reader.
   How memo_match, templates and runs read a sequence number. */
static inline __attribute__((always_inline)) const unsigned char *fastsse_plain_integer(
        const unsigned char *q, const unsigned char *stop, int64_t *value) {
    const unsigned char *digits = q;
    *value = 0;
    while (q < stop && (unsigned)(*q - '0') < 10 && q - digits < 15) {
        *value = *value * 10 + (*q - '0');
        q++;
    }
    if (q == digits || (*digits == '0' && q - digits > 1) || (q < stop && (unsigned)(*q - '0') < 10))
        return NULL;
    return q;
}

/* The closing quote of the JSON string whose content starts at q, before stop, or NULL: as
   skip_string finds it (no control byte; an escape is one unescape knows, or \\u and four
   digits hex knows). */
static inline __attribute__((always_inline)) const unsigned char *fastsse_string_close(
        const unsigned char *q, const unsigned char *stop, const unsigned char *unescape,
        const signed char *hex, int avx2) {
    (void)avx2;
    for (;;) {
        q += FASTSSE_RUN_PLAIN(q, stop - q);
        if (q == stop)
            return NULL;
        if (*q == '"')
            return q;
        if (*q != '\\' || stop - q < 2)
            return NULL;
        if (q[1] == 'u') {
            if (stop - q < 6 || (hex[q[2]] | hex[q[3]] | hex[q[4]] | hex[q[5]]) < 0)
                return NULL;
            q += 6;
        } else if (unescape[q[1]]) {
            q += 2;
        } else {
            return NULL;
        }
    }
}

/* The events from q on (before stop) that repeat the kept event t[0:len] (its line end and
   blank line the last `tail` bytes), whose n holes are t[start[h]:end[h]], each read as op[h]
   says and counted, when not empty, in counts[slot[h]] (a string's escapes are checked with
   the tables unescape and hex).  An event longer than `bound` without its tail is left to its
   reading, which reports it.  Returns where the first event not counted starts (memo_match
   looks at it next); *events is how many were; counts[0:4] grow by what they counted.  An
   event whose sequence number (a FASTSSE_HOP_SEQ hole) does not follow *seq, the stream's last
   (-1: none yet), is left to memo_match, whose caller reports the gap; *seq becomes the last
   event's counted.  (numbered: whether the kept event has one; without, seq is not used.)  Each
   event counted asks for the FASTSSE_RUN_PREFETCH_LINES cache lines `ahead_by` bytes past its
   end.  Compiled four times, below: avx2 and numbered are constants in each (a run without a
   sequence number pays nothing for those that have one). */
static inline __attribute__((always_inline)) const unsigned char *fastsse_replay_events(
        const unsigned char *t, ptrdiff_t len, ptrdiff_t tail, int n, const ptrdiff_t *start,
        const ptrdiff_t *end, const unsigned char *op, const unsigned char *slot,
        const unsigned char *q, const unsigned char *stop, ptrdiff_t bound,
        ptrdiff_t ahead_by, const unsigned char *unescape,
        const signed char *hex, ptrdiff_t *events, ptrdiff_t *counts, int64_t *seq, int avx2,
        int numbered) {
    ptrdiff_t replayed = 0;
    int64_t last = numbered ? *seq : -1;
    (void)avx2;
    for (;;) {
        const unsigned char *event = q;
        const unsigned char *close;
        ptrdiff_t tpos = 0, seg, width;
        ptrdiff_t seen[4] = {0, 0, 0, 0};
        int64_t number = -1; /* its sequence number, if it has one */
        int h;
        for (h = 0; h < n; h++) {
            seg = start[h] - tpos;
            if (stop - q <= seg || !FASTSSE_RUN_EQUAL(q, t + tpos, seg))
                goto done;
            q += seg;
            if (op[h] == FASTSSE_HOP_FIXED) {
                /* as wide as the kept one, and nothing in it that ends a plain string */
                width = end[h] - start[h];
                if (stop - q <= width || !FASTSSE_RUN_ALL_PLAIN(q, width, stop - q))
                    goto done;
                q += width;
            } else if (numbered && op[h] == FASTSSE_HOP_SEQ) {
                /* a sequence number, which must follow the last (below) */
                q = fastsse_plain_integer(q, stop, &number);
                if (q == NULL)
                    goto done;
                seen[slot[h]] += 1;
            } else if (op[h] != FASTSSE_HOP_NUMBER) {
                /* a string (one that memo_match tries as the kept value first, too) */
                close = fastsse_string_close(q, stop, unescape, hex, avx2);
                if (close == NULL)
                    goto done; /* a control byte, a bad escape, or the chunk's end */
                seen[slot[h]] += close > q;
                q = close;
            } else {
                /* digits, without a leading zero: a number as skip_number reads it (what
                   follows is compared next); a sign, a fraction or an exponent is left to
                   memo_match */
                const unsigned char *digits = q;
                while (q < stop && (unsigned)(*q - '0') < 10)
                    q++;
                if (q == digits || (*digits == '0' && q - digits > 1))
                    goto done;
                seen[slot[h]] += 1;
            }
            tpos = end[h];
        }
        seg = len - tpos;
        if (stop - q < seg || !FASTSSE_RUN_EQUAL(q, t + tpos, seg))
            goto done;
        q += seg;
        if (q - event - tail > bound)
            goto done; /* memo_match's, whose caller reports it */
        if (numbered && number >= 0) {
            if (last >= 0 && number != last + 1)
                goto done; /* a gap: the event's reading reports it */
            last = number;
        }
        for (h = 0; h < FASTSSE_RUN_PREFETCH_LINES; h++)
            __builtin_prefetch(q + ahead_by + 64 * h);
        replayed++;
        counts[0] += seen[0];
        counts[1] += seen[1];
        counts[2] += seen[2];
        counts[3] += seen[3];
        continue;
    done:
        *events = replayed;
        if (numbered)
            *seq = last;
        return event;
    }
}

#define FASTSSE_RUN_ARGS                                                                        \
    const unsigned char *t, ptrdiff_t len, ptrdiff_t tail, int n, const ptrdiff_t *start,       \
    const ptrdiff_t *end, const unsigned char *op, const unsigned char *slot,                   \
    const unsigned char *q, const unsigned char *stop, ptrdiff_t bound,                         \
    ptrdiff_t ahead_by, const unsigned char *unescape,                                          \
    const signed char *hex, ptrdiff_t *events, ptrdiff_t *counts, int64_t *seq
#define FASTSSE_RUN_PASS \
    t, len, tail, n, start, end, op, slot, q, stop, bound, ahead_by, unescape, hex, events, counts, seq

static const unsigned char *fastsse_replay_run_sse2(FASTSSE_RUN_ARGS) {
    return fastsse_replay_events(FASTSSE_RUN_PASS, 0, 0);
}

static const unsigned char *fastsse_replay_run_sse2_numbered(FASTSSE_RUN_ARGS) {
    return fastsse_replay_events(FASTSSE_RUN_PASS, 0, 1);
}

#ifdef FASTSSE_AVX2
__attribute__((target("avx2")))
static const unsigned char *fastsse_replay_run_avx2(FASTSSE_RUN_ARGS) {
    return fastsse_replay_events(FASTSSE_RUN_PASS, 1, 0);
}

__attribute__((target("avx2")))
static const unsigned char *fastsse_replay_run_avx2_numbered(FASTSSE_RUN_ARGS) {
    return fastsse_replay_events(FASTSSE_RUN_PASS, 1, 1);
}
#endif

/* fastsse_replay_events, 32 bytes a step where the CPU has AVX2 (and fastsse_replay_widest
   allows it), else 16; with a sequence number where seq is not NULL. */
static inline const unsigned char *fastsse_replay_run(FASTSSE_RUN_ARGS) {
#ifdef FASTSSE_AVX2
    if (fastsse_replay_widest && fastsse_cpu_has_avx2())
        return seq ? fastsse_replay_run_avx2_numbered(FASTSSE_RUN_PASS)
                   : fastsse_replay_run_avx2(FASTSSE_RUN_PASS);
#endif
    return seq ? fastsse_replay_run_sse2_numbered(FASTSSE_RUN_PASS) : fastsse_replay_run_sse2(FASTSSE_RUN_PASS);
}

#undef FASTSSE_RUN_EQUAL
#undef FASTSSE_RUN_PLAIN
#undef FASTSSE_RUN_ALL_PLAIN
#undef FASTSSE_RUN_ARGS
#undef FASTSSE_RUN_PASS

#endif

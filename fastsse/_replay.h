/* Replaying the events that repeat a kept one, in a run: the compiled scanner's hot loop for
   a kept event whose holes are all plain strings (see _caches.pxd, Memo.plain).

   memo_match reads any kept event, one event a call, with what every kind of hole needs (the
   kept value tried first, numbers, arguments, sequence numbers, escapes).  Once a kept event
   has been replayed, most of its holes are strings that vary (the text) or free strings as
   wide as the kept ones (a time stamp, HOP_FIXED); for such an event this loop counts every
   repeat in a chunk without leaving C, its counters in registers.  It takes an event only if
   memo_match would take it and count the same: where it cannot tell (a time stamp of another
   width, a control byte, a bad escape, a line past the bound), it stops before that event and
   memo_match looks at it. */
#ifndef FASTSSE_REPLAY_H
#define FASTSSE_REPLAY_H

#include <stddef.h>
#include "_simd.h"

/* A hole of a plain kept event is a string (_caches.pxd's HOP_STRING) or this one, a string as
   wide as the kept one (_caches.pxd takes its HOP_FIXED from here). */
enum { FASTSSE_HOP_FIXED = 5 };

/* The closing quote of the JSON string whose content starts at q, before stop, or NULL: as
   skip_string finds it (no control byte; an escape is one unescape knows, or \\u and four
   digits hex knows). */
static inline const unsigned char *fastsse_string_close(const unsigned char *q,
                                                         const unsigned char *stop,
                                                         const unsigned char *unescape,
                                                         const signed char *hex) {
    for (;;) {
        q += fastsse_plain_run(q, stop - q);
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
   looks at it next); *events is how many were; counts[0:4] grow by what they counted.  The
   cache lines from *ahead up to `ahead_by` bytes past the last event counted are asked for. */
static inline const unsigned char *fastsse_replay_run(
        unsigned char *t, ptrdiff_t len, ptrdiff_t tail, int n, const ptrdiff_t *start,
        const ptrdiff_t *end, const unsigned char *op, const unsigned char *slot,
        const unsigned char *q, const unsigned char *stop, ptrdiff_t bound,
        const unsigned char **ahead, ptrdiff_t ahead_by, const unsigned char *unescape,
        const signed char *hex, ptrdiff_t *events, ptrdiff_t *counts) {
    ptrdiff_t replayed = 0;
    const unsigned char *asked = *ahead;
    for (;;) {
        const unsigned char *event = q;
        const unsigned char *close;
        ptrdiff_t tpos = 0, seg, run;
        ptrdiff_t seen[4] = {0, 0, 0, 0};
        int h;
        for (h = 0; h < n; h++) {
            seg = start[h] - tpos;
            if (op[h] == FASTSSE_HOP_FIXED) {
                /* its value goes where the kept one was; the bytes from tpos on are compared
                   across it in one run, with those before the next string */
                run = end[h] - start[h];
                if (stop - q <= seg + run || !fastsse_plain_copy(t + start[h], q + seg, run))
                    goto done;
                continue;
            }
            if (stop - q <= seg || !fastsse_equal(q, t + tpos, seg))
                goto done;
            q += seg;
            close = fastsse_string_close(q, stop, unescape, hex);
            if (close == NULL)
                goto done; /* a control byte, a bad escape, or the chunk's end */
            seen[slot[h]] += close > q;
            q = close;
            tpos = end[h];
        }
        seg = len - tpos;
        if (stop - q < seg || !fastsse_equal(q, t + tpos, seg))
            goto done;
        q += seg;
        if (q - event - tail > bound)
            goto done; /* memo_match's, whose caller reports it */
        fastsse_prefetch_upto(&asked, q + ahead_by);
        replayed++;
        counts[0] += seen[0];
        counts[1] += seen[1];
        counts[2] += seen[2];
        counts[3] += seen[3];
        continue;
    done:
        *ahead = asked;
        *events = replayed;
        return event;
    }
}

#endif

# cython: language_level=3
"""The caches of repeated events: a stream's kept event (replay), templates, judgements.

None of them decides anything.  Each lets the scanner skip work whose result it already knows,
and each answers exactly what the work would have: tests hold the compiled scanner, which has
them, to the Python twin, which reads every event.

Replaying.  Most events of a stream repeat the one before but for a few string values: the
chunk id and the model are the same in every Chat Completions chunk, only the delta's text and
the obfuscation padding change.  When an event read by ``_json_fast`` changed nothing but
counters, its bytes are kept (a ``Memo``) with the positions of its "holes": the string values
whose bytes mattered only through being empty or not (text, reasoning, refusal), or not at all
(values no rule reads), and the numbers no rule reads.  A later event that equals it byte for
byte outside the holes, and whose holes are valid JSON strings (numbers), would be read into
the same record but for those counters, so it is counted without being read: a few memcmp
instead of a parse.  Anything else, a hole that is not a plain string (number) included, falls
back to reading the event.

The other dialects replay the same way, each where its rules only count: Anthropic's and
Converse's text and thinking block deltas (not a tool's input, whose pieces go to its JSON
check), Responses' text, refusal and reasoning deltas and a call's argument deltas (the delta an
H_ARGS hole whose fragment goes to the JSON check of the item at the kept event's output_index,
as reading it would; Memo.block), Ollama's lines
that are not the last, and Gemini's chunks without a finish (a Gemini part's text is a hole
whose role its part decides: text in a text part, free in a thought part, which counts once;
replaying one turns the end marker off, as reading it would).  Besides the current kept event a
stream keeps SPARE_MEMOS earlier ones, tried in turn when the current one does not match (a
Gemini chunk's number of parts varies; Anthropic's text and thinking deltas take turns).
Their deltas are holes of their own (H_DELTA_*, H_DELTA), counted as the kept event's kind
says; Anthropic's padding before the closing brace is a hole of spaces and tabs (H_SPACE), never
a line end; Responses' sequence_number is a hole (H_SEQ) whose repeat must follow the stream's
last number, or the event is read and the gap reported.  An SSE event kept may start with one
"event:" line; an NDJSON line is kept with its newline; a Converse frame is kept without its
prelude and CRCs (they change with the payload's length), and a repeat is compared only once
both its CRCs are checked; an InvokeModel chunk's event is kept as decoded from its base64 (the
base64 of a repeat differs throughout), and a repeat is compared once decoded.  How each hole is
read (Memo.op) and what it counts as (Memo.slot) are worked out when the event is kept, and
settled at its first replay (memo_settle): a free value that came again becomes bytes to
compare, a free string that came as wide (Ollama's created_at) is taken as wide (HOP_FIXED).
An event whose holes are then all strings and numbers (a sequence number among them) is plain:
its repeats are counted in runs by a C loop (``_replay.h``, replay_run), which leaves anything
it cannot take (a stamp of another width, a control byte, a number with a sign, a fraction or
an exponent, a sequence number that does not follow) to memo_match, which reads such a hole as
a string (number), and to its caller, which reports the gap.

Templates.  Replaying needs an event read in full first: in a chat stream, its role chunk,
first content chunk, finish chunk and usage chunk are each the first of their shape, and the
next stream of the same model sends the same four shapes again (a Gemini stream: its first
text chunk, first thought chunk and last chunk; a Responses stream: its created, in_progress,
item and part events, its first delta and its completed; an Ollama stream: its first line and
its last).  So a chat, Gemini, Responses or Ollama event read in place
whose effect the scanner can repeat without the Record (choices registered with their finish
reasons, the model, whether usage counted reasoning tokens, what whole items held, counters;
Responses: the sequence number, which must follow, the end of a call's arguments, the stream's
end and finish; Ollama: its text and thinking, and for the last line the stream's end and its
done_reason; no tool call or arguments, no error, no blockReason, no delta but a Responses
text, refusal or reasoning delta, which a match hands to replay as the kept event, its
sequence number checked) also becomes a
``Template``: its bytes with every hole's value cut out, and its effect.  A template belongs
to the protocol of the stream that made it (``Template.detected``).  An event that equals a
template outside the holes, with a valid JSON string or number in each hole, would be read
into the same Record but for the counters, so the scanner applies the template's effect,
through the functions a read event's effect goes through, instead of reading it; the rules of
the stream's own protocol finish it (a Gemini chunk with candidates says again whether the
stream is over).  A template keeps only names (keys, the model, finish reasons): an event with
any other value that is not a hole (too many holes, or text a rule reads) makes none.  The protocol an auto stream's first event names is a function of its bytes
(``_detect``), so a template made from such an event keeps it (``Template.auto``), and the
first event of a later auto stream that matches it names the same protocol without a read.

Which template to try: each remembers the two that followed it last (an LRU of two), and a
stream's first event tries the two that began streams last.  A wrong guess costs a compare that
stops at the first differing byte; an event that matches neither is read, and becomes a
template in place of the least recently used one.  The table is bounded (TEMPLATES slots) and
touched only with the GIL held.  When templates do not pay (traffic of more shapes than slots,
or of shapes that never repeat), only one event in TEMPLATE_BACKOFF tries them or makes one, so
that reading events costs about what it would without them, and a hit now and then brings them
back.

Judgements.  Most streams end like one of the last few judged (the same protocol, finish reason
and flags): a ``Judged`` key of C values finds that stream's answer without building the
Python arguments of ``_verdict._judge`` (one per name in ``_JUDGE_PARAMETERS``).

The memo belongs to one Scanner; templates, judgements and the last model name sanitized to a
``Caches`` object (``_scanner.Caches``), one per process unless a caller passes its own.
Declarations and ``cdef inline`` functions only.
"""

from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from ._cbytes cimport Buf, Pos, Str, buf_append, fastsse_equal, str_eq
from ._json_fast cimport skip_blanks, skip_number, skip_string
from ._record cimport (A_TOOL_ARGS, H_ARGS, H_FREE, H_NUMBER, H_REASONING, H_REFUSAL, H_SEQ,
                       H_SPACE, H_TEXT, MAX_HOLES, N_ROLES, Record)

cdef enum:
    MEMO_MAX_BYTES = 4096  # the longest event kept to be replayed or made a template
    SPARE_MEMOS = 3  # the events kept before the current one, tried when it does not match
    TEMPLATES = 64
    TEMPLATE_CHOICES = 4  # the most choices a template's effect registers
    TEMPLATE_BACKOFF = 16
    # Whether templates pay lately: a hit saves a read (a few hundred ns), an event that
    # matched none of the templates tried cost the tries (tens of ns): +HIT_SCORE, -1, within
    # +-SCORE_MAX.  A hit after a bad spell starts from 0: templates are tried again at once.
    HIT_SCORE = 4
    SCORE_MAX = 256
    JUDGED = 8  # judgements remembered: streams of a few kinds take turns
    MEMO_FINISHES = 4  # _verdict._CACHED_FINISHES: streams with more choices are judged afresh

# ---------------------------------------------------------------------------- replaying

cdef extern from "_replay.h":
    cdef enum:
        # how memo_match reads a hole (Memo.op), besides those below: a free string that held
        # another value as wide as the kept one at the first replay (a time stamp).  replay_run
        # looks at its bytes (nothing in them may end a plain string) and compares the kept
        # event's bytes around them; memo_match reads it as a string.
        HOP_FIXED "FASTSSE_HOP_FIXED"
        HOP_NUMBER "FASTSSE_HOP_NUMBER"  # a number (replay_run takes plain integers)
        HOP_SEQ "FASTSSE_HOP_SEQ"  # a sequence number, read in any case: it must follow the last
    # the end of the plain integer at q (digits, no leading zero, at most 15 of them), its value
    # in *value; NULL: anything else is left to the reader
    const unsigned char* plain_integer "fastsse_plain_integer"(
        const unsigned char* q, const unsigned char* stop, int64_t* value) noexcept nogil
    int replay_widest "fastsse_replay_widest"  # 1: AVX2 in runs where the CPU has it, 0: SSE2
    const unsigned char* replay_run "fastsse_replay_run"(
        const unsigned char* t, Py_ssize_t len, Py_ssize_t tail, int n, const Py_ssize_t* start,
        const Py_ssize_t* end, const unsigned char* op, const unsigned char* slot,
        const unsigned char* q, const unsigned char* stop, Py_ssize_t bound,
        Py_ssize_t ahead_by, const unsigned char* unescape,
        const signed char* hex, Py_ssize_t* events, Py_ssize_t* counts, int64_t* seq) noexcept nogil

cdef enum:  # how memo_match reads a hole (Memo.op)
    HOP_STRING = 0  # a string
    #            (1: HOP_NUMBER, above)
    HOP_SPACE = 2  # spaces and tabs
    HOP_ARGS = 3  # a tool call's arguments, read in any case: they go to the JSON check
    #            (4: HOP_SEQ, above)
    #            (5: HOP_FIXED, above)
    HOP_TRY = 8  # with one of the first three: the kept value is tried first
    COUNTED = 4  # what memo_match counts: text, reasoning, refusal, and a slot for the rest

ctypedef struct Memo:  # the event a stream keeps to replay the ones that repeat it
    Buf event  # its bytes, its line end and blank line included (empty: none kept)
    Py_ssize_t tail  # its line end and blank line: 2 ("\n\n") or 4 ("\r\n\r\n")
    int n_holes
    Py_ssize_t start[MAX_HOLES]
    Py_ssize_t end[MAX_HOLES]
    unsigned char role[MAX_HOLES]
    unsigned char op[MAX_HOLES]  # how it is read (HOP_*): HOP_TRY leaves a hole that held
    #                              another value at the first replay
    unsigned char slot[MAX_HOLES]  # what its value counts as when not empty: 0 text,
    #                                1 reasoning, 2 refusal, 3 nothing (count_as)
    Py_ssize_t base[COUNTED]  # text, reasoning, refusal counted outside its holes (content parts)
    bint fresh  # not replayed yet: holes that repeat their value become bytes to compare
    unsigned same_width  # the holes that held a string as wide as the kept one (first replay)
    # replayed, every hole a string, a number or a sequence number (HOP_STRING, HOP_FIXED,
    # HOP_NUMBER, HOP_SEQ), no call fragment, no argument delta: its repeats are counted in runs
    # (replay_run), those the run leaves by memo_match
    bint plain
    Py_ssize_t run_hits, run_misses  # repeats the runs counted, and those they left (memo_missed)
    # the roles whose holes count as text, reasoning and refusal (-1: none): H_TEXT.. in a
    # chat event, its deltas' (H_DELTA_*, H_DELTA) in the others; set before memo_set
    int count_as[3]
    bint seq  # its sequence number is a hole (H_SEQ), which must follow the stream's last
    bint reopens  # a Gemini chunk with candidates and no finish: the stream is not over after it
    Py_ssize_t headers  # a kept frame's: the length of its headers, which come first in event
    bint tool  # it carries one tool call fragment, without an id
    int64_t tool_choice, tool_index  # which call the fragment continues
    bint block  # it is a Responses argument delta (its delta an H_ARGS hole)
    int64_t block_index  # the output_index whose arguments it continues

cdef inline int memo_set(Memo* m, const unsigned char* event, Py_ssize_t size, Py_ssize_t tail,
                         int n_holes, const Py_ssize_t* starts, const Py_ssize_t* ends,
                         const unsigned char* roles, const Py_ssize_t* base) except -1:
    """Keep event[:size] with its holes at event[starts[i]:ends[i]], base counted per role
    outside them (m.tool and m.count_as are the caller's)."""
    cdef int h, k
    m.fresh = True
    m.plain = False
    m.same_width = 0
    m.event.len = 0
    buf_append(&m.event, <const char*>event, size)
    m.tail = tail
    m.n_holes = n_holes
    memcpy(m.start, starts, n_holes * sizeof(Py_ssize_t))
    memcpy(m.end, ends, n_holes * sizeof(Py_ssize_t))
    memcpy(m.role, roles, n_holes * sizeof(unsigned char))
    for k in range(3):
        m.base[k] = base[m.count_as[k]] if m.count_as[k] >= 0 else 0
    m.base[3] = 0
    for h in range(n_holes):
        m.slot[h] = 3
        for k in range(3):
            if roles[h] == m.count_as[k]:
                m.slot[h] = k
        if roles[h] == H_ARGS:
            m.op[h] = HOP_ARGS
        elif roles[h] == H_SEQ:
            m.op[h] = HOP_SEQ
        elif roles[h] == H_NUMBER:
            m.op[h] = HOP_NUMBER | HOP_TRY
        elif roles[h] == H_SPACE:
            m.op[h] = HOP_SPACE | HOP_TRY
        else:
            m.op[h] = HOP_STRING | HOP_TRY
    return 0

cdef inline Pos read_args(Record* rec, Pos q, Pos end, bint* captured) except? NULL:
    """The closing quote of the tool call arguments whose string content starts at q, or NULL
    if the whole-event reader would not accept it.  Content with escapes is left unescaped in
    rec.captured, as the reader captures it (*captured)."""
    cdef Pos close
    rec.captured.len = 0
    rec.in_tool = False  # capture only: record nothing
    close = skip_string(rec, q, end, A_TOOL_ARGS)
    captured[0] = rec.captured.len > 0  # an escape always stands for a byte
    return close

cdef inline Pos memo_match(Memo* m, Record* rec, Pos q, Pos end, Py_ssize_t* counts,
                           unsigned* same, Pos* args, Py_ssize_t* args_width,
                           bint* args_captured, int64_t* seq) except? NULL:
    """The end of the event at q if it repeats the kept one before end, its blank line
    included; else NULL.  Fills what it counts (counts[:COUNTED], by Memo.slot), the holes that
    held the kept value again (same), its tool call arguments (args[:args_width], or as
    read_args left them in rec.captured), and its sequence number (seq, if m.seq).  A
    HOP_FIXED hole is read as a string: replay_run takes the events whose value is as wide."""
    cdef Pos t = <Pos>m.event.p
    cdef Pos close
    cdef Py_ssize_t tpos = 0, seg, width
    cdef int h
    cdef unsigned char op
    memcpy(counts, m.base, COUNTED * sizeof(Py_ssize_t))
    same[0] = 0
    args_width[0] = 0
    for h in range(m.n_holes):
        seg = m.start[h] - tpos  # the bytes before the hole, its quote included
        if end - q <= seg or not fastsse_equal(q, t + tpos, seg):
            return NULL
        q += seg
        op = m.op[h]
        if op == HOP_STRING:  # the most frequent: a string that varies
            close = skip_string(rec, q, end, 0)
        else:
            width = m.end[h] - m.start[h]
            # the kept value again? (the byte after it, a string's closing quote, too)
            if (op & HOP_TRY and end - q > width and q[width] == t[m.end[h]]
                    and fastsse_equal(q, t + tpos + seg, width)):
                same[0] |= 1u << h
                close = q + width
            else:
                op &= ~HOP_TRY
                if op == HOP_STRING or op == HOP_FIXED:
                    close = skip_string(rec, q, end, 0)
                    if close - q == width:  # (the first replay's, for memo_settle)
                        m.same_width |= 1u << h
                elif op == HOP_NUMBER:
                    close = skip_number(q, end)
                elif op == HOP_SPACE:
                    close = skip_blanks(q, end)
                elif op == HOP_ARGS:
                    close = read_args(rec, q, end, args_captured)
                    if close != NULL and close > q:
                        args[0] = q
                        args_width[0] = close - q
                else:
                    close = plain_integer(q, end, seq)
        if close == NULL:
            return NULL
        counts[m.slot[h]] += close > q
        q = close
        tpos = m.end[h]
    seg = m.event.len - tpos
    if end - q < seg or not fastsse_equal(q, t + tpos, seg):
        return NULL
    return q + seg

cdef inline void memo_unfix(Memo* m) noexcept:
    """The kept event is not plain: its holes taken as wide are read as strings again."""
    cdef int h
    m.plain = False
    for h in range(m.n_holes):
        if m.op[h] == HOP_FIXED:
            m.op[h] = HOP_STRING

cdef inline void memo_settle(Memo* m, unsigned same) noexcept:
    """After the first replay: a free hole that held the kept value again (the chunk id, the
    system fingerprint) is compared as bytes from now on, one comparison fewer; a free string
    that held another value as wide (a time stamp) is taken as wide from now on (HOP_FIXED); a
    hole that held another value (the text, the padding) is read without trying the kept
    one."""
    cdef int h, kept = 0
    m.fresh = False
    for h in range(m.n_holes):
        if (m.role[h] == H_FREE or m.role[h] == H_NUMBER or m.role[h] == H_SPACE) and same & (1u << h):
            continue
        m.start[kept] = m.start[h]
        m.end[kept] = m.end[h]
        m.role[kept] = m.role[h]
        m.slot[kept] = m.slot[h]
        m.op[kept] = m.op[h] if same & (1u << h) else m.op[h] & ~HOP_TRY
        if m.role[h] == H_FREE and m.op[kept] == HOP_STRING and m.same_width & (1u << h):
            m.op[kept] = HOP_FIXED
        kept += 1
    m.n_holes = kept
    m.plain = not (m.tool or m.block)
    m.run_hits = m.run_misses = 0
    for h in range(kept):
        # (a string that held the kept value again is still tried first by memo_match, a run
        # reads it as any string: an Ollama thinking line's empty content)
        m.plain &= (m.op[h] == HOP_STRING or m.op[h] == HOP_STRING | HOP_TRY or m.op[h] == HOP_FIXED
                    or m.op[h] == HOP_NUMBER or (m.op[h] == HOP_SEQ and m.seq))
    if not m.plain:
        memo_unfix(m)

cdef inline void memo_missed(Memo* m) noexcept:
    """A repeat that replay_run left to memo_match: a free string of another width, mostly (Go's
    time stamps drop trailing zeros: one in ten is narrower).  When that is not rare (a value
    as wide as the kept one at the first replay by chance: padding), the event stops being
    plain: its holes are read as strings, one event at a time."""
    m.run_misses += 1
    if m.run_misses * 8 > m.run_hits + 64:
        memo_unfix(m)

cdef inline void record_base(const Record* r, Py_ssize_t* base) noexcept:
    """What the event just read counted per choice role outside its holes (content parts)."""
    cdef int i
    memset(base, 0, N_ROLES * sizeof(Py_ssize_t))
    for i in range(r.n_choices):
        base[H_TEXT] += r.choices[i].text
        base[H_REASONING] += r.choices[i].reasoning
        base[H_REFUSAL] += r.choices[i].refusal
    for i in range(r.n_holes):
        if r.hole_end[i] > r.hole_start[i] and H_TEXT <= r.hole_role[i] <= H_REFUSAL:
            base[r.hole_role[i]] -= 1

# ---------------------------------------------------------------------------- templates

ctypedef struct Template:
    Py_ssize_t len  # of bytes; 0: an empty slot
    Py_ssize_t tail  # its line end and blank line, as Memo.tail
    int n_holes
    Py_ssize_t at[MAX_HOLES]  # where each hole's value was cut out of bytes
    unsigned char role[MAX_HOLES]
    Py_ssize_t base[N_ROLES]  # per role, what it counts outside its holes
    bint keep  # the matching event is kept to replay the events that repeat it
    # the protocol (the scanner's D_* code) of the stream that made it: a template is matched
    # in streams of that protocol only, whose rules finish its effect
    int detected
    # the event's kind by its protocol's rules (the scanner's K_* code; -1: none): a Responses
    # delta's says what its delta counts as, in its effect and in the kept event it hands over
    int kind
    # its effect as the rules of that protocol read it (besides the choices): what whole items
    # held (ITEM_* bits; a message's text and refusal by their holes, H_ITEM_TEXT/REFUSAL),
    # whether it ends the stream, and whether it ends the call arguments at block_index
    int items
    bint ends, ends_block
    int64_t block_index
    # the protocol (the scanner's D_* code) that the event names when it is the first event of
    # a stream whose protocol is not known, as _detect found it (a function of the bytes);
    # -1: the event was never read as one, and such a stream reads it
    int auto
    # its effect: the model, whether usage counted reasoning tokens, and the choices it
    # registers with their finish reasons
    Str model
    bint reasoning_tokens
    int n_choices
    int64_t index[TEMPLATE_CHOICES]
    Str finish[TEMPLATE_CHOICES]
    int next[2]  # the templates that followed this one last, the latest first; -1: none
    char bytes[MEMO_MAX_BYTES]

ctypedef struct TemplateTable:
    Template slots[TEMPLATES]
    # Each slot's hash (template_hash) and when it was last made or matched, side by side (a
    # template is 5 KiB): finding a template's twin or the least used slot reads these, not
    # every template.
    uint64_t hashes[TEMPLATES]
    unsigned long long used[TEMPLATES]
    Template scratch  # where a template is put together, before it takes a slot
    int first[2]  # the templates that began streams last
    unsigned long long clock
    int score  # whether templates paid lately (see HIT_SCORE)
    unsigned turn
    unsigned long long tries  # events that tried templates (a diagnostic)

cdef inline void templates_clear(TemplateTable* tt) noexcept:
    cdef int i
    for i in range(TEMPLATES):
        tt.slots[i].len = 0
        tt.used[i] = 0
        tt.hashes[i] = 0
        tt.slots[i].next[0] = tt.slots[i].next[1] = -1
    tt.first[0] = tt.first[1] = -1
    tt.clock = tt.tries = 0
    tt.turn = 0
    tt.score = SCORE_MAX

cdef inline bint templates_skipped(TemplateTable* tt) noexcept:
    """Whether templates did not pay lately, and it is not this turn's to try them anyway."""
    if tt.score >= 0:
        return False
    tt.turn += 1
    return tt.turn % TEMPLATE_BACKOFF != 0

cdef inline void templates_paid(TemplateTable* tt, bint hit) noexcept:
    if hit:
        tt.score = min(max(tt.score, 0) + HIT_SCORE, SCORE_MAX)
    else:
        tt.score = max(tt.score - 1, -SCORE_MAX)

cdef inline int* template_links(TemplateTable* tt, int prev) noexcept:
    """The templates to try after template prev (-1: a stream's first), the likelier first."""
    if prev < 0:
        return tt.first
    return tt.slots[prev].next

cdef inline void template_follow(TemplateTable* tt, int* prev, int slot) noexcept:
    """Template slot is a stream's latest: the likeliest after its predecessor *prev."""
    cdef int* links = template_links(tt, prev[0])
    if links[0] != slot:
        links[1] = links[0]
        links[0] = slot
    prev[0] = slot
    tt.clock += 1
    tt.used[slot] = tt.clock

cdef inline uint64_t template_hash(const Template* t) noexcept:
    """A hash of t's bytes and holes: templates with different ones seldom share it."""
    cdef uint64_t h = (<uint64_t>t.len * 0x9E3779B97F4A7C15u
                       ^ <uint64_t>(t.detected << 16 | t.n_holes << 8 | t.tail))
    cdef uint64_t word
    cdef Py_ssize_t i = 0
    cdef int k
    while i < t.len:
        word = 0
        memcpy(&word, t.bytes + i, min(8, t.len - i))
        h = (h ^ word) * 0x9E3779B97F4A7C15u
        h ^= h >> 29
        i += 8
    for k in range(t.n_holes):
        h = (h ^ (<uint64_t>t.at[k] << 8 | t.role[k])) * 0x9E3779B97F4A7C15u
        h ^= h >> 29
    return h

cdef inline bint same_template(const Template* a, const Template* b) noexcept:
    """Whether a and b keep the same bytes with the same holes, for the same protocol."""
    cdef int h
    if a.len != b.len or a.n_holes != b.n_holes or a.tail != b.tail or a.detected != b.detected:
        return False
    for h in range(a.n_holes):
        if a.at[h] != b.at[h] or a.role[h] != b.role[h]:
            return False
    return memcmp(a.bytes, b.bytes, a.len) == 0

cdef inline Template* template_make(TemplateTable* tt, int* prev, const Record* r,
                                    const unsigned char* event, Py_ssize_t tail, Py_ssize_t size,
                                    Py_ssize_t value_off, bint keep, int detected,
                                    int auto) noexcept:
    """The event just read into r, event[:size] (its data at value_off), in a stream of protocol
    detected, becomes a template in the least used slot, or finds its twin; it follows *prev.
    auto: Template.auto, if the event named its stream's protocol, else -1.  Returns the
    template, whose protocol's effect (items, ends, ends_block) the caller fills in."""
    cdef Template* t = &tt.scratch
    cdef int* expected = template_links(tt, prev[0])
    cdef int slot = 0, i
    cdef int next[2]
    cdef uint64_t hash
    cdef Py_ssize_t src = 0, cut, at = 0
    for i in range(r.n_holes):
        cut = value_off + r.hole_start[i]
        memcpy(t.bytes + at, event + src, cut - src)
        at += cut - src
        t.at[i] = at
        t.role[i] = r.hole_role[i]
        src = value_off + r.hole_end[i]
    memcpy(t.bytes + at, event + src, size - src)
    t.len = at + size - src
    t.tail = tail
    t.n_holes = r.n_holes
    t.detected = detected
    hash = template_hash(t)
    for i in range(TEMPLATES):
        if tt.hashes[i] == hash and same_template(t, &tt.slots[i]):
            # a stream that took another path to the same shape: one template, whose effect is
            # the same (it follows from the bytes and the holes, and so does the protocol named)
            if auto >= 0:
                tt.slots[i].auto = auto
            template_follow(tt, prev, i)
            return &tt.slots[i]
    # It takes the place of the template expected here (one finish reason for another): what
    # followed that one likely follows it.
    next[0] = next[1] = -1
    if expected[0] >= 0:
        next[0] = tt.slots[expected[0]].next[0]
        next[1] = tt.slots[expected[0]].next[1]
    record_base(r, t.base)
    t.keep = keep
    t.auto = auto
    t.model = r.model
    t.reasoning_tokens = r.reasoning_tokens
    t.n_choices = r.n_choices
    for i in range(r.n_choices):
        t.index[i] = r.choices[i].index if r.choices[i].index >= 0 else r.choices[i].ordinal
        t.finish[i] = r.choices[i].finish
    t.next[0] = next[0]
    t.next[1] = next[1]
    for i in range(1, TEMPLATES):
        if tt.used[i] < tt.used[slot]:
            slot = i
    memcpy(&tt.slots[slot], t, <size_t>(<char*>t.bytes - <char*>t) + t.len)
    tt.hashes[slot] = hash
    template_follow(tt, prev, slot)
    return &tt.slots[slot]

cdef inline Pos template_match(const Template* t, Record* rec, Pos event, Pos end,
                               Py_ssize_t* starts, Py_ssize_t* ends, Py_ssize_t* counts,
                               int64_t* seq) except? NULL:
    """The end of the event at event[0:] if it matches t before end, its blank line included;
    else NULL.  Fills where its holes are, what they count (rec: skip_string's) and its sequence
    number (a plain integer, as memo_match reads one; -1: none)."""
    cdef Pos q = event
    cdef Pos close
    cdef Pos bytes = <Pos>t.bytes
    cdef Py_ssize_t tpos = 0, seg
    cdef int h
    memcpy(counts, t.base, N_ROLES * sizeof(Py_ssize_t))
    seq[0] = -1
    for h in range(t.n_holes):
        seg = t.at[h] - tpos
        if end - q <= seg or not fastsse_equal(q, bytes + tpos, seg):
            return NULL
        q += seg
        if t.role[h] == H_NUMBER:
            close = skip_number(q, end)
        elif t.role[h] == H_SEQ:
            close = plain_integer(q, end, seq)
        elif t.role[h] == H_SPACE:
            close = skip_blanks(q, end)
        else:
            close = skip_string(rec, q, end, 0)
        if close == NULL:
            return NULL
        starts[h] = q - event
        ends[h] = close - event
        if close > q:
            counts[t.role[h]] += 1
        q = close
        tpos = t.at[h]
    seg = t.len - tpos
    if end - q < seg or not fastsse_equal(q, bytes + tpos, seg):
        return NULL
    return q + seg

# ---------------------------------------------------------------------------- judgements

ctypedef struct Judged:  # the arguments of a _judge call, as C values (see Scanner.close)
    int protocol, transport, limit, n_finishes
    unsigned flags
    Str finishes[MEMO_FINISHES]
    Str error_code, error_type, blocked

cdef inline bint judged_same(const Judged* a, const Judged* b) noexcept:
    cdef int i
    if (a.protocol != b.protocol or a.transport != b.transport or a.limit != b.limit
            or a.flags != b.flags or a.n_finishes != b.n_finishes
            or not str_eq(&a.error_code, &b.error_code) or not str_eq(&a.error_type, &b.error_type)
            or not str_eq(&a.blocked, &b.blocked)):
        return False
    for i in range(a.n_finishes):
        if not str_eq(&a.finishes[i], &b.finishes[i]):
            return False
    return True

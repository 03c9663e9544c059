# cython: language_level=3
"""The whole-event reader: a complete event's JSON read in one pass over its bytes.

An SSE event's data is complete before it is parsed, so it can be read by recursive descent
over the buffer instead of by the resumable byte-at-a-time automaton (``_json``): no state saved
between bytes, the read position kept in a register, strings and whitespace consumed in runs,
dead subtrees (ids, "object", "created", "logprobs", ...) validated without touching the
Record.  It makes exactly the Record calls the automaton makes, in the same order, and notes
the event's "holes" for the caches (``_caches``): the values whose bytes change nothing
recorded but whether they are empty.  It only handles the common shape: on anything else
(escaped keys, deep nesting, a top level that is not an object, and every syntax error) it
bails out, and the caller resets the Record and runs the automaton over the event from
scratch, so the automaton alone still judges unusual or malformed events.

Each reader takes the position of its value and returns the position after it, or NULL to
bail out (with an exception set only on MemoryError).  The end of the event is c.end, and
c.end[0] must be readable: readers peek at the byte under the cursor before they compare the
cursor with the end.  The Python twin has no such reader: it reads every event with the
automaton, which is what this reader must agree with.  Declarations and ``cdef inline``
functions only.
"""

from libc.stdint cimport int64_t
from libc.string cimport memcmp, memset

from ._cbytes cimport CAP, Pos, Str, buf_append, fastsse_blank_run, fastsse_plain_run, str_append
from ._json cimport (MAX_INT, _full_capture, _hex, _is_ws, _node_action, _node_element,
                     _short_capture, _unescape, tree_child)
from ._record cimport (A_DELTA, A_DELTA_TEXT, A_DELTA_THINKING, A_ITEM_REFUSAL, A_ITEM_TEXT, A_PART_TEXT, A_REASONING, A_REFUSAL, A_SEQ,
                       A_TEXT, A_TOOL_ARGS, H_ARGS, H_DELTA, H_DELTA_TEXT, H_DELTA_THINKING, H_FREE,
                       H_ITEM_REFUSAL, H_ITEM_TEXT, H_NUMBER, H_SEQ, H_SPACE, H_TEXT, V_FALSE, V_NULL, V_NUMBER, V_STRING, V_TRUE, MAX_HOLES, Record,
                       record_begin, record_end, record_scalar)

cdef extern from *:
    """
    static int fastsse_template_may_keep[64];
    """
    # Per action: _protocols.TEMPLATE_MAY_KEEP, the string values that name things and are never
    # payload.  Any other value that is not a hole makes the event opaque: it may not become a
    # template (see _caches).
    bint _template_may_keep "fastsse_template_may_keep" [64]

cdef inline int json_fast_tables_init(object protocols) except -1:
    memset(_template_may_keep, 0, sizeof(_template_may_keep))
    for action in protocols.TEMPLATE_MAY_KEEP:
        _template_may_keep[action] = True
    return 0

cdef enum:
    FAST_MAX_DEPTH = 64  # deeper documents are left to the automaton (whose limit is MAX_DEPTH)

ctypedef struct Cursor:
    Pos base  # the start of the JSON
    Pos end
    Record* rec
    int depth

cdef inline void note_hole(Cursor* c, Pos s, Pos q, int action) noexcept:
    """The string value s[:q - s] was read for action.  Note it as a hole if what is recorded
    depends on its bytes only through whether it is empty; any other string is left to be
    compared byte for byte."""
    cdef Record* r = c.rec
    cdef int role
    if action == A_TEXT or action == A_REASONING or action == A_REFUSAL:
        role = action - A_TEXT + H_TEXT if r.in_choice else H_FREE
    elif action == A_TOOL_ARGS:
        role = H_ARGS if r.in_tool else H_FREE
    elif action == A_DELTA_TEXT:
        role = H_DELTA_TEXT
    elif action == A_DELTA_THINKING:
        role = H_DELTA_THINKING
    elif action == A_DELTA:
        role = H_DELTA
    elif (action == A_ITEM_TEXT or action == A_ITEM_REFUSAL) and r.in_item:
        role = H_ITEM_TEXT if action == A_ITEM_TEXT else H_ITEM_REFUSAL
    elif action == A_PART_TEXT:
        # free until the part ends and says what its text counts as (record_end)
        role = H_FREE
        if r.in_part:
            r.part.hole = r.n_holes
            r.part.texts += 1
    elif action:
        r.opaque |= not _template_may_keep[action]
        return
    else:
        role = H_FREE
    add_hole(c, s, q, role)

cdef inline void add_hole(Cursor* c, Pos s, Pos q, int role) noexcept:
    """The value s[:q - s] is a hole of this role (a value past MAX_HOLES is not: see opaque)."""
    cdef Record* r = c.rec
    if r.n_holes >= MAX_HOLES:
        r.opaque = True
        return
    r.hole_start[r.n_holes] = s - c.base
    r.hole_end[r.n_holes] = q - c.base
    r.hole_role[r.n_holes] = role
    r.n_holes += 1

cdef inline Pos skip_ws(Pos p, Pos end) noexcept:
    # compact JSON, the usual case, costs one load and one test
    while _is_ws[p[0]] and p < end:
        p += 1
    return p

cdef inline Pos skip_blanks(Pos p, Pos end) noexcept:
    """Spaces and tabs: what an H_SPACE hole may hold when an event is replayed (never a line
    end, which would frame the event differently)."""
    return p + fastsse_blank_run(p, end - p)

cdef inline int capture_bytes(Record* r, int capture, Str* sbuf, const char* p,
                              Py_ssize_t n) except -1:
    """Where an unescaped string value goes: the bounded capture (1), the whole capture (2)."""
    if capture == 2:
        buf_append(&r.captured, p, n)
    elif capture == 1:
        str_append(sbuf, p, n)
    return 0

cdef inline Pos fast_escaped_string(Cursor* c, Pos s, Pos q, int action) except? NULL:
    """A string value whose content starts at s and holds a backslash at q.

    Unescapes into the capture the action asks for as the automaton's emit_bytes does: each
    \\uXXXX on its own, as UTF-8 (surrogates too)."""
    cdef int capture = 2 if _full_capture[action] else 1 if _short_capture[action] else 0
    cdef Py_ssize_t start = c.rec.captured.len, run
    cdef Str sbuf
    cdef unsigned char e
    cdef char out[3]
    cdef int cp, h0, h1, h2, h3
    sbuf.len = 0 if capture == 1 else -1
    if capture and q > s:
        capture_bytes(c.rec, capture, &sbuf, <const char*>s, q - s)
    while True:
        if q >= c.end:
            return NULL
        if q[0] == b'"':
            break
        if q[0] != b'\\' or c.end - q < 2:  # a control byte, or a cut escape
            return NULL
        e = q[1]
        if e == b'u':
            if c.end - q < 6:
                return NULL
            h0 = _hex[q[2]]
            h1 = _hex[q[3]]
            h2 = _hex[q[4]]
            h3 = _hex[q[5]]
            if (h0 | h1 | h2 | h3) < 0:
                return NULL
            q += 6
            if capture:
                cp = (h0 << 12) | (h1 << 8) | (h2 << 4) | h3
                if cp < 0x80:
                    out[0] = <char>cp
                    capture_bytes(c.rec, capture, &sbuf, out, 1)
                elif cp < 0x800:
                    out[0] = <char>(0xC0 | (cp >> 6))
                    out[1] = <char>(0x80 | (cp & 0x3F))
                    capture_bytes(c.rec, capture, &sbuf, out, 2)
                else:
                    out[0] = <char>(0xE0 | (cp >> 12))
                    out[1] = <char>(0x80 | ((cp >> 6) & 0x3F))
                    out[2] = <char>(0x80 | (cp & 0x3F))
                    capture_bytes(c.rec, capture, &sbuf, out, 3)
        elif _unescape[e]:
            q += 2
            if capture:
                capture_bytes(c.rec, capture, &sbuf, <const char*>&_unescape[e], 1)
        else:
            return NULL
        run = fastsse_plain_run(q, c.end - q)
        if capture and run:
            capture_bytes(c.rec, capture, &sbuf, <const char*>q, run)
        q += run
    if action:  # an escape always stands for a byte: the string is not empty
        record_scalar(c.rec, action, V_STRING, &sbuf, -1, True,
                      start, c.rec.captured.len - start)
    return q + 1

cdef inline Pos fast_string(Cursor* c, Pos p, int action) except? NULL:
    """A string value at p (its opening quote)."""
    cdef Pos s = p + 1
    cdef Py_ssize_t run = fastsse_plain_run(s, c.end - s)
    cdef Py_ssize_t start
    cdef Str sbuf
    cdef Pos after
    if s + run >= c.end:
        return NULL
    if s[run] != b'"':
        if s[run] == b'\\':
            after = fast_escaped_string(c, s, s + run, action)
            if after != NULL:
                note_hole(c, s, after - 1, action)
            return after
        return NULL  # a control byte: malformed
    note_hole(c, s, s + run, action)
    if action:
        sbuf.len = -1
        if _full_capture[action]:
            start = c.rec.captured.len
            buf_append(&c.rec.captured, <const char*>s, run)
            record_scalar(c.rec, action, V_STRING, &sbuf, -1, run > 0, start, run)
        else:
            if _short_capture[action]:
                sbuf.len = 0
                str_append(&sbuf, <const char*>s, run)
            record_scalar(c.rec, action, V_STRING, &sbuf, -1, run > 0, 0, 0)
    return s + run + 1

cdef inline Pos skip_string(Record* rec, Pos q, Pos end, int action) except? NULL:
    """The closing quote of the string whose content starts at q, if the content is what
    fast_string accepts (no control byte, only valid escapes); else NULL.  Content with escapes
    is captured into rec unescaped as action's capture (0: not at all), and recorded as
    fast_escaped_string does; plain content is left where it is."""
    cdef Py_ssize_t run = fastsse_plain_run(q, end - q)
    cdef Cursor c
    cdef Pos after
    if q + run >= end:
        return NULL
    if q[run] == b'"':
        return q + run
    if q[run] != b'\\':
        return NULL  # a control byte
    c.base = q
    c.end = end
    c.rec = rec
    c.depth = 0
    after = fast_escaped_string(&c, q, q + run, action)
    return after - 1 if after != NULL else NULL

cdef inline bint is_digit(unsigned char ch) noexcept:
    return <unsigned char>(ch - 48) < 10  # one unsigned comparison

cdef inline Pos skip_number(Pos q, Pos end) noexcept:
    """The end of the number at q, by fast_number's grammar, if it is one; else NULL."""
    if q < end and q[0] == b'-':
        q += 1
    if q >= end:
        return NULL
    if q[0] == b'0':
        q += 1
    elif is_digit(q[0]):
        while q < end and is_digit(q[0]):
            q += 1
    else:
        return NULL
    if q < end and q[0] == b'.':
        q += 1
        if q >= end or not is_digit(q[0]):
            return NULL
        while q < end and is_digit(q[0]):
            q += 1
    if q < end and (q[0] == b'e' or q[0] == b'E'):
        q += 1
        if q < end and (q[0] == b'+' or q[0] == b'-'):
            q += 1
        if q >= end or not is_digit(q[0]):
            return NULL
        while q < end and is_digit(q[0]):
            q += 1
    return q

cdef inline Pos fast_number(Cursor* c, Pos q, int action) noexcept:
    """A number at q, by skip_number's grammar; its value if a plain integer below 2**53.

    What follows it is checked by the container (c.end[0] is never a digit's concern: every
    loop stops at the end)."""
    cdef Pos start = q
    cdef int64_t value = 0
    cdef Str absent
    q = skip_number(q, c.end)
    if q == NULL:
        return NULL
    if not action:
        add_hole(c, start, q, H_NUMBER)  # any other number would record the same
        return q
    if action == A_SEQ:
        add_hole(c, start, q, H_SEQ)  # replayed only when it is the one expected
    while start < q and is_digit(start[0]):  # a plain integer is digits only
        if value < MAX_INT:
            value = value * 10 + start[0] - 48
        start += 1
    absent.len = -1
    record_scalar(c.rec, action, V_NUMBER, &absent, value if start == q and value < MAX_INT else -1,
                  False, 0, 0)
    return q

cdef inline Pos fast_literal(Cursor* c, Pos p, int action, const char* word, int n,
                             int kind) noexcept:
    cdef Str absent
    if c.end - p < n or memcmp(p, word, n) != 0:
        return NULL
    if action:
        absent.len = -1
        record_scalar(c.rec, action, kind, &absent, -1, False, 0, 0)
    return p + n

cdef inline Pos fast_value(Cursor* c, Pos p, int node) except? NULL:
    """One value at p (not whitespace, not the end), read for JSON_TREE node (-1: dead)."""
    cdef int action = _node_action[node] if node >= 0 else 0
    cdef unsigned char ch = p[0]
    if ch == b'"':
        return fast_string(c, p, action)
    if ch == b'{':
        return fast_object(c, p, node)
    if ch == b'[':
        return fast_array(c, p, node)
    if ch == b'-' or is_digit(ch):
        return fast_number(c, p, action)
    if ch == b'n':
        return fast_literal(c, p, action, "null", 4, V_NULL)
    if ch == b't':
        return fast_literal(c, p, action, "true", 4, V_TRUE)
    if ch == b'f':
        return fast_literal(c, p, action, "false", 5, V_FALSE)
    return NULL

cdef inline Pos fast_object(Cursor* c, Pos p, int node) except? NULL:
    """An object at p (its '{')."""
    cdef int own_action = _node_action[node] if node >= 0 else 0
    cdef int child, action
    cdef Pos end = c.end
    cdef Pos key
    cdef Py_ssize_t run
    if c.depth >= FAST_MAX_DEPTH:
        return NULL
    c.depth += 1
    if own_action:
        record_begin(c.rec, own_action, True)
    p = skip_ws(p + 1, end)
    if p[0] == b'}' and p < end:
        p += 1
    else:
        while True:
            if p[0] != b'"' or p >= end:
                return NULL
            key = p + 1
            run = fastsse_plain_run(key, end - key)
            if key + run >= end or key[run] != b'"':
                return NULL  # an escaped key (rare: the automaton reads it) or malformed
            child = tree_child(node, <const char*>key, run) if node >= 0 and run <= CAP else -1
            p = key + run + 1
            if p[0] != b':':
                p = skip_ws(p, end)
                if p[0] != b':' or p >= end:
                    return NULL
            p = skip_ws(p + 1, end)
            if p >= end:
                return NULL
            # most values are strings, integers or null: no dispatch for them
            action = _node_action[child] if child >= 0 else 0
            if p[0] == b'"':
                p = fast_string(c, p, action)
            elif is_digit(p[0]):
                p = fast_number(c, p, action)
            elif p[0] == b'n':
                p = fast_literal(c, p, action, "null", 4, V_NULL)
            else:
                p = fast_value(c, p, child)
            if p == NULL:
                return NULL
            key = skip_ws(p, end)  # (key: a free variable)
            if key > p:  # padding, as Anthropic's before its closing brace
                add_hole(c, p, key, H_SPACE)
            p = key
            if p >= end:
                return NULL
            if p[0] == b',':
                p = skip_ws(p + 1, end)
            elif p[0] == b'}':
                p += 1
                break
            else:
                return NULL
    c.depth -= 1
    if own_action:
        record_end(c.rec, own_action, True)
    return p

cdef inline Pos fast_array(Cursor* c, Pos p, int node) except? NULL:
    """An array at p (its '[')."""
    cdef int action = _node_action[node] if node >= 0 else 0
    cdef int element = _node_element[node] if node >= 0 else -1
    cdef Pos end = c.end
    if c.depth >= FAST_MAX_DEPTH:
        return NULL
    c.depth += 1
    if action:
        record_begin(c.rec, action, False)
    p = skip_ws(p + 1, end)
    if p[0] == b']' and p < end:
        p += 1
    else:
        while True:
            if p >= end:
                return NULL
            p = fast_value(c, p, element)
            if p == NULL:
                return NULL
            p = skip_ws(p, end)
            if p >= end:
                return NULL
            if p[0] == b',':
                p = skip_ws(p + 1, end)
            elif p[0] == b']':
                p += 1
                break
            else:
                return NULL
    c.depth -= 1
    # record_end does nothing for an array
    return p

cdef inline bint json_whole(Record* rec, Pos p, Py_ssize_t n) except -1:
    """Read a complete event body p[:n] into rec: True if it is valid JSON and rec holds what
    the automaton would have recorded, False if the automaton must read it instead.
    p[n] must be readable (any value)."""
    cdef Cursor c
    c.base = p
    c.end = p + n
    c.rec = rec
    c.depth = 0
    p = skip_ws(p, c.end)
    if p[0] != b'{' or p >= c.end:
        return False
    p = fast_object(&c, p, 0)
    if p == NULL:
        return False
    return skip_ws(p, c.end) == c.end

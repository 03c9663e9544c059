# cython: language_level=3
"""Framing: bytes -> lines -> events, by the WHATWG event-stream rules.

A stream may start with a UTF-8 BOM (dropped); a line ends at CR, LF or CRLF, and a CRLF may be
split across chunks; a line is a comment (":..."), a field ("name: value", "name:value" or
"name" alone) or empty, which dispatches the event its fields built.  ``Framing`` holds what a
stream has buffered between chunks; ``LineSearch`` remembers, within one chunk, how far its
line ends were searched, so that no byte is searched twice.  The scanner (``_scanner``) drives
these and decides what each line means.  The Python twin is ``_framing_py``.  Declarations and
``cdef inline`` functions only.
"""

from libc.string cimport memchr, memcmp

from ._cbytes cimport Buf, Pos

cdef enum:
    LF = 0x0A
    CR = 0x0D
    COLON = 0x3A
    SPACE = 0x20

cdef enum Field:  # the fields the scanner reads; any other is ignored, as the spec says
    F_OTHER = 0
    F_DATA = 1
    F_EVENT = 2
    F_ID = 3
    F_RETRY = 4
    F_ERROR = 5  # llama.cpp sent errors as an "error:" field

ctypedef struct Framing:
    unsigned char head[3]  # the first bytes, held until we know whether they are a BOM
    int head_len
    bint at_start
    bint pending_cr  # the last chunk ended in CR: an LF first in the next one belongs to it
    Buf line  # the unterminated line so far
    Buf data  # the event's data lines, each followed by "\n"
    Py_ssize_t data_lines
    Buf event_type  # the event's "event:" value (empty: "message")
    Py_ssize_t event_bytes  # non-comment line bytes of the event being built
    bint bare_active  # a bare JSON object, not framed as SSE (Gemini's errors), is being read
                      # (by the scanner's automaton): its lines count here, as an event's do
    Py_ssize_t bare_bytes

ctypedef struct LineSearch:  # how far one chunk was searched for line ends
    Py_ssize_t next_lf  # -2: not searched yet, -1: none in this chunk
    Py_ssize_t next_cr  # the CR found, if >= the line's start
    Py_ssize_t cr_clear  # no CR in the chunk from the line's start to here

cdef inline bint framing_idle(const Framing* f) noexcept:
    """Between events: nothing of an event, a line or a bare object is buffered."""
    return (f.line.len == 0 and f.data_lines == 0 and f.event_type.len == 0
            and f.event_bytes == 0 and not f.bare_active)

cdef inline int framing_start(Framing* f, Pos p, Py_ssize_t n, Py_ssize_t* skip) noexcept:
    """The stream's first bytes p[:n] (n > 0): 0 if they may still be a BOM's (held), 1 if a
    BOM ended at p[*skip], 2 if there was none: the held head[:head_len - *skip] come first,
    then p[:n]."""
    cdef const unsigned char* bom = <const unsigned char*>"\xef\xbb\xbf"
    skip[0] = 0
    while skip[0] < n and f.head_len < 3:
        f.head[f.head_len] = p[skip[0]]
        f.head_len += 1
        skip[0] += 1
        if f.head[f.head_len - 1] != bom[f.head_len - 1]:
            break
    if f.head_len < 3 and f.head[f.head_len - 1] == bom[f.head_len - 1]:
        return 0
    f.at_start = False
    if f.head_len == 3 and memcmp(f.head, bom, 3) == 0:
        return 1
    return 2

cdef inline void search_init(LineSearch* s) noexcept:
    s.next_lf = -2
    s.next_cr = -1
    s.cr_clear = 0

cdef inline Py_ssize_t line_end(LineSearch* s, Pos p, Py_ssize_t pos, Py_ssize_t n) noexcept:
    """Where the line that starts at p[pos] ends (its CR or LF), or -1 if not in p[:n].

    A CR ends the line only if it comes before the LF: the search for it stops there, never
    reading bytes that the caches may take whole without a look."""
    cdef const unsigned char* hit
    cdef Py_ssize_t stop, cr_from
    if s.next_lf != -1 and s.next_lf < pos:
        hit = <const unsigned char*>memchr(p + pos, LF, n - pos)
        s.next_lf = hit - p if hit != NULL else -1
    stop = s.next_lf if s.next_lf >= 0 else n
    if s.next_cr < pos:
        cr_from = pos if pos > s.cr_clear else s.cr_clear
        hit = (<const unsigned char*>memchr(p + cr_from, CR, stop - cr_from)
               if cr_from < stop else NULL)
        if hit != NULL:
            s.next_cr = hit - p
        else:
            s.cr_clear = stop
    return s.next_cr if pos <= s.next_cr < stop else s.next_lf

cdef inline Py_ssize_t line_next(Framing* f, Pos p, Py_ssize_t end, Py_ssize_t n) noexcept:
    """Where the line after the one ending at p[end] starts: past its CR, LF or CRLF (a CR
    last in the chunk leaves pending_cr)."""
    if p[end] == CR:
        if end + 1 == n:
            f.pending_cr = True
        elif p[end + 1] == LF:
            end += 1
    return end + 1

cdef inline Py_ssize_t blank_after(Pos p, Py_ssize_t n, Py_ssize_t end) noexcept:
    """p[end] ends a line: the position of the terminator of the next line if that line is
    empty and known to be so within p[:n], else -1."""
    cdef Py_ssize_t i = end + 1
    if p[end] == CR:
        if i == n:
            return -1  # a "\n" may follow in the next chunk
        if p[i] == LF:
            i += 1
    if i < n and (p[i] == LF or p[i] == CR):
        return i
    return -1

cdef inline Py_ssize_t event_tail(Pos p, Py_ssize_t n, Py_ssize_t end, Py_ssize_t blank) noexcept:
    """How many bytes end a one-line event whose line ends at p[end] and whose blank line is at
    p[blank]: 2 ("\\n\\n"), 4 ("\\r\\n\\r\\n"), or 0 for any other ending (lone CRs, or a
    blank line that may be "\\r\\n" split across chunks)."""
    if p[end] == LF and blank == end + 1 and p[blank] == LF:
        return 2
    if (p[end] == CR and blank == end + 2 and p[end + 1] == LF
            and p[blank] == CR and blank + 1 < n and p[blank + 1] == LF):
        return 4
    return 0

cdef inline int field_of(Pos name, Py_ssize_t n) noexcept:
    if n == 4 and memcmp(name, "data", 4) == 0:
        return F_DATA
    if n == 5 and memcmp(name, "event", 5) == 0:
        return F_EVENT
    if n == 2 and memcmp(name, "id", 2) == 0:
        return F_ID
    if n == 5 and memcmp(name, "retry", 5) == 0:
        return F_RETRY
    if n == 5 and memcmp(name, "error", 5) == 0:
        return F_ERROR
    return F_OTHER

cdef inline int split_field(Pos line, Py_ssize_t n, Py_ssize_t* value_off) noexcept:
    """The field a non-empty, non-comment line line[:n] sets; its value is line[*value_off:n]
    (after the colon and one space; nothing if there is no colon)."""
    cdef Pos colon = <Pos>memchr(line, COLON, n)
    cdef Py_ssize_t name_len
    if colon == NULL:
        name_len = n
        value_off[0] = n
    else:
        name_len = colon - line
        value_off[0] = name_len + 1
        if value_off[0] < n and line[value_off[0]] == SPACE:
            value_off[0] += 1
    return field_of(line, name_len)

cdef inline Py_ssize_t data_value_offset(Pos line, Py_ssize_t n) noexcept:
    """Where the value of a "data:" line line[:n] (n >= 5) starts."""
    return 6 if n > 5 and line[5] == SPACE else 5

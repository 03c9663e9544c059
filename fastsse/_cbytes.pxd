# cython: language_level=3
"""The compiled scanner's small C pieces: bounded strings, growable buffers, string tables.

Every layer (``_record``, ``_json``, ``_json_fast``, ``_caches``, ``_framing``) stores what it
captures in these.  Declarations and ``cdef inline`` functions only: they compile into the one
extension module, ``_scanner``, that cimports them (no module of this name exists at run time).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.string cimport memcmp, memcpy


cdef extern from "_simd.h":
    Py_ssize_t fastsse_plain_run(const unsigned char* p, Py_ssize_t n) noexcept nogil
    Py_ssize_t fastsse_last_stop(const unsigned char* p, Py_ssize_t n) noexcept nogil
    Py_ssize_t fastsse_blank_run(const unsigned char* p, Py_ssize_t n) noexcept nogil
    bint fastsse_equal(const unsigned char* a, const unsigned char* b, Py_ssize_t n) noexcept nogil
    void fastsse_prefetch(const unsigned char* p, Py_ssize_t n) noexcept nogil

# Compile-time copies of the shared bounds; _scanner checks them against _limits and
# _protocols at import.
cdef enum:
    CAP = 64  # CAPTURE_BYTES
    MAX_DEPTH = 512  # MAX_JSON_DEPTH
    MAX_CHOICES = 128
    MAX_TOOL_CALLS = 1024

ctypedef const unsigned char* Pos  # a position in the bytes being read

ctypedef struct Str:  # a bounded captured string; len -1 means "absent" (None)
    int len
    char s[CAP + 2]

ctypedef struct Buf:  # a growable byte buffer (PyMem)
    char* p
    Py_ssize_t len
    Py_ssize_t cap

cdef inline void str_clear(Str* s) noexcept nogil:
    s.len = -1

cdef inline void str_append(Str* s, const char* p, Py_ssize_t n) noexcept nogil:
    # keeps at most CAP + 1 bytes: a longer value can never equal an enum of CAP bytes
    if s.len < 0:
        s.len = 0
    if s.len > CAP:
        return
    if n > CAP + 1 - s.len:
        n = CAP + 1 - s.len
    memcpy(s.s + s.len, p, n)
    s.len += <int>n

cdef inline bint str_eq(const Str* s, const Str* t) noexcept nogil:
    return s.len == t.len and (s.len <= 0 or memcmp(s.s, t.s, s.len) == 0)

cdef inline object str_bytes(const Str* s):
    if s.len < 0:
        return None
    return PyBytes_FromStringAndSize(s.s, s.len)

cdef inline int buf_reserve(Buf* b, Py_ssize_t extra) except -1:
    cdef Py_ssize_t need = b.len + extra
    cdef Py_ssize_t cap
    cdef char* p
    if need <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap else 256
    while cap < need:
        cap *= 2
    p = <char*>PyMem_Realloc(b.p, cap)
    if p == NULL:
        raise MemoryError()
    b.p = p
    b.cap = cap
    return 0

cdef inline int buf_append(Buf* b, const char* p, Py_ssize_t n) except -1:
    if b.len + n > b.cap:
        buf_reserve(b, n)
    memcpy(b.p + b.len, p, n)
    b.len += n
    return 0

cdef inline void buf_free(Buf* b) noexcept:
    PyMem_Free(b.p)
    b.p = NULL
    b.len = b.cap = 0

cdef inline int array_reserve(void** items, int* capacity, int n, size_t item_size) noexcept:
    """Room for item n of a growable array (callers keep n below the array's maximum).

    The per-stream tables start empty and double as needed, so a Scanner costs a few hundred
    bytes until a stream really has many choices or tool calls.  -1: out of memory."""
    cdef int grown
    cdef void* p
    if n < capacity[0]:
        return 0
    grown = capacity[0] * 2 if capacity[0] else 4
    p = PyMem_Realloc(items[0], grown * item_size)
    if p == NULL:
        return -1
    items[0] = p
    capacity[0] = grown
    return 0

# An exact-match lookup of a byte string -> int over a handful of entries (a protocol's event
# names, a set of block types).  Defined in C so that a layer's static tables can be of it.
cdef extern from *:
    """
    typedef struct { int n; const char **keys; int *lens; int *values; } FastsseStrTable;
    """
    ctypedef struct StrTable "FastsseStrTable":
        int n
        const char** keys
        int* lens
        int* values

cdef inline int strtable_fill(StrTable* t, dict mapping, list keep) except -1:
    """Fill t from mapping (str or bytes keys); the key bytes are appended to keep, which must
    outlive t."""
    cdef int i, n = len(mapping)
    t.n = 0
    t.keys = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
    t.lens = <int*>PyMem_Malloc(max(n, 1) * sizeof(int))
    t.values = <int*>PyMem_Malloc(max(n, 1) * sizeof(int))
    if t.keys == NULL or t.lens == NULL or t.values == NULL:
        raise MemoryError()
    for i, (key, value) in enumerate(mapping.items()):
        key = key.encode() if isinstance(key, str) else key
        keep.append(key)
        t.keys[i] = PyBytes_AS_STRING(key)
        t.lens[i] = <int>PyBytes_GET_SIZE(key)
        t.values[i] = value
    t.n = n
    return 0

cdef inline int strtable_get(const StrTable* t, const char* p, Py_ssize_t n) noexcept:
    """The value of key p[:n], or -1."""
    cdef int i
    for i in range(t.n):
        if t.lens[i] == n and memcmp(t.keys[i], p, n) == 0:
            return t.values[i]
    return -1

cdef inline int strtable_get_str(const StrTable* t, const Str* s) noexcept:
    if s.len < 0:
        return -1
    return strtable_get(t, s.s, s.len)

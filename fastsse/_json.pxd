# cython: language_level=3
"""The JSON automaton: strict RFC 8259 JSON, fed in pieces, recording what JSON_TREE names.

One event's data, or one tool call's arguments fragment by fragment, is read byte by byte with
its state kept in a ``Json`` between pieces.  With a ``Record`` it walks ``_protocols.JSON_TREE``
(``_node_*`` below) and calls the record as it meets the fields the tree names; without one it
only validates.  Most whole events are read by ``_json_fast`` instead, which makes the same
record calls; this automaton judges everything else, malformed events included.  The Python
twin is ``_json_py.JsonScanner``.  Declarations and ``cdef inline`` functions only.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Malloc
from libc.stdint cimport int64_t
from libc.string cimport memcmp, memset

from ._cbytes cimport CAP, MAX_DEPTH, Str, buf_append, fastsse_plain_run, str_append
from ._record cimport (V_FALSE, V_NULL, V_NUMBER, V_STRING, V_TRUE, Record, record_begin,
                       record_end, record_scalar)

cdef extern from *:
    """
    #include <stdint.h>
    #define FASTSSE_MAX_INT (((int64_t)1) << 53)  /* integers below it are kept exactly */
    /* _protocols.JSON_TREE in C: per node an action, an element node, a slice of one flat key
       table, a bitmask of its keys' lengths, and an open-addressing hash of its keys. */
    static int *fastsse_node_action, *fastsse_node_element, *fastsse_node_first_key;
    static int *fastsse_node_n_keys, *fastsse_key_len, *fastsse_key_node;
    static const char **fastsse_key_text;
    static unsigned long long *fastsse_node_lengths;
    static unsigned short *fastsse_key_slots;
    static int *fastsse_node_linear;
    /* per action: its string value is captured whole, or bounded to CAPTURE_BYTES */
    static int fastsse_full_capture[64], fastsse_short_capture[64];
    /* byte classes */
    static unsigned char fastsse_string_stop[256], fastsse_is_ws[256], fastsse_unescape[256];
    static signed char fastsse_hex[256];
    """
    const int64_t MAX_INT "FASTSSE_MAX_INT"
    int* _node_action "fastsse_node_action"
    int* _node_element "fastsse_node_element"
    int* _node_first_key "fastsse_node_first_key"
    int* _node_n_keys "fastsse_node_n_keys"
    const char** _key_text "fastsse_key_text"
    int* _key_len "fastsse_key_len"
    int* _key_node "fastsse_key_node"
    # Keys of a node sorted by length, with a bitmask of the lengths present: most keys of an
    # event are not in the tree and are dismissed by one bit test.
    unsigned long long* _node_lengths "fastsse_node_lengths"
    # Per node, an open-addressing hash of its keys (slot: key number + 1, 0 empty) so that a
    # key is found, or dismissed, with about one probe and at most one memcmp.  A node with too
    # many keys for its table (none: _protocols.JSON_KEY_SLOTS) would be searched linearly.
    unsigned short* _key_slots "fastsse_key_slots"
    bint* _node_linear "fastsse_node_linear"
    bint _full_capture "fastsse_full_capture" [64]
    bint _short_capture "fastsse_short_capture" [64]
    unsigned char _string_stop "fastsse_string_stop" [256]  # ends a plain run in a string
    unsigned char _is_ws "fastsse_is_ws" [256]  # JSON whitespace
    unsigned char _unescape "fastsse_unescape" [256]  # what a backslash escape stands for; 0: none
    signed char _hex "fastsse_hex" [256]  # a hex digit's value; -1: not one

cdef enum:
    KEY_SLOTS = 128  # _protocols.JSON_KEY_SLOTS


cdef inline unsigned key_hash(const char* key, Py_ssize_t n) noexcept:  # n >= 1
    return (<unsigned>n * 7 + <unsigned char>key[0] * 3 + <unsigned char>key[n - 1]) & (KEY_SLOTS - 1)

cdef inline int json_tables_init(object protocols, list keep) except -1:
    """Fill the tables above from _protocols (at import); keep holds the key bytes."""
    cdef int i, c, k = 0, n_nodes = len(protocols.JSON_TREE), n_keys = 0
    cdef bytes escapes = b'"\\/bfnrt', meanings = b'"\\/\b\f\n\r\t'  # after a backslash
    cdef unsigned h
    global _node_action, _node_element, _node_first_key, _node_n_keys, _key_text, _key_len
    global _key_node, _node_lengths, _key_slots, _node_linear
    for _action, children, _element in protocols.JSON_TREE:
        n_keys += len(children)
    _node_action = <int*>PyMem_Malloc(n_nodes * sizeof(int))
    _node_element = <int*>PyMem_Malloc(n_nodes * sizeof(int))
    _node_first_key = <int*>PyMem_Malloc(n_nodes * sizeof(int))
    _node_n_keys = <int*>PyMem_Malloc(n_nodes * sizeof(int))
    _key_text = <const char**>PyMem_Malloc(n_keys * sizeof(char*))
    _key_len = <int*>PyMem_Malloc(n_keys * sizeof(int))
    _key_node = <int*>PyMem_Malloc(n_keys * sizeof(int))
    _node_lengths = <unsigned long long*>PyMem_Malloc(n_nodes * sizeof(unsigned long long))
    _key_slots = <unsigned short*>PyMem_Malloc(n_nodes * KEY_SLOTS * sizeof(unsigned short))
    _node_linear = <bint*>PyMem_Malloc(n_nodes * sizeof(bint))
    if (_node_action == NULL or _node_element == NULL or _node_first_key == NULL
            or _node_n_keys == NULL or _key_text == NULL or _key_len == NULL or _key_node == NULL
            or _node_lengths == NULL or _key_slots == NULL or _node_linear == NULL):
        raise MemoryError()
    for i, (action, children, element) in enumerate(protocols.JSON_TREE):
        _node_action[i] = action
        _node_element[i] = element
        _node_first_key[i] = k
        _node_n_keys[i] = len(children)
        _node_lengths[i] = 0
        for key, child in children.items():
            keep.append(key)
            _key_text[k] = PyBytes_AS_STRING(key)
            _key_len[k] = <int>PyBytes_GET_SIZE(key)
            _key_node[k] = child
            _node_lengths[i] |= (<unsigned long long>1) << min(len(key), 63)
            k += 1
    memset(_key_slots, 0, n_nodes * KEY_SLOTS * sizeof(unsigned short))
    for i in range(n_nodes):
        _node_linear[i] = _node_n_keys[i] >= KEY_SLOTS // 2
        if _node_linear[i]:
            continue
        for k in range(_node_first_key[i], _node_first_key[i] + _node_n_keys[i]):
            if _key_len[k] == 0:
                _node_linear[i] = True
                break
            h = key_hash(_key_text[k], _key_len[k])
            while _key_slots[i * KEY_SLOTS + h]:
                h = (h + 1) & (KEY_SLOTS - 1)
            _key_slots[i * KEY_SLOTS + h] = k + 1
    memset(_full_capture, 0, sizeof(_full_capture))
    memset(_short_capture, 0, sizeof(_short_capture))
    for action in protocols.FULL_CAPTURE_ACTIONS:
        _full_capture[action] = True
    for action in protocols.SHORT_CAPTURE_ACTIONS:
        _short_capture[action] = True
    memset(_string_stop, 0, 256)
    memset(_is_ws, 0, 256)
    memset(_unescape, 0, 256)
    memset(_hex, -1, 256)
    for c in range(32):
        _string_stop[c] = 1
    _string_stop[0x22] = 1  # '"'
    _string_stop[0x5C] = 1  # '\\'
    for c in (0x20, 0x09, 0x0A, 0x0D):
        _is_ws[c] = 1
    for i in range(len(escapes)):
        _unescape[escapes[i]] = meanings[i]
    for c in range(10):
        _hex[0x30 + c] = c
    for c in range(6):
        _hex[0x61 + c] = 10 + c
        _hex[0x41 + c] = 10 + c
    return 0

cdef inline int tree_child(int node, const char* key, Py_ssize_t n) noexcept:
    """The node for key under node, or -1."""
    cdef int k
    cdef unsigned h
    if not (_node_lengths[node] >> (n if n < 63 else 63)) & 1:
        return -1
    if not _node_linear[node] and n > 0:
        h = key_hash(key, n)
        while True:
            k = <int>_key_slots[node * KEY_SLOTS + h] - 1
            if k < 0:
                return -1
            if _key_len[k] == n and memcmp(_key_text[k], key, n) == 0:
                return _key_node[k]
            h = (h + 1) & (KEY_SLOTS - 1)
    for k in range(_node_first_key[node], _node_first_key[node] + _node_n_keys[node]):
        if _key_len[k] == n and memcmp(_key_text[k], key, n) == 0:
            return _key_node[k]
    return -1

cdef enum JsonState:
    S_VALUE = 0
    S_VALUE_OR_END = 1
    S_KEY = 2
    S_KEY_OR_END = 3
    S_COLON = 4
    S_AFTER = 5
    S_STRING = 6
    S_ESCAPE = 7
    S_UNICODE = 8
    S_NUMBER = 9
    S_LITERAL = 10
    S_ERROR = 11

cdef enum NumberState:
    N_MINUS = 0
    N_ZERO = 1
    N_INT = 2
    N_DOT = 3
    N_FRAC = 4
    N_E = 5
    N_ESIGN = 6
    N_EXP = 7


ctypedef struct Json:
    int state
    int depth
    unsigned char stack[MAX_DEPTH]
    int* nodes  # per open container its JSON_TREE node; NULL: not walking the tree
    Record* record
    int pending  # node of the next value, -1 none
    bint is_key, nonempty, seen, num_int
    int capture  # 0 nothing, 1 bounded, 2 whole (into record.captured)
    int action  # action of the string being read
    Py_ssize_t cap_start
    Str key
    Str sbuf
    int hex_value, hex_left
    int num
    int64_t num_value
    const char* literal
    int lit_len, lit_pos

cdef inline void json_init(Json* j, Record* record, int* nodes) noexcept:
    j.state = S_VALUE
    j.depth = 0
    j.nodes = nodes
    j.record = record
    j.pending = 0 if record != NULL else -1
    j.is_key = j.nonempty = j.seen = False
    j.num_int = True
    j.capture = 0
    j.action = 0
    j.key.len = -1
    j.sbuf.len = -1

cdef inline bint json_done(const Json* j) noexcept:
    return j.state == S_AFTER and j.depth == 0

cdef inline bint number_terminal(int num) noexcept:
    return num == N_ZERO or num == N_INT or num == N_FRAC or num == N_EXP

cdef inline int value_action(const Json* j) noexcept:
    return _node_action[j.pending] if j.pending >= 0 else 0

cdef inline void after_value(Json* j) noexcept:
    cdef int node
    j.state = S_AFTER
    if j.depth and j.stack[j.depth - 1] == b'[':
        node = j.nodes[j.depth - 1] if j.nodes != NULL else -1
        j.pending = _node_element[node] if node >= 0 else -1

cdef inline void emit_scalar(Json* j, int kind, int64_t number) noexcept:
    cdef int action = value_action(j)
    if action:
        record_scalar(j.record, action, kind, &j.sbuf, number, j.nonempty, 0, 0)
    after_value(j)

cdef inline void open_container(Json* j, unsigned char c) noexcept:
    cdef int node = j.pending
    if j.depth >= MAX_DEPTH:
        j.state = S_ERROR
        return
    j.stack[j.depth] = c
    if j.nodes != NULL:
        j.nodes[j.depth] = node
    j.depth += 1
    if node >= 0 and _node_action[node]:
        record_begin(j.record, _node_action[node], c == b'{')
    if c == b'{':
        j.state = S_KEY_OR_END
    else:
        j.state = S_VALUE_OR_END
        j.pending = _node_element[node] if node >= 0 else -1

cdef inline void close_container(Json* j, unsigned char c) noexcept:
    cdef unsigned char opener = b'{' if c == b'}' else b'['
    cdef int node
    if j.depth == 0 or j.stack[j.depth - 1] != opener:
        j.state = S_ERROR
        return
    j.depth -= 1
    node = j.nodes[j.depth] if j.nodes != NULL else -1
    if node >= 0 and _node_action[node]:
        record_end(j.record, _node_action[node], opener == b'{')
    after_value(j)

cdef inline void start_string(Json* j, bint is_key) noexcept:
    cdef int action
    j.state = S_STRING
    j.is_key = is_key
    j.nonempty = False
    if is_key:
        j.key.len = 0
        j.capture = 0
    else:
        action = value_action(j)
        j.action = action
        j.sbuf.len = 0
        if _full_capture[action]:
            j.capture = 2
            j.cap_start = j.record.captured.len
        elif _short_capture[action]:
            j.capture = 1
        else:
            j.capture = 0

cdef inline int emit_bytes(Json* j, const char* p, Py_ssize_t n) except -1:
    j.nonempty = True
    if j.is_key:
        str_append(&j.key, p, n)
    elif j.capture == 2:
        buf_append(&j.record.captured, p, n)
    elif j.capture == 1:
        str_append(&j.sbuf, p, n)
    return 0

cdef inline void end_string(Json* j) noexcept:
    cdef int node, action
    if j.is_key:
        j.is_key = False
        node = j.nodes[j.depth - 1] if j.nodes != NULL else -1
        if node >= 0 and j.key.len <= CAP:
            j.pending = tree_child(node, j.key.s, j.key.len)
        else:
            j.pending = -1
        j.state = S_COLON
        return
    action = value_action(j)
    if action:
        if j.capture == 2:
            record_scalar(j.record, action, V_STRING, &j.sbuf, -1, j.nonempty,
                          j.cap_start, j.record.captured.len - j.cap_start)
        else:
            if j.capture == 0:
                j.sbuf.len = -1
            record_scalar(j.record, action, V_STRING, &j.sbuf, -1, j.nonempty, 0, 0)
    after_value(j)

cdef inline void end_number(Json* j) noexcept:
    j.sbuf.len = -1
    emit_scalar(j, V_NUMBER, j.num_value if j.num_int and j.num_value < MAX_INT else -1)

cdef inline void start_value(Json* j, unsigned char c) noexcept:
    if c == b'"':
        start_string(j, False)
    elif c == b'{' or c == b'[':
        open_container(j, c)
    elif c == b'-' or (c >= b'0' and c <= b'9'):
        j.state = S_NUMBER
        j.num_int = True
        j.num_value = 0
        if c == b'-':
            j.num = N_MINUS
            j.num_int = False
        elif c == b'0':
            j.num = N_ZERO
        else:
            j.num = N_INT
            j.num_value = c - 48
    elif c == b't':
        j.state = S_LITERAL
        j.literal = "true"
        j.lit_len = 4
        j.lit_pos = 1
    elif c == b'f':
        j.state = S_LITERAL
        j.literal = "false"
        j.lit_len = 5
        j.lit_pos = 1
    elif c == b'n':
        j.state = S_LITERAL
        j.literal = "null"
        j.lit_len = 4
        j.lit_pos = 1
    else:
        j.state = S_ERROR

cdef inline bint number_byte(Json* j, unsigned char c) noexcept:
    """Advance the number by one byte; False if the byte ends the number."""
    cdef int num = j.num
    cdef bint digit = c >= b'0' and c <= b'9'
    if num == N_MINUS:
        if not digit:
            return False
        j.num = N_ZERO if c == b'0' else N_INT
    elif num == N_ZERO:
        if c == b'.':
            j.num = N_DOT
        elif c == b'e' or c == b'E':
            j.num = N_E
        else:
            return False
        j.num_int = False
    elif num == N_INT:
        if digit:
            if j.num_value < MAX_INT:
                j.num_value = j.num_value * 10 + c - 48
        elif c == b'.':
            j.num = N_DOT
            j.num_int = False
        elif c == b'e' or c == b'E':
            j.num = N_E
            j.num_int = False
        else:
            return False
    elif num == N_DOT:
        if not digit:
            return False
        j.num = N_FRAC
    elif num == N_FRAC:
        if c == b'e' or c == b'E':
            j.num = N_E
        elif not digit:
            return False
    elif num == N_E:
        if c == b'+' or c == b'-':
            j.num = N_ESIGN
        elif digit:
            j.num = N_EXP
        else:
            return False
    elif num == N_ESIGN:
        if not digit:
            return False
        j.num = N_EXP
    else:
        if not digit:
            return False
    return True

cdef inline int emit_code_unit(Json* j, int cp) except -1:
    """An unescaped \\uXXXX as UTF-8 (surrogates too, as Python's 'surrogatepass')."""
    cdef char out[3]
    if cp < 0x80:
        out[0] = <char>cp
        return emit_bytes(j, out, 1)
    if cp < 0x800:
        out[0] = <char>(0xC0 | (cp >> 6))
        out[1] = <char>(0x80 | (cp & 0x3F))
        return emit_bytes(j, out, 2)
    out[0] = <char>(0xE0 | (cp >> 12))
    out[1] = <char>(0x80 | ((cp >> 6) & 0x3F))
    out[2] = <char>(0x80 | (cp & 0x3F))
    return emit_bytes(j, out, 3)

cdef inline int whole_string_value(Json* j, const unsigned char* p, Py_ssize_t n) except -1:
    """A string value p[:n] (no escapes, closing quote follows) read in one step."""
    cdef int action = value_action(j)
    cdef Py_ssize_t start
    if action == 0:
        after_value(j)
        return 0
    j.nonempty = n > 0
    if _full_capture[action]:
        start = j.record.captured.len
        buf_append(&j.record.captured, <const char*>p, n)
        record_scalar(j.record, action, V_STRING, &j.sbuf, -1, j.nonempty, start, n)
    else:
        if _short_capture[action]:
            j.sbuf.len = 0
            str_append(&j.sbuf, <const char*>p, n)
        else:
            j.sbuf.len = -1
        record_scalar(j.record, action, V_STRING, &j.sbuf, -1, j.nonempty, 0, 0)
    after_value(j)
    return 0

cdef inline int json_feed(Json* j, const unsigned char* p, Py_ssize_t n) except -1:
    cdef Py_ssize_t i = 0, start, run, end, k
    cdef unsigned char c
    cdef int state, h, node
    cdef int64_t number
    while i < n:
        state = j.state
        if state == S_ERROR:
            return 0
        c = p[i]
        if state == S_STRING:
            if not _string_stop[c]:
                start = i
                i += 1 + fastsse_plain_run(p + i + 1, n - i - 1)
                if j.capture or j.is_key:
                    emit_bytes(j, <const char*>p + start, i - start)
                else:
                    j.nonempty = True
                continue
            if c == b'"':
                end_string(j)
            elif c == b'\\':
                j.state = S_ESCAPE
            else:
                j.state = S_ERROR
            i += 1
            continue
        if state == S_ESCAPE:
            if c == b'u':
                j.state = S_UNICODE
                j.hex_value = 0
                j.hex_left = 4
            elif _unescape[c]:
                emit_bytes(j, <const char*>&_unescape[c], 1)
                j.state = S_STRING
            else:
                j.state = S_ERROR
            i += 1
            continue
        if state == S_UNICODE:
            h = _hex[c]
            if h < 0:
                j.state = S_ERROR
            else:
                j.hex_value = j.hex_value * 16 + h
                j.hex_left -= 1
                if j.hex_left == 0:
                    emit_code_unit(j, j.hex_value)
                    j.state = S_STRING
            i += 1
            continue
        if state == S_NUMBER:
            if number_byte(j, c):
                i += 1
                continue
            if not number_terminal(j.num):
                j.state = S_ERROR
                return 0
            end_number(j)
            continue  # the byte that ended the number is read again
        if state == S_LITERAL:
            if c != <unsigned char>j.literal[j.lit_pos]:
                j.state = S_ERROR
                return 0
            j.lit_pos += 1
            if j.lit_pos == j.lit_len:
                j.sbuf.len = -1
                emit_scalar(j, V_TRUE if j.lit_len == 4 and j.literal[0] == b't'
                            else V_FALSE if j.lit_len == 5 else V_NULL, -1)
            i += 1
            continue
        i += 1
        if _is_ws[c]:
            continue
        j.seen = True
        # Fast paths for what most bytes of an event are: a whole string without escapes, an
        # integer, a literal, all inside this buffer.  Each gives exactly what the general
        # byte-at-a-time path below would; anything else falls through to it.
        if state <= S_KEY_OR_END:  # S_VALUE, S_VALUE_OR_END, S_KEY, S_KEY_OR_END
            if c == b'"':
                run = fastsse_plain_run(p + i, n - i)
                if i + run < n and p[i + run] == b'"':
                    if state >= S_KEY:
                        node = j.nodes[j.depth - 1] if j.nodes != NULL else -1
                        j.pending = (tree_child(node, <const char*>p + i, run)
                                     if node >= 0 and run <= CAP else -1)
                        i += run + 1
                        if i < n and p[i] == b':':
                            i += 1
                            j.state = S_VALUE
                        else:
                            j.state = S_COLON
                    else:
                        whole_string_value(j, p + i, run)
                        i += run + 1
                    continue
            elif state < S_KEY:
                if c >= b'1' and c <= b'9':
                    end = i
                    while end < n and p[end] >= b'0' and p[end] <= b'9':
                        end += 1
                    if end < n and p[end] != b'.' and p[end] != b'e' and p[end] != b'E':
                        number = c - 48
                        for k in range(i, end):
                            if number < MAX_INT:
                                number = number * 10 + p[k] - 48
                        j.sbuf.len = -1
                        emit_scalar(j, V_NUMBER, number if number < MAX_INT else -1)
                        i = end
                        continue
                elif c == b'n' and i + 3 <= n and p[i] == b'u' and p[i + 1] == b'l' and p[i + 2] == b'l':
                    j.sbuf.len = -1
                    emit_scalar(j, V_NULL, -1)
                    i += 3
                    continue
        if state == S_VALUE:
            start_value(j, c)
        elif state == S_VALUE_OR_END:
            if c == b']':
                close_container(j, c)
            else:
                start_value(j, c)
        elif state == S_KEY_OR_END or state == S_KEY:
            if c == b'"':
                start_string(j, True)
            elif c == b'}' and state == S_KEY_OR_END:
                close_container(j, c)
            else:
                j.state = S_ERROR
        elif state == S_COLON:
            j.state = S_VALUE if c == b':' else S_ERROR
        elif state == S_AFTER:
            if j.depth == 0:
                j.state = S_ERROR
            elif c == b',':
                j.state = S_KEY if j.stack[j.depth - 1] == b'{' else S_VALUE
            elif c == b'}' or c == b']':
                close_container(j, c)
            else:
                j.state = S_ERROR
    return 0

cdef inline bint json_finish(Json* j) noexcept:
    if j.state == S_NUMBER and j.depth == 0 and number_terminal(j.num):
        end_number(j)
    return j.state == S_AFTER and j.depth == 0

cdef inline bint json_finish_args(Json* j) noexcept:
    return not j.seen or json_finish(j)

cdef inline Json* json_new() except NULL:
    cdef Json* j = <Json*>PyMem_Malloc(sizeof(Json))
    if j == NULL:
        raise MemoryError()
    json_init(j, NULL, NULL)
    return j

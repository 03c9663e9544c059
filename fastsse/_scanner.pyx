# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled scanner: the C-speed twin of ``_scanner_py``.

Same three layers, same rules, same evidence (see ``_scanner_py`` for the reference):
framing (bytes -> lines -> events), one strict incremental JSON automaton that walks
``_dialects.JSON_TREE`` to record the fields that matter, and the dialect interpretation.
The hot loop touches no Python object: lines are found with memchr, an event's JSON is read
byte by byte in C, and the tables of ``_dialects`` are copied into C arrays at import.
Events that repeat the one before but for a few values are replayed: compared byte for byte
with the kept one instead of being read (see "Replaying events"); chat events that repeat an
event of an earlier stream are counted from its template (see "templates").  Nothing here
decides a category: ``close()`` hands what it saw to ``_verdict._judge``, as ``decide`` does.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.dict cimport PyDict_Copy
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy, memset


cdef extern from "_simd.h":
    Py_ssize_t fastsse_plain_run(const unsigned char* p, Py_ssize_t n) noexcept nogil
    bint fastsse_equal(const unsigned char* a, const unsigned char* b, Py_ssize_t n) noexcept nogil
    void fastsse_prefetch(const unsigned char* p, Py_ssize_t n) noexcept nogil

from . import _dialects as d
from . import _limits
from ._limits import DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES, check_options, check_transport
import inspect as _inspect

from . import _verdict
from ._verdict import Verdict, _judge, _judge_cached, _model_name

cdef extern from "Python.h":
    int PyObject_GenericSetDict(object o, object value, void* context) except -1

_object_new = object.__new__

# Compile-time copies of the shared constants; checked against the Python ones at import.
cdef enum:
    CAP = 64
    MAX_DEPTH = 512
    MAX_HOLES = 16  # values a replayed event may vary (see "Replaying events")
    MEMO_MAX_BYTES = 4096  # the longest event kept to be replayed
    PREFETCH_AHEAD = 2048  # how far ahead of the reading the chunk is asked into the cache
    MAX_CHOICES = 128
    MAX_TOOL_CALLS = 1024
    LEGACY_CALL_INDEX = -2

cdef enum Action:
    A_TYPE = 1
    A_OBJECT = 2
    A_MODEL = 3
    A_ERROR = 4
    A_ERR_CODE = 5
    A_ERR_TYPE = 6
    A_ERR_STATUS = 7
    A_FLAT_CODE = 8
    A_SEQ = 9
    A_CHOICES = 10
    A_CHOICE = 11
    A_CHOICE_INDEX = 12
    A_FINISH = 13
    A_TEXT = 14
    A_REASONING = 15
    A_REFUSAL = 16
    A_PART = 17
    A_PART_TYPE = 18
    A_PART_TEXT = 19
    A_PART_THOUGHT = 20
    A_PART_TOOL = 21
    A_TOOL = 22
    A_TOOL_INDEX = 23
    A_TOOL_ID = 24
    A_TOOL_ARGS = 25
    A_BLOCK_REASON = 26
    A_INCOMPLETE_REASON = 27
    A_DELTA = 28
    A_DELTA_TEXT = 29
    A_DELTA_THINKING = 30
    A_DELTA_JSON = 31
    A_STOP_REASON = 32
    A_BLOCK_INDEX = 33
    A_BLOCK_TYPE = 34
    A_ITEM_TYPE = 35
    A_ARGS = 36
    A_GEMINI = 37
    A_STATUS = 38
    A_STOP_DETAIL = 39
    A_NATIVE_FINISH = 40
    A_FUNCTION_CALL = 41

cdef enum Kind:
    K_OTHER = 0
    K_TEXT_DELTA = 1
    K_REFUSAL_DELTA = 2
    K_REASONING_DELTA = 3
    K_ITEM_ADDED = 4
    K_ARGS_DONE = 5
    K_COMPLETED = 6
    K_INCOMPLETE = 7
    K_FAILED = 8
    K_ERROR = 9
    K_BLOCK_START = 10
    K_BLOCK_DELTA = 11
    K_MESSAGE_DELTA = 12
    K_MESSAGE_STOP = 13
    K_START = 14

cdef dict _C_CONSTANTS = {
    "CAPTURE_BYTES": CAP, "MAX_JSON_DEPTH": MAX_DEPTH, "MAX_CHOICES": MAX_CHOICES,
    "MAX_TOOL_CALLS": MAX_TOOL_CALLS,
    "A_TYPE": A_TYPE, "A_OBJECT": A_OBJECT, "A_MODEL": A_MODEL, "A_ERROR": A_ERROR,
    "A_ERR_CODE": A_ERR_CODE, "A_ERR_TYPE": A_ERR_TYPE, "A_ERR_STATUS": A_ERR_STATUS,
    "A_FLAT_CODE": A_FLAT_CODE, "A_SEQ": A_SEQ, "A_CHOICES": A_CHOICES, "A_CHOICE": A_CHOICE,
    "A_CHOICE_INDEX": A_CHOICE_INDEX, "A_FINISH": A_FINISH, "A_TEXT": A_TEXT,
    "A_REASONING": A_REASONING, "A_REFUSAL": A_REFUSAL, "A_PART": A_PART,
    "A_PART_TYPE": A_PART_TYPE, "A_PART_TEXT": A_PART_TEXT, "A_PART_THOUGHT": A_PART_THOUGHT,
    "A_PART_TOOL": A_PART_TOOL, "A_TOOL": A_TOOL, "A_TOOL_INDEX": A_TOOL_INDEX,
    "A_TOOL_ID": A_TOOL_ID, "A_TOOL_ARGS": A_TOOL_ARGS, "A_BLOCK_REASON": A_BLOCK_REASON,
    "A_INCOMPLETE_REASON": A_INCOMPLETE_REASON, "A_DELTA": A_DELTA, "A_DELTA_TEXT": A_DELTA_TEXT,
    "A_DELTA_THINKING": A_DELTA_THINKING, "A_DELTA_JSON": A_DELTA_JSON,
    "A_STOP_REASON": A_STOP_REASON, "A_BLOCK_INDEX": A_BLOCK_INDEX, "A_BLOCK_TYPE": A_BLOCK_TYPE,
    "A_ITEM_TYPE": A_ITEM_TYPE, "A_ARGS": A_ARGS, "A_GEMINI": A_GEMINI, "A_STATUS": A_STATUS,
    "A_STOP_DETAIL": A_STOP_DETAIL, "A_NATIVE_FINISH": A_NATIVE_FINISH,
    "A_FUNCTION_CALL": A_FUNCTION_CALL, "LEGACY_CALL_INDEX": LEGACY_CALL_INDEX,
    "K_OTHER": K_OTHER, "K_TEXT_DELTA": K_TEXT_DELTA, "K_REFUSAL_DELTA": K_REFUSAL_DELTA,
    "K_REASONING_DELTA": K_REASONING_DELTA, "K_ITEM_ADDED": K_ITEM_ADDED,
    "K_ARGS_DONE": K_ARGS_DONE, "K_COMPLETED": K_COMPLETED, "K_INCOMPLETE": K_INCOMPLETE,
    "K_FAILED": K_FAILED, "K_ERROR": K_ERROR, "K_BLOCK_START": K_BLOCK_START,
    "K_BLOCK_DELTA": K_BLOCK_DELTA, "K_MESSAGE_DELTA": K_MESSAGE_DELTA,
    "K_MESSAGE_STOP": K_MESSAGE_STOP, "K_START": K_START,
}
for _name, _value in _C_CONSTANTS.items():
    _shared = getattr(d, _name, None)
    if _shared is None:
        _shared = getattr(_limits, _name)
    if _shared != _value:
        raise ImportError(f"fastsse._scanner is stale: {_name} is {_value}, shared code says {_shared}")

# The per-action tables below hold 64 actions.
if max(_C_CONSTANTS[name] for name in _C_CONSTANTS if name.startswith("A_")) >= 64:
    raise ImportError("fastsse._scanner is stale: an action past 63 needs larger tables")

# close() passes _verdict._judge its arguments positionally, in this order.
_JUDGE_PARAMETERS = ("protocol", "transport", "limit", "errors", "error_code", "end_marker",
                     "no_events", "residual", "malformed", "sequence_gap", "finishes", "blocked",
                     "text", "reasoning", "refusal", "tool_calls", "tool_malformed")
if tuple(_inspect.signature(_judge).parameters) != _JUDGE_PARAMETERS:
    raise ImportError("fastsse._scanner is stale: _verdict._judge's parameters changed; update close()")
cdef enum:
    MEMO_FINISHES = 4  # _verdict._CACHED_FINISHES: streams with more choices are judged afresh
if _verdict._CACHED_FINISHES != MEMO_FINISHES:
    raise ImportError("fastsse._scanner is stale: _CACHED_FINISHES changed")
cdef tuple _TRANSPORT_CODES = _verdict.TRANSPORTS
cdef tuple _LIMIT_CODES = tuple(_verdict.MESSAGE_LIMITS)
cdef frozenset _PROTOCOLS = frozenset(_limits.PROTOCOL_CHOICES)
cdef frozenset _TRANSPORTS = frozenset(_verdict.TRANSPORTS)

# ============================================================================ small C helpers

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

ctypedef struct Judged:  # the arguments of a _judge call, as C values (see close)
    int dialect, transport, limit, n_finishes
    unsigned flags
    Str finishes[MEMO_FINISHES]
    Str error_code, blocked

cdef bint judged_same(const Judged* a, const Judged* b) noexcept:
    cdef int i
    if (a.dialect != b.dialect or a.transport != b.transport or a.limit != b.limit
            or a.flags != b.flags or a.n_finishes != b.n_finishes
            or not str_eq(&a.error_code, &b.error_code) or not str_eq(&a.blocked, &b.blocked)):
        return False
    for i in range(a.n_finishes):
        if not str_eq(&a.finishes[i], &b.finishes[i]):
            return False
    return True

# The last JUDGED judgements' keys, and their answers (None: an empty slot): streams of a few
# kinds (text, tool calls, reasoning; stop or length) take turns.
cdef enum:
    JUDGED = 8
cdef Judged _judged[JUDGED]
cdef list _judged_heads = [None] * JUDGED
cdef int _judged_next = 0  # the slot the next new judgement takes
cdef Str _named_model  # the last model name sanitized, and the name
cdef object _named_model_str = None

cdef inline object str_bytes(const Str* s):
    if s.len < 0:
        return None
    return PyBytes_FromStringAndSize(s.s, s.len)

cdef int buf_reserve(Buf* b, Py_ssize_t extra) except -1:
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

cdef int array_reserve(void** items, int* capacity, int n, size_t item_size) noexcept:
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

cdef inline void buf_free(Buf* b) noexcept:
    PyMem_Free(b.p)
    b.p = NULL
    b.len = b.cap = 0

# ============================================================================ tables in C

@cython.final
cdef class _StrTable:
    """Exact-match lookup of a byte string -> int, over a handful of entries."""
    cdef list keep
    cdef int n
    cdef const char** keys
    cdef int* lens
    cdef int* values

    def __cinit__(self, dict mapping):
        self.keep = [k.encode() if isinstance(k, str) else k for k in mapping]
        self.n = len(self.keep)
        self.keys = <const char**>PyMem_Malloc(max(self.n, 1) * sizeof(char*))
        self.lens = <int*>PyMem_Malloc(max(self.n, 1) * sizeof(int))
        self.values = <int*>PyMem_Malloc(max(self.n, 1) * sizeof(int))
        if self.keys == NULL or self.lens == NULL or self.values == NULL:
            raise MemoryError()
        for i, (key, value) in enumerate(zip(self.keep, mapping.values())):
            self.keys[i] = PyBytes_AS_STRING(key)
            self.lens[i] = PyBytes_GET_SIZE(key)
            self.values[i] = value

    def __dealloc__(self):
        PyMem_Free(self.keys)
        PyMem_Free(self.lens)
        PyMem_Free(self.values)

    cdef int get(self, const char* p, Py_ssize_t n) noexcept:
        """The value of key p[:n], or -1."""
        cdef int i
        for i in range(self.n):
            if self.lens[i] == n and memcmp(self.keys[i], p, n) == 0:
                return self.values[i]
        return -1

    cdef int get_str(self, const Str* s) noexcept:
        if s.len < 0:
            return -1
        return self.get(s.s, s.len)


# JSON_TREE in C: per node an action, an element node, and a slice of one flat key table.
cdef list _tree_keys = []  # keeps the key bytes alive
cdef int _n_nodes = len(d.JSON_TREE)
cdef int _n_keys = sum(len(children) for _a, children, _e in d.JSON_TREE)
cdef int* _node_action = <int*>PyMem_Malloc(_n_nodes * sizeof(int))
cdef int* _node_element = <int*>PyMem_Malloc(_n_nodes * sizeof(int))
cdef int* _node_first_key = <int*>PyMem_Malloc(_n_nodes * sizeof(int))
cdef int* _node_n_keys = <int*>PyMem_Malloc(_n_nodes * sizeof(int))
cdef const char** _key_text = <const char**>PyMem_Malloc(_n_keys * sizeof(char*))
cdef int* _key_len = <int*>PyMem_Malloc(_n_keys * sizeof(int))
cdef int* _key_node = <int*>PyMem_Malloc(_n_keys * sizeof(int))
cdef int _k = 0
for _i, (_action, _children, _element) in enumerate(d.JSON_TREE):
    _node_action[_i] = _action
    _node_element[_i] = _element
    _node_first_key[_i] = _k
    _node_n_keys[_i] = len(_children)
    for _key, _child in _children.items():
        _tree_keys.append(_key)
        _key_text[_k] = PyBytes_AS_STRING(_key)
        _key_len[_k] = PyBytes_GET_SIZE(_key)
        _key_node[_k] = _child
        _k += 1

# Keys of a node sorted by length, with a bitmask of the lengths present: most keys of an
# event are not in the tree and are dismissed by one bit test.
cdef unsigned long long* _node_lengths = <unsigned long long*>PyMem_Malloc(_n_nodes * sizeof(unsigned long long))
for _i, (_action, _children, _element) in enumerate(d.JSON_TREE):
    _node_lengths[_i] = 0
    for _key in _children:
        _node_lengths[_i] |= (<unsigned long long>1) << min(len(_key), 63)

# Per node, an open-addressing hash of its keys (slot: key number + 1, 0 empty) so that a key
# is found, or dismissed, with about one probe and at most one memcmp.  A node with too many
# keys for its table (none today) is searched linearly.
cdef enum:
    KEY_SLOTS = 64

cdef inline unsigned key_hash(const char* key, Py_ssize_t n) noexcept:  # n >= 1
    return (<unsigned>n * 7 + <unsigned char>key[0] * 3 + <unsigned char>key[n - 1]) & (KEY_SLOTS - 1)

cdef unsigned short* _key_slots = <unsigned short*>PyMem_Malloc(_n_nodes * KEY_SLOTS * sizeof(unsigned short))
cdef bint* _node_linear = <bint*>PyMem_Malloc(_n_nodes * sizeof(bint))
cdef unsigned _h
memset(_key_slots, 0, _n_nodes * KEY_SLOTS * sizeof(unsigned short))
for _i in range(_n_nodes):
    _node_linear[_i] = _node_n_keys[_i] >= KEY_SLOTS // 2
    if _node_linear[_i]:
        continue
    for _k in range(_node_first_key[_i], _node_first_key[_i] + _node_n_keys[_i]):
        if _key_len[_k] == 0:
            _node_linear[_i] = True
            break
        _h = key_hash(_key_text[_k], _key_len[_k])
        while _key_slots[_i * KEY_SLOTS + _h]:
            _h = (_h + 1) & (KEY_SLOTS - 1)
        _key_slots[_i * KEY_SLOTS + _h] = _k + 1

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

cdef bint _full_capture[64]
cdef bint _short_capture[64]
memset(_full_capture, 0, sizeof(_full_capture))
memset(_short_capture, 0, sizeof(_short_capture))
for _action in d.FULL_CAPTURE_ACTIONS:
    _full_capture[_action] = True
for _action in d.SHORT_CAPTURE_ACTIONS:
    _short_capture[_action] = True
# The string values a template may keep (see "Templates"): _dialects.TEMPLATE_MAY_KEEP, the
# values that name things and are never payload.
cdef bint _identifier[64]
memset(_identifier, 0, sizeof(_identifier))
for _action in d.TEMPLATE_MAY_KEEP:
    _identifier[_action] = True

cdef _StrTable _responses_kinds = _StrTable(d.EVENT_KINDS["responses"])
cdef _StrTable _anthropic_kinds = _StrTable(d.EVENT_KINDS["anthropic"])
cdef _StrTable _detect_types = _StrTable({k: i for i, k in enumerate(d.DETECT_TYPES)})
cdef list _detect_type_protocols = list(d.DETECT_TYPES.values())
cdef list _detect_prefixes = [(p.encode(), v) for p, v in d.DETECT_TYPE_PREFIXES]
cdef _StrTable _r_reasoning = _StrTable({k: 1 for k in d.RESPONSES_REASONING_ITEMS})
cdef bytes _r_tool_suffix = d.RESPONSES_TOOL_ITEM_SUFFIX.encode()
cdef _StrTable _a_reasoning = _StrTable({k: 1 for k in d.ANTHROPIC_REASONING_BLOCKS})
cdef _StrTable _a_tool = _StrTable({k: 1 for k in d.ANTHROPIC_TOOL_BLOCKS})
cdef _StrTable _a_json_input = _StrTable({k: 1 for k in d.ANTHROPIC_JSON_INPUT_BLOCKS})
cdef _StrTable _reasoning_parts = _StrTable({k: 1 for k in d.REASONING_PART_TYPES})
cdef bytes _chat_object = d.CHAT_OBJECT.encode()
cdef bytes _done = d.DONE_SENTINEL
cdef bytes _completed = d.RESPONSES_COMPLETED.encode()
cdef _StrTable _r_name_statuses = _StrTable({k: 1 for k in d.RESPONSES_NAME_STATUSES})
cdef bytes _r_incomplete = d.RESPONSES_STATUS_INCOMPLETE.encode()
cdef _StrTable _a_stop_details_win = _StrTable({k: 1 for k in d.ANTHROPIC_STOP_DETAILS_WIN})
cdef _StrTable _native_rank = _StrTable(d.NATIVE_FINISH_RANK)
cdef int _unknown_rank = d.OUTCOME_RANK[d.UNKNOWN_FINISH[1]]

# ============================================================================ the event record

ctypedef struct Choice:
    int64_t ordinal
    int64_t index  # -1: not sent
    Str finish
    Str native  # OpenRouter's native_finish_reason
    int text, reasoning, refusal, tool
    int tool_start, tool_count  # slice of Record.tools

ctypedef struct Tool:
    int64_t ordinal
    int64_t index
    Str id
    Py_ssize_t args_off, args_len  # slice of Record.captured; args_len -1: not sent

ctypedef struct Part:
    Str type
    bint text, thought, tool

ctypedef struct Record:
    Str type, object, model, err_code, err_type, err_status, flat_code
    Str block_reason, incomplete_reason, stop_reason, block_type, item_type, status, stop_detail
    bint error, has_choices, gemini, delta, delta_text, delta_thinking
    int64_t seq, block_index  # -1: not sent
    int too_many  # 0, or 1 (choices) / 2 (tool calls)
    Choice* choices
    int n_choices, cap_choices
    bint in_choice, in_part, in_tool
    Choice choice
    Part part
    Tool tool
    Tool* tools
    int n_tools, cap_tools
    bint out_of_memory  # a table could not grow (record_end cannot raise): the caller raises
    Buf captured  # whole strings captured for JSON validation
    Py_ssize_t delta_json_off, delta_json_len, args_off, args_len
    # json_whole's string values whose bytes do not change what is recorded, except whether
    # they are empty: offsets from the start of the JSON (see "Replaying events")
    int n_holes
    Py_ssize_t hole_start[MAX_HOLES]
    Py_ssize_t hole_end[MAX_HOLES]
    unsigned char hole_role[MAX_HOLES]
    # a value that may be payload is not among the holes (there were too many, or it is a
    # value a rule reads as text): the event must not become a template (see "Templates")
    bint opaque

cdef void record_reset(Record* r) noexcept:
    str_clear(&r.type); str_clear(&r.object); str_clear(&r.model); str_clear(&r.err_code)
    str_clear(&r.err_type); str_clear(&r.err_status); str_clear(&r.flat_code)
    str_clear(&r.block_reason); str_clear(&r.incomplete_reason); str_clear(&r.stop_reason)
    str_clear(&r.block_type); str_clear(&r.item_type); str_clear(&r.status)
    str_clear(&r.stop_detail)
    r.error = r.has_choices = r.gemini = r.delta = r.delta_text = r.delta_thinking = False
    r.seq = r.block_index = -1
    r.too_many = 0
    r.n_choices = 0
    r.in_choice = r.in_part = r.in_tool = False
    r.n_tools = 0
    r.captured.len = 0
    r.delta_json_len = r.args_len = -1
    r.delta_json_off = r.args_off = 0
    r.n_holes = 0
    r.opaque = False

cdef void record_begin(Record* r, int action, bint is_object) noexcept:
    if action == A_ERROR:
        r.error = True
    elif action == A_CHOICES:
        r.has_choices = True
    elif action == A_GEMINI:
        r.gemini = True
    elif not is_object:
        return
    elif action == A_CHOICE:
        r.in_choice = True
        memset(&r.choice, 0, sizeof(Choice))
        r.choice.ordinal = r.n_choices
        r.choice.index = -1
        r.choice.finish.len = -1
        r.choice.native.len = -1
        r.choice.tool_start = r.n_tools
    elif action == A_PART:
        if r.in_choice:
            r.in_part = True
            r.part.type.len = -1
            r.part.text = r.part.thought = r.part.tool = False
    elif action == A_TOOL or action == A_FUNCTION_CALL:
        if r.in_choice:
            r.in_tool = True
            r.tool.ordinal = r.choice.tool_count
            r.tool.index = -1 if action == A_TOOL else LEGACY_CALL_INDEX
            r.tool.id.len = -1
            r.tool.args_len = -1
            r.tool.args_off = 0

cdef void record_end(Record* r, int action, bint is_object) noexcept:
    if not is_object:
        return
    if action == A_CHOICE:
        if r.choice.native.len >= 0 and r.choice.finish.len >= 0:
            worse_finish(&r.choice)
        if r.n_choices >= MAX_CHOICES:
            r.too_many = 1
        elif array_reserve(<void**>&r.choices, &r.cap_choices, r.n_choices, sizeof(Choice)) < 0:
            r.out_of_memory = True
        else:
            r.choices[r.n_choices] = r.choice
            r.n_choices += 1
        r.in_choice = False
    elif action == A_PART:
        if r.in_part and r.in_choice:
            if r.part.thought or _reasoning_parts.get_str(&r.part.type) >= 0:
                r.choice.reasoning += 1
            elif r.part.tool:
                r.choice.tool += 1
            elif r.part.text:
                r.choice.text += 1
        r.in_part = False
    elif action == A_TOOL or action == A_FUNCTION_CALL:
        if r.in_tool and r.in_choice:
            if r.n_tools >= MAX_TOOL_CALLS:
                r.too_many = 2
            elif array_reserve(<void**>&r.tools, &r.cap_tools, r.n_tools, sizeof(Tool)) < 0:
                r.out_of_memory = True
            else:
                r.tools[r.n_tools] = r.tool
                r.n_tools += 1
                r.choice.tool_count += 1
        r.in_tool = False

cdef inline void worse_finish(Choice* choice) noexcept:
    """The choice's finish reason, given OpenRouter's native one (_scanner_py.worse_finish)."""
    cdef int native = _native_rank.get_str(&choice.native)
    cdef int finish
    if native < 0:
        return  # unknown: finish_reason speaks
    finish = _native_rank.get_str(&choice.finish)
    if native < (finish if finish >= 0 else _unknown_rank):
        choice.finish = choice.native

cdef enum ScalarKind:
    K_STRING = 0
    K_NUMBER = 1
    K_TRUE = 2
    K_FALSE = 3
    K_NULL = 4

cdef void record_scalar(Record* r, int action, int kind, const Str* value, int64_t number,
                        bint nonempty, Py_ssize_t cap_off, Py_ssize_t cap_len) noexcept:
    """number: -1 if not a plain integer.  value: the bounded capture; cap_*: a whole capture."""
    cdef Str code
    cdef int n
    if action == A_ERROR:
        if kind != K_NULL and kind != K_FALSE:
            r.error = True
        return
    if kind == K_NUMBER:
        if number < 0:
            return
        if action == A_SEQ:
            r.seq = number
        elif action == A_CHOICE_INDEX:
            if r.in_choice:
                r.choice.index = number
        elif action == A_TOOL_INDEX:
            if r.in_tool:
                r.tool.index = number
        elif action == A_BLOCK_INDEX:
            r.block_index = number
        elif action == A_ERR_CODE or action == A_FLAT_CODE:
            # the number's decimal text, as the Python twin's str(int)
            code.len = 0
            n = 0
            while True:
                code.s[n] = <char>(48 + number % 10)
                n += 1
                number //= 10
                if number == 0:
                    break
            code.len = n
            for i in range(n // 2):
                code.s[i], code.s[n - 1 - i] = code.s[n - 1 - i], code.s[i]
            if action == A_ERR_CODE:
                r.err_code = code
            else:
                r.flat_code = code
        return
    if kind == K_TRUE:
        if action == A_PART_THOUGHT and r.in_part:
            r.part.thought = True
        return
    if kind != K_STRING:
        return
    if action == A_TYPE:
        r.type = value[0]
    elif action == A_OBJECT:
        r.object = value[0]
    elif action == A_MODEL:
        if value.len > 0:
            r.model = value[0]
    elif action == A_ERR_CODE:
        r.err_code = value[0]
    elif action == A_ERR_TYPE:
        r.err_type = value[0]
    elif action == A_ERR_STATUS:
        r.err_status = value[0]
    elif action == A_FLAT_CODE:
        r.flat_code = value[0]
    elif action == A_FINISH:
        if r.in_choice and value.len > 0:  # "" names nothing: null (see _scanner_py)
            r.choice.finish = value[0]
    elif action == A_NATIVE_FINISH:
        if r.in_choice and value.len > 0:
            r.choice.native = value[0]
    elif action == A_TEXT:
        if nonempty and r.in_choice:
            r.choice.text += 1
    elif action == A_REASONING:
        if nonempty and r.in_choice:
            r.choice.reasoning += 1
    elif action == A_REFUSAL:
        if nonempty and r.in_choice:
            r.choice.refusal += 1
    elif action == A_PART_TYPE:
        if r.in_part:
            r.part.type = value[0]
    elif action == A_PART_TEXT:
        if nonempty and r.in_part:
            r.part.text = True
    elif action == A_PART_TOOL:
        if nonempty and r.in_part:
            r.part.tool = True
    elif action == A_TOOL_ID:
        if r.in_tool and value.len > 0:
            r.tool.id = value[0]
    elif action == A_TOOL_ARGS:
        if r.in_tool:
            if r.tool.args_len < 0:
                r.tool.args_off = cap_off
                r.tool.args_len = cap_len
            else:  # a repeated key: its capture follows the first one directly
                r.tool.args_len += cap_len
    elif action == A_BLOCK_REASON:
        r.block_reason = value[0]
    elif action == A_INCOMPLETE_REASON:
        r.incomplete_reason = value[0]
    elif action == A_STATUS:
        r.status = value[0]
    elif action == A_DELTA:
        r.delta = r.delta or nonempty
    elif action == A_DELTA_TEXT:
        r.delta_text = r.delta_text or nonempty
    elif action == A_DELTA_THINKING:
        r.delta_thinking = r.delta_thinking or nonempty
    elif action == A_DELTA_JSON:
        r.delta_json_off = cap_off
        r.delta_json_len = cap_len
    elif action == A_STOP_REASON:
        r.stop_reason = value[0]
    elif action == A_STOP_DETAIL:
        r.stop_detail = value[0]
    elif action == A_BLOCK_TYPE:
        r.block_type = value[0]
    elif action == A_ITEM_TYPE:
        r.item_type = value[0]
    elif action == A_ARGS:
        r.args_off = cap_off
        r.args_len = cap_len

# ============================================================================ the JSON automaton

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

cdef int64_t MAX_INT = (<int64_t>1) << 53

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

cdef void json_init(Json* j, Record* record, int* nodes) noexcept:
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
            record_scalar(j.record, action, K_STRING, &j.sbuf, -1, j.nonempty,
                          j.cap_start, j.record.captured.len - j.cap_start)
        else:
            if j.capture == 0:
                j.sbuf.len = -1
            record_scalar(j.record, action, K_STRING, &j.sbuf, -1, j.nonempty, 0, 0)
    after_value(j)

cdef inline void end_number(Json* j) noexcept:
    j.sbuf.len = -1
    emit_scalar(j, K_NUMBER, j.num_value if j.num_int and j.num_value < MAX_INT else -1)

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

# byte classes: 1 = ends a plain run inside a string ('"', '\\', control), 2 = JSON whitespace
cdef unsigned char _string_stop[256]
cdef unsigned char _is_ws[256]
cdef unsigned char _unescape[256]  # the byte a backslash escape stands for; 0: not an escape
cdef signed char _hex[256]
memset(_string_stop, 0, 256)
memset(_is_ws, 0, 256)
memset(_unescape, 0, 256)
for _c, _meaning in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t'):
    _unescape[_c] = _meaning
memset(_hex, -1, 256)
for _c in range(32):
    _string_stop[_c] = 1
_string_stop[34] = 1
_string_stop[92] = 1
for _c in (0x20, 0x09, 0x0A, 0x0D):
    _is_ws[_c] = 1
for _c in range(10):
    _hex[0x30 + _c] = _c
for _c in range(6):
    _hex[0x61 + _c] = 10 + _c
    _hex[0x41 + _c] = 10 + _c

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

cdef int whole_string_value(Json* j, const unsigned char* p, Py_ssize_t n) except -1:
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
        record_scalar(j.record, action, K_STRING, &j.sbuf, -1, j.nonempty, start, n)
    else:
        if _short_capture[action]:
            j.sbuf.len = 0
            str_append(&j.sbuf, <const char*>p, n)
        else:
            j.sbuf.len = -1
        record_scalar(j.record, action, K_STRING, &j.sbuf, -1, j.nonempty, 0, 0)
    after_value(j)
    return 0

cdef int json_feed(Json* j, const unsigned char* p, Py_ssize_t n) except -1:
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
                emit_scalar(j, K_TRUE if j.lit_len == 4 and j.literal[0] == b't'
                            else K_FALSE if j.lit_len == 5 else K_NULL, -1)
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
                        emit_scalar(j, K_NUMBER, number if number < MAX_INT else -1)
                        i = end
                        continue
                elif c == b'n' and i + 3 <= n and p[i] == b'u' and p[i + 1] == b'l' and p[i + 2] == b'l':
                    j.sbuf.len = -1
                    emit_scalar(j, K_NULL, -1)
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

cdef bint json_finish(Json* j) noexcept:
    if j.state == S_NUMBER and j.depth == 0 and number_terminal(j.num):
        end_number(j)
    return j.state == S_AFTER and j.depth == 0

cdef inline bint json_finish_args(Json* j) noexcept:
    return not j.seen or json_finish(j)

cdef Json* json_new() except NULL:
    cdef Json* j = <Json*>PyMem_Malloc(sizeof(Json))
    if j == NULL:
        raise MemoryError()
    json_init(j, NULL, NULL)
    return j

# ============================================================================ whole-event fast path
#
# An SSE event's data is complete before it is parsed, so it can be read by recursive descent
# over the buffer instead of by the resumable byte-at-a-time automaton: no state saved between
# bytes, the read position kept in a register, strings and whitespace consumed in runs, dead
# subtrees (ids, "object", "created", "logprobs", ...) validated without touching the Record.
# It makes exactly the Record calls the automaton makes, in the same order.  It only handles the
# common shape: on anything else (escaped keys, deep nesting, a top level that is not an object,
# and every syntax error) it bails out, and the caller resets the Record and runs the automaton
# over the event from scratch, so the automaton alone still judges unusual or malformed events.
#
# Each reader takes the position of its value and returns the position after it, or NULL to
# bail out (with an exception set only on MemoryError).  The end of the event is c.end, and
# c.end[0] must be readable: readers peek at the byte under the cursor before they compare the
# cursor with the end.

cdef enum:
    FAST_MAX_DEPTH = 64  # deeper documents are left to the automaton (whose limit is MAX_DEPTH)

ctypedef const unsigned char* Pos

ctypedef struct Cursor:
    Pos base  # the start of the JSON
    Pos end
    Record* rec
    int depth

cdef enum:  # HoleRole: what a replayed event's string value counts (A_TEXT.. in this order)
    H_FREE = 0
    H_TEXT = 1
    H_REASONING = 2
    H_REFUSAL = 3
    H_ARGS = 4  # a tool call's arguments: fed to the call's JSON check
    H_NUMBER = 5  # a number no rule reads: any valid JSON number
    N_ROLES = 6

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
    elif action:
        r.opaque |= not _identifier[action]
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

cdef inline int capture_bytes(Record* r, int capture, Str* sbuf, const char* p,
                              Py_ssize_t n) except -1:
    """Where an unescaped string value goes: the bounded capture (1), the whole capture (2)."""
    if capture == 2:
        buf_append(&r.captured, p, n)
    elif capture == 1:
        str_append(sbuf, p, n)
    return 0

cdef Pos fast_escaped_string(Cursor* c, Pos s, Pos q, int action) except? NULL:
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
        record_scalar(c.rec, action, K_STRING, &sbuf, -1, True,
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
            record_scalar(c.rec, action, K_STRING, &sbuf, -1, run > 0, start, run)
        else:
            if _short_capture[action]:
                sbuf.len = 0
                str_append(&sbuf, <const char*>s, run)
            record_scalar(c.rec, action, K_STRING, &sbuf, -1, run > 0, 0, 0)
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
    while start < q and is_digit(start[0]):  # a plain integer is digits only
        if value < MAX_INT:
            value = value * 10 + start[0] - 48
        start += 1
    absent.len = -1
    record_scalar(c.rec, action, K_NUMBER, &absent, value if start == q and value < MAX_INT else -1,
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

cdef Pos fast_value(Cursor* c, Pos p, int node) except? NULL:
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
        return fast_literal(c, p, action, "null", 4, K_NULL)
    if ch == b't':
        return fast_literal(c, p, action, "true", 4, K_TRUE)
    if ch == b'f':
        return fast_literal(c, p, action, "false", 5, K_FALSE)
    return NULL

cdef Pos fast_object(Cursor* c, Pos p, int node) except? NULL:
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
                p = fast_literal(c, p, action, "null", 4, K_NULL)
            else:
                p = fast_value(c, p, child)
            if p == NULL:
                return NULL
            p = skip_ws(p, end)
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

cdef Pos fast_array(Cursor* c, Pos p, int node) except? NULL:
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

cdef bint json_whole(Record* rec, Pos p, Py_ssize_t n) except -1:
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

# ============================================================================ the scanner

cdef inline Py_ssize_t _event_tail(const unsigned char* p, Py_ssize_t n, Py_ssize_t end,
                                   Py_ssize_t blank) noexcept:
    """How many bytes end a one-line event whose line ends at p[end] and whose blank line is at
    p[blank]: 2 ("\\n\\n"), 4 ("\\r\\n\\r\\n"), or 0 for any other ending (lone CRs, or a
    blank line that may be "\\r\\n" split across chunks)."""
    if p[end] == b'\n' and blank == end + 1 and p[blank] == b'\n':
        return 2
    if (p[end] == b'\r' and blank == end + 2 and p[end + 1] == b'\n'
            and p[blank] == b'\r' and blank + 1 < n and p[blank + 1] == b'\n'):
        return 4
    return 0

cdef inline Py_ssize_t _blank_after(const unsigned char* p, Py_ssize_t n,
                                    Py_ssize_t end) noexcept:
    """p[end] ends a line: the position of the terminator of the next line if that line is
    empty and known to be so within p[:n], else -1."""
    cdef Py_ssize_t i = end + 1
    if p[end] == b'\r':
        if i == n:
            return -1  # a "\n" may follow in the next chunk
        if p[i] == b'\n':
            i += 1
    if i < n and (p[i] == b'\n' or p[i] == b'\r'):
        return i
    return -1


ctypedef struct ToolCall:  # chat: one tool call being accumulated
    int64_t choice
    int64_t index
    Str id
    Json* json

ctypedef struct Block:  # anthropic: a tool block's input being accumulated
    int64_t index
    Json* json

ctypedef struct Finish:
    int64_t index
    Str raw

# ---------------------------------------------------------------------------- templates
# Replaying (see "Replaying events" in Scanner) needs an event read in full first: in a chat
# stream, its role chunk, first content chunk, finish chunk and usage chunk are each the first
# of their shape, and the next stream of the same model sends the same four shapes again.  So a
# chat event read in place whose effect the scanner can repeat without the Record (choices
# registered with their finish reasons, the model, counters; no tool call, no error) also
# becomes a template, shared by every scanner in the process: its bytes with every hole's value
# cut out (strings and numbers no rule reads, and the text), and its effect.  An event that
# equals a template outside the holes, with a valid JSON string or number in each hole, would
# be read into the same Record but for the counters, so the scanner applies the effect instead
# of reading it.  A template keeps only names (keys, the model, finish reasons): an event with
# any other value that is not a hole (too many holes, or text a rule reads) makes none.
#
# Which template to try: each remembers the two that followed it last (an LRU of two), and a
# stream's first event tries the two that began streams last.  A wrong guess costs a compare
# that stops at the first differing byte; an event that matches neither is read, and becomes a
# template in place of the least recently used one.  The table is process-wide, bounded
# (TEMPLATES slots), and touched only with the GIL held.  When templates do not pay (traffic
# of more shapes than slots, or of shapes that never repeat), only one event in
# TEMPLATE_BACKOFF tries them or makes one, so that reading events costs about what it would
# without them, and a hit now and then brings them back.

cdef enum:
    TEMPLATES = 64
    TEMPLATE_CHOICES = 4
    TEMPLATE_BACKOFF = 16

ctypedef struct Template:
    Py_ssize_t len  # of bytes; 0: an empty slot
    Py_ssize_t tail  # its line end and blank line, as Scanner.memo_tail
    int n_holes
    Py_ssize_t at[MAX_HOLES]  # where each hole's value was cut out of bytes
    unsigned char role[MAX_HOLES]
    Py_ssize_t base[N_ROLES]  # per role, what it counts outside its holes
    bint keep  # the matching event is kept to replay the events that repeat it
    Str model
    int n_choices
    int64_t index[TEMPLATE_CHOICES]
    Str finish[TEMPLATE_CHOICES]
    int next[2]  # the templates that followed this one last, the latest first; -1: none
    char bytes[MEMO_MAX_BYTES]

cdef Template* _templates = <Template*>PyMem_Malloc(TEMPLATES * sizeof(Template))
if _templates == NULL:
    raise MemoryError()
# Each slot's hash (template_hash) and when it was last made or matched, side by side (a
# template is 5 KiB): finding a template's twin or the least used slot reads these, not every
# template.
cdef uint64_t _template_hashes[TEMPLATES]
cdef unsigned long long _template_used[TEMPLATES]
cdef Template _new_template  # where a template is put together, before it takes a slot
cdef int _first_templates[2]  # the templates that began streams last
cdef unsigned long long _template_clock = 0
# Whether templates pay lately: a hit saves a read (a few hundred ns), an event that matched
# none of the templates tried cost the tries (tens of ns): +HIT_SCORE, -1, within +-SCORE_MAX.
# A hit after a bad spell starts from 0: templates are tried again at once.
cdef enum:
    HIT_SCORE = 4
    SCORE_MAX = 256
cdef int _template_score = SCORE_MAX
cdef unsigned _template_turn = 0
cdef unsigned long long _template_tries = 0  # events that tried templates (for tests)

cdef inline bint templates_skipped() noexcept:
    """Whether templates did not pay lately, and it is not this turn's to try them anyway."""
    global _template_turn
    if _template_score >= 0:
        return False
    _template_turn += 1
    return _template_turn % TEMPLATE_BACKOFF != 0

def _forget_templates():
    """Empty the table of templates (tests use it to start from none)."""
    global _template_clock, _template_score
    cdef int i
    for i in range(TEMPLATES):
        _templates[i].len = 0
        _template_used[i] = 0
        _template_hashes[i] = 0
        _templates[i].next[0] = _templates[i].next[1] = -1
    _first_templates[0] = _first_templates[1] = -1
    _template_clock = _template_tries = 0
    _template_score = SCORE_MAX

def _template_state():
    """How much templates paid lately, how many events tried them, how many slots hold one
    (for tests)."""
    cdef int i
    return {"score": _template_score, "tries": _template_tries,
            "slots": sum(1 for i in range(TEMPLATES) if _templates[i].len)}

def _template_bytes():
    """The bytes every template keeps (tests check that no payload is among them)."""
    cdef int i
    return [PyBytes_FromStringAndSize(_templates[i].bytes, _templates[i].len)
            for i in range(TEMPLATES) if _templates[i].len]

_forget_templates()

cdef uint64_t template_hash(const Template* t) noexcept:
    """A hash of t's bytes and holes: templates with different ones seldom share it."""
    cdef uint64_t h = <uint64_t>t.len * 0x9E3779B97F4A7C15u ^ <uint64_t>(t.n_holes << 8 | t.tail)
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

cdef bint same_template(const Template* a, const Template* b) noexcept:
    """Whether a and b keep the same bytes with the same holes."""
    cdef int h
    if a.len != b.len or a.n_holes != b.n_holes or a.tail != b.tail:
        return False
    for h in range(a.n_holes):
        if a.at[h] != b.at[h] or a.role[h] != b.role[h]:
            return False
    return memcmp(a.bytes, b.bytes, a.len) == 0

cdef Pos match_template(const Template* t, Record* rec, Pos event, Pos end, Py_ssize_t* starts,
                        Py_ssize_t* ends, Py_ssize_t* counts) except? NULL:
    """The end of the event at event[0:] if it matches t before end, its blank line included;
    else NULL.  Fills where its holes are and what they count (rec: skip_string's)."""
    cdef Pos q = event
    cdef Pos close
    cdef Pos bytes = <Pos>t.bytes
    cdef Py_ssize_t tpos = 0, seg
    cdef int h
    memcpy(counts, t.base, N_ROLES * sizeof(Py_ssize_t))
    for h in range(t.n_holes):
        seg = t.at[h] - tpos
        if end - q <= seg or not fastsse_equal(q, bytes + tpos, seg):
            return NULL
        q += seg
        if t.role[h] == H_NUMBER:
            close = skip_number(q, end)
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

cdef enum Dialect:
    D_NONE = 0
    D_CHAT = 1
    D_RESPONSES = 2
    D_ANTHROPIC = 3
    D_GEMINI = 4

cdef dict _DIALECT_CODES = {None: D_NONE, "chat": D_CHAT, "responses": D_RESPONSES,
                            "anthropic": D_ANTHROPIC, "gemini": D_GEMINI}
cdef tuple _DIALECT_NAMES = ("unknown", "chat", "responses", "anthropic", "gemini")
cdef unsigned char _BOM[3]
_BOM[0] = 0xEF
_BOM[1] = 0xBB
_BOM[2] = 0xBF


cdef class Scanner:
    """Judge one captured stream: ``feed()`` its bytes in any chunking, then ``close()``."""

    cdef readonly str protocol
    cdef readonly Py_ssize_t max_event_bytes
    cdef readonly Py_ssize_t max_line_bytes
    cdef int dialect
    cdef bint closed
    cdef object limit  # None or the name of the bound passed
    # evidence counters
    cdef Py_ssize_t total_bytes, events, comments, errors, malformed
    cdef Py_ssize_t text, reasoning, refusal, tool_calls
    cdef bint end_marker, sequence_gap, tool_malformed
    cdef Str error_code, model, blocked
    # framing
    cdef unsigned char head[3]
    cdef int head_len
    cdef bint at_start, pending_cr
    cdef Buf line
    cdef Buf data
    cdef Py_ssize_t data_lines
    cdef Buf event_type
    cdef Py_ssize_t event_bytes, bare_bytes
    cdef bint bare_active
    # JSON
    cdef Json js
    cdef int* nodes
    cdef Record rec
    # dialect state
    cdef Finish* finishes
    cdef int n_finishes, cap_finishes
    cdef ToolCall* tools
    cdef int n_tools, cap_tools
    cdef Block* blocks
    cdef int n_blocks, cap_blocks
    cdef int64_t last_seq
    # replaying events (see "Replaying events"): the kept event and its holes
    cdef Buf memo
    cdef int memo_holes
    cdef Py_ssize_t memo_start[MAX_HOLES]
    cdef Py_ssize_t memo_end[MAX_HOLES]
    cdef unsigned char memo_role[MAX_HOLES]
    cdef bint memo_varies[MAX_HOLES]  # held another value at the first replay: not tried again
    cdef Py_ssize_t memo_tail  # its line end and blank line: 2 ("\n\n") or 4 ("\r\n\r\n")
    cdef Py_ssize_t memo_base[N_ROLES]  # per role, what it counted outside its holes (content parts)
    cdef bint memo_fresh  # not replayed yet: holes that repeat their value become bytes to compare
    cdef bint memo_tool  # it carries one tool call fragment, without an id
    cdef int64_t memo_tool_choice, memo_tool_index  # which call the fragment continues
    cdef bint args_captured  # the arguments _read_args read last are in rec.captured
    cdef bint memo_event  # the event just read may be kept
    cdef bint template_event  # the event just read may become a template
    cdef int template_prev  # the template this stream matched or made last; -1: none yet
    cdef readonly Py_ssize_t replayed  # events counted by replay (tests check the path ran)
    cdef readonly Py_ssize_t templated  # events counted by a template (the same)

    # The choice and tool tables grow on demand (array_reserve), and the automaton's stack is
    # allocated when it first runs (_automaton): a Scanner starts with none of them.

    def __init__(self, str protocol="auto", *, max_event_bytes=DEFAULT_MAX_EVENT_BYTES,
                 max_line_bytes=DEFAULT_MAX_LINE_BYTES):
        # the usual arguments pass without a call; anything else gets check_options' answer
        if not (type(max_event_bytes) is int and type(max_line_bytes) is int
                and max_event_bytes >= 1 and max_line_bytes >= 1 and protocol in _PROTOCOLS):
            check_options(protocol, max_event_bytes, max_line_bytes)
        self.protocol = protocol
        self.max_event_bytes = max_event_bytes
        self.max_line_bytes = max_line_bytes
        self.dialect = _DIALECT_CODES[None if protocol == "auto" else protocol]
        self.at_start = True
        self.error_code.len = self.model.len = self.blocked.len = -1
        self.last_seq = -1
        self.template_prev = -1
        record_reset(&self.rec)

    def __dealloc__(self):
        self._free_dialect_state()
        buf_free(&self.line)
        buf_free(&self.data)
        buf_free(&self.event_type)
        buf_free(&self.rec.captured)
        buf_free(&self.memo)
        PyMem_Free(self.nodes)
        PyMem_Free(self.rec.choices)
        PyMem_Free(self.rec.tools)
        PyMem_Free(self.finishes)
        PyMem_Free(self.tools)
        PyMem_Free(self.blocks)

    cdef int* _automaton(self) except NULL:
        """The automaton's stack of path-tree nodes, allocated on first use."""
        if self.nodes == NULL:
            self.nodes = <int*>PyMem_Malloc(MAX_DEPTH * sizeof(int))
            if self.nodes == NULL:
                raise MemoryError()
        return self.nodes

    cdef void _free_dialect_state(self) noexcept:
        cdef int i
        for i in range(self.n_tools):
            PyMem_Free(self.tools[i].json)
        for i in range(self.n_blocks):
            PyMem_Free(self.blocks[i].json)
        self.n_tools = self.n_blocks = 0

    # ------------------------------------------------------------------ framing
    def feed(self, data):
        cdef const unsigned char* p
        cdef Py_ssize_t n, skip
        if self.closed:
            raise RuntimeError("feed() after close()")
        if not isinstance(data, bytes):
            data = bytes(data)
        p = <const unsigned char*>PyBytes_AS_STRING(data)
        n = PyBytes_GET_SIZE(data)
        self.total_bytes += n
        if self.limit is not None or n == 0:
            return
        if self.at_start:
            # hold the first bytes until we know whether they are a BOM
            skip = 0
            while skip < n and self.head_len < 3:
                self.head[self.head_len] = p[skip]
                self.head_len += 1
                skip += 1
                if self.head[self.head_len - 1] != _BOM[self.head_len - 1]:
                    break
            if self.head_len < 3 and self.head[self.head_len - 1] == _BOM[self.head_len - 1]:
                return
            self.at_start = False
            if self.head_len == 3 and memcmp(self.head, _BOM, 3) == 0:
                self._scan(p + skip, n - skip)
                return
            # no BOM: the held bytes are the stream's first; those from this chunk are read
            # where they lie, so that a first event in one chunk is read in place too
            if self.head_len > skip:
                self._scan(self.head, self.head_len - skip)
                if self.limit is not None:
                    return
            self._scan(p, n)
            return
        self._scan(p, n)

    cdef int _scan(self, const unsigned char* p, Py_ssize_t n) except -1:
        cdef Py_ssize_t pos = 0, end, length
        cdef Py_ssize_t blank, value_off
        cdef bint keep
        cdef const unsigned char* hit
        cdef Py_ssize_t next_lf = -2  # -2: not searched yet, -1: none in this chunk
        cdef Py_ssize_t next_cr = -1  # the CR found, if >= pos
        cdef Py_ssize_t cr_clear = 0  # no CR in p[pos:cr_clear]
        cdef Py_ssize_t stop, cr_from, start, tail
        if self.pending_cr:
            self.pending_cr = False
            if n and p[0] == b'\n':
                pos = 1
        while True:
            if (self.line.len == 0 and self.data_lines == 0 and self.event_type.len == 0
                    and self.event_bytes == 0 and not self.bare_active):
                if self.memo.len:
                    pos = self._replay(p, pos, n)
                if self.dialect == D_CHAT and pos < n:
                    start = pos
                    pos = self._from_template(p, pos, n)
                    if pos != start:
                        continue  # replay what repeats it
            if next_lf != -1 and next_lf < pos:
                hit = <const unsigned char*>memchr(p + pos, b'\n', n - pos)
                next_lf = hit - p if hit != NULL else -1
            # A CR ends the line only if it comes before the LF: look that far, never into
            # bytes that replaying may take without a look.
            stop = next_lf if next_lf >= 0 else n
            if next_cr < pos:
                cr_from = pos if pos > cr_clear else cr_clear
                hit = (<const unsigned char*>memchr(p + cr_from, b'\r', stop - cr_from)
                       if cr_from < stop else NULL)
                if hit != NULL:
                    next_cr = hit - p
                else:
                    cr_clear = stop
            end = next_cr if pos <= next_cr < stop else next_lf
            if end < 0:
                break
            if self.line.len:
                if self._too_long(self.line.len + end - pos, <unsigned char>self.line.p[0]):
                    return 0
                buf_append(&self.line, <const char*>p + pos, end - pos)
                self._process_line(<const unsigned char*>self.line.p, self.line.len)
                self.line.len = 0
            else:
                length = end - pos
                if length and self._too_long(length, p[pos]):
                    return 0
                blank = _blank_after(p, n, end)
                if (blank >= 0 and self.data_lines == 0 and not self.bare_active
                        and length >= 5 and memcmp(p + pos, b"data:", 5) == 0):
                    # A whole one-line event inside this chunk ("data: ...", then a blank
                    # line): read it where it lies instead of copying it into self.data.
                    # The same calls _process_line and _dispatch would make, in order.
                    value_off = 6 if length > 5 and p[pos + 5] == b' ' else 5
                    self.memo_event = self.template_event = False
                    keep = self.event_type.len == 0 and self.event_bytes == 0
                    self._dispatch_data(p + pos + value_off, length - value_off)
                    if keep and (self.memo_event or self.template_event) and self.limit is None:
                        tail = _event_tail(p, n, end, blank)
                        if tail and end - pos + tail <= MEMO_MAX_BYTES:
                            if self.memo_event:
                                self._keep(p, pos, tail, end - pos + tail, value_off)
                            if self.template_event:
                                self._make_template(p + pos, tail, end - pos + tail, value_off)
                    end = blank
                else:
                    self._process_line(p + pos, length)
            if self.limit is not None:
                return 0
            if p[end] == b'\r':
                if end + 1 == n:
                    self.pending_cr = True
                elif p[end + 1] == b'\n':
                    end += 1
            pos = end + 1
        if pos < n:
            if self._too_long(self.line.len + n - pos,
                              <unsigned char>self.line.p[0] if self.line.len else p[pos]):
                return 0
            buf_append(&self.line, <const char*>p + pos, n - pos)
        return 0

    cdef int _dispatch_data(self, const unsigned char* data, Py_ssize_t n) except -1:
        """The event whose data is data[:n] (data[n] must be readable), of the type an "event:"
        line buffered so far gives it, "message" without one."""
        cdef const unsigned char* etype
        cdef Py_ssize_t etype_len
        if self.event_type.len:  # an empty "event:" means "message" too
            etype = <const unsigned char*>self.event_type.p
            etype_len = self.event_type.len
        else:
            etype = <const unsigned char*>"message"
            etype_len = 7
        self._handle_event(etype, etype_len, data, n)
        self.event_type.len = 0
        self.event_bytes = 0
        return 0

    cdef bint _too_long(self, Py_ssize_t line_length, unsigned char first) except -1:
        if line_length > self.max_line_bytes:
            self._exceed("line")
        elif (first != b':' and
              self.event_bytes + self.bare_bytes + line_length > self.max_event_bytes):
            self._exceed("event")
        else:
            return False
        return True

    cdef void _exceed(self, str which):
        self.limit = which
        # drop every buffer at once: nothing more is read
        buf_free(&self.line)
        buf_free(&self.data)
        buf_free(&self.rec.captured)
        buf_free(&self.memo)
        self.bare_active = False
        self._free_dialect_state()

    cdef int _process_line(self, const unsigned char* line, Py_ssize_t n) except -1:
        cdef const unsigned char* colon
        cdef Py_ssize_t name_len, value_off
        cdef int field
        if n == 0:
            self._dispatch()
            return 0
        if line[0] == b':':
            self.comments += 1
            return 0
        colon = <const unsigned char*>memchr(line, b':', n)
        if colon == NULL:
            name_len = n
            value_off = n
        else:
            name_len = colon - line
            value_off = name_len + 1
            if value_off < n and line[value_off] == b' ':
                value_off += 1
        field = _field(line, name_len)
        if self.bare_active:
            if field == F_OTHER or field == F_ERROR:
                self.bare_bytes += n
                self._feed_bare(line, n)
                return 0
            self._abandon_bare()
        if line[0] == b'{':
            # a bare JSON object, not framed as SSE (Gemini's mid-stream errors)
            record_reset(&self.rec)
            json_init(&self.js, &self.rec, self._automaton())
            self.bare_active = True
            self.bare_bytes = n
            self._feed_bare(line, n)
            return 0
        self.event_bytes += n
        if field == F_DATA:
            buf_append(&self.data, <const char*>line + value_off, n - value_off)
            buf_append(&self.data, "\n", 1)
            self.data_lines += 1
        elif field == F_EVENT:
            self.event_type.len = 0
            buf_append(&self.event_type, <const char*>line + value_off, n - value_off)
        elif field == F_ERROR:  # llama.cpp sent errors as an "error:" field
            self.errors += 1
        return 0

    cdef int _feed_bare(self, const unsigned char* line, Py_ssize_t n) except -1:
        json_feed(&self.js, line, n)
        json_feed(&self.js, <const unsigned char*>"\n", 1)
        if self.js.state == S_ERROR:
            self._abandon_bare()
        elif json_done(&self.js):
            self.bare_active = False
            self.bare_bytes = 0
            self.events += 1
            self._interpret(<const unsigned char*>"", 0)
        return 0

    cdef void _abandon_bare(self) noexcept:
        self.bare_active = False
        self.bare_bytes = 0
        self.malformed += 1

    cdef int _dispatch(self) except -1:
        if self.bare_active:
            self._abandon_bare()
        if self.data_lines:
            self.data_lines = 0
            # the data without its last "\n", which stays readable past the end (json_whole)
            self._dispatch_data(<const unsigned char*>self.data.p, self.data.len - 1)
            self.data.len = 0
        self.event_type.len = 0
        self.event_bytes = 0
        return 0

    # ------------------------------------------------------------------ events
    cdef int _handle_event(self, const unsigned char* etype, Py_ssize_t etype_len,
                           const unsigned char* data, Py_ssize_t n) except -1:
        """data[:n] is the event's data; data[n] must be readable."""
        self.events += 1
        if etype_len == 5 and memcmp(etype, "error", 5) == 0:
            self.errors += 1
        if n == 0:  # "data:" alone: a keep-alive, nothing to judge
            return 0
        if n == PyBytes_GET_SIZE(_done) and memcmp(data, PyBytes_AS_STRING(_done), n) == 0:
            if self.dialect == D_NONE:
                self.dialect = D_CHAT
            if self.dialect == D_CHAT:
                self.end_marker = True
            return 0
        record_reset(&self.rec)
        if json_whole(&self.rec, data, n):
            self._interpret(etype, etype_len)
            self.memo_event = self._replayable()
            self.template_event = self._templatable()
            return 0
        # unusual or malformed: the automaton reads it from scratch and decides
        record_reset(&self.rec)
        json_init(&self.js, &self.rec, self._automaton())
        json_feed(&self.js, data, n)
        if not json_finish(&self.js):
            self.malformed += 1
            return 0
        self._interpret(etype, etype_len)
        return 0

    # ------------------------------------------------------------------ replaying events
    # Most events of a stream repeat the one before but for a few string values: the chunk id
    # and the model are the same in every Chat Completions chunk, only the delta's text and the
    # obfuscation padding change.  When an event read by json_whole changed nothing but
    # counters, its bytes are kept with the positions of its "holes": the string values whose
    # bytes mattered only through being empty or not (text, reasoning, refusal), or not at all
    # (values no rule reads), and the numbers no rule reads.  A later event that equals it byte
    # for byte outside the holes, and whose holes are valid JSON strings (numbers), would be
    # read into the same record but for those counters, so it is counted without being read: a
    # few memcmp instead of a parse.  Anything else, a hole that is not a plain string (number)
    # included, falls back to reading the event.  Templates (see "templates") do the same
    # across streams.

    cdef bint _replayable(self) noexcept:
        """Would the event just interpreted, seen again, change nothing but its counters?"""
        cdef Record* r = &self.rec
        cdef int i
        if (self.dialect != D_CHAT or self.limit is not None or r.error or r.too_many
                or r.n_tools > 1 or r.out_of_memory):
            return False
        # One tool call fragment without an id continues the call it names: seen again, it
        # adds its arguments to that call.  With an id it may start a call.
        if r.n_tools == 1 and r.tools[0].id.len > 0:
            return False
        for i in range(r.n_choices):
            # a finish reason is state, and so are a Gemini part's calls; a choice seen before
            # is not
            if r.choices[i].finish.len >= 0 or r.choices[i].tool:
                return False
        return True

    cdef int _keep(self, const unsigned char* p, Py_ssize_t pos, Py_ssize_t tail,
                   Py_ssize_t size, Py_ssize_t value_off) except -1:
        """Keep the one-line event read in place at p[pos:pos + size] (its line end and blank
        line the last tail bytes) to replay the events that repeat it."""
        cdef Py_ssize_t starts[MAX_HOLES]
        cdef Py_ssize_t ends[MAX_HOLES]
        cdef Py_ssize_t base[N_ROLES]
        cdef int i, args
        self.memo_tool = self.rec.n_tools == 1
        args = 0
        for i in range(self.rec.n_holes):
            args += self.rec.hole_role[i] == H_ARGS
        if args > self.memo_tool:
            return 0  # arguments sent twice in one fragment: read such events
        if self.memo_tool:
            for i in range(self.rec.n_choices):
                if self.rec.choices[i].tool_count:
                    self.memo_tool_choice = (self.rec.choices[i].index if self.rec.choices[i].index >= 0
                                             else self.rec.choices[i].ordinal)
            self.memo_tool_index = (self.rec.tools[0].index if self.rec.tools[0].index != -1
                                    else self.rec.tools[0].ordinal)
        self._record_base(base)
        for i in range(self.rec.n_holes):
            starts[i] = value_off + self.rec.hole_start[i]
            ends[i] = value_off + self.rec.hole_end[i]
        return self._set_memo(p + pos, size, tail, self.rec.n_holes, starts, ends,
                              self.rec.hole_role, base)

    cdef void _record_base(self, Py_ssize_t* base) noexcept:
        """What the event just read counted per role outside its holes (content parts)."""
        cdef int i
        memset(base, 0, N_ROLES * sizeof(Py_ssize_t))
        for i in range(self.rec.n_choices):
            base[H_TEXT] += self.rec.choices[i].text
            base[H_REASONING] += self.rec.choices[i].reasoning
            base[H_REFUSAL] += self.rec.choices[i].refusal
        for i in range(self.rec.n_holes):
            if self.rec.hole_end[i] > self.rec.hole_start[i]:
                base[self.rec.hole_role[i]] -= 1

    cdef int _set_memo(self, const unsigned char* event, Py_ssize_t size, Py_ssize_t tail,
                       int n_holes, const Py_ssize_t* starts, const Py_ssize_t* ends,
                       const unsigned char* roles, const Py_ssize_t* base) except -1:
        """Keep event[:size] with its holes at event[starts[i]:ends[i]] (memo_tool is set by
        the caller)."""
        self.memo_fresh = True
        memset(self.memo_varies, 0, sizeof(self.memo_varies))
        self.memo.len = 0
        buf_append(&self.memo, <const char*>event, size)
        self.memo_tail = tail
        self.memo_holes = n_holes
        memcpy(self.memo_start, starts, n_holes * sizeof(Py_ssize_t))
        memcpy(self.memo_end, ends, n_holes * sizeof(Py_ssize_t))
        memcpy(self.memo_role, roles, n_holes * sizeof(unsigned char))
        memcpy(self.memo_base, base, sizeof(self.memo_base))
        return 0

    cdef Py_ssize_t _replay(self, const unsigned char* p, Py_ssize_t pos,
                            Py_ssize_t n) except -1:
        """Count every event from p[pos] on that repeats the kept one; return where the first
        event that does not starts."""
        cdef Pos t = <Pos>self.memo.p
        cdef Pos end = p + n
        cdef Pos q
        cdef Pos close
        cdef Pos args
        cdef Py_ssize_t tpos, seg, width, args_width
        cdef Py_ssize_t bound = min(self.max_line_bytes, self.max_event_bytes)  # on the line
        cdef Py_ssize_t counts[N_ROLES]
        cdef unsigned same  # the holes that held the kept value again
        cdef int h
        cdef ToolCall* call = NULL
        if self.memo_tool:
            call = self._find_call(self.memo_tool_choice, self.memo_tool_index)
            if call == NULL:
                return pos  # cannot happen: the kept event made or found it
        while True:
            q = p + pos
            fastsse_prefetch(q + PREFETCH_AHEAD, self.memo.len)
            tpos = 0
            memcpy(counts, self.memo_base, sizeof(counts))
            same = 0
            args_width = 0
            for h in range(self.memo_holes):
                seg = self.memo_start[h] - tpos  # the bytes before the hole, its quote included
                if end - q <= seg or not fastsse_equal(q, t + tpos, seg):
                    return pos
                q += seg
                width = self.memo_end[h] - self.memo_start[h]
                if self.memo_role[h] == H_ARGS:  # read in any case: they go to the JSON check
                    close = self._read_args(q, end)
                    if close == NULL:
                        return pos
                    width = close - q
                # the kept value again? (the byte after it, a string's closing quote, too)
                elif (not self.memo_varies[h] and end - q > width
                        and q[width] == t[self.memo_end[h]]
                        and fastsse_equal(q, t + tpos + seg, width)):
                    same |= 1u << h
                    close = q + width
                else:
                    if self.memo_role[h] == H_NUMBER:
                        close = skip_number(q, end)
                    else:
                        close = skip_string(&self.rec, q, end, 0)
                    if close == NULL:
                        return pos
                    width = close - q
                if width:
                    counts[self.memo_role[h]] += 1
                    if self.memo_role[h] == H_ARGS:
                        args = q
                        args_width = width
                q = close
                tpos = self.memo_end[h]
            seg = self.memo.len - tpos
            if end - q < seg or not fastsse_equal(q, t + tpos, seg):
                return pos
            q += seg
            if q - p - pos - self.memo_tail > bound:
                return pos  # too long: the line's own reading reports the limit
            self._count(counts)
            if args_width:
                self._feed_args(call, args, args_width)
            self.replayed += 1
            pos = q - p
            if self.memo_fresh:
                self._settle(same)

    cdef inline void _count(self, const Py_ssize_t* counts) noexcept:
        """One more event, which counted counts[role] text, reasoning and refusal values."""
        self.events += 1
        self.text += counts[H_TEXT]
        self.reasoning += counts[H_REASONING]
        self.refusal += counts[H_REFUSAL]

    cdef void _settle(self, unsigned same) noexcept:
        """After the first replay: a free hole that held the kept value again (the chunk id,
        the system fingerprint) is compared as bytes from now on, one comparison fewer; a hole
        that held another value (the text, the padding) is read without trying the kept one."""
        cdef int h, kept = 0
        self.memo_fresh = False
        for h in range(self.memo_holes):
            if (self.memo_role[h] == H_FREE or self.memo_role[h] == H_NUMBER) and same & (1u << h):
                continue
            self.memo_start[kept] = self.memo_start[h]
            self.memo_end[kept] = self.memo_end[h]
            self.memo_role[kept] = self.memo_role[h]
            self.memo_varies[kept] = not (same & (1u << h))
            kept += 1
        self.memo_holes = kept

    cdef ToolCall* _find_call(self, int64_t choice, int64_t index) noexcept:
        """The latest call at this choice and index, as _tool_fragment finds it."""
        cdef int i
        for i in range(self.n_tools - 1, -1, -1):
            if self.tools[i].choice == choice and self.tools[i].index == index:
                return &self.tools[i]
        return NULL

    cdef Pos _read_args(self, Pos q, Pos end) except? NULL:
        """The closing quote of the arguments whose string content starts at q, or NULL if
        fast_string would not accept it.  Content with escapes is left unescaped in
        rec.captured, as json_whole captures it (args_captured)."""
        cdef Pos close
        self.rec.captured.len = 0
        self.rec.in_tool = False  # capture only: record nothing
        close = skip_string(&self.rec, q, end, A_TOOL_ARGS)
        self.args_captured = self.rec.captured.len > 0  # an escape always stands for a byte
        return close

    cdef int _feed_args(self, ToolCall* call, Pos s, Py_ssize_t n) except -1:
        """A replayed fragment's arguments, the JSON string content s[:n] (as _read_args left
        it), added to the call's JSON check."""
        if self.args_captured:
            json_feed(call.json, <const unsigned char*>self.rec.captured.p, self.rec.captured.len)
        else:
            json_feed(call.json, s, n)
        return 0

    # ------------------------------------------------------------------ templates
    cdef bint _templatable(self) noexcept:
        """Can the event just interpreted be repeated from a template (see "templates")?"""
        cdef Record* r = &self.rec
        cdef int i
        if (self.dialect != D_CHAT or self.limit is not None or r.error or r.too_many
                or r.opaque or r.out_of_memory or r.n_tools or r.n_choices > TEMPLATE_CHOICES):
            return False
        for i in range(r.n_choices):
            if r.choices[i].tool:
                return False
        return True

    cdef int* _template_links(self) noexcept:
        """The templates to try for this stream's next event, the likelier first."""
        if self.template_prev < 0:
            return _first_templates
        return _templates[self.template_prev].next

    cdef void _follow(self, int slot) noexcept:
        """Template slot is this stream's latest: the likeliest after its predecessor."""
        global _template_clock
        cdef int* links = self._template_links()
        if links[0] != slot:
            links[1] = links[0]
            links[0] = slot
        self.template_prev = slot
        _template_clock += 1
        _template_used[slot] = _template_clock

    cdef void _make_template(self, const unsigned char* event, Py_ssize_t tail, Py_ssize_t size,
                             Py_ssize_t value_off) noexcept:
        """The event just read, event[:size], becomes a template in the least used slot."""
        cdef Record* r = &self.rec
        cdef Template* t
        cdef int slot = 0, i
        cdef int* expected = self._template_links()
        cdef int next[2]
        cdef uint64_t hash
        cdef Py_ssize_t src = 0, cut, at = 0
        if templates_skipped():
            return
        t = &_new_template
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
        hash = template_hash(t)
        for i in range(TEMPLATES):
            if _template_hashes[i] == hash and same_template(t, &_templates[i]):
                # a stream that took another path to the same shape: one template, whose
                # effect is the same (it follows from the bytes and the holes)
                self._follow(i)
                return
        # It takes the place of the template expected here (one finish reason for another):
        # what followed that one likely follows it.
        next[0] = next[1] = -1
        if expected[0] >= 0:
            next[0] = _templates[expected[0]].next[0]
            next[1] = _templates[expected[0]].next[1]
        self._record_base(t.base)
        t.keep = self.memo_event
        t.model = r.model
        t.n_choices = r.n_choices
        for i in range(r.n_choices):
            t.index[i] = r.choices[i].index if r.choices[i].index >= 0 else r.choices[i].ordinal
            t.finish[i] = r.choices[i].finish
        t.next[0] = next[0]
        t.next[1] = next[1]
        for i in range(1, TEMPLATES):
            if _template_used[i] < _template_used[slot]:
                slot = i
        memcpy(&_templates[slot], t, <size_t>(<char*>t.bytes - <char*>t) + t.len)
        _template_hashes[slot] = hash
        self._follow(slot)

    cdef Py_ssize_t _from_template(self, const unsigned char* p, Py_ssize_t pos,
                                   Py_ssize_t n) except -1:
        """Count the event at p[pos] if it matches a likely template; return where the next
        event starts (pos if none matched)."""
        global _template_score, _template_tries
        cdef int* links = self._template_links()
        cdef const Template* t
        cdef Pos close
        cdef Py_ssize_t starts[MAX_HOLES]
        cdef Py_ssize_t ends[MAX_HOLES]
        cdef Py_ssize_t counts[N_ROLES]
        cdef Py_ssize_t size
        cdef Py_ssize_t bound = min(self.max_line_bytes, self.max_event_bytes)  # on the line
        cdef int k, i, slot
        cdef bint tried = False
        if templates_skipped():
            return pos
        _template_tries += 1
        for k in range(2):
            slot = links[k]
            if slot < 0:
                continue
            t = &_templates[slot]
            # (a choice table that could overflow is left to _choices, which reports it)
            if t.len == 0 or self.n_finishes + t.n_choices > MAX_CHOICES:
                continue
            tried = True
            close = match_template(t, &self.rec, p + pos, p + n, starts, ends, counts)
            if close == NULL:
                continue
            size = close - p - pos
            if size - t.tail > bound:
                return pos  # too long: the line's own reading reports the limit
            # what _handle_event, _interpret and _choices would do with the event
            if t.model.len >= 0 and self.model.len < 0:
                self.model = t.model
            for i in range(t.n_choices):
                self._finish(t.index[i], &t.finish[i])
            self._count(counts)
            self.templated += 1
            _template_score = min(max(_template_score, 0) + HIT_SCORE, SCORE_MAX)
            if t.keep and size <= MEMO_MAX_BYTES:
                self.memo_tool = False
                self._set_memo(p + pos, size, t.tail, t.n_holes, starts, ends, t.role, t.base)
            self._follow(slot)
            return pos + size
        if tried:
            _template_score = max(_template_score - 1, -SCORE_MAX)
        return pos

    cdef int _interpret(self, const unsigned char* etype, Py_ssize_t etype_len) except -1:
        cdef Record* r = &self.rec
        cdef const char* name
        cdef Py_ssize_t name_len
        if r.out_of_memory:
            raise MemoryError()
        if r.too_many:
            self._exceed("choices" if r.too_many == 1 else "tool_calls")
            return 0
        if r.error:
            self._note_error()
        if r.type.len >= 0:
            name = r.type.s
            name_len = r.type.len
        else:
            name = <const char*>etype
            name_len = etype_len
        if self.dialect == D_NONE:
            self.dialect = self._detect(name, name_len)
        if r.model.len >= 0 and self.model.len < 0:
            self.model = r.model
        if self.dialect == D_CHAT or self.dialect == D_GEMINI:
            self._choices()
        elif self.dialect == D_RESPONSES:
            self._responses(_responses_kinds.get(name, name_len))
        elif self.dialect == D_ANTHROPIC:
            self._anthropic(_anthropic_kinds.get(name, name_len))
        return 0

    cdef int _detect(self, const char* name, Py_ssize_t name_len) except -1:
        cdef bytes prefix
        cdef int found
        for prefix, protocol in _detect_prefixes:
            if (name_len >= PyBytes_GET_SIZE(prefix)
                    and memcmp(name, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix)) == 0):
                return _DIALECT_CODES[protocol]
        found = _detect_types.get(name, name_len)
        if found >= 0:
            return _DIALECT_CODES[_detect_type_protocols[found]]
        if self.rec.has_choices or (
                self.rec.object.len == PyBytes_GET_SIZE(_chat_object)
                and memcmp(self.rec.object.s, PyBytes_AS_STRING(_chat_object),
                           self.rec.object.len) == 0):
            return D_CHAT
        if self.rec.gemini:
            return D_GEMINI
        return D_NONE

    cdef void _note_error(self) noexcept:
        cdef Record* r = &self.rec
        cdef const Str* order[4]
        cdef int i
        cdef bint numeric
        self.errors += 1
        if self.error_code.len >= 0:
            return
        order[0] = &r.err_code
        order[1] = &r.err_type
        order[2] = &r.err_status
        order[3] = &r.flat_code
        numeric = r.err_code.len > 0
        for i in range(r.err_code.len if r.err_code.len > 0 else 0):
            if not (b'0' <= <unsigned char>r.err_code.s[i] <= b'9'):
                numeric = False
                break
        if numeric:  # "CANCELLED" says more than 499
            order[0] = &r.err_type
            order[1] = &r.err_status
            order[2] = &r.flat_code
            order[3] = &r.err_code
        for i in range(4):
            if order[i].len > 0:
                self.error_code = order[i][0]
                return

    cdef int _finish(self, int64_t index, const Str* raw) except -1:
        """Register a choice, and its finish reason once one arrives (the last one wins)."""
        cdef int i
        for i in range(self.n_finishes):
            if self.finishes[i].index == index:
                if raw.len >= 0:
                    self.finishes[i].raw = raw[0]
                return 0
        if self.n_finishes >= MAX_CHOICES:
            self._exceed("choices")
            return 0
        if array_reserve(<void**>&self.finishes, &self.cap_finishes, self.n_finishes,
                         sizeof(Finish)) < 0:
            raise MemoryError()
        self.finishes[self.n_finishes].index = index
        self.finishes[self.n_finishes].raw = raw[0]
        self.n_finishes += 1
        return 0

    cdef int _choices(self) except -1:
        """chat chunks and gemini chunks: per-choice text, reasoning, tools, finish."""
        cdef Record* r = &self.rec
        cdef Choice* choice
        cdef int64_t index
        cdef int i, k
        cdef bint all_final
        for i in range(r.n_choices):
            choice = &r.choices[i]
            index = choice.index if choice.index >= 0 else choice.ordinal
            self._finish(index, &choice.finish)
            if self.limit is not None:
                return 0
            self.text += choice.text
            self.reasoning += choice.reasoning
            self.refusal += choice.refusal
            self.tool_calls += choice.tool
            for k in range(choice.tool_start, choice.tool_start + choice.tool_count):
                self._tool_fragment(index, &r.tools[k])
                if self.limit is not None:
                    return 0
        if self.dialect == D_GEMINI:
            # No end marker exists: the last chunk must close every candidate it carries.
            if r.block_reason.len >= 0:
                self.blocked = r.block_reason
                self.end_marker = True
            elif r.n_choices:
                all_final = True
                for i in range(r.n_choices):
                    if r.choices[i].finish.len < 0:
                        all_final = False
                self.end_marker = all_final
        return 0

    cdef int _tool_fragment(self, int64_t choice_index, Tool* fragment) except -1:
        cdef int64_t index = fragment.index if fragment.index != -1 else fragment.ordinal
        cdef ToolCall* call = self._find_call(choice_index, index)
        if call == NULL or (fragment.id.len > 0 and call.id.len > 0
                            and not str_eq(&fragment.id, &call.id)):
            if call != NULL:  # a new id at the same index: the earlier call is over
                self._check_args(call.json)
                json_init(call.json, NULL, NULL)
            else:
                if self.n_tools >= MAX_TOOL_CALLS:
                    self._exceed("tool_calls")
                    return 0
                if array_reserve(<void**>&self.tools, &self.cap_tools, self.n_tools,
                                 sizeof(ToolCall)) < 0:
                    raise MemoryError()
                call = &self.tools[self.n_tools]
                call.json = json_new()
                self.n_tools += 1
                call.choice = choice_index
                call.index = index
            call.id = fragment.id
            self.tool_calls += 1
        elif fragment.id.len > 0 and call.id.len <= 0:
            call.id = fragment.id
        if fragment.args_len > 0:
            json_feed(call.json, <const unsigned char*>self.rec.captured.p + fragment.args_off,
                      fragment.args_len)
        return 0

    cdef void _check_args(self, Json* j) noexcept:
        if not json_finish_args(j):
            self.tool_malformed = True

    cdef void _sequence(self) noexcept:
        cdef int64_t seq = self.rec.seq
        if seq < 0:
            return
        if self.last_seq >= 0 and seq != self.last_seq + 1:
            self.sequence_gap = True
        self.last_seq = seq

    cdef int _responses(self, int kind) except -1:
        cdef Record* r = &self.rec
        cdef Json check
        cdef Str completed
        cdef Py_ssize_t suffix = PyBytes_GET_SIZE(_r_tool_suffix)
        self._sequence()
        if kind == K_TEXT_DELTA:
            self.text += r.delta
        elif kind == K_REFUSAL_DELTA:
            self.refusal += r.delta
        elif kind == K_REASONING_DELTA:
            self.reasoning += r.delta
        elif kind == K_ITEM_ADDED:
            if _r_reasoning.get(r.item_type.s, max(r.item_type.len, 0)) >= 0:
                self.reasoning += 1
            elif (r.item_type.len >= suffix and memcmp(
                    r.item_type.s + r.item_type.len - suffix,
                    PyBytes_AS_STRING(_r_tool_suffix), suffix) == 0):
                self.tool_calls += 1
        elif kind == K_ARGS_DONE:
            json_init(&check, NULL, NULL)
            if r.args_len > 0:
                json_feed(&check, <const unsigned char*>r.captured.p + r.args_off, r.args_len)
            self._check_args(&check)
        elif kind == K_COMPLETED or kind == K_INCOMPLETE:
            # judged by what it says, not only by its name (see _scanner_py._terminal_reason)
            self.end_marker = True
            if r.incomplete_reason.len >= 0:
                self._finish(0, &r.incomplete_reason)
            elif r.status.len >= 0 and _r_name_statuses.get_str(&r.status) < 0:
                self._finish(0, &r.status)  # failed, cancelled, in_progress, ...
            elif kind == K_COMPLETED and not (
                    r.status.len == PyBytes_GET_SIZE(_r_incomplete)
                    and memcmp(r.status.s, PyBytes_AS_STRING(_r_incomplete), r.status.len) == 0):
                completed.len = 0
                str_append(&completed, PyBytes_AS_STRING(_completed), PyBytes_GET_SIZE(_completed))
                self._finish(0, &completed)
            else:  # incomplete, and it never said why
                completed.len = -1
                self._finish(0, &completed)
        elif kind == K_FAILED:
            self.end_marker = True
            if not r.error:
                self._note_error()
        elif kind == K_ERROR:
            if not r.error:
                self._note_error()
        return 0

    cdef int _anthropic(self, int kind) except -1:
        cdef Record* r = &self.rec
        cdef Str absent
        cdef int64_t index
        cdef int i, found
        absent.len = -1
        if kind == K_START:
            self._finish(0, &absent)
        elif kind == K_BLOCK_START:
            if _a_reasoning.get_str(&r.block_type) >= 0:
                self.reasoning += 1
            if _a_tool.get_str(&r.block_type) >= 0:
                self.tool_calls += 1
            if _a_json_input.get_str(&r.block_type) >= 0:
                index = r.block_index
                found = -1
                for i in range(self.n_blocks):
                    if self.blocks[i].index == index:
                        found = i
                        break
                if found >= 0:
                    self._check_args(self.blocks[found].json)
                    json_init(self.blocks[found].json, NULL, NULL)
                else:
                    if self.n_blocks >= MAX_TOOL_CALLS:
                        self._exceed("tool_calls")
                        return 0
                    if array_reserve(<void**>&self.blocks, &self.cap_blocks, self.n_blocks,
                                     sizeof(Block)) < 0:
                        raise MemoryError()
                    self.blocks[self.n_blocks].index = index
                    self.blocks[self.n_blocks].json = json_new()
                    self.n_blocks += 1
        elif kind == K_BLOCK_DELTA:
            self.text += r.delta_text
            self.reasoning += r.delta_thinking
            if r.delta_json_len > 0:
                for i in range(self.n_blocks):
                    if self.blocks[i].index == r.block_index:
                        json_feed(self.blocks[i].json,
                                  <const unsigned char*>r.captured.p + r.delta_json_off,
                                  r.delta_json_len)
                        break
        elif kind == K_MESSAGE_DELTA:
            if _a_stop_details_win.get_str(&r.stop_detail) >= 0:
                self._finish(0, &r.stop_detail)
            else:
                self._finish(0, &r.stop_reason)
        elif kind == K_MESSAGE_STOP:
            self.end_marker = True
        elif kind == K_ERROR:
            if not r.error:
                self._note_error()
        return 0

    # ------------------------------------------------------------------ the end
    cdef object _judgement(self, str transport, Py_ssize_t residual, int n_finishes):
        """_judge's answer for this stream, whose first n_finishes finish reasons count.  Most
        streams end like one of the last few judged (the same dialect, finish reason and
        flags): then the answer is that stream's, found by comparing C values instead of
        hashing a tuple of 17 Python objects."""
        global _judged_next
        cdef Judged k  # every field is set; the finish reasons up to n_finishes
        cdef int i, slot
        cdef tuple finishes
        k.dialect = self.dialect
        k.transport = 0
        while _TRANSPORT_CODES[k.transport] != transport:  # close() checked that it is one
            k.transport += 1
        k.limit = 0 if self.limit is None else 1 + _LIMIT_CODES.index(self.limit)
        k.flags = ((self.errors > 0) | self.end_marker << 1 | (self.events == 0) << 2
                   | (residual > 0) << 3 | (self.malformed > 0) << 4 | self.sequence_gap << 5
                   | (self.text > 0) << 6 | (self.reasoning > 0) << 7 | (self.refusal > 0) << 8
                   | (self.tool_calls > 0) << 9 | self.tool_malformed << 10)
        k.n_finishes = n_finishes
        k.error_code = self.error_code
        k.blocked = self.blocked
        if k.n_finishes <= MEMO_FINISHES:
            for i in range(k.n_finishes):
                k.finishes[i] = self.finishes[i].raw
            for slot in range(JUDGED):
                if _judged_heads[slot] is not None and judged_same(&k, &_judged[slot]):
                    return _judged_heads[slot]
        finishes = PyTuple_New(n_finishes)
        for i in range(n_finishes):
            raw = str_bytes(&self.finishes[i].raw)
            Py_INCREF(raw)
            PyTuple_SET_ITEM(finishes, i, raw)
        head = (_judge_cached if k.n_finishes <= MEMO_FINISHES else _judge)(
            _DIALECT_NAMES[self.dialect], transport, self.limit, self.errors > 0,
            str_bytes(&self.error_code), self.end_marker, self.events == 0, residual > 0,
            self.malformed > 0, self.sequence_gap, finishes, str_bytes(&self.blocked),
            self.text > 0, self.reasoning > 0, self.refusal > 0, self.tool_calls > 0,
            self.tool_malformed)
        if k.n_finishes <= MEMO_FINISHES:
            # key and answer together, after the call: another thread sees the old pair or
            # the new one
            slot = _judged_next
            _judged_next = (slot + 1) % JUDGED
            _judged[slot] = k
            _judged_heads[slot] = head
        return head

    cdef object _served_model(self):
        """The served model's name, sanitized: the last stream's again, most of the time."""
        global _named_model, _named_model_str
        if self.model.len < 0:
            return None
        if _named_model_str is None or not str_eq(&self.model, &_named_model):
            name = _model_name(str_bytes(&self.model))
            # both at once, after the call: another thread sees the old pair or the new one
            _named_model = self.model
            _named_model_str = name
            return name
        return _named_model_str

    def close(self, str transport="eof"):
        cdef int i, n_finishes
        cdef Py_ssize_t residual
        cdef dict values
        if transport not in _TRANSPORTS:
            check_transport(transport)
        if self.closed:
            raise RuntimeError("close() called twice")
        self.closed = True
        if self.rec.out_of_memory:
            raise MemoryError()
        if self.at_start and self.head_len and self.limit is None:
            self.at_start = False
            self._scan(self.head, self.head_len)
        residual = 0
        n_finishes = 0  # a stream read up to a limit has its finish reasons ignored
        if self.limit is None:
            residual = self.line.len + self.event_bytes + self.bare_bytes
            for i in range(self.n_tools):
                self._check_args(self.tools[i].json)
            for i in range(self.n_blocks):
                self._check_args(self.blocks[i].json)
            n_finishes = self.n_finishes
        self._free_dialect_state()
        # decide() for the Evidence this scanner holds, without building it: the judgement
        # (the same as the last stream's, or _judge's, cached), then the counters.
        head = self._judgement(transport, residual, n_finishes)
        values = PyDict_Copy(head)
        values["residual_bytes"] = residual
        values["events"] = self.events
        values["bytes"] = self.total_bytes
        values["comments"] = self.comments
        values["malformed_events"] = self.malformed
        values["text_events"] = self.text
        values["reasoning_events"] = self.reasoning
        values["refusal_events"] = self.refusal
        values["tool_calls"] = self.tool_calls
        values["choices"] = n_finishes
        values["model"] = self._served_model()
        # _verdict._verdict(values), without the call: a Verdict whose __dict__ is values
        verdict = _object_new(Verdict)
        PyObject_GenericSetDict(verdict, values, NULL)
        return verdict


cdef enum Field:
    F_OTHER = 0
    F_DATA = 1
    F_EVENT = 2
    F_ID = 3
    F_RETRY = 4
    F_ERROR = 5

cdef inline int _field(const unsigned char* name, Py_ssize_t n) noexcept:
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


def scan(data, str protocol="auto", str transport="eof", *,
         max_event_bytes=DEFAULT_MAX_EVENT_BYTES, max_line_bytes=DEFAULT_MAX_LINE_BYTES):
    """Judge a whole captured stream at once."""
    cdef Scanner scanner = Scanner(protocol, max_event_bytes=max_event_bytes,
                                   max_line_bytes=max_line_bytes)
    scanner.feed(data)
    return scanner.close(transport)

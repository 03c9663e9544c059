# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled scanner: the C-speed twin of ``_scanner_py``, in the same layers.

Open one file at a time, in the order bytes travel:

- ``_framing.pxd``: bytes -> lines -> events (the Python twin's ``_framing_py``);
- ``_json.pxd``: the JSON automaton, which validates an event and records what
  ``_protocols.JSON_TREE`` names into the ``Record`` of ``_record.pxd`` (``_json_py``,
  ``_record_py``); ``_json_fast.pxd`` reads most whole events in one pass instead, with the same
  record calls (no twin: the twin's automaton is what it must agree with);
- ``_caches.pxd``: the caches of repeated events, replay, templates and judgements (the twin's
  ``_caches_py`` keeps nothing: the caches only skip work whose answer is known);
- this file: the ``Scanner``, which drives the layers, and the protocol rules that turn each
  event's record into the stream's evidence; and ``Caches``, the object that holds what
  scanners share.

``.pxd`` files hold declarations and ``cdef inline`` functions: they compile into this one
module.  The hot loop touches no Python object: lines are found with memchr, an event's JSON is
read in C, and the tables of ``_protocols`` are copied into C arrays at import.  Nothing here
decides a category: ``close()`` hands what it saw to ``_verdict._judge``, as ``decide`` does.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t
from libc.string cimport memchr, memcmp, memcpy

from ._cbytes cimport (CAP, MAX_CHOICES, MAX_DEPTH, MAX_TOOL_CALLS, Pos, Str, StrTable,
                       array_reserve, buf_append, buf_free, buf_reserve, fastsse_last_stop,
                       fastsse_plain_run, fastsse_prefetch, str_append, str_bytes, str_eq, strtable_fill, strtable_get,
                       strtable_get_str)
from ._caches cimport (COUNTED, JUDGED, MEMO_FINISHES, MEMO_MAX_BYTES, SPARE_MEMOS, TEMPLATE_CHOICES, TEMPLATES, Judged,
                       Memo, Template, TemplateTable, judged_same, memo_match, memo_set,
                       memo_missed, memo_settle, record_base, replay_run, replay_widest, template_follow,
                       template_links, template_make,
                       template_match, templates_clear, templates_paid, templates_skipped)
from ._eventstream cimport (CRC_BYTES, H_ERROR_CODE, H_EVENT_TYPE, H_EXCEPTION_TYPE,
                            H_MESSAGE_TYPE, MIN_FRAME_BYTES, N_HEADERS, PRELUDE_BYTES, Span,
                            HeadersKept, base64_decode, base64_widest, be32, crc32, eventstream_init, read_headers)
from ._framing cimport (CR, F_DATA, F_ERROR, F_EVENT, F_OTHER, LF, Framing, LineSearch, blank_after,
                        data_value_offset, event_tail, framing_idle, framing_start, line_end,
                        line_next, search_init, split_field)
from ._json cimport (KEY_SLOTS, S_ERROR, Json, json_done, json_feed, json_finish, json_finish_args,
                     json_init, json_new, json_tables_init, _hex, _unescape)
from ._json_fast cimport json_fast_tables_init, json_whole
from ._record cimport *  # the event record, its actions (all checked below) and hole roles

from . import _protocols as d
from . import _limits
from ._limits import DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES, check_options, check_transport
import inspect as _inspect

from . import _verdict
from ._verdict import Verdict, _judge, _judge_cached, _model_name

cdef extern from "Python.h":
    object PyType_GenericAlloc(type t, Py_ssize_t nitems)

# close() makes a Verdict as Verdict(**values) does, without the call: it allocates one as
# object.__new__(Verdict) does (Verdict has no __new__ of its own, nothing abstract) and puts
# each field's value in its slot.  Where each slot lies is found here, from an instance whose
# fields hold distinct objects: a Verdict whose layout differs stops the import.
cdef Py_ssize_t _FIELD_OFFSETS[32]
cdef int _N_FIELDS = len(_verdict.VERDICT_FIELDS)


cdef int _find_field_offsets() except -1:
    cdef Py_ssize_t i, at
    cdef Py_ssize_t words = Verdict.__basicsize__ // sizeof(PyObject*)
    if (Verdict.__new__ is not object.__new__ or getattr(Verdict, "__abstractmethods__", None)
            or _N_FIELDS > 32 or Verdict.__dictoffset__):
        raise ImportError("fastsse._scanner is stale: Verdict is not the class it makes")
    marks = [object() for _ in range(_N_FIELDS)]
    probe = Verdict(*marks)
    for i in range(_N_FIELDS):
        _FIELD_OFFSETS[i] = -1
        for at in range(words):
            if (<PyObject**><PyObject*>probe)[at] == <PyObject*>marks[i]:
                _FIELD_OFFSETS[i] = at
        if _FIELD_OFFSETS[i] < 2:  # past the object's head (its count and type)
            raise ImportError("fastsse._scanner is stale: a Verdict field is not in a slot")
    return 0


_find_field_offsets()


# The fields close() sets from the stream's counters; the others are its judgement (_judge's
# answer), which _judgement returns as a tuple in the order of _JUDGED_FIELDS.
_F = {name: i for i, name in enumerate(_verdict.VERDICT_FIELDS)}
cdef int _F_RESIDUAL_BYTES = _F.pop("residual_bytes"), _F_EVENTS = _F.pop("events")
cdef int _F_BYTES = _F.pop("bytes"), _F_COMMENTS = _F.pop("comments")
cdef int _F_MALFORMED_EVENTS = _F.pop("malformed_events"), _F_TEXT_EVENTS = _F.pop("text_events")
cdef int _F_REASONING_EVENTS = _F.pop("reasoning_events")
cdef int _F_REFUSAL_EVENTS = _F.pop("refusal_events"), _F_TOOL_CALLS = _F.pop("tool_calls")
cdef int _F_OUTPUT_EVENTS = _F.pop("output_events"), _F_CHOICES = _F.pop("choices")
cdef int _F_MODEL = _F.pop("model")
cdef tuple _JUDGED_FIELD_NAMES = tuple(_F)
cdef int N_JUDGED_FIELDS = len(_F)
cdef int _JUDGED_FIELDS[32]
for _i, _name in enumerate(_JUDGED_FIELD_NAMES):
    _JUDGED_FIELDS[_i] = _verdict.VERDICT_FIELDS.index(_name)
del _F, _i, _name


cdef inline void _set_field(object verdict, int field, object value) noexcept:
    """Put value in the field's slot of a Verdict that close() allocated (the slot is empty)."""
    Py_INCREF(value)
    (<PyObject**><PyObject*>verdict)[_FIELD_OFFSETS[field]] = <PyObject*>value


cdef enum:
    PREFETCH_AHEAD = 2048  # how far ahead of the reading the chunk is asked into the cache

cdef enum Kind:  # what a Responses or Anthropic event is, by its name (_protocols.EVENT_KINDS)
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
    K_ITEM_DONE = 15
    K_ARGS_DELTA = 16
    K_OUTPUT = 17
    K_FINISH_STOP = 18

cdef enum Protocol:
    D_NONE = 0
    D_CHAT = 1
    D_RESPONSES = 2
    D_ANTHROPIC = 3
    D_GEMINI = 4
    D_BEDROCK_CONVERSE = 5
    D_BEDROCK_INVOKE = 6
    D_OLLAMA = 7

cdef dict _PROTOCOL_CODES = {None: D_NONE, "chat": D_CHAT, "responses": D_RESPONSES,
                            "anthropic": D_ANTHROPIC, "gemini": D_GEMINI,
                            "bedrock-converse": D_BEDROCK_CONVERSE,
                            "bedrock-invoke": D_BEDROCK_INVOKE, "ollama": D_OLLAMA}
cdef tuple _PROTOCOL_NAMES = (_limits.UNKNOWN_PROTOCOL, "chat", "responses", "anthropic", "gemini",
                              "bedrock-converse", "bedrock-invoke", "ollama")

cdef enum Framing_:  # how the stream is framed (_scanner_py's FR_*)
    FR_UNDECIDED = 0
    FR_SSE = 1
    FR_ARRAY = 2  # one JSON array of events (Gemini without alt=sse)
    FR_EVENTSTREAM = 3
    FR_NDJSON = 4
    FR_LOST = 5  # after a corrupt frame: nothing more can be read
    FR_JSON_FIRST = 6  # auto, and "{" first: NDJSON or SSE, by whether the first line is JSON

# ============================================================================ checks at import

# The layers' compile-time copies of the shared constants, against the Python ones.
cdef dict _C_CONSTANTS = {
    "CAPTURE_BYTES": CAP, "MAX_JSON_DEPTH": MAX_DEPTH, "MAX_CHOICES": MAX_CHOICES,
    "JSON_KEY_SLOTS": KEY_SLOTS,
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
    "A_OUTPUT": A_OUTPUT, "A_REASONING_TOKENS": A_REASONING_TOKENS, "A_ITEM": A_ITEM,
    "A_ITEM_TEXT": A_ITEM_TEXT, "A_ITEM_REFUSAL": A_ITEM_REFUSAL, "A_OUTPUT_INDEX": A_OUTPUT_INDEX,
    "A_AUDIO_END": A_AUDIO_END, "A_CHUNK_BYTES": A_CHUNK_BYTES, "A_DONE": A_DONE, "A_CALL": A_CALL,
    "A_START_TOOL": A_START_TOOL, "A_START_RESULT": A_START_RESULT, "A_START_IMAGE": A_START_IMAGE,
    "A_INVOCATION_METRICS": A_INVOCATION_METRICS, "A_CHOICE_STOP": A_CHOICE_STOP,
    "A_GUARDRAIL": A_GUARDRAIL,
    "OUT_NONE": OUT_NONE, "OUT_TEXT": OUT_TEXT, "OUT_REASONING": OUT_REASONING,
    "OUT_TOOL": OUT_TOOL, "OUT_OTHER": OUT_OTHER, "ITEM_TEXT": ITEM_TEXT,
    "ITEM_REFUSAL": ITEM_REFUSAL, "ITEM_REASONING": ITEM_REASONING, "ITEM_TOOL": ITEM_TOOL,
    "ITEM_OUTPUT": ITEM_OUTPUT,
    "K_OTHER": K_OTHER, "K_TEXT_DELTA": K_TEXT_DELTA, "K_REFUSAL_DELTA": K_REFUSAL_DELTA,
    "K_REASONING_DELTA": K_REASONING_DELTA, "K_ITEM_ADDED": K_ITEM_ADDED,
    "K_ARGS_DONE": K_ARGS_DONE, "K_COMPLETED": K_COMPLETED, "K_INCOMPLETE": K_INCOMPLETE,
    "K_FAILED": K_FAILED, "K_ERROR": K_ERROR, "K_BLOCK_START": K_BLOCK_START,
    "K_BLOCK_DELTA": K_BLOCK_DELTA, "K_MESSAGE_DELTA": K_MESSAGE_DELTA,
    "K_MESSAGE_STOP": K_MESSAGE_STOP, "K_START": K_START, "K_ITEM_DONE": K_ITEM_DONE,
    "K_ARGS_DELTA": K_ARGS_DELTA, "K_OUTPUT": K_OUTPUT, "K_FINISH_STOP": K_FINISH_STOP,
    "EVENTSTREAM_FIRST_BYTE": 0x00, "NDJSON_FIRST_BYTE": 0x7B,
}
for _name, _value in _C_CONSTANTS.items():
    _shared = getattr(d, _name, None)
    if _shared is None:
        _shared = getattr(_limits, _name)
    if _shared != _value:
        raise ImportError(f"fastsse._scanner is stale: {_name} is {_value}, shared code says {_shared}")

# Every action the shared code defines has its compiled copy.
_missing = {name for name in dir(d) if name.startswith(("A_", "K_", "OUT_", "ITEM_")) and name.isupper()}
_missing -= set(_C_CONSTANTS)
if _missing:
    raise ImportError(f"fastsse._scanner is stale: no compiled copy of {sorted(_missing)}")

# The per-action tables hold 64 actions.
if max(_C_CONSTANTS[name] for name in _C_CONSTANTS if name.startswith("A_")) >= 64:
    raise ImportError("fastsse._scanner is stale: an action past 63 needs larger tables")

# close() passes _verdict._judge its arguments positionally, in this order.
_JUDGE_PARAMETERS = ("protocol", "transport", "limit", "errors", "error_code", "error_type", "end_marker",
                     "no_events", "residual", "malformed", "sequence_gap", "finishes", "blocked",
                     "guardrail", "text", "reasoning", "refusal", "tool_calls", "tool_malformed",
                     "output", "hidden_reasoning")
if tuple(_inspect.signature(_judge).parameters) != _JUDGE_PARAMETERS:
    raise ImportError("fastsse._scanner is stale: _verdict._judge's parameters changed; update close()")
if tuple(_PROTOCOL_NAMES[1:]) != d.PROTOCOLS:
    raise ImportError("fastsse._scanner is stale: _protocols.PROTOCOLS changed")
if (d.FRAMINGS != {"chat": "sse", "responses": "sse", "anthropic": "sse", "gemini": "sse",
                   "bedrock-converse": "eventstream", "bedrock-invoke": "eventstream",
                   "ollama": "ndjson"}
        or (d.BEDROCK_CHUNK_EVENT, d.EVENTSTREAM_EVENT, d.EVENTSTREAM_EXCEPTION,
            d.EVENTSTREAM_ERROR) != ("chunk", "event", "exception", "error")):
    raise ImportError("fastsse._scanner is stale: _protocols' framings changed")
if _verdict._CACHED_FINISHES != MEMO_FINISHES:
    raise ImportError("fastsse._scanner is stale: _CACHED_FINISHES changed")
cdef tuple _TRANSPORT_CODES = _verdict.TRANSPORTS
cdef tuple _LIMIT_CODES = tuple(_verdict.MESSAGE_LIMITS)


cdef int _protocol_setup(str protocol) except -1:
    """What a Scanner for protocol starts with, packed: the protocol detected (D_NONE: not yet),
    the outer one (D_BEDROCK_INVOKE: detected is its model's protocol, found from its first
    event) and the framing (FR_UNDECIDED: SSE or a JSON array, which the first byte tells)."""
    cdef int detected = _PROTOCOL_CODES[None if protocol == _limits.AUTO else protocol]
    cdef int outer = D_NONE, framing = FR_UNDECIDED
    if detected == D_BEDROCK_INVOKE:
        detected, outer = D_NONE, D_BEDROCK_INVOKE
    if protocol != _limits.AUTO and d.FRAMINGS[protocol] != d.FRAMING_SSE:
        framing = FR_EVENTSTREAM if d.FRAMINGS[protocol] == d.FRAMING_EVENTSTREAM else FR_NDJSON
    return detected | outer << 8 | framing << 16

# Scanner.__init__'s one look-up for its protocol argument: every name it accepts
cdef dict _PROTOCOL_SETUP = {name: _protocol_setup(name) for name in _limits.PROTOCOL_CHOICES}
cdef frozenset _TRANSPORTS = frozenset(_verdict.TRANSPORTS)

# ============================================================================ tables in C

cdef list _table_keys = []  # keeps the bytes of every table's keys alive
record_tables_init(d, _table_keys)
json_tables_init(d, _table_keys)
json_fast_tables_init(d)

eventstream_init()
cdef StrTable _responses_kinds, _anthropic_kinds, _converse_kinds, _detect_types
cdef StrTable _a_json_input, _r_name_statuses, _a_stop_details_win
strtable_fill(&_responses_kinds, d.EVENT_KINDS["responses"], _table_keys)
strtable_fill(&_anthropic_kinds, d.EVENT_KINDS["anthropic"], _table_keys)
strtable_fill(&_converse_kinds, d.EVENT_KINDS["bedrock-converse"], _table_keys)
strtable_fill(&_detect_types, {k: i for i, k in enumerate(d.DETECT_TYPES)}, _table_keys)
strtable_fill(&_a_json_input, {k: 1 for k in d.ANTHROPIC_JSON_INPUT_BLOCKS}, _table_keys)
strtable_fill(&_r_name_statuses, {k: 1 for k in d.RESPONSES_NAME_STATUSES}, _table_keys)
strtable_fill(&_a_stop_details_win, {k: 1 for k in d.ANTHROPIC_STOP_DETAILS_WIN}, _table_keys)
cdef list _detect_type_protocols = list(d.DETECT_TYPES.values())
cdef list _detect_prefixes = [(p.encode(), v) for p, v in d.DETECT_TYPE_PREFIXES]
cdef bytes _chat_object = d.CHAT_OBJECT.encode()
cdef bytes _chat_done_object = d.CHAT_DONE_OBJECT.encode()


cdef inline bint _is_chat_done(const Str* obj) noexcept:
    """Is a chat chunk's "object" _protocols.CHAT_DONE_OBJECT?"""
    return (obj.len == PyBytes_GET_SIZE(_chat_done_object)
            and memcmp(obj.s, PyBytes_AS_STRING(_chat_done_object), obj.len) == 0)


cdef bytes _audio_end = d.AUDIO_END_FINISH.encode()
cdef bytes _done = d.DONE_SENTINEL
cdef Str _ollama_done  # _protocols.OLLAMA_DONE_FINISH: a done line's finish when it names none
_ollama_done.len = 0
str_append(&_ollama_done, d.OLLAMA_DONE_FINISH.encode(), len(d.OLLAMA_DONE_FINISH))
cdef bytes _completed = d.RESPONSES_COMPLETED.encode()
cdef bytes _r_incomplete = d.RESPONSES_STATUS_INCOMPLETE.encode()

# ============================================================================ the caches

cdef inline bint _deltas_only(const Record* r) noexcept:
    """Are the event's holes all values no rule reads, but at most one text delta and one
    thinking delta (whose emptiness the rules count once per event, not once per value)?"""
    cdef int i, text = 0, thinking = 0, delta = 0, seq = 0
    if r.n_holes >= MAX_HOLES:
        return False  # a value past the last hole may be a delta, compared but counted too
    for i in range(r.n_holes):
        if r.hole_role[i] == H_DELTA_TEXT:
            text += 1
        elif r.hole_role[i] == H_DELTA_THINKING:
            thinking += 1
        elif r.hole_role[i] == H_DELTA:
            delta += 1
        elif r.hole_role[i] == H_SEQ:
            seq += 1
        elif r.hole_role[i] != H_FREE and r.hole_role[i] != H_NUMBER and r.hole_role[i] != H_SPACE:
            return False
    return text <= 1 and thinking <= 1 and delta <= 1 and seq <= 1


cdef inline void _count_as(int* roles, int detected, int kind) noexcept:
    """The hole roles a kept event of this protocol and kind counts as text, reasoning and
    refusal (-1: none), as its rules count it."""
    roles[0] = roles[1] = roles[2] = -1
    if detected == D_CHAT or detected == D_GEMINI:
        roles[0], roles[1], roles[2] = H_TEXT, H_REASONING, H_REFUSAL
    elif detected == D_RESPONSES:
        if kind == K_TEXT_DELTA:
            roles[0] = H_DELTA
        elif kind == K_REASONING_DELTA:
            roles[1] = H_DELTA
        elif kind == K_REFUSAL_DELTA:
            roles[2] = H_DELTA
    else:  # anthropic, converse, ollama: their text and thinking deltas
        roles[0], roles[1] = H_DELTA_TEXT, H_DELTA_THINKING


cdef enum:
    PADDING_MAX = 128  # the longest padding ("p") chunk_base64 looks for

cdef inline Pos chunk_base64(Pos p, Py_ssize_t n, Py_ssize_t* length) noexcept:
    """The base64 of the InvokeModel chunk payload p[:n] (its length in *length) when the payload
    is written as Bedrock writes it, {"bytes":"...","p":"..."} (or without "p"); NULL if it
    plainly is not.  The base64 is found from the payload's ends, not by reading it: whether it
    is base64 is base64_decode's to say, and its alphabet holds no quote, backslash or control
    byte, so text it decodes is a plain JSON string that the reader would read the same.  The
    caller reads the payload when the decoding fails."""
    cdef Py_ssize_t end = n - 2, quote, window
    if n < 12 or memcmp(p, b'{"bytes":"', 10) != 0 or p[n - 1] != b'}' or p[end] != b'"':
        return NULL
    window = min(end - 10, PADDING_MAX)
    quote = fastsse_last_stop(p + end - window, window)
    if quote >= 0:  # Bedrock's padding, a plain string after its opening quote
        quote += end - window
        if p[quote] != b'"' or quote < 16 or memcmp(p + quote - 6, b'","p":"', 7) != 0:
            return NULL
        end = quote - 6
    length[0] = end - 10
    return p + 10

cdef inline Py_ssize_t _trim(Pos line, Py_ssize_t* n) noexcept:
    """An NDJSON line line[:n] without the spaces, tabs and CRs around its JSON: where it starts,
    and n moved back to where it ends."""
    cdef Py_ssize_t start = 0
    while start < n[0] and (line[start] == b' ' or line[start] == b'\t' or line[start] == b'\r'):
        start += 1
    while n[0] > start and (line[n[0] - 1] == b' ' or line[n[0] - 1] == b'\t' or line[n[0] - 1] == b'\r'):
        n[0] -= 1
    return start


cdef inline bint _span_is(const Span* span, const char* text, Py_ssize_t n) noexcept:
    """Is the header's value text[:n]?"""
    return span.p != NULL and span.n == n and memcmp(span.p, text, n) == 0


@cython.final
cdef class Caches:
    """What scanners learn from the streams they read, for the streams after them.

    Templates of repeated events and the last few judgements (see ``_caches.pxd``): they
    make scanning faster, never different.  Every scanner of a process shares one
    (``default_caches``) unless it is given its own: a test that wants to start from nothing,
    or a gateway that keeps tenants apart.  Bounded (about 330 KiB); use it from one thread at
    a time, or with the GIL held, as every scanner does."""

    cdef TemplateTable* templates
    cdef Judged judged[JUDGED]
    cdef list judged_heads  # the answers of judged, as _judgement returns them (None: empty)
    cdef int judged_next  # the slot the next new judgement takes
    cdef Str named_model  # the last model name sanitized, and the name
    cdef object named_model_str

    def __cinit__(self):
        self.templates = <TemplateTable*>PyMem_Malloc(sizeof(TemplateTable))
        if self.templates == NULL:
            raise MemoryError()
        self.clear()

    def __dealloc__(self):
        PyMem_Free(self.templates)

    def clear(self):
        """Forget every template and judgement."""
        templates_clear(self.templates)
        self.judged_heads = [None] * JUDGED
        self.judged_next = 0
        self.named_model.len = -1
        self.named_model_str = None

    def stats(self):
        """How many template slots are filled, how many events tried templates, how much they
        paid lately (a score: negative when they did not), and how many judgements are kept."""
        cdef int i
        return {"template_slots": sum(1 for i in range(TEMPLATES) if self.templates.slots[i].len),
                "template_tries": self.templates.tries,
                "template_score": self.templates.score,
                "judgements": sum(1 for head in self.judged_heads if head is not None)}

    def template_bytes(self):
        """The bytes every template keeps: names and punctuation, never payload."""
        cdef int i
        return [PyBytes_FromStringAndSize(self.templates.slots[i].bytes, self.templates.slots[i].len)
                for i in range(TEMPLATES) if self.templates.slots[i].len]

    cdef object judgement(self, const Judged* k):
        """The answer judged last for key k, or None."""
        cdef int slot
        for slot in range(JUDGED):
            if self.judged_heads[slot] is not None and judged_same(k, &self.judged[slot]):
                return self.judged_heads[slot]
        return None

    cdef void remember(self, const Judged* k, object head):
        # key and answer together, after the call: another thread sees the old pair or the new
        cdef int slot = self.judged_next
        self.judged_next = (slot + 1) % JUDGED
        self.judged[slot] = k[0]
        self.judged_heads[slot] = head

    cdef object model_name(self, const Str* model):
        """The served model's name, sanitized: the last stream's again, most of the time."""
        if self.named_model_str is None or not str_eq(model, &self.named_model):
            name = _model_name(str_bytes(model))
            # both at once, after the call: another thread sees the old pair or the new one
            self.named_model = model[0]
            self.named_model_str = name
            return name
        return self.named_model_str


# The process's caches.  Scanners take the C variable, which no assignment from Python can
# rebind; default_caches names the same object for Python code.
cdef Caches _default_caches = Caches()
default_caches = _default_caches

# ============================================================================ the scanner

ctypedef struct ToolCall:  # chat: one tool call being accumulated
    int64_t choice
    int64_t index
    Str id
    Json* json

ctypedef struct Block:  # a call's input being accumulated (anthropic: by block index; responses: by output_index)
    int64_t index
    Json* json

ctypedef struct Finish:
    int64_t index
    Str raw


cdef class Scanner:
    """Judge one captured stream: ``feed()`` its bytes in any chunking, then ``close()``."""

    cdef readonly str protocol
    cdef readonly Py_ssize_t max_event_bytes
    cdef readonly Py_ssize_t max_line_bytes
    cdef readonly Caches caches
    cdef int detected  # the protocol whose rules read the events, once one is named (D_NONE before)
    cdef int outer  # D_BEDROCK_INVOKE: the stream's protocol, whose events are detected's
    cdef bint closed
    cdef object limit  # None or the name of the bound passed
    # evidence
    cdef Py_ssize_t total_bytes, events, comments, errors, malformed
    cdef Py_ssize_t text, reasoning, refusal, tool_calls, output
    cdef bint end_marker, sequence_gap, tool_malformed, hidden_reasoning
    cdef bint guardrail  # a Bedrock guardrail intervened (_protocols.GUARDRAIL_FINISH)
    cdef int items  # what whole items held (_protocols.ITEM_*)
    # how the stream is framed (FR_*): by its protocol, or by its first byte
    cdef int framing
    # a stream that is one JSON array of events (_scanner_py.Scanner._scan_array): inside an
    # element, its open containers
    cdef int depth
    cdef bint in_string, escape
    # an event stream (_eventstream.pxd): the frame being gathered across chunks, its length
    # once its prelude is read; a chunk's decoded event (bedrock-invoke)
    cdef Buf frame
    cdef Py_ssize_t frame_total
    cdef Buf inner
    cdef HeadersKept headers_kept
    cdef Buf first  # FR_JSON_FIRST: the first line, held until the framing is decided
    cdef Str error_code, error_type, model, blocked  # error_type: the type of error_code's error
    # framing (_framing.pxd)
    cdef Framing fr
    # JSON (_json.pxd, _json_fast.pxd, _record.pxd)
    cdef Json js
    cdef int* nodes
    cdef Record rec
    # protocol state
    cdef Finish* finishes
    cdef int n_finishes, cap_finishes
    cdef ToolCall* tools
    cdef int n_tools, cap_tools
    cdef Block* blocks
    cdef int n_blocks, cap_blocks
    cdef int64_t last_seq
    # caches (_caches.pxd): the kept event, and the templates of self.caches
    cdef Memo memo
    cdef Memo spare[SPARE_MEMOS]  # the events kept before it, the latest first
    cdef bint args_captured  # the arguments memo_match read last are in rec.captured
    cdef bint memo_event  # the event just read may be kept
    cdef int kind  # the event just interpreted: its K_* kind (anthropic, converse), else -1
    cdef bint template_event  # the event just read may become a template
    cdef bint detecting  # the event just interpreted named the stream's protocol (auto)
    cdef TemplateTable* templates  # self.caches.templates
    cdef int template_prev  # the template this stream matched or made last; -1: none yet
    cdef readonly Py_ssize_t replayed  # events counted by replay (tests check the path ran)
    cdef readonly Py_ssize_t in_runs  # of those, counted in runs (replay_run)
    cdef readonly Py_ssize_t templated  # events counted by a template (the same)

    # The choice and tool tables grow on demand (array_reserve), and the automaton's stack is
    # allocated when it first runs (_automaton): a Scanner starts with none of them.

    def __init__(self, str protocol="auto", *, max_event_bytes=DEFAULT_MAX_EVENT_BYTES,
                 max_line_bytes=DEFAULT_MAX_LINE_BYTES, Caches caches=None):
        # the usual arguments pass without a call; anything else gets check_options' answer
        cdef object setup = _PROTOCOL_SETUP.get(protocol)
        cdef int packed
        if not (type(max_event_bytes) is int and type(max_line_bytes) is int
                and max_event_bytes >= 1 and max_line_bytes >= 1 and setup is not None):
            check_options(protocol, max_event_bytes, max_line_bytes)
        self.protocol = protocol
        self.max_event_bytes = max_event_bytes
        self.max_line_bytes = max_line_bytes
        self.caches = _default_caches if caches is None else caches
        self.templates = self.caches.templates
        packed = setup
        self.detected = packed & 0xFF
        self.outer = (packed >> 8) & 0xFF
        self.framing = packed >> 16
        self.fr.at_start = True
        self.error_code.len = self.error_type.len = self.model.len = self.blocked.len = -1
        self.last_seq = -1
        self.template_prev = -1
        record_reset(&self.rec)

    def __dealloc__(self):
        self._free_protocol_state()
        buf_free(&self.fr.line)
        buf_free(&self.fr.data)
        buf_free(&self.fr.event_type)
        buf_free(&self.frame)
        buf_free(&self.inner)
        buf_free(&self.first)
        buf_free(&self.rec.captured)
        self._free_memos()
        PyMem_Free(self.nodes)
        PyMem_Free(self.rec.choices)
        PyMem_Free(self.rec.tools)
        PyMem_Free(self.rec.args)
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

    cdef void _free_protocol_state(self) noexcept:
        cdef int i
        for i in range(self.n_tools):
            PyMem_Free(self.tools[i].json)
        for i in range(self.n_blocks):
            PyMem_Free(self.blocks[i].json)
        self.n_tools = self.n_blocks = 0

    # ------------------------------------------------------------------ framing
    def feed(self, data):
        cdef Pos p
        cdef Py_ssize_t n, skip
        cdef int start
        if self.closed:
            raise RuntimeError("feed() after close()")
        if not isinstance(data, bytes):
            data = bytes(data)
        p = <Pos>PyBytes_AS_STRING(data)
        n = PyBytes_GET_SIZE(data)
        self.total_bytes += n
        if self.limit is not None or n == 0:
            return
        if not self.fr.at_start:
            self._scan(p, n)
            return
        start = framing_start(&self.fr, p, n, &skip)
        if start == 1:  # a BOM, dropped
            self._scan(p + skip, n - skip)
        elif start == 2:
            # no BOM: the held bytes are the stream's first; those from this chunk are read
            # where they lie, so that a first event in one chunk is read in place too
            if self.fr.head_len > skip:
                self._scan(self.fr.head, self.fr.head_len - skip)
                if self.limit is not None:
                    return
            self._scan(p, n)

    cdef int _scan_array(self, Pos p, Py_ssize_t n) except -1:
        """A JSON array of events: each top-level element is one event's data (see the twin)."""
        cdef Py_ssize_t pos = 0, start
        cdef unsigned char byte
        while pos < n:
            if not self.depth:
                byte = p[pos]
                pos += 1
                if byte == b'{':
                    self.depth = 1
                    self.in_string = self.escape = False
                    self.fr.data.len = 0
                    buf_append(&self.fr.data, "{", 1)
                elif not (byte == b' ' or byte == b'\t' or byte == b'\r' or byte == b'\n'
                          or byte == b',' or byte == b'[' or byte == b']'):
                    self.malformed += 1
                continue
            start = pos
            while pos < n and self.depth:
                byte = p[pos]
                pos += 1
                if self.in_string:
                    if self.escape:
                        self.escape = False
                    elif byte == b'\\':
                        self.escape = True
                    elif byte == b'"':
                        self.in_string = False
                elif byte == b'"':
                    self.in_string = True
                elif byte == b'{' or byte == b'[':
                    self.depth += 1
                elif byte == b'}' or byte == b']':
                    self.depth -= 1
            buf_append(&self.fr.data, <const char*>p + start, pos - start)
            if self.fr.data.len > self.max_event_bytes:
                self._exceed("event")
                return 0
            if not self.depth:
                buf_append(&self.fr.data, "\n", 1)  # readable past the end (json_whole)
                self._handle_event(<Pos>"message", 7, <Pos>self.fr.data.p, self.fr.data.len - 1)
                self.fr.data.len = 0
                if self.limit is not None:
                    return 0
        return 0

    cdef int _scan(self, Pos p, Py_ssize_t n) except -1:
        """Read the chunk p[:n], by the stream's framing."""
        if self.framing == FR_UNDECIDED:
            if self.protocol == _limits.AUTO:  # blank lines before anything tell nothing
                while n and (p[0] == LF or p[0] == CR):
                    p += 1
                    n -= 1
            if n == 0:
                return 0
            if p[0] == b'[':
                self.framing = FR_ARRAY
            elif self.protocol != _limits.AUTO:
                self.framing = FR_SSE
            elif p[0] == 0x00:  # _protocols.EVENTSTREAM_FIRST_BYTE
                self.framing = FR_EVENTSTREAM
            elif p[0] == b'{':  # _protocols.NDJSON_FIRST_BYTE
                self.framing = FR_JSON_FIRST
            else:
                self.framing = FR_SSE
        if self.framing == FR_JSON_FIRST:
            return self._hold_first_line(p, n)
        if self.framing == FR_SSE:
            return self._scan_sse(p, n)
        if self.framing == FR_ARRAY:
            return self._scan_array(p, n)
        if self.framing == FR_EVENTSTREAM:
            return self._scan_eventstream(p, n)
        if self.framing == FR_NDJSON:
            return self._scan_ndjson(p, n)
        return 0  # FR_LOST: nothing after a corrupt frame can be read

    cdef int _hold_first_line(self, Pos p, Py_ssize_t n) except -1:
        """auto, and the stream starts with "{": NDJSON (Ollama) if its first line is whole
        JSON, else SSE, where a bare JSON object may span lines (a pretty-printed error body).
        The first line is held until its newline, or past max_line_bytes (then SSE, which
        reports the limit)."""
        cdef const unsigned char* hit = <const unsigned char*>memchr(p, LF, n)
        cdef Py_ssize_t take = hit - p + 1 if hit != NULL else n
        cdef Py_ssize_t room = self.max_line_bytes - self.first.len  # >= 0 (else decided)
        if take - 1 > room:  # (no sum: max_line_bytes may be the largest Py_ssize_t)
            take = room + 1
            hit = NULL
        buf_append(&self.first, <const char*>p, take)
        if hit != NULL:
            self._decide_framing(self.first.len - 1)
        elif self.first.len > self.max_line_bytes:
            self._decide_framing(-1)
        else:
            return 0
        if take < n and self.limit is None:
            self._scan(p + take, n - take)
        return 0

    cdef int _decide_framing(self, Py_ssize_t line_len) except -1:
        """The held first line's first line_len bytes are the line (-1: not JSON, whatever
        they are): the framing is decided, and what was held is read by it."""
        cdef bytes held = PyBytes_FromStringAndSize(self.first.p, self.first.len)
        cdef Py_ssize_t start, end = line_len
        self.framing = FR_SSE
        if line_len >= 0:
            start = _trim(<Pos>PyBytes_AS_STRING(held), &end)
            # (a bytes object's end is readable: json_whole)
            if end > start and _read_json(self, <Pos>PyBytes_AS_STRING(held) + start, end - start):
                self.framing = FR_NDJSON
        buf_free(&self.first)
        self._scan(<Pos>PyBytes_AS_STRING(held), PyBytes_GET_SIZE(held))
        return 0

    cdef int _scan_ndjson(self, Pos p, Py_ssize_t n) except -1:
        """Newline-delimited JSON: each line one event's data (blank lines are nothing)."""
        cdef Py_ssize_t pos = 0, end, value_off
        cdef const unsigned char* hit
        while pos < n:
            if self.fr.line.len == 0:
                # between lines: the caches may count whole lines that repeat known ones
                pos = self._repeats(p, pos, n)
                if pos == n:
                    break
            hit = <const unsigned char*>memchr(p + pos, LF, n - pos)
            if hit == NULL:
                break
            end = hit - p
            if self.fr.line.len:
                if self._too_long(self.fr.line.len + end - pos, <unsigned char>self.fr.line.p[0]):
                    return 0
                buf_append(&self.fr.line, <const char*>p + pos, end - pos)
                buf_append(&self.fr.line, "\n", 1)  # readable past the end (json_whole)
                self._ndjson_line(<Pos>self.fr.line.p, self.fr.line.len - 1)
                self.fr.line.len = 0
            else:
                if end > pos and self._too_long(end - pos, p[pos]):
                    return 0
                self.memo_event = self.template_event = False
                value_off = self._ndjson_line(p + pos, end - pos)  # p[end], its LF, is readable
                if (self.memo_event or self.template_event) and self.limit is None:
                    self._keep_event(p + pos, 1, end - pos, value_off)
            if self.limit is not None:
                return 0
            pos = end + 1
        if pos < n:
            if self._too_long(self.fr.line.len + n - pos,
                              <unsigned char>self.fr.line.p[0] if self.fr.line.len else p[pos]):
                return 0
            buf_append(&self.fr.line, <const char*>p + pos, n - pos)
        return 0

    cdef Py_ssize_t _ndjson_line(self, Pos line, Py_ssize_t n) except -1:
        """One line, line[:n] (line[n] readable): an event, unless it is blank.  Returns where
        its JSON starts."""
        cdef Py_ssize_t start = _trim(line, &n)
        if n > start:
            self._handle_event(<Pos>"message", 7, line + start, n - start)
        return start

    cdef bint _ndjson_whole(self, Pos line, Py_ssize_t n) except -1:
        """The stream's last line, line[:n] without its newline (line[n] readable): read as an
        event if it is whole JSON (True; blank: True, nothing read), else left as residue."""
        cdef Py_ssize_t start = _trim(line, &n)
        if n == start:
            return True  # blank: nothing to read, nothing left
        if not _read_json(self, line + start, n - start):
            return False
        self._handle_event(<Pos>"message", 7, line + start, n - start)
        return True

    cdef int _scan_eventstream(self, Pos p, Py_ssize_t n) except -1:
        """An AWS event stream: each frame where it lies in the chunk, or gathered across
        chunks when it is split."""
        cdef Py_ssize_t pos = 0, total, take
        while pos < n:
            if self.frame.len == 0 and n - pos >= PRELUDE_BYTES:
                total = self._prelude(p + pos)
                if total < 0:
                    return 0
                if n - pos >= total:
                    self._frame(p + pos, total)
                    if self.limit is not None:
                        return 0
                    pos += total
                    continue
                self.frame_total = total
            take = (self.frame_total if self.frame_total else PRELUDE_BYTES) - self.frame.len
            if take > n - pos:
                take = n - pos
            buf_append(&self.frame, <const char*>p + pos, take)
            pos += take
            if not self.frame_total:
                if self.frame.len < PRELUDE_BYTES:
                    return 0
                total = self._prelude(<Pos>self.frame.p)
                if total < 0:
                    return 0
                self.frame_total = total
            if self.frame.len == self.frame_total:
                total = self.frame_total
                self.frame_total = 0
                self._frame(<Pos>self.frame.p, total)
                self.frame.len = 0
                if self.limit is not None:
                    return 0
        return 0

    cdef Py_ssize_t _prelude(self, Pos q) except -2:
        """The length of the frame whose prelude is q[:12], or -1: a corrupt prelude (the rest
        of the stream is lost) or a frame past the bound (the limit is set)."""
        cdef Py_ssize_t total = be32(q), headers_len = be32(q + 4)
        if (crc32(0, q, 8) != be32(q + 8) or total < MIN_FRAME_BYTES
                or headers_len > total - MIN_FRAME_BYTES):
            self.malformed += 1
            self.framing = FR_LOST
            self.frame.len = 0
            self.frame_total = 0
            return -1
        if total > self.max_event_bytes:
            self._exceed("event")
            return -1
        return total

    cdef int _frame(self, Pos f, Py_ssize_t total) except -1:
        """One whole frame f[:total], its prelude checked: an event, an exception or an error,
        or malformed."""
        cdef Py_ssize_t headers_len = be32(f + 4)
        cdef Span h[N_HEADERS]
        cdef Span* fault
        cdef Pos payload = f + PRELUDE_BYTES + headers_len
        cdef Py_ssize_t payload_len = total - headers_len - MIN_FRAME_BYTES
        cdef int read
        self.events += 1
        # the message's CRC goes on from the prelude's, which _prelude checked (zlib's crc32)
        if crc32(be32(f + 8), f + 8, total - PRELUDE_BYTES) != be32(f + total - CRC_BYTES):
            self.malformed += 1
            return 0
        if (self.memo.event.len and self.outer == D_NONE
                and self._replay_whole(f + PRELUDE_BYTES, total - MIN_FRAME_BYTES, headers_len)):
            return 0
        if read_headers(&self.headers_kept, f + PRELUDE_BYTES, headers_len, h) < 0:
            self.malformed += 1
            return 0
        if _span_is(&h[H_MESSAGE_TYPE], b"exception", 9):
            fault = &h[H_EXCEPTION_TYPE]
        elif _span_is(&h[H_MESSAGE_TYPE], b"error", 5):
            fault = &h[H_ERROR_CODE]
        elif _span_is(&h[H_MESSAGE_TYPE], b"event", 5):
            fault = NULL
        else:
            return 0  # no other kind of message is known: nothing to judge
        if fault != NULL:
            self.errors += 1
            if self.error_code.len < 0 and fault.p != NULL and fault.n > 0:
                self.error_code.len = 0
                str_append(&self.error_code, <const char*>fault.p, min(fault.n, CAP))
            return 0
        if self.detected == D_NONE and self.outer == D_NONE:
            if _span_is(&h[H_EVENT_TYPE], b"chunk", 5):
                self.outer = D_BEDROCK_INVOKE
            else:
                self.detected = D_BEDROCK_CONVERSE
        if self.outer != D_NONE:
            if _span_is(&h[H_EVENT_TYPE], b"chunk", 5):
                self._chunk(payload, payload_len)
            return 0
        # payload[payload_len], the frame's CRC, is readable
        read = _read_json(self, payload, payload_len)
        if not read:
            self.malformed += 1
            return 0
        if h[H_EVENT_TYPE].p == NULL:
            self._interpret(<Pos>"", 0)
        else:
            self._interpret(h[H_EVENT_TYPE].p, h[H_EVENT_TYPE].n)
        if (read == 1 and self.limit is None and total - MIN_FRAME_BYTES <= MEMO_MAX_BYTES
                and self._replayable()):
            # kept without its prelude and CRCs, which change with the payload's length
            self._keep(f + PRELUDE_BYTES, 0, total - MIN_FRAME_BYTES, headers_len, headers_len)
        return 0

    cdef bint _replay_whole(self, Pos event, Py_ssize_t n, Py_ssize_t headers) except -1:
        """Count the event event[:n] if it repeats the kept one; False if it does not.  It is a
        frame's headers and payload (its CRCs checked; headers: their length) or an InvokeModel
        chunk's decoded event (headers: -1), whose end is known: no line to look for."""
        cdef Py_ssize_t counts[COUNTED]
        cdef unsigned same
        cdef Pos args
        cdef Py_ssize_t args_width
        cdef int64_t seq
        cdef Pos q
        if self.memo.tool or self.memo.seq or self.memo.block:
            return False  # (no such event is kept: neither Converse's rules nor Bedrock's read them)
        q = NULL
        if self.memo.headers == headers:
            q = self._memo_match(&self.memo, event, event + n, counts, &same, &args, &args_width,
                                 &seq)
        if q == NULL:
            q = self._match_spare(event, event + n, headers, counts, &same, &args, &args_width,
                                  &seq)
        if q != event + n:
            return False
        self._count_replayed(counts, same)
        return True

    cdef inline void _count_replayed(self, const Py_ssize_t* counts, unsigned same) noexcept:
        """What the rules (_choices, _anthropic, ...) would do with an event that repeats the
        kept one, whose holes counted counts and held the kept value again where same says."""
        if self.memo.reopens:
            self.end_marker = False  # (_choices: a Gemini chunk must close its candidates)
        self._add_content(counts[0], counts[1], counts[2])
        self.replayed += 1
        if self.memo.fresh:
            memo_settle(&self.memo, same)

    cdef int _chunk(self, Pos payload, Py_ssize_t n) except -1:
        """A Bedrock InvokeModel chunk: the model's own event, base64 in its "bytes".  The
        decoded event is replayed when it repeats the kept one, as an SSE event would be."""
        cdef Py_ssize_t size = -1, b64_len
        cdef Pos b64 = chunk_base64(payload, n, &b64_len)
        cdef int read
        if b64 != NULL:
            size = self._decode_chunk(b64, b64_len)
        if size <= 0:  # not as Bedrock writes it, or not base64: the reader reads it
            if not _read_json(self, payload, n) or self.rec.chunk_len < 0:
                self.malformed += 1
                return 0
            size = self._decode_chunk(<Pos>self.rec.captured.p + self.rec.chunk_off,
                                      self.rec.chunk_len)
            if size <= 0:
                self.malformed += 1
                return 0
        if self.memo.event.len and self._replay_whole(<Pos>self.inner.p, size, -1):
            return 0
        read = _read_json(self, <Pos>self.inner.p, size)
        if not read:
            self.malformed += 1
            return 0
        self._interpret(<Pos>"", 0)
        if self.rec.guardrail:
            self.guardrail = True
        if (self.rec.metrics or self.rec.guardrail) and self.detected != D_ANTHROPIC:
            # Bedrock's last chunk, or a guardrail's answer (_scanner_py.Scanner._chunk)
            self.end_marker = True
        if (read == 1 and self.limit is None and size <= MEMO_MAX_BYTES
                and self._replayable()):
            self._keep(<Pos>self.inner.p, 0, size, 0, -1)
        return 0

    cdef Py_ssize_t _decode_chunk(self, Pos b64, Py_ssize_t n) except -2:
        """The base64 b64[:n] decoded into self.inner (a newline past its end, readable for
        json_whole): its length, or -1 if it is not base64."""
        cdef Py_ssize_t size
        self.inner.len = 0
        buf_reserve(&self.inner, n // 4 * 3 + 8)  # (base64_decode's room)
        size = base64_decode(b64, n, <unsigned char*>self.inner.p)
        if size > 0:
            self.inner.p[size] = b'\n'
        return size

    cdef int _scan_sse(self, Pos p, Py_ssize_t n) except -1:
        """Server-Sent Events: the lines of the chunk p[:n], and the events they end."""
        cdef Py_ssize_t pos = 0, end, length, blank, value_off, lead
        cdef Py_ssize_t start = -1  # where the event being built began, if in this chunk
        cdef LineSearch search
        search_init(&search)
        if self.fr.pending_cr:
            self.fr.pending_cr = False
            if n and p[0] == LF:
                pos = 1
        while True:
            if framing_idle(&self.fr):
                # between events: the caches may count whole events that repeat known ones
                pos = self._repeats(p, pos, n)
                start = pos
            end = line_end(&search, p, pos, n)
            if end < 0:
                break
            length = end - pos
            if self.fr.line.len:
                if self._too_long(self.fr.line.len + length, <unsigned char>self.fr.line.p[0]):
                    return 0
                buf_append(&self.fr.line, <const char*>p + pos, length)
                self._process_line(<Pos>self.fr.line.p, self.fr.line.len)
                self.fr.line.len = 0
            else:
                if length and self._too_long(length, p[pos]):
                    return 0
                blank = blank_after(p, n, end)
                if (blank >= 0 and self.fr.data_lines == 0 and not self.fr.bare_active
                        and length >= 5 and memcmp(p + pos, b"data:", 5) == 0):
                    # A whole one-line event inside this chunk ("data: ...", then a blank
                    # line): read it where it lies instead of copying it into fr.data, with
                    # the calls _process_line and _dispatch would make, in order.  Then it
                    # may be kept for the caches.  (Written out here, not in a method: the
                    # call costs about 1% of reading a Responses stream.)
                    value_off = data_value_offset(p + pos, length)
                    lead = self._event_lead(p, start, pos)
                    self.memo_event = self.template_event = False
                    self._dispatch_data(p + pos + value_off, length - value_off)
                    if lead >= 0 and (self.memo_event or self.template_event) and self.limit is None:
                        self._keep_event(p + pos - lead, event_tail(p, n, end, blank),
                                         lead + length, lead + value_off)
                    end = blank
                else:
                    self._process_line(p + pos, length)
            if self.limit is not None:
                return 0
            pos = line_next(&self.fr, p, end, n)
        if pos < n:
            if self._too_long(self.fr.line.len + n - pos,
                              <unsigned char>self.fr.line.p[0] if self.fr.line.len else p[pos]):
                return 0
            buf_append(&self.fr.line, <const char*>p + pos, n - pos)
        return 0

    cdef inline Py_ssize_t _event_lead(self, Pos p, Py_ssize_t start, Py_ssize_t pos) noexcept:
        """The "data:" line at p[pos] is the last of its event: how many bytes of the event
        come before it in p, if they are one "event:" line begun at p[start] (Anthropic's and
        Responses' events) or none; else -1 (the caches keep such events only)."""
        cdef Py_ssize_t eol
        if self.fr.event_type.len == 0 and self.fr.event_bytes == 0:
            return 0
        if start < 0 or pos - start < 8 or memcmp(p + start, b"event:", 6) != 0:
            return -1
        # one line, its CR, LF or CRLF, and nothing else: every other line would add bytes or
        # a line end that event_bytes does not count
        eol = 2 if p[pos - 1] == LF and p[pos - 2] == CR else 1
        return pos - start if self.fr.event_bytes == pos - start - eol else -1

    cdef int _keep_event(self, Pos event, Py_ssize_t tail, Py_ssize_t length,
                         Py_ssize_t value_off) except -1:
        """The event just read in place, event[:length] and its line end and blank line (tail
        bytes, 0 for an ending the caches do not take), its data at value_off, is kept to
        replay the events that repeat it, or becomes a template, as _handle_event found it
        may."""
        cdef Py_ssize_t size = length + tail
        cdef Template* t
        if tail == 0 or size > MEMO_MAX_BYTES:
            return 0
        if self.memo_event:
            self._keep(event, tail, size, value_off, -1)
        if self.template_event and not templates_skipped(self.templates):
            t = template_make(self.templates, &self.template_prev, &self.rec, event, tail, size,
                              value_off, self.memo_event, self.detected,
                              self.detected if self.detecting else -1)
            # the rest of its effect, as _note_whole and _responses found it (a function of its
            # bytes and holes, as the rest is: a twin's is the same)
            t.items = self.rec.items & ~(ITEM_TEXT | ITEM_REFUSAL)  # those two: by its holes
            t.ends = t.ends_block = False
            t.kind = self.kind
            if self.detected == D_RESPONSES:
                if self.kind == K_ITEM_DONE:
                    t.ends_block = True
                    t.block_index = self.rec.output_index
                elif self.kind == K_COMPLETED or self.kind == K_INCOMPLETE:
                    t.ends = True
                    t.n_choices = 1
                    t.index[0] = 0
                    self._terminal_finish(self.kind, &t.finish[0])
            elif self.detected == D_OLLAMA and self.rec.done == 1:  # (_ollama: the last line)
                t.ends = True
                t.n_choices = 1
                t.index[0] = 0
                t.finish[0] = self.rec.stop_reason if self.rec.stop_reason.len > 0 else _ollama_done
        return 0

    cdef int _dispatch_data(self, Pos data, Py_ssize_t n) except -1:
        """The event whose data is data[:n] (data[n] must be readable), of the type an "event:"
        line buffered so far gives it, "message" without one."""
        cdef Pos etype
        cdef Py_ssize_t etype_len
        if self.fr.event_type.len:  # an empty "event:" means "message" too
            etype = <Pos>self.fr.event_type.p
            etype_len = self.fr.event_type.len
        else:
            etype = <Pos>"message"
            etype_len = 7
        self._handle_event(etype, etype_len, data, n)
        self.fr.event_type.len = 0
        self.fr.event_bytes = 0
        return 0

    cdef bint _too_long(self, Py_ssize_t line_length, unsigned char first) except -1:
        if line_length > self.max_line_bytes:
            self._exceed("line")
        elif (first != b':' and
              self.fr.event_bytes + self.fr.bare_bytes + line_length > self.max_event_bytes):
            self._exceed("event")
        else:
            return False
        return True

    cdef void _exceed(self, str which):
        self.limit = which
        # drop every buffer at once: nothing more is read
        buf_free(&self.fr.line)
        buf_free(&self.fr.data)
        buf_free(&self.rec.captured)
        self._free_memos()
        buf_free(&self.frame)
        buf_free(&self.inner)
        buf_free(&self.first)
        self.frame_total = 0
        self.fr.bare_active = False
        self._free_protocol_state()

    cdef int _process_line(self, Pos line, Py_ssize_t n) except -1:
        cdef Py_ssize_t value_off
        cdef int field
        if n == 0:
            self._dispatch()
            return 0
        if line[0] == b':':
            self.comments += 1
            return 0
        field = split_field(line, n, &value_off)
        if self.fr.bare_active:
            if field == F_OTHER or field == F_ERROR:
                self.fr.bare_bytes += n
                self._feed_bare(line, n)
                return 0
            self._abandon_bare()
        if line[0] == b'{':
            # a bare JSON object, not framed as SSE (Gemini's mid-stream errors)
            record_reset(&self.rec)
            json_init(&self.js, &self.rec, self._automaton())
            self.fr.bare_active = True
            self.fr.bare_bytes = n
            self._feed_bare(line, n)
            return 0
        self.fr.event_bytes += n
        if field == F_DATA:
            buf_append(&self.fr.data, <const char*>line + value_off, n - value_off)
            buf_append(&self.fr.data, "\n", 1)
            self.fr.data_lines += 1
        elif field == F_EVENT:
            self.fr.event_type.len = 0
            buf_append(&self.fr.event_type, <const char*>line + value_off, n - value_off)
        elif field == F_ERROR:  # llama.cpp sent errors as an "error:" field
            self.errors += 1
        return 0

    cdef int _feed_bare(self, Pos line, Py_ssize_t n) except -1:
        json_feed(&self.js, line, n)
        json_feed(&self.js, <Pos>"\n", 1)
        if self.js.state == S_ERROR:
            self._abandon_bare()
        elif json_done(&self.js):
            self.fr.bare_active = False
            self.fr.bare_bytes = 0
            self.events += 1
            self._interpret(<Pos>"", 0)
        return 0

    cdef int _last_bare_line(self) except -1:
        """close(): the last line, without its newline, of a bare JSON object (an error body
        sent whole instead of a stream) is that object's last line, as an NDJSON line may lack
        its newline.  Any other unterminated line stays residue."""
        cdef Py_ssize_t value_off, n = self.fr.line.len
        cdef Pos line = <Pos>self.fr.line.p
        cdef int field
        if self.fr.bare_active:
            field = split_field(line, n, &value_off)
            if field != F_OTHER and field != F_ERROR:
                return 0
        elif line[0] != b'{':
            return 0
        self.fr.line.len = 0  # (its bytes stay where they are until the scanner is freed)
        self._process_line(line, n)
        return 0

    cdef void _abandon_bare(self) noexcept:
        self.fr.bare_active = False
        self.fr.bare_bytes = 0
        self.malformed += 1

    cdef int _dispatch(self) except -1:
        if self.fr.bare_active:
            self._abandon_bare()
        if self.fr.data_lines:
            self.fr.data_lines = 0
            # the data without its last "\n", which stays readable past the end (json_whole)
            self._dispatch_data(<Pos>self.fr.data.p, self.fr.data.len - 1)
            self.fr.data.len = 0
        self.fr.event_type.len = 0
        self.fr.event_bytes = 0
        return 0

    # ------------------------------------------------------------------ events
    cdef int _handle_event(self, Pos etype, Py_ssize_t etype_len, Pos data,
                           Py_ssize_t n) except -1:
        """data[:n] is the event's data; data[n] must be readable."""
        cdef int read
        cdef bint error_type = etype_len == 5 and memcmp(etype, "error", 5) == 0
        self.events += 1
        if error_type:
            self.errors += 1
        if n == 0:  # "data:" alone: a keep-alive, nothing to judge
            return 0
        if n == PyBytes_GET_SIZE(_done) and memcmp(data, PyBytes_AS_STRING(_done), n) == 0:
            if self.detected == D_NONE:
                self.detected = D_CHAT
            if self.detected == D_CHAT:
                self.end_marker = True
            return 0
        read = _read_json(self, data, n)
        if read == 0:
            self.malformed += 1
            return 0
        self._interpret(etype, etype_len)
        if read == 1 and not error_type:  # (an "error" event counts as one by its type alone)
            self.memo_event = self._replayable()
            self.template_event = self._templatable()
        return 0

    # ------------------------------------------------------------------ the caches
    # (_caches.pxd says what they keep and why their answers are the reading's)

    cdef inline Py_ssize_t _repeats(self, Pos p, Py_ssize_t pos, Py_ssize_t n) except -1:
        """Between events: count the events from p[pos] on that the caches know (the kept
        event's repeats, then one event of a template); return where the first one they do
        not know starts."""
        cdef Py_ssize_t start
        while True:
            while self.memo.event.len:
                # a plain event's repeats in runs; between runs, _replay takes the one a run
                # left if it is a repeat after all (a time stamp of another width), and returns
                # to the run (any other event's repeats it counts to the last)
                if self.memo.plain:
                    pos = self._replay_run(p, pos, p + n)
                start = pos
                pos = self._replay(p, pos, n)
                if pos == start or not self.memo.plain:
                    break
            if pos >= n or not self._templated_here():
                return pos
            start = pos
            pos = self._from_template(p, pos, n)
            if pos == start:
                return pos
            # a template's event may be kept: replay what repeats it

    cdef bint _replayable(self) noexcept:
        """Would the event just interpreted, seen again, change nothing but its counters?"""
        cdef Record* r = &self.rec
        cdef int i
        if (self.limit is not None or r.error or r.too_many or r.n_tools > 1 or r.out_of_memory
                or r.items or r.n_args or r.unrepeatable or r.metrics or r.guardrail):
            # (metrics: Bedrock's last chunk, an end marker that replay does not set; guardrail:
            # the same, and the stream's finish.  Usage's count of reasoning tokens is no hole:
            # a repeat says it again, and hidden_reasoning is set already.)
            return False
        if self.detected == D_ANTHROPIC or self.detected == D_BEDROCK_CONVERSE:
            # a block's text or thinking delta (not a tool's input, which is state)
            return self.kind == K_BLOCK_DELTA and r.delta_json_len < 0 and _deltas_only(r)
        if self.detected == D_OLLAMA:
            # a line that is not the last: its text and thinking, no whole tool call
            return (r.done != 1 and r.calls == 0 and r.n_choices == 0 and r.n_tools == 0
                    and _deltas_only(r))
        if self.detected == D_RESPONSES:
            # a text, refusal or reasoning delta, or a call's argument delta (whose fragment a
            # replay feeds to its item's JSON check, as reading it does)
            return ((self.kind == K_TEXT_DELTA or self.kind == K_REFUSAL_DELTA
                     or self.kind == K_REASONING_DELTA or self.kind == K_ARGS_DELTA)
                    and r.n_choices == 0 and r.n_tools == 0 and _deltas_only(r))
        if self.detected != D_CHAT and not (self.detected == D_GEMINI and r.block_reason.len < 0):
            return False
        # One tool call fragment without an id continues the call it names: seen again, it
        # adds its arguments to that call.  With an id it may start a call.
        if r.n_tools == 1 and r.tools[0].id.len > 0:
            return False
        for i in range(r.n_choices):
            # a finish reason is state, and so are a Gemini part's calls; a choice seen before
            # is not
            if (r.choices[i].finish.len >= 0 or r.choices[i].stop.len >= 0 or r.choices[i].tool
                    or r.choices[i].output or r.choices[i].audio_end):
                return False
        return True

    cdef int _keep(self, Pos event, Py_ssize_t tail, Py_ssize_t size, Py_ssize_t value_off,
                   Py_ssize_t headers) except -1:
        """Keep the event just read in place, event[:size] (its line end and blank line the
        last tail bytes, its data at value_off; a frame's headers the first headers bytes, -1
        for a line), to replay the events that repeat it."""
        cdef Record* r = &self.rec
        cdef Py_ssize_t starts[MAX_HOLES]
        cdef Py_ssize_t ends[MAX_HOLES]
        cdef Py_ssize_t base[N_ROLES]
        cdef unsigned char roles[MAX_HOLES]
        cdef int i, args = 0
        for i in range(r.n_holes):
            args += r.hole_role[i] == H_ARGS
        if args > (r.n_tools == 1):
            return 0  # arguments sent twice in one fragment: read such events
        self._begin_memo(r.hole_role, r.n_holes, self.kind, r.n_choices, headers)
        self.memo.tool = r.n_tools == 1
        # a Responses argument delta: its delta (one, _deltas_only) is the arguments, fed to the
        # JSON check of the item at its output_index
        self.memo.block = self.detected == D_RESPONSES and self.kind == K_ARGS_DELTA
        self.memo.block_index = r.output_index
        memcpy(roles, r.hole_role, r.n_holes * sizeof(unsigned char))
        for i in range(r.n_holes):
            if self.memo.block and roles[i] == H_DELTA:
                roles[i] = H_ARGS
        if self.memo.tool:
            for i in range(r.n_choices):
                if r.choices[i].tool_count:
                    self.memo.tool_choice = (r.choices[i].index if r.choices[i].index >= 0
                                             else r.choices[i].ordinal)
            self.memo.tool_index = r.tools[0].index if r.tools[0].index != -1 else r.tools[0].ordinal
        record_base(r, base)
        for i in range(r.n_holes):
            starts[i] = value_off + r.hole_start[i]
            ends[i] = value_off + r.hole_end[i]
        return memo_set(&self.memo, event, size, tail, r.n_holes, starts, ends, roles, base)

    cdef void _free_memos(self) noexcept:
        cdef int i
        buf_free(&self.memo.event)
        for i in range(SPARE_MEMOS):
            buf_free(&self.spare[i].event)

    cdef inline void _begin_memo(self, const unsigned char* roles, int n_holes, int kind, int n_choices,
                                 Py_ssize_t headers) noexcept:
        """An event of this kind with these hole roles is about to be kept (by _keep from its
        Record, or from the template it matched): what its replays check and count besides its
        bytes, which memo_set keeps.  Tool calls and argument deltas are _keep's to add."""
        cdef int i
        self._spare_memo()
        self.memo.tool = self.memo.block = False
        self.memo.seq = False  # a Responses event's sequence number, which must follow the last
        if self.detected == D_RESPONSES:
            for i in range(n_holes):
                self.memo.seq |= roles[i] == H_SEQ
        self.memo.reopens = self.detected == D_GEMINI and n_choices > 0
        self.memo.headers = headers
        _count_as(self.memo.count_as, self.detected, kind)

    cdef void _spare_memo(self) noexcept:
        """An event is about to be kept: the current one becomes the latest spare, and the
        oldest spare's buffer is the current one's to reuse.  (Not in chat, whose shapes follow
        one another rather than take turns: there spares cost more than they find.)"""
        cdef Memo oldest
        cdef int i
        if self.memo.event.len == 0 or self.detected == D_CHAT:
            return
        oldest = self.spare[SPARE_MEMOS - 1]
        for i in range(SPARE_MEMOS - 1, 0, -1):
            self.spare[i] = self.spare[i - 1]
        self.spare[0] = self.memo
        self.memo = oldest

    cdef Pos _memo_match(self, Memo* m, Pos q, Pos end, Py_ssize_t* counts, unsigned* same,
                         Pos* args, Py_ssize_t* args_width, int64_t* seq) except? NULL:
        """memo_match, called here by all but the hot loop of _replay (which inlines it)."""
        return memo_match(m, &self.rec, q, end, counts, same, args, args_width,
                          &self.args_captured, seq)

    cdef Pos _match_spare(self, Pos q, Pos end, Py_ssize_t headers, Py_ssize_t* counts,
                          unsigned* same, Pos* args, Py_ssize_t* args_width,
                          int64_t* seq) except? NULL:
        """The current event did not match: memo_match with the spares (a frame's with the
        same headers length; no tool call's fragment, whose call the caller found for the
        current one).  A spare that matches becomes the current one."""
        cdef Pos close
        cdef Memo swap
        cdef int i
        for i in range(SPARE_MEMOS):
            if (self.spare[i].event.len == 0 or self.spare[i].tool or self.spare[i].block
                    or (headers >= 0 and self.spare[i].headers != headers)):
                continue
            close = self._memo_match(&self.spare[i], q, end, counts, same, args, args_width, seq)
            if close != NULL:
                swap = self.memo
                self.memo = self.spare[i]
                self.spare[i] = swap
                return close
        return NULL

    cdef Py_ssize_t _replay(self, Pos p, Py_ssize_t pos, Py_ssize_t n) except -1:
        """Count every event from p[pos] on that repeats the kept one; return where the first
        event that does not starts (a plain kept event's: after one repeat, which its run left;
        _repeats goes back to the run)."""
        cdef Pos end = p + n
        cdef Pos q
        cdef Pos args = NULL
        cdef Py_ssize_t args_width
        cdef Py_ssize_t bound = min(self.max_line_bytes, self.max_event_bytes)  # on the line
        cdef Py_ssize_t counts[COUNTED]
        cdef unsigned same  # the holes that held the kept value again
        cdef int64_t seq = -1
        cdef ToolCall* call
        cdef Block* block
        cdef Json* args_json = NULL  # where the arguments of the kept event's repeats go
        if self.memo.tool:
            call = self._find_call(self.memo.tool_choice, self.memo.tool_index)
            if call == NULL:
                return pos  # cannot happen: the kept event made or found it
            args_json = call.json
        elif self.memo.block:
            block = self._block(self.memo.block_index, False)
            if block == NULL:
                return pos  # its item's arguments ended since: a repeat starts them anew
            args_json = block.json
        while True:
            fastsse_prefetch(p + pos + PREFETCH_AHEAD, self.memo.event.len)
            q = memo_match(&self.memo, &self.rec, p + pos, end, counts, &same, &args,
                           &args_width, &self.args_captured, &seq)
            if q == NULL:
                q = self._match_spare(p + pos, end, -1, counts, &same, &args, &args_width, &seq)
                if q == NULL:
                    return pos
            if q - p - pos - self.memo.tail > bound:
                return pos  # too long: the line's own reading reports the limit
            if self.memo.seq:
                # a number that does not follow is a gap: the event's own reading reports it
                if self.last_seq >= 0 and seq != self.last_seq + 1:
                    return pos
                self.last_seq = seq
            # what _handle_event and the rules would do with it
            self.events += 1
            if args_width:
                self._feed_args(args_json, args, args_width)
            self._count_replayed(counts, same)
            pos = q - p
            if self.memo.plain:
                memo_missed(&self.memo)  # a repeat the run left
                if self.memo.plain:
                    return pos  # back to the run (_repeats)

    cdef Py_ssize_t _replay_run(self, Pos p, Py_ssize_t pos, Pos end) except -1:
        """The events from p[pos] on that repeat a plain kept event (Memo.plain), counted in one
        run as _replay would count them one by one; returns where the first one it left
        starts (_replay looks at it next)."""
        cdef Py_ssize_t counts[COUNTED]
        cdef Py_ssize_t replayed
        cdef Pos q
        cdef Py_ssize_t bound = min(self.max_line_bytes, self.max_event_bytes)  # (as _replay's)
        memset(counts, 0, COUNTED * sizeof(Py_ssize_t))
        q = replay_run(<const unsigned char*>self.memo.event.p, self.memo.event.len, self.memo.tail,
                       self.memo.n_holes, self.memo.start, self.memo.end, self.memo.op,
                       self.memo.slot, p + pos, end, bound, PREFETCH_AHEAD, _unescape,
                       _hex, &replayed, counts, &self.last_seq if self.memo.seq else NULL)
        if replayed:
            self.events += replayed  # (_replay and _count_replayed, for each of them)
            self.replayed += replayed
            self.in_runs += replayed
            self._add_content(self.memo.base[0] * replayed + counts[0],
                              self.memo.base[1] * replayed + counts[1],
                              self.memo.base[2] * replayed + counts[2])
            if self.memo.reopens:
                self.end_marker = False
            self.memo.run_hits += replayed
        return q - p

    cdef int _feed_args(self, Json* check, Pos s, Py_ssize_t n) except -1:
        """A replayed fragment's arguments, the JSON string content s[:n] (as read_args left
        it), added to its call's JSON check."""
        if self.args_captured:
            json_feed(check, <Pos>self.rec.captured.p, self.rec.captured.len)
        else:
            json_feed(check, s, n)
        return 0

    cdef inline bint _templated_here(self) noexcept:
        """Whether this stream's events may match templates: chat's, Gemini's and Responses' SSE
        events (an auto stream's first one may name its protocol), and Ollama's lines."""
        if self.framing == FR_SSE:
            return (self.detected == D_CHAT or self.detected == D_GEMINI
                    or self.detected == D_RESPONSES or self.detected == D_NONE)
        return self.framing == FR_NDJSON and self.detected == D_OLLAMA

    cdef bint _templatable(self) noexcept:
        """Can the event just interpreted be repeated from a template (see _caches.pxd)?"""
        cdef Record* r = &self.rec
        cdef int i
        if self.detected == D_RESPONSES:
            # an event whose effect a template keeps (_keep_event): a start, a part or a text
            # whole, a message added, an item done, the completed or incomplete event, a text,
            # refusal or reasoning delta (a stream's first: the others replay it; an argument
            # delta is read, its fragment goes to a JSON check; no failure, no error; an item
            # added whose kind _responses counts is read)
            if not (self.kind == -1 or self.kind == K_START or self.kind == K_ITEM_DONE
                    or self.kind == K_TEXT_DELTA or self.kind == K_REFUSAL_DELTA
                    or self.kind == K_REASONING_DELTA
                    or self.kind == K_COMPLETED or self.kind == K_INCOMPLETE or (
                        self.kind == K_ITEM_ADDED and output_kind(&r.item_type) == OUT_TEXT)):
                return False
        elif self.detected == D_OLLAMA:
            # a line without whole tool calls, the last one too: its done and done_reason are
            # read, not holes, and its effect ends the stream as _ollama does
            if r.calls:
                return False
        elif self.detected != D_CHAT and self.detected != D_GEMINI:
            return False
        if _is_chat_done(&r.object):
            return False  # (the end marker it may be is _choices' to set, not a template's)
        if (self.limit is not None or r.error or r.too_many or r.opaque or r.unrepeatable
                or r.out_of_memory or r.n_tools or r.n_choices > TEMPLATE_CHOICES or r.n_args
                or r.block_reason.len >= 0):
            # (a Gemini blockReason ends the stream: such an event is read)
            return False
        for i in range(r.n_choices):
            if r.choices[i].tool or r.choices[i].output or r.choices[i].audio_end:
                return False
        return True

    cdef Py_ssize_t _from_template(self, Pos p, Py_ssize_t pos, Py_ssize_t n) except -1:
        """Count the event at p[pos] if it matches a likely template; return where the next
        event starts (pos if none matched)."""
        cdef TemplateTable* tt = self.templates
        cdef int* links
        cdef const Template* t
        cdef Pos close
        cdef Py_ssize_t starts[MAX_HOLES]
        cdef Py_ssize_t ends[MAX_HOLES]
        cdef Py_ssize_t counts[N_ROLES]
        cdef int roles[3]
        cdef Py_ssize_t size
        cdef Py_ssize_t bound = min(self.max_line_bytes, self.max_event_bytes)  # on the line
        cdef int64_t seq
        cdef int k, i, slot
        cdef bint tried = False
        if templates_skipped(tt):
            return pos
        tt.tries += 1
        links = template_links(tt, self.template_prev)
        for k in range(2):
            slot = links[k]
            if slot < 0:
                continue
            t = &tt.slots[slot]
            # (a template of the stream's protocol; a stream whose protocol is not named yet takes
            # one that names it; a choice table that could overflow is left to _choices, which
            # reports it)
            if (t.len == 0 or self.n_finishes + t.n_choices > MAX_CHOICES
                    or (t.detected != self.detected if self.detected != D_NONE else t.auto < 0)):
                continue
            tried = True
            close = template_match(t, &self.rec, p + pos, p + n, starts, ends, counts, &seq)
            if close == NULL:
                continue
            size = close - p - pos
            if size - t.tail > bound:
                return pos  # too long: the line's own reading reports the limit
            if seq >= 0 and self.last_seq >= 0 and seq != self.last_seq + 1:
                continue  # a gap: the event's own reading reports it (_sequence)
            # the event's effect, through what _handle_event, _interpret and _choices call
            self.events += 1
            if self.detected == D_NONE:
                self.detected = t.auto  # what _detect said of the same bytes
            self._note_model(&t.model)
            for i in range(t.n_choices):
                self._finish(t.index[i], &t.finish[i])
            # (its text, reasoning and refusal, as its protocol's rules count an event of its kind)
            _count_as(roles, self.detected, t.kind)
            self._add_content(counts[roles[0]] if roles[0] >= 0 else 0,
                              counts[roles[1]] if roles[1] >= 0 else 0,
                              counts[roles[2]] if roles[2] >= 0 else 0)
            if t.reasoning_tokens:  # (_note_whole)
                self.hidden_reasoning = True
            self.items |= (t.items | (ITEM_TEXT if counts[H_ITEM_TEXT] else 0)
                           | (ITEM_REFUSAL if counts[H_ITEM_REFUSAL] else 0))  # (_note_whole)
            if seq >= 0:  # (_sequence)
                self.last_seq = seq
            if t.ends:  # (_responses: a completed or incomplete event; its finish is above)
                self.end_marker = True
            if t.ends_block:  # (_responses: an item done)
                self._end_block(t.block_index)
            if self.detected == D_GEMINI and t.n_choices:
                # (_choices: each Gemini chunk with candidates says again whether it is the last)
                self.end_marker = True
                for i in range(t.n_choices):
                    if t.finish[i].len < 0:
                        self.end_marker = False
            self.templated += 1
            templates_paid(tt, True)
            if t.keep and size <= MEMO_MAX_BYTES:
                self._begin_memo(t.role, t.n_holes, t.kind, t.n_choices, -1)
                memo_set(&self.memo, p + pos, size, t.tail, t.n_holes, starts, ends, t.role,
                         t.base)
            template_follow(tt, &self.template_prev, slot)
            return pos + size
        if tried:
            templates_paid(tt, False)
        return pos

    # ------------------------------------------------------------------ protocol rules
    cdef int _interpret(self, Pos etype, Py_ssize_t etype_len) except -1:
        cdef Record* r = &self.rec
        cdef const char* name
        cdef Py_ssize_t name_len
        if r.out_of_memory:
            raise MemoryError()
        self.kind = -1
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
        self.detecting = self.detected == D_NONE
        if self.detecting:
            self.detected = self._detect(name, name_len)
            self.detecting = self.detected != D_NONE
        self._note_model(&r.model)
        self._note_whole()
        if self.detected == D_CHAT or self.detected == D_GEMINI:
            self._choices()
        elif self.detected == D_RESPONSES:
            self.kind = strtable_get(&_responses_kinds, name, name_len)
            self._responses(self.kind)
        elif self.detected == D_ANTHROPIC:
            self.kind = strtable_get(&_anthropic_kinds, name, name_len)
            self._anthropic(self.kind)
        elif self.detected == D_OLLAMA:
            self._ollama()
        elif self.detected == D_BEDROCK_CONVERSE:
            self.kind = strtable_get(&_converse_kinds, name, name_len)
            self._converse(self.kind)
        elif self.outer == D_BEDROCK_INVOKE:
            self._invoke_family()
        return 0

    cdef int _invoke_family(self) except -1:
        """bedrock-invoke, a model family with its own events (_protocols.BEDROCK_INVOKE_FAMILIES):
        its text, and the field that says why it ended."""
        cdef Record* r = &self.rec
        self._add_content(r.delta_text, r.delta_thinking, 0)
        if r.stop_reason.len >= 0:
            self._finish(0, &r.stop_reason)
        return 0

    cdef inline void _note_model(self, const Str* model) noexcept:
        """The first model an event names is the stream's."""
        if model.len >= 0 and self.model.len < 0:
            self.model = model[0]

    cdef int _note_whole(self) except -1:
        """What an event says whole, wherever it says it (_scanner_py.Scanner._note_whole)."""
        cdef Record* r = &self.rec
        cdef Json check
        cdef int i
        self.items |= r.items
        for i in range(r.n_args):
            json_init(&check, NULL, NULL)
            if r.args[i].len > 0:
                json_feed(&check, <const unsigned char*>r.captured.p + r.args[i].off, r.args[i].len)
            self._check_args(&check)
        if r.reasoning_tokens:
            self.hidden_reasoning = True
        return 0

    cdef inline void _count_kind(self, int kind) noexcept:
        """An item or block starts: count it by what it is (_protocols.OUTPUT_KINDS)."""
        if kind == OUT_REASONING:
            self.reasoning += 1
        elif kind == OUT_TOOL:
            self.tool_calls += 1
        elif kind == OUT_OTHER:
            self.output += 1

    cdef inline void _add_content(self, Py_ssize_t text, Py_ssize_t reasoning,
                                  Py_ssize_t refusal) noexcept:
        """An event carried this many text, reasoning and refusal values."""
        self.text += text
        self.reasoning += reasoning
        self.refusal += refusal

    cdef int _detect(self, const char* name, Py_ssize_t name_len) except -1:
        cdef bytes prefix
        cdef int found
        for prefix, protocol in _detect_prefixes:
            if (name_len >= PyBytes_GET_SIZE(prefix)
                    and memcmp(name, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix)) == 0):
                return _PROTOCOL_CODES[protocol]
        found = strtable_get(&_detect_types, name, name_len)
        if found >= 0:
            return _PROTOCOL_CODES[_detect_type_protocols[found]]
        if self.rec.has_choices or (
                self.rec.object.len == PyBytes_GET_SIZE(_chat_object)
                and memcmp(self.rec.object.s, PyBytes_AS_STRING(_chat_object),
                           self.rec.object.len) == 0):
            return D_CHAT
        if self.rec.gemini:
            return D_GEMINI
        if self.rec.done >= 0:
            return D_OLLAMA
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
                if r.err_type.len > 0:
                    self.error_type = r.err_type
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
        cdef Str audio_end
        cdef Str* finish
        for i in range(r.n_choices):
            choice = &r.choices[i]
            index = choice.index if choice.index >= 0 else choice.ordinal
            finish = &choice.finish
            if finish.len < 0 and self.outer == D_BEDROCK_INVOKE:
                finish = &choice.stop  # (_protocols.A_CHOICE_STOP)
            if (finish.len < 0 and choice.audio_end and not (choice.output or choice.text)
                    and not self._finished(index)):
                # an audio answer's last chunk: the end, unless a finish reason came already
                audio_end.len = 0
                str_append(&audio_end, PyBytes_AS_STRING(_audio_end), PyBytes_GET_SIZE(_audio_end))
                self._finish(index, &audio_end)
            else:
                self._finish(index, finish)
            if self.limit is not None:
                return 0
            self._add_content(choice.text, choice.reasoning, choice.refusal)
            self.tool_calls += choice.tool
            self.output += choice.output
            for k in range(choice.tool_start, choice.tool_start + choice.tool_count):
                self._tool_fragment(index, &r.tools[k])
                if self.limit is not None:
                    return 0
        if self.detected == D_GEMINI:
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
        elif _is_chat_done(&r.object) and self._all_finished():
            self.end_marker = True  # (_protocols.CHAT_DONE_OBJECT: Perplexity's last chunk, no [DONE] after it)
        return 0

    cdef bint _all_finished(self) noexcept:
        """Has every choice begun its finish reason (and has one begun)?"""
        cdef int i
        if self.n_finishes == 0:
            return False
        for i in range(self.n_finishes):
            if self.finishes[i].raw.len < 0:
                return False
        return True

    cdef bint _finished(self, int64_t index) noexcept:
        """Has this choice a finish reason yet?"""
        cdef int i
        for i in range(self.n_finishes):
            if self.finishes[i].index == index:
                return self.finishes[i].raw.len >= 0
        return False

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

    cdef ToolCall* _find_call(self, int64_t choice, int64_t index) noexcept:
        """The latest call at this choice and index, as _tool_fragment finds it."""
        cdef int i
        for i in range(self.n_tools - 1, -1, -1):
            if self.tools[i].choice == choice and self.tools[i].index == index:
                return &self.tools[i]
        return NULL

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

    cdef void _terminal_finish(self, int kind, Str* finish) noexcept:
        """The finish of a completed or incomplete event just read, judged by what it says, not
        only by its name (see _scanner_py._terminal_reason); absent (len -1): incomplete, and it
        never said why."""
        cdef Record* r = &self.rec
        if r.incomplete_reason.len >= 0:
            finish[0] = r.incomplete_reason
        elif r.status.len >= 0 and strtable_get_str(&_r_name_statuses, &r.status) < 0:
            finish[0] = r.status  # failed, cancelled, in_progress, ...
        elif kind == K_COMPLETED and not (
                r.status.len == PyBytes_GET_SIZE(_r_incomplete)
                and memcmp(r.status.s, PyBytes_AS_STRING(_r_incomplete), r.status.len) == 0):
            finish.len = 0
            str_append(finish, PyBytes_AS_STRING(_completed), PyBytes_GET_SIZE(_completed))
        else:
            finish.len = -1

    cdef int _responses(self, int kind) except -1:
        cdef Record* r = &self.rec
        cdef Str finish
        cdef Block* block
        self._sequence()
        if kind == K_TEXT_DELTA:
            self.text += r.delta
        elif kind == K_REFUSAL_DELTA:
            self.refusal += r.delta
        elif kind == K_REASONING_DELTA:
            self.reasoning += r.delta
        elif kind == K_ITEM_ADDED:
            self._count_kind(output_kind(&r.item_type))
        elif kind == K_OUTPUT:
            self.output += 1
        elif kind == K_ARGS_DELTA:
            # a call's argument fragment: added to its item's JSON check (by output_index)
            block = self._block(r.output_index, False)
            if block == NULL:
                block = self._block(r.output_index, True)
                if block == NULL:
                    return 0  # past the bound (limit set)
            if r.delta_len > 0:
                json_feed(block.json, <const unsigned char*>r.captured.p + r.delta_off,
                          r.delta_len)
        elif kind == K_ARGS_DONE or kind == K_ITEM_DONE:
            # the item's arguments are whole: its fragments are over and must make one value
            self._end_block(r.output_index)
        elif kind == K_COMPLETED or kind == K_INCOMPLETE:
            self.end_marker = True
            self._terminal_finish(kind, &finish)
            self._finish(0, &finish)
        elif kind == K_FAILED:
            self.end_marker = True
            if not r.error:
                self._note_error()
        elif kind == K_ERROR:
            if not r.error:
                self._note_error()
        return 0

    cdef Block* _block(self, int64_t index, bint new) except? NULL:
        """The call input being read at this index (anthropic: block index; responses:
        output_index), or NULL; new: a fresh one, the earlier one at that index checked first
        (NULL past the bound, which is then reported)."""
        cdef int i
        for i in range(self.n_blocks):
            if self.blocks[i].index == index:
                if new:
                    self._check_args(self.blocks[i].json)
                    json_init(self.blocks[i].json, NULL, NULL)
                return &self.blocks[i]
        if not new:
            return NULL
        if self.n_blocks >= MAX_TOOL_CALLS:
            self._exceed("tool_calls")
            return NULL
        if array_reserve(<void**>&self.blocks, &self.cap_blocks, self.n_blocks, sizeof(Block)) < 0:
            raise MemoryError()
        self.blocks[self.n_blocks].index = index
        self.blocks[self.n_blocks].json = json_new()
        self.n_blocks += 1
        return &self.blocks[self.n_blocks - 1]

    cdef void _end_block(self, int64_t index) noexcept:
        """The call input at this index is over: checked, and forgotten."""
        cdef int i
        for i in range(self.n_blocks):
            if self.blocks[i].index == index:
                self._check_args(self.blocks[i].json)
                PyMem_Free(self.blocks[i].json)
                self.n_blocks -= 1
                self.blocks[i] = self.blocks[self.n_blocks]
                return

    cdef int _anthropic(self, int kind) except -1:
        cdef Record* r = &self.rec
        cdef int i
        if kind == K_START:
            # (a message that starts whole says its stop_reason here, and no message_delta follows)
            self._finish(0, &r.stop_reason)
        elif kind == K_BLOCK_START:
            self._count_kind(output_kind(&r.block_type))
            if strtable_get_str(&_a_json_input, &r.block_type) >= 0:
                self._block(r.block_index, True)
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
            if strtable_get_str(&_a_stop_details_win, &r.stop_detail) >= 0:
                self._finish(0, &r.stop_detail)
            else:
                self._finish(0, &r.stop_reason)
        elif kind == K_MESSAGE_STOP:
            self.end_marker = True
        elif kind == K_ERROR:
            if not r.error:
                self._note_error()
        return 0

    cdef int _converse(self, int kind) except -1:
        """bedrock-converse: its deltas and block starts are read as Anthropic's."""
        if kind == K_BLOCK_START or kind == K_BLOCK_DELTA:
            self._anthropic(kind)
        elif kind == K_FINISH_STOP:
            self.end_marker = True
            self._finish(0, &self.rec.stop_reason)
        return 0

    cdef int _ollama(self) except -1:
        """One line: its text, thinking and whole tool calls; the last says done and why."""
        cdef Record* r = &self.rec
        self._add_content(r.delta_text, r.delta_thinking, 0)
        self.tool_calls += r.calls
        if r.done == 1:
            self.end_marker = True
            # (OLLAMA_DONE_FINISH when it names none)
            self._finish(0, &r.stop_reason if r.stop_reason.len > 0 else &_ollama_done)
        return 0

    # ------------------------------------------------------------------ the end
    cdef object _judgement(self, str transport, Py_ssize_t residual, int n_finishes):
        """_judge's answer for this stream, whose first n_finishes finish reasons count: the
        values of the fields _JUDGED_FIELD_NAMES names, in that order, as a tuple.  Most
        streams end like one of the last few judged (the same protocol, finish reason and
        flags): then the answer is that stream's (Caches.judgement), found by comparing C
        values instead of hashing a tuple of _judge's Python arguments."""
        cdef Judged k  # every field is set; the finish reasons up to n_finishes
        cdef int i
        cdef tuple finishes
        cdef bint memo = n_finishes <= MEMO_FINISHES
        cdef bint text, reasoning, refusal, tool_calls, output
        k.protocol = self.outer if self.outer != D_NONE else self.detected
        k.transport = 0
        while _TRANSPORT_CODES[k.transport] != transport:  # close() checked that it is one
            k.transport += 1
        k.limit = 0 if self.limit is None else 1 + _LIMIT_CODES.index(self.limit)
        text = self.text > 0 or self.items & ITEM_TEXT
        reasoning = self.reasoning > 0 or self.items & ITEM_REASONING
        refusal = self.refusal > 0 or self.items & ITEM_REFUSAL
        tool_calls = self.tool_calls > 0 or self.items & ITEM_TOOL
        output = self.output > 0 or self.items & ITEM_OUTPUT
        k.flags = ((self.errors > 0) | self.end_marker << 1 | (self.events == 0) << 2
                   | (residual > 0) << 3 | (self.malformed > 0) << 4 | self.sequence_gap << 5
                   | text << 6 | reasoning << 7 | refusal << 8 | tool_calls << 9
                   | self.tool_malformed << 10 | output << 11 | self.hidden_reasoning << 12
                   | self.guardrail << 13)
        k.n_finishes = n_finishes
        k.error_code = self.error_code
        k.error_type = self.error_type
        k.blocked = self.blocked
        if memo:
            for i in range(n_finishes):
                k.finishes[i] = self.finishes[i].raw
            head = self.caches.judgement(&k)
            if head is not None:
                return head
        finishes = PyTuple_New(n_finishes)
        for i in range(n_finishes):
            raw = str_bytes(&self.finishes[i].raw)
            Py_INCREF(raw)
            PyTuple_SET_ITEM(finishes, i, raw)
        head = (_judge_cached if memo else _judge)(
            _PROTOCOL_NAMES[k.protocol], transport, self.limit, self.errors > 0,
            str_bytes(&self.error_code), str_bytes(&self.error_type), self.end_marker, self.events == 0, residual > 0,
            self.malformed > 0, self.sequence_gap, finishes, str_bytes(&self.blocked),
            self.guardrail, text, reasoning, refusal, tool_calls, self.tool_malformed, output,
            self.hidden_reasoning)
        judged = tuple([head[name] for name in _JUDGED_FIELD_NAMES])
        if memo:
            self.caches.remember(&k, judged)
        return judged

    @property
    def settled(self):
        """As the Python twin's: it ended, or every choice it began has its finish reason."""
        return self.ended or self._all_finished()

    @property
    def ended(self):
        """As the Python twin's: the end marker, an error or a bound passed was seen."""
        return self.closed or self.end_marker or self.errors > 0 or self.limit is not None

    def close(self, str transport="eof"):
        cdef int i, n_finishes
        cdef Py_ssize_t residual
        if transport not in _TRANSPORTS:
            check_transport(transport)
        if self.closed:
            raise RuntimeError("close() called twice")
        self.closed = True
        if self.rec.out_of_memory:
            raise MemoryError()
        if self.fr.at_start and self.fr.head_len and self.limit is None:
            self.fr.at_start = False
            self._scan(self.fr.head, self.fr.head_len)
        if self.limit is None and self.framing == FR_JSON_FIRST:
            self._decide_framing(self.first.len)  # the whole stream is its first line
        if self.limit is None and self.framing == FR_NDJSON and self.fr.line.len:
            # the last line, without its newline: an event if it is whole JSON
            buf_append(&self.fr.line, "\n", 1)  # readable past the end (json_whole)
            self.fr.line.len -= 1
            if self._ndjson_whole(<Pos>self.fr.line.p, self.fr.line.len):
                self.fr.line.len = 0
        if self.limit is None and self.framing == FR_SSE and self.fr.line.len:
            self._last_bare_line()
        residual = 0
        n_finishes = 0  # a stream read up to a limit has its finish reasons ignored
        if self.limit is None:
            residual = self.fr.line.len + self.fr.event_bytes + self.fr.bare_bytes + self.frame.len
            if self.depth:  # an array's element, cut
                residual += self.fr.data.len
            for i in range(self.n_tools):
                self._check_args(self.tools[i].json)
            for i in range(self.n_blocks):
                self._check_args(self.blocks[i].json)
            n_finishes = self.n_finishes
        self._free_protocol_state()
        # decide() for the Evidence this scanner holds, without building it: the judgement
        # (the same as the last stream's, or _judge's, cached), then the counters.
        judged = self._judgement(transport, residual, n_finishes)
        # _verdict._verdict(values), without the call or the dict: each field in its slot
        verdict = PyType_GenericAlloc(Verdict, 0)
        for i in range(N_JUDGED_FIELDS):
            _set_field(verdict, _JUDGED_FIELDS[i], <object>PyTuple_GET_ITEM(judged, i))
        _set_field(verdict, _F_RESIDUAL_BYTES, residual)
        _set_field(verdict, _F_EVENTS, self.events)
        _set_field(verdict, _F_BYTES, self.total_bytes)
        _set_field(verdict, _F_COMMENTS, self.comments)
        _set_field(verdict, _F_MALFORMED_EVENTS, self.malformed)
        _set_field(verdict, _F_TEXT_EVENTS, self.text)
        _set_field(verdict, _F_REASONING_EVENTS, self.reasoning)
        _set_field(verdict, _F_REFUSAL_EVENTS, self.refusal)
        _set_field(verdict, _F_TOOL_CALLS, self.tool_calls)
        _set_field(verdict, _F_OUTPUT_EVENTS, self.output)
        _set_field(verdict, _F_CHOICES, n_finishes)
        _set_field(verdict, _F_MODEL,
                   self.caches.model_name(&self.model) if self.model.len >= 0 else None)
        return verdict


cdef inline int _read_json(Scanner s, Pos data, Py_ssize_t n) except -1:
    """Read the JSON data[:n] (data[n] readable) into the scanner's record: 1 if json_whole
    read it in one pass, 2 if the automaton did, 0 if it is not one JSON value.  (A function,
    not a method, so that the C compiler inlines it into the hot loop.)"""
    record_reset(&s.rec)
    if n == 0:
        return 0
    if json_whole(&s.rec, data, n):
        return 1
    # unusual or malformed: the automaton reads it from scratch and decides
    record_reset(&s.rec)
    json_init(&s.js, &s.rec, s._automaton())
    json_feed(&s.js, data, n)
    return 2 if json_finish(&s.js) else 0


cdef int _set_widest(int* setting, int widest, int most) except -1:
    """Set a C setting of the widest SIMD path to widest (0 to most); the value before."""
    cdef int before = setting[0]
    if not 0 <= widest <= most:
        raise ValueError(f"widest is from 0 to {most}, not {widest}")
    setting[0] = widest
    return before


def _base64_widest(int widest):
    """Let base64 decoding use blocks of at most this width (2: AVX2, 1: SSSE3, 0: none, the
    scalar decoder alone), where the CPU has them; returns the width allowed before.  For tests,
    which hold every path to the same answers: the answers never depend on it."""
    return _set_widest(&base64_widest, widest, 2)


def _crc32(unsigned int crc, const unsigned char[::1] data not None):
    """zlib.crc32(data, crc), as event-stream frames are checked (carry-less multiplication from
    64 bytes on, where the CPU has it).  For tests, which hold it to zlib's."""
    return crc32(crc, &data[0] if data.shape[0] else NULL, data.shape[0])


def _replay_widest(int widest):
    """Let runs of replayed events (_replay.h) use AVX2 where the CPU has it (1) or only SSE2
    (0); returns the setting before.  For tests, which hold both paths to the same answers: the
    answers never depend on it."""
    return _set_widest(&replay_widest, widest, 1)


def scan(data, str protocol="auto", str transport="eof", *,
         max_event_bytes=DEFAULT_MAX_EVENT_BYTES, max_line_bytes=DEFAULT_MAX_LINE_BYTES,
         Caches caches=None):
    """Judge a whole captured stream at once."""
    cdef Scanner scanner = Scanner(protocol, max_event_bytes=max_event_bytes,
                                   max_line_bytes=max_line_bytes, caches=caches)
    scanner.feed(data)
    return scanner.close(transport)

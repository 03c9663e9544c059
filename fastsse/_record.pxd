# cython: language_level=3
"""The event record: what one event's JSON says that the protocol rules read.

The JSON readers (``_json``'s automaton, ``_json_fast``'s whole-event reader) walk
``_protocols.JSON_TREE`` and call ``record_begin``, ``record_end`` and ``record_scalar`` as they
meet the fields it names; the scanner's protocol code then reads the ``Record``.  The Python
twin's ``_record_py`` holds the same rules.  Declarations and ``cdef inline`` functions only.
"""

from libc.stdint cimport int64_t
from libc.string cimport memcmp, memset

from ._cbytes cimport (MAX_CHOICES, MAX_TOOL_CALLS, Buf, Str, StrTable, array_reserve,
                       str_append, str_clear, strtable_fill, strtable_get_str)

cdef enum:
    MAX_HOLES = 32  # values a replayed event may vary (see _caches); at most the bits of an unsigned
    LEGACY_CALL_INDEX = -2

# The actions of _protocols.JSON_TREE's nodes (checked against _protocols at import).
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
    A_OUTPUT = 42
    A_REASONING_TOKENS = 43
    A_ITEM = 44
    A_ITEM_TEXT = 45
    A_ITEM_REFUSAL = 46
    A_OUTPUT_INDEX = 47
    A_AUDIO_END = 48
    A_CHUNK_BYTES = 49
    A_DONE = 50
    A_CALL = 51
    A_START_TOOL = 52
    A_START_RESULT = 53
    A_START_IMAGE = 54
    A_INVOCATION_METRICS = 55
    A_CHOICE_STOP = 56
    A_GUARDRAIL = 57

cdef enum:  # what an item or block is (_protocols.OUT_*), and what whole items held (ITEM_*)
    OUT_NONE = 0
    OUT_TEXT = 1
    OUT_REASONING = 2
    OUT_TOOL = 3
    OUT_OTHER = 4
    ITEM_TEXT = 1
    ITEM_REFUSAL = 2
    ITEM_REASONING = 4
    ITEM_TOOL = 8
    ITEM_OUTPUT = 16

cdef enum ValueKind:  # what kind of scalar the JSON readers report
    V_STRING = 0
    V_NUMBER = 1
    V_TRUE = 2
    V_FALSE = 3
    V_NULL = 4

cdef enum:  # HoleRole: what a replayed event's string value counts (A_TEXT.. in this order)
    H_FREE = 0
    H_TEXT = 1
    H_REASONING = 2
    H_REFUSAL = 3
    H_ARGS = 4  # a tool call's arguments: fed to the call's JSON check
    H_NUMBER = 5  # a number no rule reads: any valid JSON number
    # A delta outside any choice (A_DELTA_TEXT, A_DELTA_THINKING: Anthropic's and Converse's
    # block deltas, Ollama's lines): whether it is empty is all the rules read, when they read it
    H_DELTA_TEXT = 6
    H_DELTA_THINKING = 7
    # Spaces and tabs after a value (Anthropic pads its JSON before the closing brace): any run
    # of them, none included, reads the same
    H_SPACE = 8
    # Responses' "delta" (A_DELTA): counted as the event's kind says (text, refusal, reasoning)
    H_DELTA = 9
    # Responses' sequence_number (A_SEQ): a plain integer, which must be the one expected
    H_SEQ = 10
    # A whole item's text and refusal (A_ITEM_TEXT, A_ITEM_REFUSAL) in an item that _record's
    # item_bits reads them for (a message): whether any is not empty is all it reads.  In any
    # other item they are free.
    H_ITEM_TEXT = 11
    H_ITEM_REFUSAL = 12
    N_ROLES = 13

# The record's own tables, filled from _protocols at import (record_tables_init).
cdef extern from *:
    """
    static FastsseStrTable fastsse_reasoning_parts, fastsse_native_rank, fastsse_output_kinds;
    static FastsseStrTable fastsse_gemini_finish_numbers, fastsse_gemini_block_numbers;
    static int fastsse_unknown_rank;
    """
    StrTable _reasoning_parts "fastsse_reasoning_parts"  # REASONING_PART_TYPES
    StrTable _native_rank "fastsse_native_rank"  # NATIVE_FINISH_RANK
    StrTable _output_kinds "fastsse_output_kinds"  # OUTPUT_KINDS
    int _unknown_rank "fastsse_unknown_rank"  # the rank of a finish reason it does not list
    StrTable _gemini_finish_numbers "fastsse_gemini_finish_numbers"  # GEMINI_FINISH_NUMBERS: name -> number
    StrTable _gemini_block_numbers "fastsse_gemini_block_numbers"  # GEMINI_BLOCK_NUMBERS

cdef inline int record_tables_init(object protocols, list keep) except -1:
    global _unknown_rank
    strtable_fill(&_reasoning_parts, {k: 1 for k in protocols.REASONING_PART_TYPES}, keep)
    strtable_fill(&_native_rank, dict(protocols.NATIVE_FINISH_RANK), keep)
    strtable_fill(&_output_kinds, dict(protocols.OUTPUT_KINDS), keep)
    strtable_fill(&_gemini_finish_numbers,
                  {name: n for n, name in enumerate(protocols.GEMINI_FINISH_NUMBERS)}, keep)
    strtable_fill(&_gemini_block_numbers,
                  {name: n for n, name in enumerate(protocols.GEMINI_BLOCK_NUMBERS)}, keep)
    if (protocols.RESPONSES_TOOL_ITEM_SUFFIX != "_call" or protocols.ERROR_OBJECT != "error"
            or protocols.CONVERSE_START_ACTIONS != {A_START_TOOL: "toolUse", A_START_RESULT: "toolResult",
                                                    A_START_IMAGE: "image"}
            or protocols.BEDROCK_GUARDRAIL_INTERVENED != "INTERVENED"):
        raise ImportError("fastsse._scanner is stale: RESPONSES_TOOL_ITEM_SUFFIX, ERROR_OBJECT, "
                          "CONVERSE_START_ACTIONS or BEDROCK_GUARDRAIL_INTERVENED changed")
    _unknown_rank = protocols.OUTCOME_RANK[protocols.UNKNOWN_FINISH[1]]
    return 0

ctypedef struct Choice:
    int64_t ordinal
    int64_t index  # -1: not sent
    Str finish
    Str native  # OpenRouter's native_finish_reason
    Str stop  # choices[].stop_reason (A_CHOICE_STOP: bedrock-invoke reads it)
    int text, reasoning, refusal, tool, output
    bint audio_end  # delta.audio said when it expires
    int tool_start, tool_count  # slice of Record.tools

ctypedef struct Tool:
    int64_t ordinal
    int64_t index
    Str id
    Py_ssize_t args_off, args_len  # slice of Record.captured; args_len -1: not sent

ctypedef struct Part:
    Str type
    bint text, thought, tool, output
    int hole  # its text's hole (json_whole's), whose role its end decides; -1: none
    int texts  # its text values that json_whole noted as holes

ctypedef struct Slice:  # of Record.captured
    Py_ssize_t off, len

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
    Py_ssize_t delta_json_off, delta_json_len, delta_off, delta_len
    Slice* args  # every whole "arguments" string of the event
    int n_args, cap_args
    int64_t output_index  # -1: not sent
    bint reasoning_tokens  # usage counted reasoning tokens
    bint in_item, item_text, item_refusal  # the item being read
    int item_holes  # the first hole of the item being read
    int items  # what the event's whole items held: ITEM_* bits
    # json_whole's string values whose bytes do not change what is recorded, except whether
    # they are empty: offsets from the start of the JSON (see _caches.pxd, "Replaying")
    int n_holes
    Py_ssize_t hole_start[MAX_HOLES]
    Py_ssize_t hole_end[MAX_HOLES]
    unsigned char hole_role[MAX_HOLES]
    # a value that may be payload is not among the holes (there were too many, or it is a
    # value a rule reads as text): the event must not become a template (see _caches.pxd)
    bint opaque
    # what the event counts depends on a hole's value in a way no role says (a content part with
    # two texts, or text and output): such an event is read every time, never kept
    bint unrepeatable
    Py_ssize_t chunk_off, chunk_len  # a Bedrock chunk's "bytes" (base64), in captured; -1: not sent
    int done  # Ollama's "done": -1 not sent, 0 false, 1 true
    int calls  # whole tool calls (Ollama)
    bint metrics  # a Bedrock InvokeModel chunk's amazon-bedrock-invocationMetrics: its last
    bint guardrail  # its amazon-bedrock-guardrailAction said INTERVENED

cdef inline void worse_finish(Choice* choice) noexcept:
    """The choice's finish reason, given OpenRouter's native one (_record_py.worse_finish)."""
    cdef int native = strtable_get_str(&_native_rank, &choice.native)
    cdef int finish
    if native < 0:
        return  # unknown: finish_reason speaks
    finish = strtable_get_str(&_native_rank, &choice.finish)
    if native < (finish if finish >= 0 else _unknown_rank):
        choice.finish = choice.native

cdef inline int output_kind(const Str* item_type) noexcept:
    """What an item or block of this type is (_record_py.output_kind)."""
    cdef int kind
    if item_type.len < 0:
        return OUT_NONE
    kind = strtable_get_str(&_output_kinds, item_type)
    if kind >= 0:
        return kind
    if item_type.len >= 5 and memcmp(item_type.s + item_type.len - 5, b"_call", 5) == 0:
        return OUT_TOOL
    return OUT_NONE

cdef inline int item_bits(const Str* item_type, bint text, bint refusal) noexcept:
    """What one whole item held, as ITEM_* bits (_record_py.item_bits)."""
    cdef int kind = output_kind(item_type)
    if kind == OUT_TEXT:
        return (ITEM_TEXT if text else 0) | (ITEM_REFUSAL if refusal else 0)
    if kind == OUT_REASONING:
        return ITEM_REASONING
    if kind == OUT_TOOL:
        return ITEM_TOOL
    if kind == OUT_OTHER:
        return ITEM_OUTPUT
    return 0

cdef inline void record_reset(Record* r) noexcept:
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
    r.delta_json_len = r.delta_len = -1
    r.delta_json_off = r.delta_off = 0
    r.n_args = 0
    r.output_index = -1
    r.reasoning_tokens = r.in_item = r.item_text = r.item_refusal = False
    r.items = 0
    r.n_holes = 0
    r.opaque = False
    r.unrepeatable = False
    r.chunk_len = -1
    r.chunk_off = 0
    r.done = -1
    r.calls = 0
    r.metrics = r.guardrail = False

cdef inline void record_begin(Record* r, int action, bint is_object) noexcept:
    if action == A_ERROR:
        r.error = True
    elif action == A_CHOICES:
        r.has_choices = True
    elif action == A_GEMINI:
        r.gemini = True
    elif not is_object:
        return
    elif action == A_CALL:
        r.calls += 1
    elif action == A_INVOCATION_METRICS:
        r.metrics = True
    elif action == A_START_TOOL:  # _protocols.CONVERSE_START_ACTIONS
        r.block_type.len = 0
        str_append(&r.block_type, "toolUse", 7)
    elif action == A_START_RESULT:
        r.block_type.len = 0
        str_append(&r.block_type, "toolResult", 10)
    elif action == A_START_IMAGE:
        r.block_type.len = 0
        str_append(&r.block_type, "image", 5)
    elif action == A_ITEM:
        r.in_item = True
        r.item_type.len = -1
        r.item_text = r.item_refusal = False
        r.item_holes = r.n_holes
    elif action == A_CHOICE:
        r.in_choice = True
        memset(&r.choice, 0, sizeof(Choice))
        r.choice.ordinal = r.n_choices
        r.choice.index = -1
        r.choice.finish.len = -1
        r.choice.native.len = -1
        r.choice.stop.len = -1
        r.choice.tool_start = r.n_tools
    elif action == A_PART:
        if r.in_choice:
            r.in_part = True
            r.part.type.len = -1
            r.part.text = r.part.thought = r.part.tool = r.part.output = False
            r.part.hole = -1
            r.part.texts = 0
    elif action == A_TOOL or action == A_FUNCTION_CALL:
        if r.in_choice:
            r.in_tool = True
            r.tool.ordinal = r.choice.tool_count
            r.tool.index = -1 if action == A_TOOL else LEGACY_CALL_INDEX
            r.tool.id.len = -1
            r.tool.args_len = -1
            r.tool.args_off = 0

cdef inline void record_end(Record* r, int action, bint is_object) noexcept:
    cdef bint reasoning
    cdef int h
    if not is_object:
        return
    if action == A_ITEM:
        if r.in_item:
            r.items |= item_bits(&r.item_type, r.item_text, r.item_refusal)
            if output_kind(&r.item_type) != OUT_TEXT:  # its text and refusal count for nothing
                for h in range(r.item_holes, r.n_holes):
                    if r.hole_role[h] == H_ITEM_TEXT or r.hole_role[h] == H_ITEM_REFUSAL:
                        r.hole_role[h] = H_FREE
        r.in_item = False
    elif action == A_CHOICE:
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
            reasoning = r.part.thought or strtable_get_str(&_reasoning_parts, &r.part.type) >= 0
            if reasoning:
                r.choice.reasoning += 1
            elif r.part.tool:
                r.choice.tool += 1
            elif r.part.text:
                r.choice.text += 1
            elif r.part.output:
                r.choice.output += 1
            # Its one text hole counts as text in a plain text part.  In a reasoning part, which
            # counts once whatever its text, it stays free.  Anywhere else (two texts, whose
            # emptiness counts together; text beside a call or output, which counts only when
            # the text is empty) the event is never replayed.
            if r.part.texts == 1 and 0 <= r.part.hole < r.n_holes and not (
                    reasoning or r.part.tool or r.part.output):
                r.hole_role[r.part.hole] = H_TEXT
            elif r.part.texts and not reasoning:
                r.unrepeatable = True
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

cdef inline void str_decimal(Str* out, int64_t number) noexcept:
    """The decimal text of number (not negative), as Python's str(int)."""
    cdef int n = 0, i
    while True:
        out.s[n] = <char>(48 + number % 10)
        n += 1
        number //= 10
        if number == 0:
            break
    out.len = n
    for i in range(n // 2):
        out.s[i], out.s[n - 1 - i] = out.s[n - 1 - i], out.s[i]

cdef inline void enum_name(const StrTable* names, int64_t number, Str* out) noexcept:
    """An enum sent as its number: its name from names (name -> number), or the number's
    decimal text when the table has none (as _record_py's _enum_name)."""
    cdef int i
    for i in range(names.n):
        if names.values[i] == number:
            out.len = 0
            str_append(out, names.keys[i], names.lens[i])
            return
    str_decimal(out, number)

cdef inline void record_scalar(Record* r, int action, int kind, const Str* value, int64_t number,
                        bint nonempty, Py_ssize_t cap_off, Py_ssize_t cap_len) noexcept:
    """number: -1 if not a plain integer.  value: the bounded capture; cap_*: a whole capture."""
    cdef Str code
    if action == A_ERROR:
        if kind != V_NULL and kind != V_FALSE:
            r.error = True
        return
    if kind == V_NUMBER:
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
        elif action == A_OUTPUT_INDEX:
            r.output_index = number
        elif action == A_AUDIO_END:
            if r.in_choice:
                r.choice.audio_end = True
        elif action == A_REASONING_TOKENS:
            r.reasoning_tokens = r.reasoning_tokens or number > 0
        elif action == A_ERR_CODE or action == A_FLAT_CODE:
            str_decimal(&code, number)  # as the Python twin's str(int)
            if action == A_ERR_CODE:
                r.err_code = code
            else:
                r.flat_code = code
        elif action == A_FINISH:
            # Gemini's finishReason as its number (GEMINI_FINISH_NUMBERS), in candidates only:
            # a number in chat's finish_reason names nothing
            if r.in_choice and r.gemini:
                enum_name(&_gemini_finish_numbers, number, &r.choice.finish)
        elif action == A_BLOCK_REASON:
            enum_name(&_gemini_block_numbers, number, &r.block_reason)
        return
    if kind == V_TRUE:
        if action == A_PART_THOUGHT and r.in_part:
            r.part.thought = True
        elif action == A_DONE:
            r.done = 1
        return
    if kind == V_FALSE:
        if action == A_DONE:
            r.done = 0
        return
    if kind != V_STRING:
        return
    if action == A_TYPE:
        r.type = value[0]
    elif action == A_OBJECT:
        r.object = value[0]
        if value.len == 5 and memcmp(value.s, b"error", 5) == 0:  # _protocols.ERROR_OBJECT
            r.error = True
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
    elif action == A_CHOICE_STOP:
        if r.in_choice and value.len > 0:
            r.choice.stop = value[0]
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
        r.delta_off = cap_off
        r.delta_len = cap_len
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
        if array_reserve(<void**>&r.args, &r.cap_args, r.n_args, sizeof(Slice)) < 0:
            r.out_of_memory = True
        else:
            r.args[r.n_args].off = cap_off
            r.args[r.n_args].len = cap_len
            r.n_args += 1
    elif action == A_OUTPUT:
        if nonempty:
            if r.in_part:
                r.part.output = True
            elif r.in_choice:
                r.choice.output += 1
    elif action == A_ITEM_TEXT:
        if nonempty and r.in_item:
            r.item_text = True
    elif action == A_ITEM_REFUSAL:
        if nonempty and r.in_item:
            r.item_refusal = True
    elif action == A_CHUNK_BYTES:
        r.chunk_off = cap_off
        r.chunk_len = cap_len
    elif action == A_GUARDRAIL:
        # (_protocols.BEDROCK_GUARDRAIL_INTERVENED)
        if value.len == 10 and memcmp(value.s, b"INTERVENED", 10) == 0:
            r.guardrail = True

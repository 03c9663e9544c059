"""The event record: what one event's JSON says that the protocol rules read.

The JSON automaton (``_json_py``) walks ``_protocols.JSON_TREE`` and calls ``EventRecord.begin``,
``end`` and ``scalar`` as it meets the fields the tree names; the scanner's protocol rules then
read the record.  What each action does is a table, one per kind of value (``_ON_STRING``,
``_ON_NUMBER``, ``_ON_TRUE``), so that a new field adds a row.  The compiled twin's
``_record.pxd`` holds the same rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from . import _protocols as d
from ._limits import MAX_CHOICES, MAX_TOOL_CALLS

# The kinds of scalar value the automaton reports.
V_STRING, V_NUMBER, V_TRUE, V_FALSE, V_NULL = range(5)
# A scalar as the automaton hands it over: a string's captured bytes, an integer below 2**53,
# or None (true, false, null, a number that is not such an integer, a string not captured).
Value = bytes | int | None

_REASONING_PART_TYPES = frozenset(t.encode() for t in d.REASONING_PART_TYPES)
_NATIVE_RANK = {raw.encode(): rank for raw, rank in d.NATIVE_FINISH_RANK.items()}
_UNKNOWN_RANK = d.OUTCOME_RANK[d.UNKNOWN_FINISH[1]]


def worse_finish(finish: bytes, native: bytes) -> bytes:
    """A choice's finish reason, given OpenRouter's native one beside it (NATIVE_FINISH_RANK)."""
    native_rank = _NATIVE_RANK.get(native)
    if native_rank is not None and native_rank < _NATIVE_RANK.get(finish, _UNKNOWN_RANK):
        return native
    return finish


_OUTPUT_KINDS = {name.encode(): kind for name, kind in d.OUTPUT_KINDS.items()}
_TOOL_SUFFIX = d.RESPONSES_TOOL_ITEM_SUFFIX.encode()


def output_kind(item_type: bytes | None) -> int:
    """What an item or block of this type is (_protocols.OUTPUT_KINDS); an unknown "*_call"
    is a tool call, any other unknown type nothing."""
    if item_type is None:
        return d.OUT_NONE
    kind = _OUTPUT_KINDS.get(item_type)
    if kind is None:
        return d.OUT_TOOL if item_type.endswith(_TOOL_SUFFIX) else d.OUT_NONE
    return kind


def item_bits(item_type: bytes | None, text: bool, refusal: bool) -> int:
    """What one whole item held, as _protocols.ITEM_* bits."""
    kind = output_kind(item_type)
    if kind == d.OUT_TEXT:
        return (d.ITEM_TEXT if text else 0) | (d.ITEM_REFUSAL if refusal else 0)
    return _KIND_BITS[kind]


_CONVERSE_STARTS = {action: block.encode() for action, block in d.CONVERSE_START_ACTIONS.items()}
_KIND_BITS = {d.OUT_NONE: 0, d.OUT_REASONING: d.ITEM_REASONING, d.OUT_TOOL: d.ITEM_TOOL, d.OUT_OTHER: d.ITEM_OUTPUT}


class Choice:
    __slots__ = (
        "ordinal", "index", "finish", "native", "stop", "text", "reasoning", "refusal", "tool", "output", "audio_end",
        "tools",
    )  # fmt: skip

    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal
        self.index: int | None = None
        self.finish: bytes | None = None
        self.native: bytes | None = None
        self.stop: bytes | None = None  # choices[].stop_reason (bedrock-invoke reads it)
        self.text = self.reasoning = self.refusal = self.tool = self.output = 0
        self.audio_end = False  # delta.audio said when it expires
        self.tools: list[ToolFragment] = []


class ToolFragment:
    __slots__ = ("ordinal", "index", "id", "args")

    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal
        self.index: int | None = None
        self.id: bytes | None = None
        self.args: bytes | None = None


class Part:
    __slots__ = ("type", "text", "thought", "tool", "output")

    def __init__(self) -> None:
        self.type: bytes | None = None
        self.text = self.thought = self.tool = self.output = False


class EventRecord:
    """The fields of one event that matter, as JSON_TREE asked for them."""

    __slots__ = (
        "type", "object", "model", "error", "err_code", "err_type", "err_status", "flat_code",
        "seq", "has_choices", "gemini", "choices", "too_many", "choice", "part", "tool",
        "tool_fragments",
        "block_reason", "incomplete_reason", "status", "delta", "delta_text",
        "delta_thinking", "delta_json", "stop_reason", "stop_detail", "block_index",
        "block_type", "item_type", "args", "delta_bytes", "output_index", "reasoning_tokens",
        "in_item", "item_text", "item_refusal", "items", "chunk", "done", "calls", "metrics",
        "guardrail",
    )  # fmt: skip

    def __init__(self) -> None:
        self.type: bytes | None = None
        self.object: bytes | None = None
        self.model: bytes | None = None
        self.error = False
        self.err_code: bytes | None = None
        self.err_type: bytes | None = None
        self.err_status: bytes | None = None
        self.flat_code: bytes | None = None
        self.seq: int | None = None
        self.has_choices = self.gemini = False
        self.choices: list[Choice] = []
        self.too_many: str | None = None
        self.choice: Choice | None = None
        self.part: Part | None = None
        self.tool: ToolFragment | None = None
        self.tool_fragments = 0
        self.block_reason: bytes | None = None
        self.incomplete_reason: bytes | None = None
        self.status: bytes | None = None
        self.delta = self.delta_text = self.delta_thinking = False
        self.delta_json: bytes | None = None
        self.stop_reason: bytes | None = None
        self.stop_detail: bytes | None = None
        self.block_index: int | None = None
        self.block_type: bytes | None = None
        self.item_type: bytes | None = None
        self.args: list[bytes] = []  # every whole "arguments" string of the event
        self.delta_bytes: bytes | None = None  # a Responses delta, whole
        self.output_index: int | None = None
        self.reasoning_tokens = False  # usage counted reasoning tokens
        self.in_item = self.item_text = self.item_refusal = False  # the item being read
        self.items = 0  # what the event's whole items held: _protocols.ITEM_* bits
        self.chunk: bytes | None = None  # a Bedrock chunk's "bytes": the model's event, base64
        self.done: bool | None = None  # Ollama's "done", when the line has one
        self.calls = 0  # whole tool calls (Ollama)
        self.metrics = False  # a Bedrock InvokeModel chunk's amazon-bedrock-invocationMetrics: its last
        self.guardrail = False  # its amazon-bedrock-guardrailAction said INTERVENED

    # The automaton calls these three as it meets fields that JSON_TREE names.
    def begin(self, action: int, is_object: bool) -> None:
        if action == d.A_ERROR:
            self.error = True
        elif action == d.A_CHOICES:
            self.has_choices = True
        elif action == d.A_GEMINI:
            self.gemini = True
        elif not is_object:
            return
        elif action == d.A_CALL:
            self.calls += 1
        elif action == d.A_INVOCATION_METRICS:
            self.metrics = True
        elif action in _CONVERSE_STARTS:
            self.block_type = _CONVERSE_STARTS[action]
        elif action == d.A_ITEM:
            self.in_item = True
            self.item_type = None
            self.item_text = self.item_refusal = False
        elif action == d.A_CHOICE:
            self.choice = Choice(len(self.choices))
        elif action == d.A_PART:
            if self.choice is not None:
                self.part = Part()
        elif action == d.A_TOOL or action == d.A_FUNCTION_CALL:
            if self.choice is not None:
                self.tool = ToolFragment(len(self.choice.tools))
                if action == d.A_FUNCTION_CALL:
                    self.tool.index = d.LEGACY_CALL_INDEX

    def end(self, action: int, is_object: bool) -> None:
        if not is_object:
            return
        if action == d.A_ITEM:
            if self.in_item:
                self.items |= item_bits(self.item_type, self.item_text, self.item_refusal)
            self.in_item = False
        elif action == d.A_CHOICE:
            choice = self.choice
            assert choice is not None  # begin() made it
            if choice.native is not None and choice.finish is not None:
                choice.finish = worse_finish(choice.finish, choice.native)
            if len(self.choices) >= MAX_CHOICES:
                self.too_many = "choices"
            else:
                self.choices.append(choice)
            self.choice = None
        elif action == d.A_PART:
            part, choice = self.part, self.choice
            if part is not None and choice is not None:
                if part.thought or part.type in _REASONING_PART_TYPES:
                    choice.reasoning += 1
                elif part.tool:
                    choice.tool += 1
                elif part.text:
                    choice.text += 1
                elif part.output:
                    choice.output += 1
            self.part = None
        elif action == d.A_TOOL or action == d.A_FUNCTION_CALL:
            if self.tool is not None and self.choice is not None:
                if self.tool_fragments >= MAX_TOOL_CALLS:
                    self.too_many = "tool_calls"
                else:
                    self.choice.tools.append(self.tool)
                    self.tool_fragments += 1
            self.tool = None

    def scalar(self, action: int, kind: int, value: Value, nonempty: bool) -> None:
        """A scalar value for action.  kind: V_STRING (value: the captured bytes, or None if
        the action captures none), V_NUMBER (value: an int below 2**53, else None), V_TRUE,
        V_FALSE, V_NULL (value None).  nonempty: a string with at least one byte."""
        rule = _RULES[kind].get(action)
        if rule is not None:
            rule(self, value, nonempty)


# ---------------------------------------------------------------------------- what a value does
# Each rule takes (record, value, nonempty).

Rule = Callable[[EventRecord, Value, bool], None]


def _field(name: str) -> Rule:
    """The value is the field's (the last one sent wins)."""

    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        setattr(record, name, value)

    return rule


def _named(name: str) -> Rule:
    """A value that names something: an empty one names nothing."""

    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        if value:
            setattr(record, name, value)

    return rule


def _flag(name: str) -> Rule:
    """True once any such value was not empty."""

    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        if nonempty:
            setattr(record, name, True)

    return rule


def _error(record: EventRecord, value: Value, nonempty: bool) -> None:
    record.error = True  # an "error" that is anything but null or false


_ERROR_OBJECT = d.ERROR_OBJECT.encode()


def _object(record: EventRecord, value: Value, nonempty: bool) -> None:
    record.object = cast(bytes, value)  # a string rule: bytes
    if value == _ERROR_OBJECT:
        record.error = True


def _choice_named(name: str) -> Rule:
    """A value of the choice being read that names something.  An empty finish reason is null
    (TGI sends "" before the last chunk)."""

    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        if record.choice is not None and value:
            setattr(record.choice, name, value)

    return rule


def _choice_count(name: str) -> Rule:
    """Content of the choice being read: counted when not empty."""

    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        choice = record.choice
        if nonempty and choice is not None:
            setattr(choice, name, getattr(choice, name) + 1)

    return rule


def _part_type(record: EventRecord, value: Value, nonempty: bool) -> None:
    if record.part is not None:
        record.part.type = cast(bytes | None, value)  # a string rule: bytes


def _part_flag(name: str) -> Rule:
    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        if nonempty and record.part is not None:
            setattr(record.part, name, True)

    return rule


def _tool_id(record: EventRecord, value: Value, nonempty: bool) -> None:
    if record.tool is not None and value:
        record.tool.id = cast(bytes, value)  # a string rule: bytes


def _tool_args(record: EventRecord, value: Value, nonempty: bool) -> None:
    tool = record.tool
    if tool is not None:
        args = cast(bytes, value)  # a string rule: bytes
        tool.args = args if tool.args is None else tool.args + args  # a repeated key adds


def _number(rule: Rule) -> Rule:
    """A number rule: only plain integers below 2**53 count (others arrive as None)."""

    def number_rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        if value is not None:
            rule(record, value, nonempty)

    return number_rule


def _choice_index(record: EventRecord, value: Value, nonempty: bool) -> None:
    if record.choice is not None:
        record.choice.index = cast(int, value)  # a number rule: an int


def _tool_index(record: EventRecord, value: Value, nonempty: bool) -> None:
    if record.tool is not None:
        record.tool.index = cast(int, value)  # a number rule: an int


def _number_text(name: str) -> Rule:
    """A numeric code, kept as its decimal text (as a string code would be)."""

    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        setattr(record, name, str(value).encode())

    return rule


_GEMINI_FINISH_NUMBERS = {n: name.encode() for n, name in enumerate(d.GEMINI_FINISH_NUMBERS)}
_GEMINI_BLOCK_NUMBERS = {n: name.encode() for n, name in enumerate(d.GEMINI_BLOCK_NUMBERS)}


def _enum_name(names: dict[int, bytes], number: int) -> bytes:
    """An enum sent as its number (_protocols.GEMINI_FINISH_NUMBERS): its name, or the number's
    decimal text when the table has none."""
    return names.get(number) or str(number).encode()


def _gemini_finish_number(record: EventRecord, value: Value, nonempty: bool) -> None:
    """A candidate's finishReason as a number: read in Gemini's candidates only (a number in
    chat's finish_reason names nothing)."""
    if record.choice is not None and record.gemini:
        record.choice.finish = _enum_name(_GEMINI_FINISH_NUMBERS, cast(int, value))


def _gemini_block_number(record: EventRecord, value: Value, nonempty: bool) -> None:
    record.block_reason = _enum_name(_GEMINI_BLOCK_NUMBERS, cast(int, value))


def _output(record: EventRecord, value: Value, nonempty: bool) -> None:
    """Output that is not text, in a part (Gemini) or a choice (chat): counted when not empty."""
    if not nonempty:
        return
    if record.part is not None:
        record.part.output = True
    elif record.choice is not None:
        record.choice.output += 1


def _item_flag(name: str) -> Rule:
    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        if nonempty and record.in_item:
            setattr(record, name, True)

    return rule


def _args(record: EventRecord, value: Value, nonempty: bool) -> None:
    record.args.append(cast(bytes, value))  # a string rule: bytes


def _delta(record: EventRecord, value: Value, nonempty: bool) -> None:
    record.delta = record.delta or nonempty
    record.delta_bytes = cast(bytes, value)


def _chunk(record: EventRecord, value: Value, nonempty: bool) -> None:
    record.chunk = cast(bytes, value)  # a string rule: bytes


_INTERVENED = d.BEDROCK_GUARDRAIL_INTERVENED.encode()


def _guardrail(record: EventRecord, value: Value, nonempty: bool) -> None:
    if value == _INTERVENED:
        record.guardrail = True


def _done(done: bool) -> Rule:
    def rule(record: EventRecord, value: Value, nonempty: bool) -> None:
        record.done = done

    return rule


def _audio_end(record: EventRecord, value: Value, nonempty: bool) -> None:
    if record.choice is not None:
        record.choice.audio_end = True


def _reasoning_tokens(record: EventRecord, value: Value, nonempty: bool) -> None:
    if cast(int, value) > 0:
        record.reasoning_tokens = True


def _part_thought(record: EventRecord, value: Value, nonempty: bool) -> None:
    if record.part is not None:
        record.part.thought = True


_ON_STRING: dict[int, Rule] = {
    d.A_ERROR: _error,
    d.A_TYPE: _field("type"),
    d.A_OBJECT: _object,
    d.A_MODEL: _named("model"),
    d.A_ERR_CODE: _field("err_code"),
    d.A_ERR_TYPE: _field("err_type"),
    d.A_ERR_STATUS: _field("err_status"),
    d.A_FLAT_CODE: _field("flat_code"),
    d.A_FINISH: _choice_named("finish"),
    d.A_NATIVE_FINISH: _choice_named("native"),
    d.A_CHOICE_STOP: _choice_named("stop"),
    d.A_TEXT: _choice_count("text"),
    d.A_REASONING: _choice_count("reasoning"),
    d.A_REFUSAL: _choice_count("refusal"),
    d.A_PART_TYPE: _part_type,
    d.A_PART_TEXT: _part_flag("text"),
    d.A_PART_TOOL: _part_flag("tool"),
    d.A_TOOL_ID: _tool_id,
    d.A_TOOL_ARGS: _tool_args,
    d.A_BLOCK_REASON: _field("block_reason"),
    d.A_INCOMPLETE_REASON: _field("incomplete_reason"),
    d.A_STATUS: _field("status"),
    d.A_DELTA: _delta,
    d.A_DELTA_TEXT: _flag("delta_text"),
    d.A_DELTA_THINKING: _flag("delta_thinking"),
    d.A_DELTA_JSON: _field("delta_json"),
    d.A_STOP_REASON: _field("stop_reason"),
    d.A_STOP_DETAIL: _field("stop_detail"),
    d.A_BLOCK_TYPE: _field("block_type"),
    d.A_ITEM_TYPE: _field("item_type"),
    d.A_ARGS: _args,
    d.A_OUTPUT: _output,
    d.A_ITEM_TEXT: _item_flag("item_text"),
    d.A_ITEM_REFUSAL: _item_flag("item_refusal"),
    d.A_CHUNK_BYTES: _chunk,
    d.A_GUARDRAIL: _guardrail,
}
_ON_NUMBER: dict[int, Rule] = {
    d.A_ERROR: _error,
    d.A_SEQ: _number(_field("seq")),
    d.A_CHOICE_INDEX: _number(_choice_index),
    d.A_TOOL_INDEX: _number(_tool_index),
    d.A_BLOCK_INDEX: _number(_field("block_index")),
    d.A_ERR_CODE: _number(_number_text("err_code")),
    d.A_FLAT_CODE: _number(_number_text("flat_code")),
    d.A_OUTPUT_INDEX: _number(_field("output_index")),
    d.A_REASONING_TOKENS: _number(_reasoning_tokens),
    d.A_AUDIO_END: _number(_audio_end),
    d.A_FINISH: _number(_gemini_finish_number),
    d.A_BLOCK_REASON: _number(_gemini_block_number),
}
_ON_TRUE: dict[int, Rule] = {d.A_ERROR: _error, d.A_PART_THOUGHT: _part_thought, d.A_DONE: _done(True)}
_RULES: dict[int, dict[int, Rule]] = {
    V_STRING: _ON_STRING,
    V_NUMBER: _ON_NUMBER,
    V_TRUE: _ON_TRUE,
    V_FALSE: {d.A_DONE: _done(False)},
    V_NULL: {},
}

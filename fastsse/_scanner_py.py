"""The pure-Python scanner: the reference twin of ``_scanner.pyx``.

Three layers, in the order bytes travel:

1. framing - bytes -> lines -> events, by the WHATWG event-stream rules (``Scanner``);
2. JSON - one strict, incremental JSON automaton (``JsonScanner``) that validates an event and,
   walking ``_dialects.JSON_TREE``, records the fields that matter into an ``EventRecord``; the
   same automaton without the tree validates tool-call arguments fragment by fragment;
3. dialect - each event record updates the stream's evidence (``Scanner._interpret``).

``close()`` hands the evidence to ``_verdict.decide``.  The compiled twin implements the same
layers with the same rules; tests hold them to identical verdicts.
"""

from __future__ import annotations

import re

from . import _dialects as d
from ._limits import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    MAX_CHOICES,
    MAX_JSON_DEPTH,
    MAX_TOOL_CALLS,
    check_options,
    check_transport,
)
from ._verdict import Evidence, Verdict, decide

_BOM = b"\xef\xbb\xbf"
_LF, _CR, _COLON, _SPACE, _BRACE = 0x0A, 0x0D, 0x3A, 0x20, 0x7B
_KNOWN_FIELDS = (b"data", b"event", b"id", b"retry")

# --- JSON automaton states
_VALUE = 0  # a value must come (top level, after ':' or after ',' in an array)
_VALUE_OR_END = 1  # after '[': a value or ']'
_KEY = 2  # after ',' in an object: a key must come
_KEY_OR_END = 3  # after '{': a key or '}'
_EXPECT_COLON = 4
_AFTER = 5  # a value just ended
_STRING = 6
_ESCAPE = 7
_UNICODE = 8
_NUMBER = 9
_LITERAL = 10
_ERROR = 11

# number sub-states
_N_MINUS, _N_ZERO, _N_INT, _N_DOT, _N_FRAC, _N_E, _N_ESIGN, _N_EXP = range(8)
_N_TERMINAL = (_N_ZERO, _N_INT, _N_FRAC, _N_EXP)

_WS = frozenset(b" \t\n\r")
_ESCAPES = {
    ord('"'): b'"',
    ord("\\"): b"\\",
    ord("/"): b"/",
    ord("b"): b"\b",
    ord("f"): b"\f",
    ord("n"): b"\n",
    ord("r"): b"\r",
    ord("t"): b"\t",
}
_HEX = {c: int(chr(c), 16) for c in b"0123456789abcdefABCDEF"}
_LITERALS = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}
_PLAIN_RUN = re.compile(rb'[^"\\\x00-\x1f]+')
_MAX_INT = 1 << 53

_TREE = d.JSON_TREE
_FULL = d.FULL_CAPTURE_ACTIONS
_SHORT = d.SHORT_CAPTURE_ACTIONS
_CAP = d.CAPTURE_BYTES


class Choice:
    __slots__ = ("ordinal", "index", "finish", "native", "text", "reasoning", "refusal", "tool",
                 "tools")

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.index: int | None = None
        self.finish: bytes | None = None
        self.native: bytes | None = None
        self.text = self.reasoning = self.refusal = self.tool = 0
        self.tools: list[ToolFragment] = []


class ToolFragment:
    __slots__ = ("ordinal", "index", "id", "args")

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.index: int | None = None
        self.id: bytes | None = None
        self.args: bytes | None = None


class Part:
    __slots__ = ("type", "text", "thought", "tool")

    def __init__(self):
        self.type = None
        self.text = self.thought = self.tool = False


class EventRecord:
    """The fields of one event that matter, as JSON_PATHS asked for them."""

    __slots__ = (
        "type", "object", "model", "error", "err_code", "err_type", "err_status", "flat_code",
        "seq", "has_choices", "gemini", "choices", "too_many", "choice", "part", "tool",
        "tool_fragments",
        "block_reason", "incomplete_reason", "status", "delta", "delta_text",
        "delta_thinking", "delta_json", "stop_reason", "stop_detail", "block_index",
        "block_type", "item_type", "args",
    )  # fmt: skip

    def __init__(self):
        self.type = self.object = self.model = None
        self.error = False
        self.err_code = self.err_type = self.err_status = self.flat_code = None
        self.seq = None
        self.has_choices = self.gemini = False
        self.choices = []
        self.too_many = None
        self.choice: Choice | None = None
        self.part: Part | None = None
        self.tool: ToolFragment | None = None
        self.tool_fragments = 0
        self.block_reason = self.incomplete_reason = self.status = None
        self.delta = self.delta_text = self.delta_thinking = False
        self.delta_json = None
        self.stop_reason = self.stop_detail = None
        self.block_index = None
        self.block_type = self.item_type = None
        self.args = None

    # The automaton calls these three as it meets fields that JSON_PATHS names.
    def begin(self, action: int, is_object: bool) -> None:
        if action == d.A_ERROR:
            self.error = True
        elif action == d.A_CHOICES:
            self.has_choices = True
        elif action == d.A_GEMINI:
            self.gemini = True
        elif not is_object:
            return
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
        if action == d.A_CHOICE:
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
            self.part = None
        elif action == d.A_TOOL or action == d.A_FUNCTION_CALL:
            if self.tool is not None and self.choice is not None:
                if self.tool_fragments >= MAX_TOOL_CALLS:
                    self.too_many = "tool_calls"
                else:
                    self.choice.tools.append(self.tool)
                    self.tool_fragments += 1
            self.tool = None

    def scalar(self, action: int, kind: int, value, nonempty: bool) -> None:
        """kind: '"' string (value: captured bytes or None), '0' integer (value: int or None),
        't', 'f', 'n' for true, false, null."""
        string = kind == _K_STRING
        if action == d.A_ERROR:
            if kind not in (_K_NULL, _K_FALSE):
                self.error = True
        elif kind == _K_NUMBER:
            if value is None:
                return
            if action == d.A_SEQ:
                self.seq = value
            elif action == d.A_CHOICE_INDEX:
                if self.choice is not None:
                    self.choice.index = value
            elif action == d.A_TOOL_INDEX:
                if self.tool is not None:
                    self.tool.index = value
            elif action == d.A_BLOCK_INDEX:
                self.block_index = value
            elif action == d.A_ERR_CODE:
                self.err_code = str(value).encode()
            elif action == d.A_FLAT_CODE:
                self.flat_code = str(value).encode()
        elif kind == _K_TRUE:
            if action == d.A_PART_THOUGHT and self.part is not None:
                self.part.thought = True
        elif not string:
            return
        elif action == d.A_TYPE:
            self.type = value
        elif action == d.A_OBJECT:
            self.object = value
        elif action == d.A_MODEL:
            if value:
                self.model = value
        elif action == d.A_ERR_CODE:
            self.err_code = value
        elif action == d.A_ERR_TYPE:
            self.err_type = value
        elif action == d.A_ERR_STATUS:
            self.err_status = value
        elif action == d.A_FLAT_CODE:
            self.flat_code = value
        elif action == d.A_FINISH or action == d.A_NATIVE_FINISH:
            # An empty finish reason names nothing: it is null (TGI sends "" before the last
            # chunk).
            if self.choice is not None and value:
                if action == d.A_FINISH:
                    self.choice.finish = value
                else:
                    self.choice.native = value
        elif action in (d.A_TEXT, d.A_REASONING, d.A_REFUSAL):
            choice = self.choice
            if nonempty and choice is not None:
                if action == d.A_TEXT:
                    choice.text += 1
                elif action == d.A_REASONING:
                    choice.reasoning += 1
                else:
                    choice.refusal += 1
        elif action == d.A_PART_TYPE:
            if self.part is not None:
                self.part.type = value
        elif action == d.A_PART_TEXT:
            if nonempty and self.part is not None:
                self.part.text = True
        elif action == d.A_PART_TOOL:
            if nonempty and self.part is not None:
                self.part.tool = True
        elif action == d.A_TOOL_ID:
            if self.tool is not None and value:
                self.tool.id = value
        elif action == d.A_TOOL_ARGS:
            if self.tool is not None:
                self.tool.args = value if self.tool.args is None else self.tool.args + value
        elif action == d.A_BLOCK_REASON:
            self.block_reason = value
        elif action == d.A_INCOMPLETE_REASON:
            self.incomplete_reason = value
        elif action == d.A_STATUS:
            self.status = value
        elif action == d.A_DELTA:
            self.delta = self.delta or nonempty
        elif action == d.A_DELTA_TEXT:
            self.delta_text = self.delta_text or nonempty
        elif action == d.A_DELTA_THINKING:
            self.delta_thinking = self.delta_thinking or nonempty
        elif action == d.A_DELTA_JSON:
            self.delta_json = value
        elif action == d.A_STOP_REASON:
            self.stop_reason = value
        elif action == d.A_STOP_DETAIL:
            self.stop_detail = value
        elif action == d.A_BLOCK_TYPE:
            self.block_type = value
        elif action == d.A_ITEM_TYPE:
            self.item_type = value
        elif action == d.A_ARGS:
            self.args = value


_K_STRING, _K_NUMBER, _K_TRUE, _K_FALSE, _K_NULL = range(5)
_LITERAL_KIND = {b"true": _K_TRUE, b"false": _K_FALSE, b"null": _K_NULL}
_REASONING_PART_TYPES = frozenset(t.encode() for t in d.REASONING_PART_TYPES)


class JsonScanner:
    """Strict RFC 8259 JSON, fed in pieces.  With a record it walks JSON_TREE and records fields.

    Strings are not checked for valid UTF-8 (bytes >= 0x80 pass); everything else the RFC
    forbids is an error, and so is nesting deeper than MAX_JSON_DEPTH.
    """

    __slots__ = (
        "record", "state", "stack", "nodes", "pending", "started", "is_key", "key", "capture",
        "sbuf", "nonempty", "action", "hex_value", "hex_left", "literal", "lit_pos", "num",
        "num_int", "num_value", "seen",
    )  # fmt: skip

    def __init__(self, record: EventRecord | None = None):
        # Without a record (a tool call's arguments) no node is tracked, so it is never called.
        self.record = record if record is not None else EventRecord()
        self.state = _VALUE
        self.stack = bytearray()  # b"{" or b"[" per open container
        self.nodes: list[int] = []  # JSON_TREE node per open container (-1: not tracked)
        self.pending = 0 if record is not None else -1  # node of the next value
        self.is_key = False
        self.key = bytearray()
        self.capture = 0  # 0: nothing, 1: bounded, 2: whole string
        self.sbuf = bytearray()
        self.nonempty = False
        self.action = 0
        self.hex_value = self.hex_left = 0
        self.literal = b""
        self.lit_pos = 0
        self.num = 0
        self.num_int = True
        self.num_value = 0
        self.seen = False  # any non-whitespace byte

    @property
    def failed(self) -> bool:
        return self.state == _ERROR

    @property
    def done(self) -> bool:
        """A whole top-level value has been read."""
        return self.state == _AFTER and not self.stack

    def finish(self) -> bool:
        """End of input: True if it was exactly one valid JSON value."""
        if self.state == _NUMBER and not self.stack and self.num in _N_TERMINAL:
            self._end_number()
        return self.state == _AFTER and not self.stack

    def finish_args(self) -> bool:
        """End of tool-call arguments: empty (no arguments) or one valid value."""
        return not self.seen or self.finish()

    # -- helpers that open and close values
    def _value_action(self) -> int:
        node = self.pending
        return _TREE[node][0] if node >= 0 else 0

    def _open(self, byte: int) -> None:
        if len(self.stack) >= MAX_JSON_DEPTH:
            self.state = _ERROR
            return
        node = self.pending
        self.stack.append(byte)
        self.nodes.append(node)
        if node >= 0 and _TREE[node][0]:
            self.record.begin(_TREE[node][0], byte == _BRACE)
        if byte == _BRACE:
            self.state = _KEY_OR_END
        else:
            self.state = _VALUE_OR_END
            self.pending = _TREE[node][2] if node >= 0 else -1

    def _close(self, byte: int) -> None:
        opener = 0x7B if byte == 0x7D else 0x5B
        if not self.stack or self.stack[-1] != opener:
            self.state = _ERROR
            return
        self.stack.pop()
        node = self.nodes.pop()
        if node >= 0 and _TREE[node][0]:
            self.record.end(_TREE[node][0], opener == _BRACE)
        self._after_value()

    def _after_value(self) -> None:
        self.state = _AFTER
        if self.stack and self.stack[-1] == 0x5B:
            node = self.nodes[-1]
            self.pending = _TREE[node][2] if node >= 0 else -1

    def _scalar(self, kind: int, value, nonempty: bool = False) -> None:
        action = self._value_action()
        if action:
            self.record.scalar(action, kind, value, nonempty)
        self._after_value()

    def _end_string(self) -> None:
        if self.is_key:
            self.is_key = False
            node = self.nodes[-1]
            if node >= 0 and len(self.key) <= _CAP:
                self.pending = _TREE[node][1].get(bytes(self.key), -1)
            else:
                self.pending = -1
            self.state = _EXPECT_COLON
            return
        value = bytes(self.sbuf) if self.capture else None
        self.sbuf.clear()
        self._scalar(_K_STRING, value, self.nonempty)

    def _end_number(self) -> None:
        value = self.num_value if self.num_int and self.num_value < _MAX_INT else None
        self._scalar(_K_NUMBER, value)

    def _emit(self, piece: bytes) -> None:
        """Append unescaped string bytes to the key or captured value."""
        self.nonempty = True
        if self.is_key:
            if len(self.key) <= _CAP:
                self.key += piece[: _CAP + 1 - len(self.key)]
        elif self.capture == 2:
            self.sbuf += piece
        elif self.capture == 1 and len(self.sbuf) <= _CAP:
            self.sbuf += piece[: _CAP + 1 - len(self.sbuf)]

    def _start_string(self, is_key: bool) -> None:
        self.state = _STRING
        self.is_key = is_key
        self.nonempty = False
        if is_key:
            self.key.clear()
            self.capture = 0
        else:
            action = self._value_action()
            self.capture = 2 if action in _FULL else 1 if action in _SHORT else 0

    def _start_value(self, c: int) -> None:
        if c == 0x22:
            self._start_string(False)
        elif c == 0x7B or c == 0x5B:
            self._open(c)
        elif c == 0x2D or 0x30 <= c <= 0x39:
            self.state = _NUMBER
            self.num_int = True
            self.num_value = 0
            if c == 0x2D:
                self.num = _N_MINUS
                self.num_int = False  # negative numbers are never indexes
            elif c == 0x30:
                self.num = _N_ZERO
            else:
                self.num = _N_INT
                self.num_value = c - 0x30
        elif c in _LITERALS:
            self.state = _LITERAL
            self.literal = _LITERALS[c]
            self.lit_pos = 1
        else:
            self.state = _ERROR

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n:
            state = self.state
            if state == _ERROR:
                return
            c = data[i]
            if state == _STRING:
                m = _PLAIN_RUN.match(data, i)
                if m is not None:
                    self._emit(m.group())
                    i = m.end()
                    continue
                if c == 0x22:
                    self._end_string()
                elif c == 0x5C:
                    self.state = _ESCAPE
                else:  # a raw control character
                    self.state = _ERROR
                i += 1
                continue
            if state == _ESCAPE:
                if c == 0x75:
                    self.state = _UNICODE
                    self.hex_value = 0
                    self.hex_left = 4
                elif c in _ESCAPES:
                    self._emit(_ESCAPES[c])
                    self.state = _STRING
                else:
                    self.state = _ERROR
                i += 1
                continue
            if state == _UNICODE:
                h = _HEX.get(c)
                if h is None:
                    self.state = _ERROR
                else:
                    self.hex_value = self.hex_value * 16 + h
                    self.hex_left -= 1
                    if not self.hex_left:
                        self._emit(chr(self.hex_value).encode("utf-8", "surrogatepass"))
                        self.state = _STRING
                i += 1
                continue
            if state == _NUMBER:
                if self._number_byte(c):
                    i += 1
                    continue
                if self.num not in _N_TERMINAL:
                    self.state = _ERROR
                    return
                self._end_number()
                continue  # the byte that ended the number is read again in _AFTER
            if state == _LITERAL:
                if c != self.literal[self.lit_pos]:
                    self.state = _ERROR
                    return
                self.lit_pos += 1
                if self.lit_pos == len(self.literal):
                    self._scalar(_LITERAL_KIND[self.literal], None)
                i += 1
                continue
            # structural states: whitespace is skipped, anything else is read
            i += 1
            if c in _WS:
                continue
            self.seen = True
            if state == _VALUE:
                self._start_value(c)
            elif state == _VALUE_OR_END:
                if c == 0x5D:
                    self._close(c)
                else:
                    self._start_value(c)
            elif state == _KEY_OR_END or state == _KEY:
                if c == 0x22:
                    self._start_string(True)
                elif c == 0x7D and state == _KEY_OR_END:
                    self._close(c)
                else:
                    self.state = _ERROR
            elif state == _EXPECT_COLON:
                self.state = _VALUE if c == _COLON else _ERROR
            elif state == _AFTER:
                if not self.stack:
                    self.state = _ERROR
                elif c == 0x2C:
                    self.state = _KEY if self.stack[-1] == _BRACE else _VALUE
                elif c == 0x7D or c == 0x5D:
                    self._close(c)
                else:
                    self.state = _ERROR

    def _number_byte(self, c: int) -> bool:
        """Advance the number sub-state by one byte; False if the byte ends the number."""
        num = self.num
        digit = 0x30 <= c <= 0x39
        if num == _N_MINUS:
            if not digit:
                return False
            self.num = _N_ZERO if c == 0x30 else _N_INT
        elif num == _N_ZERO:
            if c == 0x2E:
                self.num = _N_DOT
            elif c in (0x65, 0x45):
                self.num = _N_E
            else:
                return False
            self.num_int = False
        elif num == _N_INT:
            if digit:
                if self.num_value < _MAX_INT:
                    self.num_value = self.num_value * 10 + c - 0x30
            elif c == 0x2E:
                self.num = _N_DOT
                self.num_int = False
            elif c in (0x65, 0x45):
                self.num = _N_E
                self.num_int = False
            else:
                return False
        elif num == _N_DOT:
            if not digit:
                return False
            self.num = _N_FRAC
        elif num == _N_FRAC:
            if c in (0x65, 0x45):
                self.num = _N_E
            elif not digit:
                return False
        elif num == _N_E:
            if c in (0x2B, 0x2D):
                self.num = _N_ESIGN
            elif digit:
                self.num = _N_EXP
            else:
                return False
        elif num == _N_ESIGN:
            if not digit:
                return False
            self.num = _N_EXP
        else:  # _N_EXP
            if not digit:
                return False
        return True


def analyze_json(data: bytes) -> EventRecord | None:
    """The record of one event's JSON, or None if it is not exactly one valid JSON value."""
    record = EventRecord()
    scanner = JsonScanner(record)
    scanner.feed(data)
    return record if scanner.finish() else None


def pick_error_code(record: EventRecord):
    """The most telling error identifier: a named code, then type, status, a numeric code."""
    named = [record.err_code, record.err_type, record.err_status, record.flat_code]
    if record.err_code is not None and record.err_code.isdigit():
        named.append(named.pop(0))  # "CANCELLED" says more than 499
    for code in named:
        if code:
            return code
    return None


class _ToolCall:
    __slots__ = ("id", "json")

    def __init__(self, call_id):
        self.id = call_id
        self.json = JsonScanner()


_DETECT_TYPES = {k.encode(): v for k, v in d.DETECT_TYPES.items()}
_DETECT_PREFIXES = tuple((p.encode(), v) for p, v in d.DETECT_TYPE_PREFIXES)
_KINDS = {name: {k.encode(): v for k, v in kinds.items()} for name, kinds in d.EVENT_KINDS.items()}
_CHAT_OBJECT = d.CHAT_OBJECT.encode()
_RESPONSES_COMPLETED = d.RESPONSES_COMPLETED.encode()
_R_INCOMPLETE = d.RESPONSES_STATUS_INCOMPLETE.encode()
_R_NAME_STATUSES = frozenset(s.encode() for s in d.RESPONSES_NAME_STATUSES)
_A_STOP_DETAILS_WIN = frozenset(t.encode() for t in d.ANTHROPIC_STOP_DETAILS_WIN)
_R_REASONING = frozenset(t.encode() for t in d.RESPONSES_REASONING_ITEMS)
_R_TOOL_SUFFIX = d.RESPONSES_TOOL_ITEM_SUFFIX.encode()
_A_REASONING = frozenset(t.encode() for t in d.ANTHROPIC_REASONING_BLOCKS)
_A_TOOL = frozenset(t.encode() for t in d.ANTHROPIC_TOOL_BLOCKS)
_A_JSON_INPUT = frozenset(t.encode() for t in d.ANTHROPIC_JSON_INPUT_BLOCKS)
_ERROR_EVENT = b"error"


_NATIVE_RANK = {raw.encode(): rank for raw, rank in d.NATIVE_FINISH_RANK.items()}
_UNKNOWN_RANK = d.OUTCOME_RANK[d.UNKNOWN_FINISH[1]]


def worse_finish(finish: bytes, native: bytes) -> bytes:
    """A choice's finish reason, given OpenRouter's native one beside it (NATIVE_FINISH_RANK)."""
    native_rank = _NATIVE_RANK.get(native)
    if native_rank is not None and native_rank < _NATIVE_RANK.get(finish, _UNKNOWN_RANK):
        return native
    return finish


def _terminal_reason(kind: int, record: EventRecord):
    """The raw finish reason of a terminal Responses event (see RESPONSES_NAME_STATUSES): its
    incomplete_details.reason, else a status that contradicts its name, else its name's."""
    if record.incomplete_reason is not None:
        return record.incomplete_reason
    status = record.status
    if status is not None and status not in _R_NAME_STATUSES:
        return status  # failed, cancelled, in_progress, ...
    if kind == d.K_COMPLETED and status != _R_INCOMPLETE:
        return _RESPONSES_COMPLETED
    return None  # incomplete, and it never said why


def detect_protocol(record: EventRecord, event_type: bytes) -> str | None:
    """The dialect an event names, if it names one."""
    name = record.type if record.type is not None else event_type
    for prefix, protocol in _DETECT_PREFIXES:
        if name.startswith(prefix):
            return protocol
    if name in _DETECT_TYPES:
        return _DETECT_TYPES[name]
    if record.has_choices or record.object == _CHAT_OBJECT:
        return "chat"
    if record.gemini:
        return "gemini"
    return None


class Scanner:
    """Judge one captured stream: ``feed()`` its bytes in any chunking, then ``close()``."""

    def __init__(
        self,
        protocol: str = "auto",
        *,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ):
        check_options(protocol, max_event_bytes, max_line_bytes)
        self.protocol = protocol
        self.max_event_bytes = max_event_bytes
        self.max_line_bytes = max_line_bytes
        self._dialect = None if protocol == "auto" else protocol
        self._closed = False
        self._ev = Evidence()
        # framing
        self._head = bytearray()  # the first bytes, until we know whether they are a BOM
        self._at_start = True
        self._pending_cr = False
        self._line = bytearray()  # the unterminated line so far
        self._data = bytearray()
        self._data_lines = 0
        self._event_type: bytes | None = None
        self._event_bytes = 0  # non-comment line bytes of the event being built
        self._bare: JsonScanner | None = None  # reading a bare JSON object (Gemini's errors)
        self._bare_bytes = 0
        # dialect state
        self._finishes: dict[int, bytes | None] = {}  # choice index -> raw finish reason
        self._tools: dict[tuple[int, int], _ToolCall] = {}  # chat: (choice, tool index) -> call
        self._blocks: dict[int, JsonScanner] = {}  # anthropic: block index -> a tool's input
        self._last_seq = None

    # ------------------------------------------------------------------ framing
    def feed(self, data) -> None:
        if self._closed:
            raise RuntimeError("feed() after close()")
        data = bytes(data)
        self._ev.bytes += len(data)
        if self._ev.limit is not None or not data:
            return
        if self._at_start:
            self._head += data
            if len(self._head) < 3 and _BOM.startswith(self._head):
                return
            data = bytes(self._head[3:] if self._head.startswith(_BOM) else self._head)
            self._head.clear()
            self._at_start = False
        self._scan(data)

    def _scan(self, data: bytes) -> None:
        pos, n = 0, len(data)
        if self._pending_cr:
            self._pending_cr = False
            if n and data[0] == _LF:
                pos = 1
        next_lf = data.find(b"\n", pos)
        next_cr = data.find(b"\r", pos)
        while True:
            if 0 <= next_lf < pos:
                next_lf = data.find(b"\n", pos)
            if 0 <= next_cr < pos:
                next_cr = data.find(b"\r", pos)
            if next_lf < 0:
                end = next_cr
            elif next_cr < 0:
                end = next_lf
            else:
                end = min(next_lf, next_cr)
            if end < 0:
                break
            if self._line:
                if self._too_long(len(self._line) + end - pos, self._line[0]):
                    return
                self._line += data[pos:end]
                line = bytes(self._line)
                self._line.clear()
            else:
                line = data[pos:end]
                if line and self._too_long(len(line), line[0]):
                    return
            self._process_line(line)
            if self._ev.limit is not None:
                return
            if data[end] == _CR:
                if end + 1 == n:
                    self._pending_cr = True
                elif data[end + 1] == _LF:
                    end += 1
            pos = end + 1
        if pos < n:
            first = self._line[0] if self._line else data[pos]
            if self._too_long(len(self._line) + n - pos, first):
                return
            self._line += data[pos:]

    def _too_long(self, line_length: int, first: int) -> bool:
        """Check the bounds for a line of this length; on breach, stop reading for good."""
        if line_length > self.max_line_bytes:
            self._exceed("line")
        elif first != _COLON and self._event_bytes + self._bare_bytes + line_length > self.max_event_bytes:
            self._exceed("event")
        else:
            return False
        return True

    def _exceed(self, which: str) -> None:
        self._ev.limit = which
        # drop every buffer at once: nothing more is read
        self._line = bytearray()
        self._data = bytearray()
        self._bare = None
        self._tools.clear()
        self._blocks.clear()

    def _process_line(self, line: bytes) -> None:
        if not line:
            self._dispatch()
            return
        if line[0] == _COLON:
            self._ev.comments += 1
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if self._bare is not None:
            if name not in _KNOWN_FIELDS:
                self._bare_bytes += len(line)
                self._feed_bare(line)
                return
            self._abandon_bare()
        if line[0] == _BRACE:
            # a bare JSON object, not framed as SSE (Gemini's mid-stream errors)
            self._bare = JsonScanner(EventRecord())
            self._bare_bytes = len(line)
            self._feed_bare(line)
            return
        self._event_bytes += len(line)
        if name == b"data":
            self._data += value
            self._data += b"\n"
            self._data_lines += 1
        elif name == b"event":
            self._event_type = value
        elif name == _ERROR_EVENT:  # llama.cpp sent errors as an "error:" field
            self._ev.errors += 1
        # id and retry change nothing we judge; other fields are ignored, as the spec says

    def _feed_bare(self, line: bytes) -> None:
        bare = self._bare
        assert bare is not None  # only called while a bare object is being read
        bare.feed(line)
        bare.feed(b"\n")
        if bare.failed:
            self._abandon_bare()
        elif bare.done:
            self._bare = None
            self._bare_bytes = 0
            self._ev.events += 1
            self._interpret(bare.record, b"")

    def _abandon_bare(self) -> None:
        self._bare = None
        self._bare_bytes = 0
        self._ev.malformed_events += 1

    def _dispatch(self) -> None:
        if self._bare is not None:
            self._abandon_bare()
        if self._data_lines:
            data = bytes(self._data[:-1])
            self._data.clear()
            self._data_lines = 0
            self._handle_event(self._event_type or b"message", data)
        self._event_type = None
        self._event_bytes = 0

    # ------------------------------------------------------------------ events
    def _handle_event(self, event_type: bytes, data: bytes) -> None:
        ev = self._ev
        ev.events += 1
        if event_type == _ERROR_EVENT:
            ev.errors += 1
        if not data:  # "data:" alone: a keep-alive, nothing to judge
            return
        if data == d.DONE_SENTINEL:
            if self._dialect is None:
                self._dialect = "chat"
            if self._dialect == "chat":
                ev.end_marker = True
            return
        record = analyze_json(data)
        if record is None:
            ev.malformed_events += 1
            return
        self._interpret(record, event_type)

    def _interpret(self, record: EventRecord, event_type: bytes) -> None:
        ev = self._ev
        if record.too_many is not None:
            self._exceed(record.too_many)
            return
        if record.error:
            self._note_error(record)
        if self._dialect is None:
            self._dialect = detect_protocol(record, event_type)
        if record.model is not None and ev.model is None:
            ev.model = record.model
        dialect = self._dialect
        if dialect == "chat" or dialect == "gemini":
            self._choices(record)
        elif dialect == "responses":
            self._responses(record, event_type)
        elif dialect == "anthropic":
            self._anthropic(record, event_type)

    def _note_error(self, record: EventRecord) -> None:
        ev = self._ev
        ev.errors += 1
        if ev.error_code is None:
            ev.error_code = pick_error_code(record)

    def _finish(self, index: int, raw) -> None:
        """Register a choice, and its finish reason once one arrives (the last one sent wins)."""
        finishes = self._finishes
        if index not in finishes:
            if len(finishes) >= MAX_CHOICES:
                self._exceed("choices")
                return
            finishes[index] = raw
        elif raw is not None:
            finishes[index] = raw

    def _choices(self, record: EventRecord) -> None:
        """chat chunks and gemini chunks: per-choice text, reasoning, tools, finish."""
        ev = self._ev
        for choice in record.choices:
            index = choice.index if choice.index is not None else choice.ordinal
            self._finish(index, choice.finish)
            if ev.limit is not None:
                return
            ev.text += choice.text
            ev.reasoning += choice.reasoning
            ev.refusal += choice.refusal
            ev.tool_calls += choice.tool
            for fragment in choice.tools:
                self._tool_fragment(index, fragment)
                if ev.limit is not None:
                    return
        if self._dialect == "gemini":
            # No end marker exists: the last chunk must close every candidate it carries.
            if record.block_reason is not None:
                ev.blocked = record.block_reason
                ev.end_marker = True
            elif record.choices:
                ev.end_marker = all(c.finish is not None for c in record.choices)

    def _tool_fragment(self, choice_index: int, fragment: ToolFragment) -> None:
        index = fragment.index if fragment.index is not None else fragment.ordinal
        key = (choice_index, index)
        call = self._tools.get(key)
        if call is None or (fragment.id and call.id and fragment.id != call.id):
            if call is not None:  # a new id at the same index: the earlier call is over
                self._check_args(call.json)
            elif len(self._tools) >= MAX_TOOL_CALLS:
                self._exceed("tool_calls")
                return
            call = self._tools[key] = _ToolCall(fragment.id)
            self._ev.tool_calls += 1
        elif fragment.id and not call.id:
            call.id = fragment.id
        if fragment.args:
            call.json.feed(fragment.args)

    def _check_args(self, scanner: JsonScanner) -> None:
        if not scanner.finish_args():
            self._ev.tool_malformed = True

    def _sequence(self, record: EventRecord) -> None:
        if record.seq is None:
            return
        if self._last_seq is not None and record.seq != self._last_seq + 1:
            self._ev.sequence_gap = True
        self._last_seq = record.seq

    def _responses(self, record: EventRecord, event_type: bytes) -> None:
        ev = self._ev
        self._sequence(record)
        kind = _KINDS["responses"].get(record.type if record.type is not None else event_type)
        if kind == d.K_TEXT_DELTA:
            ev.text += record.delta
        elif kind == d.K_REFUSAL_DELTA:
            ev.refusal += record.delta
        elif kind == d.K_REASONING_DELTA:
            ev.reasoning += record.delta
        elif kind == d.K_ITEM_ADDED:
            item = record.item_type or b""
            if item in _R_REASONING:
                ev.reasoning += 1
            elif item.endswith(_R_TOOL_SUFFIX):
                ev.tool_calls += 1
        elif kind == d.K_ARGS_DONE:
            scanner = JsonScanner()
            scanner.feed(record.args or b"")
            self._check_args(scanner)
        elif kind == d.K_COMPLETED or kind == d.K_INCOMPLETE:
            ev.end_marker = True
            self._finish(0, _terminal_reason(kind, record))
        elif kind == d.K_FAILED:
            ev.end_marker = True
            if not record.error:
                self._note_error(record)
        elif kind == d.K_ERROR:
            if not record.error:
                self._note_error(record)

    def _anthropic(self, record: EventRecord, event_type: bytes) -> None:
        ev = self._ev
        kind = _KINDS["anthropic"].get(record.type if record.type is not None else event_type)
        if kind == d.K_START:
            self._finish(0, None)
        elif kind == d.K_BLOCK_START:
            block = record.block_type or b""
            if block in _A_REASONING:
                ev.reasoning += 1
            if block in _A_TOOL:
                ev.tool_calls += 1
            if block in _A_JSON_INPUT:
                index = record.block_index if record.block_index is not None else -1
                earlier = self._blocks.pop(index, None)
                if earlier is not None:
                    self._check_args(earlier)
                elif len(self._blocks) >= MAX_TOOL_CALLS:
                    self._exceed("tool_calls")
                    return
                self._blocks[index] = JsonScanner()
        elif kind == d.K_BLOCK_DELTA:
            ev.text += record.delta_text
            ev.reasoning += record.delta_thinking
            if record.delta_json:
                index = record.block_index if record.block_index is not None else -1
                scanner = self._blocks.get(index)
                if scanner is not None:
                    scanner.feed(record.delta_json)
        elif kind == d.K_MESSAGE_DELTA:
            detail = record.stop_detail
            self._finish(0, detail if detail in _A_STOP_DETAILS_WIN else record.stop_reason)
        elif kind == d.K_MESSAGE_STOP:
            ev.end_marker = True
        elif kind == d.K_ERROR:
            if not record.error:
                self._note_error(record)

    # ------------------------------------------------------------------ the end
    def close(self, transport: str = "eof") -> Verdict:
        check_transport(transport)
        if self._closed:
            raise RuntimeError("close() called twice")
        self._closed = True
        ev = self._ev
        if self._at_start and self._head and ev.limit is None:
            head = bytes(self._head)
            self._head.clear()
            self._at_start = False
            self._scan(head)
        if ev.limit is None:
            ev.residual_bytes = len(self._line) + self._event_bytes + self._bare_bytes
            for call in self._tools.values():
                self._check_args(call.json)
            for scanner in self._blocks.values():
                self._check_args(scanner)
            ev.finishes = list(self._finishes.items())
        ev.protocol = self._dialect or "unknown"
        return decide(ev, transport)


def scan(
    data,
    protocol: str = "auto",
    transport: str = "eof",
    *,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Verdict:
    """Judge a whole captured stream at once."""
    scanner = Scanner(protocol, max_event_bytes=max_event_bytes, max_line_bytes=max_line_bytes)
    scanner.feed(data)
    return scanner.close(transport)

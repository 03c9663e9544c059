"""The JSON automaton: strict RFC 8259 JSON, fed in pieces, recording what JSON_TREE names.

One event's data, or one tool call's arguments fragment by fragment, is read byte by byte with
its state kept between pieces.  With a record it walks ``_protocols.JSON_TREE`` and calls the
``EventRecord`` (``_record_py``) as it meets the fields the tree names; without one it only
validates.  The compiled twin's ``_json.pxd`` is the same automaton (and ``_json_fast.pxd``
reads most whole events in one pass, with the same record calls).
"""

from __future__ import annotations

import re

from . import _protocols as d
from ._limits import MAX_JSON_DEPTH
from ._record_py import V_FALSE, V_NULL, V_NUMBER, V_STRING, V_TRUE, EventRecord, Value

# named bytes
_QUOTE, _BACKSLASH, _COLON, _COMMA, _MINUS, _PLUS, _DOT = b'"\\:,-+.'
_OPEN_OBJECT, _CLOSE_OBJECT, _OPEN_ARRAY, _CLOSE_ARRAY = b"{}[]"
_ZERO, _NINE, _LOWER_E, _UPPER_E, _LOWER_U = b"09eEu"

# states
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
_LITERAL_KIND = {b"true": V_TRUE, b"false": V_FALSE, b"null": V_NULL}


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
            self.record.begin(_TREE[node][0], byte == _OPEN_OBJECT)
        if byte == _OPEN_OBJECT:
            self.state = _KEY_OR_END
        else:
            self.state = _VALUE_OR_END
            self.pending = _TREE[node][2] if node >= 0 else -1

    def _close(self, byte: int) -> None:
        opener = _OPEN_OBJECT if byte == _CLOSE_OBJECT else _OPEN_ARRAY
        if not self.stack or self.stack[-1] != opener:
            self.state = _ERROR
            return
        self.stack.pop()
        node = self.nodes.pop()
        if node >= 0 and _TREE[node][0]:
            self.record.end(_TREE[node][0], opener == _OPEN_OBJECT)
        self._after_value()

    def _after_value(self) -> None:
        self.state = _AFTER
        if self.stack and self.stack[-1] == _OPEN_ARRAY:
            node = self.nodes[-1]
            self.pending = _TREE[node][2] if node >= 0 else -1

    def _scalar(self, kind: int, value: Value, nonempty: bool = False) -> None:
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
        self._scalar(V_STRING, value, self.nonempty)

    def _end_number(self) -> None:
        value = self.num_value if self.num_int and self.num_value < _MAX_INT else None
        self._scalar(V_NUMBER, value)

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
        if c == _QUOTE:
            self._start_string(False)
        elif c == _OPEN_OBJECT or c == _OPEN_ARRAY:
            self._open(c)
        elif c == _MINUS or _ZERO <= c <= _NINE:
            self.state = _NUMBER
            self.num_int = True
            self.num_value = 0
            if c == _MINUS:
                self.num = _N_MINUS
                self.num_int = False  # negative numbers are never indexes
            elif c == _ZERO:
                self.num = _N_ZERO
            else:
                self.num = _N_INT
                self.num_value = c - _ZERO
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
                if c == _QUOTE:
                    self._end_string()
                elif c == _BACKSLASH:
                    self.state = _ESCAPE
                else:  # a raw control character
                    self.state = _ERROR
                i += 1
                continue
            if state == _ESCAPE:
                if c == _LOWER_U:
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
                if c == _CLOSE_ARRAY:
                    self._close(c)
                else:
                    self._start_value(c)
            elif state == _KEY_OR_END or state == _KEY:
                if c == _QUOTE:
                    self._start_string(True)
                elif c == _CLOSE_OBJECT and state == _KEY_OR_END:
                    self._close(c)
                else:
                    self.state = _ERROR
            elif state == _EXPECT_COLON:
                self.state = _VALUE if c == _COLON else _ERROR
            elif state == _AFTER:
                if not self.stack:
                    self.state = _ERROR
                elif c == _COMMA:
                    self.state = _KEY if self.stack[-1] == _OPEN_OBJECT else _VALUE
                elif c == _CLOSE_OBJECT or c == _CLOSE_ARRAY:
                    self._close(c)
                else:
                    self.state = _ERROR

    def _number_byte(self, c: int) -> bool:
        """Advance the number sub-state by one byte; False if the byte ends the number."""
        num = self.num
        digit = _ZERO <= c <= _NINE
        if num == _N_MINUS:
            if not digit:
                return False
            self.num = _N_ZERO if c == _ZERO else _N_INT
        elif num == _N_ZERO:
            if c == _DOT:
                self.num = _N_DOT
            elif c == _LOWER_E or c == _UPPER_E:
                self.num = _N_E
            else:
                return False
            self.num_int = False
        elif num == _N_INT:
            if digit:
                if self.num_value < _MAX_INT:
                    self.num_value = self.num_value * 10 + c - _ZERO
            elif c == _DOT:
                self.num = _N_DOT
                self.num_int = False
            elif c == _LOWER_E or c == _UPPER_E:
                self.num = _N_E
                self.num_int = False
            else:
                return False
        elif num == _N_DOT:
            if not digit:
                return False
            self.num = _N_FRAC
        elif num == _N_FRAC:
            if c == _LOWER_E or c == _UPPER_E:
                self.num = _N_E
            elif not digit:
                return False
        elif num == _N_E:
            if c == _PLUS or c == _MINUS:
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

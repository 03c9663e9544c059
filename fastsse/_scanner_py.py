"""The pure-Python scanner: the reference twin of ``_scanner.pyx``, in the same layers.

Open one file at a time, in the order bytes travel:

1. ``_framing_py``: bytes -> lines -> events, by the WHATWG event-stream rules;
2. ``_json_py``: one strict, incremental JSON automaton that validates an event and, walking
   ``_protocols.JSON_TREE``, records the fields that matter into an ``EventRecord``
   (``_record_py``); the same automaton without the tree validates tool-call arguments
   fragment by fragment;
3. this file: the ``Scanner``, which drives the layers, and the protocol rules that turn each
   event's record into the stream's evidence (``Scanner._interpret``).

``close()`` hands the evidence to ``_verdict.decide``.  The compiled twin implements the same
layers with the same rules, plus caches that skip work whose answer is known (``_caches.pxd``;
here ``_caches_py``, which keeps nothing); tests hold the twins to identical verdicts.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _protocols as d
from ._caches_py import Caches, default_caches
from ._eventstream_py import (
    H_ERROR_CODE,
    H_EVENT_TYPE,
    H_EXCEPTION_TYPE,
    H_MESSAGE_TYPE,
    EventStreamFraming,
    Frame,
    base64_decode,
)
from ._framing_py import (
    COLON,
    F_DATA,
    F_ERROR,
    F_EVENT,
    F_OTHER,
    LF,
    OPEN_OBJECT,
    Framing,
    LineSearch,
    split_field,
)
from ._json_py import JsonScanner, analyze_json
from ._limits import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    MAX_CHOICES,
    MAX_TOOL_CALLS,
    UNKNOWN_PROTOCOL,
    check_options,
    check_transport,
)
from ._record_py import EventRecord, ToolFragment, output_kind
from ._verdict import Evidence, Verdict, decide

__all__ = ["Caches", "Scanner", "default_caches", "scan"]

# A stream that is one JSON array: the bytes between its elements, and those an element's end is
# found by.
OPEN_ARRAY, CLOSE_ARRAY, CLOSE_OBJECT, QUOTE, BACKSLASH = b'[]}"\\'
_ARRAY_BETWEEN = frozenset(b" \t\r\n,[]")


_OLLAMA_DONE = d.OLLAMA_DONE_FINISH.encode()


def pick_error_code(record: EventRecord) -> bytes | None:
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

    def __init__(self, call_id: bytes | None) -> None:
        self.id = call_id
        self.json = JsonScanner()


_DETECT_TYPES = {k.encode(): v for k, v in d.DETECT_TYPES.items()}
_DETECT_PREFIXES = tuple((p.encode(), v) for p, v in d.DETECT_TYPE_PREFIXES)
_KINDS = {name: {k.encode(): v for k, v in kinds.items()} for name, kinds in d.EVENT_KINDS.items()}
_CHAT_OBJECT = d.CHAT_OBJECT.encode()
_CHAT_DONE_OBJECT = d.CHAT_DONE_OBJECT.encode()
_AUDIO_END = d.AUDIO_END_FINISH.encode()
_RESPONSES_COMPLETED = d.RESPONSES_COMPLETED.encode()
_R_INCOMPLETE = d.RESPONSES_STATUS_INCOMPLETE.encode()
_R_NAME_STATUSES = frozenset(s.encode() for s in d.RESPONSES_NAME_STATUSES)
_A_STOP_DETAILS_WIN = frozenset(t.encode() for t in d.ANTHROPIC_STOP_DETAILS_WIN)
_A_JSON_INPUT = frozenset(t.encode() for t in d.ANTHROPIC_JSON_INPUT_BLOCKS)
_ERROR_EVENT = b"error"
_CHUNK_EVENT = d.BEDROCK_CHUNK_EVENT.encode()
_ES_EVENT = d.EVENTSTREAM_EVENT.encode()
_ES_FAULTS = {d.EVENTSTREAM_EXCEPTION.encode(): H_EXCEPTION_TYPE, d.EVENTSTREAM_ERROR.encode(): H_ERROR_CODE}
# The framings, as the scanner holds them: not decided yet, SSE, one JSON array (Gemini),
# an AWS event stream, NDJSON.
# lost: unreadable; json_first: auto, and "{" first (NDJSON or SSE, by whether the first line is JSON)
FR_UNDECIDED, FR_SSE, FR_ARRAY, FR_EVENTSTREAM, FR_NDJSON, FR_LOST, FR_JSON_FIRST = range(7)
_JSON_SPACE = b" \t\r"
_FRAMING_CODES = {d.FRAMING_SSE: FR_UNDECIDED, d.FRAMING_EVENTSTREAM: FR_EVENTSTREAM, d.FRAMING_NDJSON: FR_NDJSON}


def _terminal_reason(kind: int, record: EventRecord) -> bytes | None:
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
    """The protocol an event names, if it names one."""
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
    if record.done is not None:
        return "ollama"
    return None


class Scanner:
    """Judge one captured stream: ``feed()`` its bytes in any chunking, then ``close()``."""

    def __init__(
        self,
        protocol: str = "auto",
        *,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        caches: Caches | None = None,
    ):
        check_options(protocol, max_event_bytes, max_line_bytes)
        if caches is not None and not isinstance(caches, Caches):
            # each twin takes its own (fastsse.Caches is the running twin's)
            raise TypeError(
                f"caches must be a {Caches.__module__}.Caches, not "
                f"{type(caches).__module__}.{type(caches).__qualname__}"
            )
        self.protocol = protocol
        self.max_event_bytes = max_event_bytes
        self.max_line_bytes = max_line_bytes
        self.caches = default_caches if caches is None else caches
        # the protocol whose rules read the events; bedrock-invoke's are its model's (anthropic,
        # chat), found from its first event, and the stream's protocol is then _outer
        self._detected = None if protocol in ("auto", "bedrock-invoke") else protocol
        self._outer = "bedrock-invoke" if protocol == "bedrock-invoke" else None
        self._closed = False
        self._ev = Evidence()
        self._fr = Framing()
        self._bare: JsonScanner | None = None  # reading a bare JSON object (Gemini's errors)
        # protocol state
        self._finishes: dict[int, bytes | None] = {}  # choice index -> raw finish reason
        self._tools: dict[tuple[int, int], _ToolCall] = {}  # chat: (choice, tool index) -> call
        # a call's input being read: anthropic, by block index; responses, by output_index
        self._blocks: dict[int, JsonScanner] = {}
        self._last_seq: int | None = None
        # How the stream is framed (FR_*): by its protocol, or by its first byte.  SSE
        # protocols may send one JSON array of events instead (Gemini's streamGenerateContent
        # without alt=sse): that too is decided by the first byte.
        self._framing = FR_UNDECIDED if protocol == "auto" else _FRAMING_CODES[d.FRAMINGS[protocol]]
        self._es = EventStreamFraming()
        self._depth = 0  # inside an element: its open objects and arrays
        self._in_string = self._escape = False
        self._first = bytearray()  # FR_JSON_FIRST: the first line, held until the framing is decided

    # ------------------------------------------------------------------ framing
    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._closed:
            raise RuntimeError("feed() after close()")
        chunk = bytes(data)
        self._ev.bytes += len(chunk)
        if self._ev.limit is not None or not chunk:
            return
        if self._fr.at_start:
            started = self._fr.start(chunk)
            if started is None:
                return
            chunk = started
        self._scan(chunk)

    def _scan(self, data: bytes) -> None:
        """Read the chunk, by the stream's framing."""
        framing = self._framing
        if framing == FR_UNDECIDED:
            if self.protocol == "auto":
                data = data.lstrip(b"\r\n")  # blank lines before anything tell nothing
            if not data:
                return
            first = data[0]
            if first == OPEN_ARRAY:
                framing = FR_ARRAY
            elif self.protocol != "auto":
                framing = FR_SSE
            elif first == d.EVENTSTREAM_FIRST_BYTE:
                framing = FR_EVENTSTREAM
            elif first == d.NDJSON_FIRST_BYTE:
                framing = FR_JSON_FIRST
            else:
                framing = FR_SSE
            self._framing = framing
        if framing == FR_JSON_FIRST:
            self._hold_first_line(data)
        elif framing == FR_SSE:
            self._scan_sse(data)
        elif framing == FR_ARRAY:
            self._scan_array(data)
        elif framing == FR_EVENTSTREAM:
            self._scan_eventstream(data)
        elif framing == FR_NDJSON:
            self._scan_ndjson(data)
        # FR_LOST: nothing after a corrupt frame can be read

    def _scan_sse(self, data: bytes) -> None:
        """Server-Sent Events: the chunk's lines, and the events they end."""
        fr = self._fr
        pos, n = 0, len(data)
        if fr.pending_cr:
            fr.pending_cr = False
            if n and data[0] == LF:
                pos = 1
        search = LineSearch(data, pos)
        while True:
            end = search.line_end(pos)
            if end < 0:
                break
            if fr.line:
                if self._too_long(len(fr.line) + end - pos, fr.line[0]):
                    return
                fr.line += data[pos:end]
                line = bytes(fr.line)
                fr.line.clear()
            else:
                line = data[pos:end]
                if line and self._too_long(len(line), line[0]):
                    return
            self._process_line(line)
            if self._ev.limit is not None:
                return
            pos = fr.line_next(data, end)
        if pos < n:
            first = fr.line[0] if fr.line else data[pos]
            if self._too_long(len(fr.line) + n - pos, first):
                return
            fr.line += data[pos:]

    def _scan_array(self, data: bytes) -> None:
        """A JSON array of events: each top-level element is one event's data, dispatched when
        its braces close (strings and escapes followed); whitespace, commas and the brackets
        between elements are the array's; any other byte there is a malformed event."""
        fr = self._fr
        pos, n = 0, len(data)
        while pos < n:
            if not self._depth:
                byte = data[pos]
                pos += 1
                if byte == OPEN_OBJECT:
                    self._depth = 1
                    self._in_string = self._escape = False
                    fr.data += b"{"
                elif byte not in _ARRAY_BETWEEN:
                    self._ev.malformed_events += 1
                continue
            start = pos
            while pos < n and self._depth:
                byte = data[pos]
                pos += 1
                if self._in_string:
                    if self._escape:
                        self._escape = False
                    elif byte == BACKSLASH:
                        self._escape = True
                    elif byte == QUOTE:
                        self._in_string = False
                elif byte == QUOTE:
                    self._in_string = True
                elif byte == OPEN_OBJECT or byte == OPEN_ARRAY:
                    self._depth += 1
                elif byte == CLOSE_OBJECT or byte == CLOSE_ARRAY:
                    self._depth -= 1
            fr.data += data[start:pos]
            if len(fr.data) > self.max_event_bytes:
                self._exceed("event")
                return
            if not self._depth:
                element = bytes(fr.data)
                fr.data.clear()
                self._handle_event(b"message", element)
                if self._ev.limit is not None:
                    return

    def _hold_first_line(self, data: bytes) -> None:
        """auto, and the stream starts with "{": NDJSON (Ollama) if its first line is whole
        JSON, else SSE, where a bare JSON object may span lines (a pretty-printed error body).
        The first line is held until its newline, or past max_line_bytes (then SSE, which
        reports the limit)."""
        room = self.max_line_bytes + 1 - len(self._first)
        newline = data.find(b"\n", 0, room)
        take = newline + 1 if newline >= 0 else min(len(data), room)
        self._first += data[:take]
        if newline >= 0:
            self._decide_framing(len(self._first) - 1)
        elif len(self._first) > self.max_line_bytes:
            self._decide_framing(None)
        else:
            return
        if take < len(data) and self._ev.limit is None:
            self._scan(data[take:])

    def _decide_framing(self, line_len: int | None) -> None:
        """The held first line's first line_len bytes are the line (None: not JSON, whatever
        they are): the framing is decided, and what was held is read by it."""
        held = bytes(self._first)
        self._first = bytearray()
        line = b"" if line_len is None else held[:line_len].strip(_JSON_SPACE)
        self._framing = FR_NDJSON if line and analyze_json(line) is not None else FR_SSE
        self._scan(held)

    def _scan_ndjson(self, data: bytes) -> None:
        """Newline-delimited JSON: each line one event's data (blank lines are nothing)."""
        fr = self._fr
        pos, n = 0, len(data)
        while True:
            end = data.find(b"\n", pos)
            if end < 0:
                break
            if fr.line:
                if self._too_long(len(fr.line) + end - pos, fr.line[0]):
                    return
                fr.line += data[pos:end]
                line = bytes(fr.line)
                fr.line.clear()
            else:
                line = data[pos:end]
                if line and self._too_long(len(line), line[0]):
                    return
            self._ndjson_line(line)
            if self._ev.limit is not None:
                return
            pos = end + 1
        if pos < n:
            first = fr.line[0] if fr.line else data[pos]
            if self._too_long(len(fr.line) + n - pos, first):
                return
            fr.line += data[pos:]

    def _ndjson_line(self, line: bytes) -> None:
        line = line.strip(_JSON_SPACE)
        if line:
            self._handle_event(b"message", line)

    def _scan_eventstream(self, data: bytes) -> None:
        """An AWS event stream: the frames the chunk completes."""
        es = self._es
        for frame in es.read(data, self.max_event_bytes):
            self._frame(frame)
            if self._ev.limit is not None:
                return
        if es.limit:
            self._exceed("event")
        elif es.lost:
            self._ev.malformed_events += 1
            self._framing = FR_LOST

    def _frame(self, frame: Frame) -> None:
        """One whole frame: an event, an exception or an error, or malformed."""
        ev = self._ev
        ev.events += 1
        if not frame.valid:
            ev.malformed_events += 1
            return
        message_type = frame.headers.get(H_MESSAGE_TYPE)
        fault = _ES_FAULTS.get(message_type) if message_type is not None else None
        if fault is not None:
            ev.errors += 1
            if ev.error_code is None:
                ev.error_code = frame.headers.get(fault, b"")[: d.CAPTURE_BYTES] or None
            return
        if message_type != _ES_EVENT:
            return  # no other kind of message is known: nothing to judge
        event_type = frame.headers.get(H_EVENT_TYPE, b"")
        if self._detected is None and self._outer is None:
            if event_type == _CHUNK_EVENT:
                self._outer = "bedrock-invoke"
            else:
                self._detected = "bedrock-converse"
        if self._outer is not None:
            if event_type == _CHUNK_EVENT:
                self._chunk(frame.payload)
            return
        record = analyze_json(frame.payload)
        if record is None:
            ev.malformed_events += 1
            return
        self._interpret(record, event_type)

    def _chunk(self, payload: bytes) -> None:
        """A Bedrock InvokeModel chunk: the model's own event, base64 in its "bytes"."""
        record = analyze_json(payload)
        inner = None
        if record is not None and record.chunk is not None:
            inner = base64_decode(record.chunk)
        record = None if inner is None else analyze_json(inner)
        if record is None:
            self._ev.malformed_events += 1
            return
        self._interpret(record, b"")
        if record.guardrail:
            self._ev.guardrail = True  # (_protocols.GUARDRAIL_FINISH)
        if (record.metrics or record.guardrail) and self._detected != "anthropic":
            # Bedrock's last chunk (_protocols.BEDROCK_INVOKE_END), or a guardrail's answer,
            # after which Bedrock sends nothing of the model's: Anthropic's own end says more
            self._ev.end_marker = True

    def _too_long(self, line_length: int, first: int) -> bool:
        """Check the bounds for a line of this length; on breach, stop reading for good."""
        fr = self._fr
        if line_length > self.max_line_bytes:
            self._exceed("line")
        elif first != COLON and fr.event_bytes + fr.bare_bytes + line_length > self.max_event_bytes:
            self._exceed("event")
        else:
            return False
        return True

    def _exceed(self, which: str) -> None:
        self._ev.limit = which
        # drop every buffer at once: nothing more is read
        self._fr.line = bytearray()
        self._fr.data = bytearray()
        self._es = EventStreamFraming()
        self._bare = None
        self._tools.clear()
        self._blocks.clear()

    def _process_line(self, line: bytes) -> None:
        fr = self._fr
        if not line:
            self._dispatch()
            return
        if line[0] == COLON:
            self._ev.comments += 1
            return
        field, value = split_field(line)
        if self._bare is not None:
            if field == F_OTHER or field == F_ERROR:
                fr.bare_bytes += len(line)
                self._feed_bare(line)
                return
            self._abandon_bare()
        if line[0] == OPEN_OBJECT:
            # a bare JSON object, not framed as SSE (Gemini's mid-stream errors)
            self._bare = JsonScanner(EventRecord())
            fr.bare_bytes = len(line)
            self._feed_bare(line)
            return
        fr.event_bytes += len(line)
        if field == F_DATA:
            fr.data += value
            fr.data += b"\n"
            fr.data_lines += 1
        elif field == F_EVENT:
            fr.event_type = value
        elif field == F_ERROR:  # llama.cpp sent errors as an "error:" field
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
            self._fr.bare_bytes = 0
            self._ev.events += 1
            self._interpret(bare.record, b"")

    def _last_bare_line(self) -> None:
        """close(): the last line, without its newline, of a bare JSON object (an error body
        sent whole instead of a stream) is that object's last line, as an NDJSON line may lack
        its newline.  Any other unterminated line stays residue."""
        line = bytes(self._fr.line)
        if self._bare is not None:
            if split_field(line)[0] not in (F_OTHER, F_ERROR):
                return
        elif line[0] != OPEN_OBJECT:
            return
        self._fr.line.clear()
        self._process_line(line)

    def _abandon_bare(self) -> None:
        self._bare = None
        self._fr.bare_bytes = 0
        self._ev.malformed_events += 1

    def _dispatch(self) -> None:
        fr = self._fr
        if self._bare is not None:
            self._abandon_bare()
        if fr.data_lines:
            data = bytes(fr.data[:-1])
            fr.data.clear()
            fr.data_lines = 0
            self._handle_event(fr.event_type or b"message", data)
        fr.event_type = None
        fr.event_bytes = 0

    # ------------------------------------------------------------------ events
    def _handle_event(self, event_type: bytes, data: bytes) -> None:
        ev = self._ev
        ev.events += 1
        if event_type == _ERROR_EVENT:
            ev.errors += 1
        if not data:  # "data:" alone: a keep-alive, nothing to judge
            return
        if data == d.DONE_SENTINEL:
            if self._detected is None:
                self._detected = "chat"
            if self._detected == "chat":
                ev.end_marker = True
            return
        record = analyze_json(data)
        if record is None:
            ev.malformed_events += 1
            return
        self._interpret(record, event_type)

    # ------------------------------------------------------------------ protocol rules
    def _interpret(self, record: EventRecord, event_type: bytes) -> None:
        if record.too_many is not None:
            self._exceed(record.too_many)
            return
        if record.error:
            self._note_error(record)
        if self._detected is None:
            self._detected = detect_protocol(record, event_type)
        self._note_model(record.model)
        self._note_whole(record)
        protocol = self._detected
        if protocol == "chat" or protocol == "gemini":
            self._choices(record)
        elif protocol == "ollama":
            self._ollama(record)
        elif protocol is None and self._outer == "bedrock-invoke":
            self._invoke_family(record)
        elif protocol in _EVENT_RULES:  # responses, anthropic: what the event is, by its name
            kind = _KINDS[protocol].get(record.type if record.type is not None else event_type, d.K_OTHER)
            if protocol == "responses":
                self._sequence(record)
            rule = _EVENT_RULES[protocol].get(kind)
            if rule is not None:
                rule(self, record, kind)

    def _note_model(self, model: bytes | None) -> None:
        """The first model an event names is the stream's."""
        if model is not None and self._ev.model is None:
            self._ev.model = model

    def _note_whole(self, record: EventRecord) -> None:
        """What an event says whole, wherever it says it: the items it holds, every whole
        "arguments" string (checked as JSON), reasoning tokens that usage counted."""
        ev = self._ev
        ev.items |= record.items
        for args in record.args:
            scanner = JsonScanner()
            scanner.feed(args)
            self._check_args(scanner)
        if record.reasoning_tokens:
            ev.hidden_reasoning = True

    def _count_kind(self, kind: int) -> None:
        """An item or block starts: count it by what it is (_protocols.OUTPUT_KINDS)."""
        ev = self._ev
        if kind == d.OUT_REASONING:
            ev.reasoning += 1
        elif kind == d.OUT_TOOL:
            ev.tool_calls += 1
        elif kind == d.OUT_OTHER:
            ev.output += 1

    def _add_content(self, text: int, reasoning: int, refusal: int) -> None:
        """An event carried this many text, reasoning and refusal values."""
        ev = self._ev
        ev.text += text
        ev.reasoning += reasoning
        ev.refusal += refusal

    def _note_error(self, record: EventRecord) -> None:
        ev = self._ev
        ev.errors += 1
        if ev.error_code is None:
            ev.error_code = pick_error_code(record)
            if ev.error_code is not None:
                ev.error_type = record.err_type or None

    def _note_error_unless_said(self, record: EventRecord, kind: int) -> None:
        """An error event: counted once, whether or not its body carried an error too."""
        if not record.error:
            self._note_error(record)

    def _finish(self, index: int, raw: bytes | None) -> None:
        """Register a choice, and its finish reason once one arrives (the last one sent wins)."""
        finishes = self._finishes
        if index not in finishes:
            if len(finishes) >= MAX_CHOICES:
                self._exceed("choices")
                return
            finishes[index] = raw
        elif raw is not None:
            finishes[index] = raw

    def _check_args(self, scanner: JsonScanner) -> None:
        if not scanner.finish_args():
            self._ev.tool_malformed = True

    # chat and gemini
    def _choices(self, record: EventRecord) -> None:
        """chat chunks and gemini chunks: per-choice text, reasoning, tools, finish."""
        ev = self._ev
        for choice in record.choices:
            index = choice.index if choice.index is not None else choice.ordinal
            raw = choice.finish
            if raw is None and self._outer == "bedrock-invoke":
                raw = choice.stop  # (_protocols.A_CHOICE_STOP)
            if raw is None and choice.audio_end and not (choice.output or choice.text):
                # an audio answer's last chunk: the end, unless a finish reason came already
                if self._finishes.get(index) is None:
                    raw = _AUDIO_END
            self._finish(index, raw)
            if ev.limit is not None:
                return
            self._add_content(choice.text, choice.reasoning, choice.refusal)
            ev.tool_calls += choice.tool
            ev.output += choice.output
            for fragment in choice.tools:
                self._tool_fragment(index, fragment)
                if ev.limit is not None:
                    return
        if self._detected == "gemini":
            # No end marker exists: the last chunk must close every candidate it carries.
            if record.block_reason is not None:
                ev.blocked = record.block_reason
                ev.end_marker = True
            elif record.choices:
                ev.end_marker = all(c.finish is not None for c in record.choices)
        elif record.object == _CHAT_DONE_OBJECT and self._all_finished():
            ev.end_marker = True  # (_protocols.CHAT_DONE_OBJECT: Perplexity's last chunk, no [DONE] after it)

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

    # responses
    def _sequence(self, record: EventRecord) -> None:
        if record.seq is None:
            return
        if self._last_seq is not None and record.seq != self._last_seq + 1:
            self._ev.sequence_gap = True
        self._last_seq = record.seq

    def _r_text_delta(self, record: EventRecord, kind: int) -> None:
        self._add_content(record.delta, 0, 0)

    def _r_refusal_delta(self, record: EventRecord, kind: int) -> None:
        self._add_content(0, 0, record.delta)

    def _r_reasoning_delta(self, record: EventRecord, kind: int) -> None:
        self._add_content(0, record.delta, 0)

    def _r_item_added(self, record: EventRecord, kind: int) -> None:
        self._count_kind(output_kind(record.item_type))

    def _r_output(self, record: EventRecord, kind: int) -> None:
        self._ev.output += 1

    def _r_args_delta(self, record: EventRecord, kind: int) -> None:
        """A call's argument fragment: added to its item's JSON check (by output_index)."""
        index = record.output_index if record.output_index is not None else -1
        scanner = self._blocks.get(index)
        if scanner is None:
            if len(self._blocks) >= MAX_TOOL_CALLS:
                self._exceed("tool_calls")
                return
            scanner = self._blocks[index] = JsonScanner()
        if record.delta_bytes:
            scanner.feed(record.delta_bytes)

    def _r_args_over(self, record: EventRecord, kind: int) -> None:
        """The arguments of an item are whole (its arguments' done event, or the item's): its
        fragments are over, and must have made one JSON value."""
        scanner = self._blocks.pop(record.output_index if record.output_index is not None else -1, None)
        if scanner is not None:
            self._check_args(scanner)

    def _r_terminal(self, record: EventRecord, kind: int) -> None:
        self._ev.end_marker = True
        self._finish(0, _terminal_reason(kind, record))

    def _r_failed(self, record: EventRecord, kind: int) -> None:
        self._ev.end_marker = True
        self._note_error_unless_said(record, kind)

    # anthropic
    def _a_start(self, record: EventRecord, kind: int) -> None:
        # (a message that starts whole says its stop_reason here, and no message_delta follows)
        self._finish(0, record.stop_reason)

    def _a_block_start(self, record: EventRecord, kind: int) -> None:
        block = record.block_type or b""
        self._count_kind(output_kind(block))
        if block in _A_JSON_INPUT:
            index = record.block_index if record.block_index is not None else -1
            earlier = self._blocks.pop(index, None)
            if earlier is not None:
                self._check_args(earlier)
            elif len(self._blocks) >= MAX_TOOL_CALLS:
                self._exceed("tool_calls")
                return
            self._blocks[index] = JsonScanner()

    def _a_block_delta(self, record: EventRecord, kind: int) -> None:
        self._add_content(record.delta_text, record.delta_thinking, 0)
        if record.delta_json:
            index = record.block_index if record.block_index is not None else -1
            scanner = self._blocks.get(index)
            if scanner is not None:
                scanner.feed(record.delta_json)

    def _a_message_delta(self, record: EventRecord, kind: int) -> None:
        detail = record.stop_detail
        self._finish(0, detail if detail in _A_STOP_DETAILS_WIN else record.stop_reason)

    def _a_message_stop(self, record: EventRecord, kind: int) -> None:
        self._ev.end_marker = True

    # bedrock-converse (its deltas and block starts are read as Anthropic's)
    def _c_message_stop(self, record: EventRecord, kind: int) -> None:
        self._ev.end_marker = True
        self._finish(0, record.stop_reason)

    # ollama
    def _invoke_family(self, record: EventRecord) -> None:
        """bedrock-invoke, a model family with its own events (_protocols.BEDROCK_INVOKE_FAMILIES):
        its text, and the field that says why it ended."""
        self._add_content(record.delta_text, record.delta_thinking, 0)
        if record.stop_reason is not None:
            self._finish(0, record.stop_reason)

    def _ollama(self, record: EventRecord) -> None:
        """One line: its text, thinking and whole tool calls; the last says done and why."""
        ev = self._ev
        self._add_content(record.delta_text, record.delta_thinking, 0)
        ev.tool_calls += record.calls
        if record.done:
            ev.end_marker = True
            self._finish(0, record.stop_reason or _OLLAMA_DONE)  # (OLLAMA_DONE_FINISH: none sent)

    # ------------------------------------------------------------------ the end
    def _all_finished(self) -> bool:
        """Has every choice begun its finish reason (and has one begun)?"""
        finishes = self._finishes
        return bool(finishes) and all(raw is not None for raw in finishes.values())

    @property
    def settled(self) -> bool:
        """Whether the stream has said how it ends: it ended, or every choice it began has its
        finish reason (then only closing events follow, such as Anthropic's message_stop or
        chat's [DONE]).  True once closed."""
        return self.ended or self._all_finished()

    @property
    def ended(self) -> bool:
        """Whether nothing more of the stream can matter: its end marker, an error or a bound
        passed was seen (or it is closed)."""
        ev = self._ev
        return self._closed or ev.end_marker or ev.errors > 0 or ev.limit is not None

    def close(self, transport: str = "eof") -> Verdict:
        check_transport(transport)
        if self._closed:
            raise RuntimeError("close() called twice")
        self._closed = True
        ev = self._ev
        fr = self._fr
        if fr.at_start and fr.head and ev.limit is None:
            head = bytes(fr.head)
            fr.head.clear()
            fr.at_start = False
            self._scan(head)
        if ev.limit is None and self._framing == FR_JSON_FIRST:
            self._decide_framing(len(self._first))  # the whole stream is its first line
        if ev.limit is None and self._framing == FR_NDJSON and fr.line:
            # the last line, without its newline: an event if it is whole JSON
            line = bytes(fr.line).strip(_JSON_SPACE)
            if not line or analyze_json(line) is not None:  # (blank: nothing read, nothing left)
                fr.line.clear()
                if line:
                    self._handle_event(b"message", line)
        if ev.limit is None and self._framing == FR_SSE and fr.line:
            self._last_bare_line()
        if ev.limit is None:
            ev.residual_bytes = len(fr.line) + fr.event_bytes + fr.bare_bytes + len(self._es.buf)
            if self._depth:  # an array's element, cut
                ev.residual_bytes += len(fr.data)
            for call in self._tools.values():
                self._check_args(call.json)
            for scanner in self._blocks.values():
                self._check_args(scanner)
            ev.finishes = list(self._finishes.items())
        ev.protocol = self._outer or self._detected or UNKNOWN_PROTOCOL
        return decide(ev, transport)


# What a Responses or Anthropic event does, by its kind (_protocols.EVENT_KINDS); kinds without
# a rule change nothing.
_EventRule = Callable[[Scanner, EventRecord, int], None]
_EVENT_RULES: dict[str, dict[int, _EventRule]] = {
    "responses": {
        d.K_TEXT_DELTA: Scanner._r_text_delta,
        d.K_REFUSAL_DELTA: Scanner._r_refusal_delta,
        d.K_REASONING_DELTA: Scanner._r_reasoning_delta,
        d.K_ITEM_ADDED: Scanner._r_item_added,
        d.K_ARGS_DELTA: Scanner._r_args_delta,
        d.K_ARGS_DONE: Scanner._r_args_over,
        d.K_ITEM_DONE: Scanner._r_args_over,
        d.K_OUTPUT: Scanner._r_output,
        d.K_COMPLETED: Scanner._r_terminal,
        d.K_INCOMPLETE: Scanner._r_terminal,
        d.K_FAILED: Scanner._r_failed,
        d.K_ERROR: Scanner._note_error_unless_said,
    },
    "anthropic": {
        d.K_START: Scanner._a_start,
        d.K_BLOCK_START: Scanner._a_block_start,
        d.K_BLOCK_DELTA: Scanner._a_block_delta,
        d.K_MESSAGE_DELTA: Scanner._a_message_delta,
        d.K_MESSAGE_STOP: Scanner._a_message_stop,
        d.K_ERROR: Scanner._note_error_unless_said,
    },
    "bedrock-converse": {
        d.K_BLOCK_START: Scanner._a_block_start,
        d.K_BLOCK_DELTA: Scanner._a_block_delta,
        d.K_FINISH_STOP: Scanner._c_message_stop,
    },
}


def scan(
    data: bytes | bytearray | memoryview,
    protocol: str = "auto",
    transport: str = "eof",
    *,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    caches: Caches | None = None,
) -> Verdict:
    """Judge a whole captured stream at once."""
    scanner = Scanner(protocol, max_event_bytes=max_event_bytes, max_line_bytes=max_line_bytes, caches=caches)
    scanner.feed(data)
    return scanner.close(transport)

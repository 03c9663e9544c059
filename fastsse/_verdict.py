"""Evidence -> verdict: the categories, their fixed order, and the Verdict type.

The Python twin collects an ``Evidence`` and hands it to ``decide``; the compiled twin calls
what ``decide`` calls (``_judge``, cached, then the counters) with the same values, without
building the Evidence.  Nothing else in the package chooses a category.  ``complete`` is what
remains when every check for failure came back empty, never a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any

from . import _protocols as d

LIMIT_EXCEEDED = "limit_exceeded"
TRANSPORT_ERROR = "transport_error"
UPSTREAM_ERROR = "upstream_error"
NO_END_MARKER = "no_end_marker"
BUFFER_RESIDUAL = "buffer_residual"
MALFORMED_EVENT = "malformed_event"
SEQUENCE_GAP = "sequence_gap"
MISSING_FINISH_REASON = "missing_finish_reason"
REASONING_EXHAUSTED = "reasoning_exhausted"
TRUNCATED_LENGTH = "truncated_length"
CONTENT_FILTERED = "content_filtered"
TOOL_CALL_MALFORMED = "tool_call_malformed"
EMPTY_OUTPUT = "empty_output"
COMPLETE = "complete"

# In the order they are checked: the first that holds is the category.
CATEGORIES = (
    LIMIT_EXCEEDED,
    TRANSPORT_ERROR,
    UPSTREAM_ERROR,
    NO_END_MARKER,
    BUFFER_RESIDUAL,
    MALFORMED_EVENT,
    SEQUENCE_GAP,
    MISSING_FINISH_REASON,
    REASONING_EXHAUSTED,
    TRUNCATED_LENGTH,
    CONTENT_FILTERED,
    TOOL_CALL_MALFORMED,
    EMPTY_OUTPUT,
    COMPLETE,
)

TRANSPORTS = ("eof", "reset", "timeout", "error")

# Would the same request, sent again, likely succeed?  Transient faults: yes.  A token limit,
# a filter or a provider that never sends a finish reason: no, it would hit the same wall.
RETRYABLE = {
    LIMIT_EXCEEDED: False,
    TRANSPORT_ERROR: True,
    UPSTREAM_ERROR: True,  # unless the error code is deterministic, see decide()
    NO_END_MARKER: True,
    BUFFER_RESIDUAL: True,
    MALFORMED_EVENT: True,
    SEQUENCE_GAP: True,
    MISSING_FINISH_REASON: False,
    REASONING_EXHAUSTED: False,
    TRUNCATED_LENGTH: False,
    CONTENT_FILTERED: False,
    TOOL_CALL_MALFORMED: True,  # sampling produced it; another sample usually parses
    EMPTY_OUTPUT: True,
    COMPLETE: False,
}

MESSAGES = {
    LIMIT_EXCEEDED: "A line or event grew past the size limit, so the stream was not read further.",
    TRANSPORT_ERROR: "The gateway reported that the connection to the provider failed.",
    UPSTREAM_ERROR: "The provider sent an error inside the stream.",
    NO_END_MARKER: "The stream closed before its end marker arrived.",
    BUFFER_RESIDUAL: "The stream ended with part of an event left unfinished.",
    MALFORMED_EVENT: "An event in the stream could not be parsed.",
    SEQUENCE_GAP: "Events are missing from the middle of the stream.",
    MISSING_FINISH_REASON: "The stream ended without saying why the answer finished.",
    REASONING_EXHAUSTED: "The token limit was used up by reasoning before any visible answer.",
    TRUNCATED_LENGTH: "The answer was cut off by the output token limit.",
    CONTENT_FILTERED: "A safety filter stopped the answer.",
    TOOL_CALL_MALFORMED: "A tool call's arguments are not valid JSON.",
    EMPTY_OUTPUT: "The answer finished normally but held no text, tool call or other output.",
    COMPLETE: "The stream is complete.",
}
# More precise sentences for some situations within a category.
MESSAGE_NO_EVENTS = "The stream closed before any event arrived."
MESSAGE_ABNORMAL_FINISH = "The provider ended the answer with a finish reason that does not mean success."
MESSAGE_REFUSAL = "The model refused to answer."
MESSAGE_BLOCKED_PROMPT = "The prompt was blocked by a safety filter, so no answer was generated."
MESSAGE_GUARDRAIL = "A Bedrock guardrail intervened: the answer is the guardrail's message, not the model's."
MESSAGE_REASONING_ONLY = "The answer finished normally but held only reasoning: no text, tool call or other output."
MESSAGE_PAUSE = "The stream is complete, but the model paused its turn for the client to continue."
MESSAGE_LIMITS = {
    "line": "A line grew past the line size limit, so the stream was not read further.",
    "event": "An event grew past the event size limit, so the stream was not read further.",
    "choices": "The stream has more choices than the scanner tracks, so it was not read further.",
    "tool_calls": "The stream has more tool calls than the scanner tracks, so it was not read further.",
}

# Identifiers copied from the stream (finish reasons, error codes, model names) keep only the
# characters such identifiers use, and a bounded length: a verdict never carries payload text.
IDENTIFIER_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:/@+-"
# Every other byte value, non-ASCII included: bytes.translate deletes them in one C pass.
_IDENTIFIER_JUNK = bytes(b for b in range(256) if b not in IDENTIFIER_CHARS)
MAX_IDENTIFIER_CHARS = 64
MAX_MODEL_CHARS = 128


def _sanitize(raw: bytes, limit: int) -> str | None:
    return raw.translate(None, _IDENTIFIER_JUNK)[:limit].decode("ascii") or None


# The finish reasons the protocols know are clean already: most streams end with one of them.
_KNOWN_IDENTIFIERS = {name.encode("ascii"): name for table in d.FINISH_REASONS.values() for name in table}
assert all(_sanitize(raw, MAX_IDENTIFIER_CHARS) == name for raw, name in _KNOWN_IDENTIFIERS.items())


def sanitize_identifier(raw: bytes | None, limit: int = MAX_IDENTIFIER_CHARS) -> str | None:
    if raw is None:
        return None
    if limit == MAX_IDENTIFIER_CHARS and type(raw) is bytes:
        known = _KNOWN_IDENTIFIERS.get(raw)
        if known is not None:
            return known
    return _sanitize(raw, limit)


Raw = bytes  # the field ``bytes`` below hides the type inside Evidence's body


@dataclass(slots=True)
class Evidence:
    """What a scanner saw; raw values are bytes exactly as captured (bounded)."""

    protocol: str = "unknown"
    bytes: int = 0
    events: int = 0
    comments: int = 0
    limit: str | None = None
    errors: int = 0
    error_code: Raw | None = None
    end_marker: bool = False
    residual_bytes: int = 0
    malformed_events: int = 0
    sequence_gap: bool = False
    # (choice index, raw finish reason or None) in order of first appearance
    finishes: list[tuple[int, Raw | None]] = field(default_factory=list)
    blocked: Raw | None = None
    text: int = 0
    reasoning: int = 0
    refusal: int = 0
    tool_calls: int = 0
    tool_malformed: bool = False
    model: Raw | None = None
    output: int = 0  # output that is not text: audio, images, approval requests, tool results
    hidden_reasoning: bool = False  # usage counted reasoning tokens the stream did not show
    items: int = 0  # what whole items held (_protocols.ITEM_*), whether or not deltas did
    guardrail: bool = False  # a Bedrock guardrail intervened (_protocols.GUARDRAIL_FINISH)
    error_type: Raw | None = None  # the type of the error whose code is error_code


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement of one stream.  Holds state and category, never payload text.

    Its fields are slots (no ``__dict__``): a verdict takes about 250 bytes, and the compiled
    scanner fills them without a dict between.  ``to_dict()`` gives them by name.
    """

    category: str
    complete: bool
    protocol: str
    finish_reason: str | None  # normalized: stop, length, tool_calls, content_filter, pause, ...
    finish_reason_raw: str | None  # as the provider sent it
    retryable: bool
    message: str
    transport: str
    end_marker_seen: bool
    finish_reason_seen: bool
    residual_bytes: int
    events: int
    bytes: int
    comments: int
    malformed_events: int
    text_events: int
    reasoning_events: int
    refusal_events: int
    tool_calls: int
    output_events: int
    choices: int
    error_code: str | None
    limit: str | None
    model: str | None

    def to_dict(self) -> dict[str, str | int | bool | None]:
        # Every field is a str, int, bool or None: nothing for dataclasses.asdict to deep-copy.
        return {name: getattr(self, name) for name in VERDICT_FIELDS}


VERDICT_FIELDS = tuple(f.name for f in fields(Verdict))


def _verdict(values: Mapping[str, Any]) -> Verdict:
    """A Verdict whose attributes are ``values``: every field, by name."""
    return Verdict(**values)


def _finish(
    protocol: str, raws: list[str | None], blocked: str | None, guardrail: bool, tool_calls: bool, text: bool
) -> tuple[str | None, str | None, str | None]:
    """The choice that speaks for the stream: (normalized, raw, outcome), or Nones.

    ``raws``: each choice's finish reason, sanitized, in order of first appearance;
    ``blocked``: the blocked prompt's reason, sanitized; ``guardrail``: a Bedrock guardrail
    intervened.
    """
    table = d.FINISH_REASONS.get(protocol, {})
    worst = None
    for raw in raws:
        if raw is None:
            continue
        normalized, outcome = table.get(raw, d.UNKNOWN_FINISH)
        if worst is None or d.OUTCOME_RANK[outcome] < d.OUTCOME_RANK[worst[2]]:
            worst = (normalized, raw, outcome)
    if blocked is not None:  # a blocked prompt is the finish of a candidate-less answer
        worst = ("content_filter", blocked, d.O_FILTER)
    if guardrail:  # the guardrail's message replaced the answer, whatever the model said
        normalized, outcome = d.FINISH_REASONS["bedrock-invoke"][d.GUARDRAIL_FINISH]
        worst = (normalized, d.GUARDRAIL_FINISH, outcome)
    if worst is None:
        return None, None, None
    normalized, raw, outcome = worst
    if normalized == "stop" and tool_calls and not text and protocol in d.TOOL_FINISH_FROM_CALLS:
        normalized = "tool_calls"
    return normalized, raw, outcome


# Streams that end alike share a judgement; only the counters differ.  Bounded, and skipped for
# streams with many choices, since its keys hold the raw finish reasons and error codes.
JUDGEMENT_CACHE_SIZE = 4096
_CACHED_FINISHES = 4


@lru_cache(maxsize=JUDGEMENT_CACHE_SIZE)
def _model_name(raw: bytes) -> str | None:
    return sanitize_identifier(raw, MAX_MODEL_CHARS)


def _judge(
    protocol: str,
    transport: str,
    limit: str | None,
    errors: bool,
    error_code: bytes | None,
    error_type: bytes | None,
    end_marker: bool,
    no_events: bool,
    residual: bool,
    malformed: bool,
    sequence_gap: bool,
    finishes: tuple[bytes | None, ...],
    blocked: bytes | None,
    guardrail: bool,
    text: bool,
    reasoning: bool,
    refusal: bool,
    tool_calls: bool,
    tool_malformed: bool,
    output: bool,
    hidden_reasoning: bool,
) -> dict[str, object]:
    """Apply the checks in CATEGORIES order; the first that holds is the category.

    Sees only what the verdict's fields other than its counters and model depend on
    (``finishes``: each choice's raw finish reason or None), so that it can be cached.
    Returns a dict of every field with those counters None: callers copy it, never change it.
    """
    raws = [sanitize_identifier(r) for r in finishes]
    blocked_reason = sanitize_identifier(blocked)
    normalized, raw, outcome = _finish(protocol, raws, blocked_reason, guardrail, tool_calls, text)
    # (a guardrail's intervention is the finish of every choice: Titan's says no reason of its own)
    finish_missing = not guardrail and ((not raws and blocked_reason is None) or None in raws)
    code = sanitize_identifier(error_code)
    answer = text or tool_calls or output  # reasoning alone is no answer
    message = None
    retryable = None

    if limit is not None:
        category = LIMIT_EXCEEDED
        message = MESSAGE_LIMITS.get(limit)
    elif transport != "eof":
        category = TRANSPORT_ERROR
    elif errors or outcome == d.O_ABNORMAL:
        category = UPSTREAM_ERROR
        if not errors:
            message = MESSAGE_ABNORMAL_FINISH
        # deterministic when its code or its type says so, whichever error_code shows
        retryable = not (code in d.DETERMINISTIC_ERRORS or sanitize_identifier(error_type) in d.DETERMINISTIC_ERRORS)
    elif not end_marker:
        category = NO_END_MARKER
        if no_events:
            message = MESSAGE_NO_EVENTS
    elif residual:
        category = BUFFER_RESIDUAL
    elif malformed:
        category = MALFORMED_EVENT
    elif sequence_gap:
        category = SEQUENCE_GAP
    elif finish_missing:
        category = MISSING_FINISH_REASON
    elif outcome == d.O_LENGTH and not answer and (reasoning or hidden_reasoning):
        category = REASONING_EXHAUSTED
    elif outcome == d.O_LENGTH:
        category = TRUNCATED_LENGTH
    elif outcome == d.O_FILTER or refusal:
        category = CONTENT_FILTERED
        if blocked_reason is not None:
            message = MESSAGE_BLOCKED_PROMPT
        elif guardrail:
            message = MESSAGE_GUARDRAIL
        elif refusal or raw == "refusal":
            message = MESSAGE_REFUSAL
    elif tool_malformed or outcome == d.O_TOOL_MALFORMED:
        category = TOOL_CALL_MALFORMED
    elif not answer and not (outcome == d.O_PAUSE and reasoning) and outcome != d.O_NO_ANSWER:
        # (a turn paused for the client to continue may stop after reasoning alone; a request
        # that asked for no answer, such as Ollama's load, has none)
        category = EMPTY_OUTPUT
        if reasoning:
            message = MESSAGE_REASONING_ONLY
    else:
        category = COMPLETE
        if outcome == d.O_PAUSE:
            message = MESSAGE_PAUSE
    head = dict.fromkeys(VERDICT_FIELDS)  # every field, the counters' values still None
    head.update(
        category=category,
        complete=category == COMPLETE,
        protocol=protocol,
        finish_reason=normalized,
        finish_reason_raw=raw,
        retryable=RETRYABLE[category] if retryable is None else retryable,
        message=message or MESSAGES[category],
        transport=transport,
        end_marker_seen=end_marker,
        finish_reason_seen=raw is not None,
        error_code=code,
        limit=limit,
    )
    return head


_judge_cached = lru_cache(maxsize=JUDGEMENT_CACHE_SIZE)(_judge)


def decide(evidence: Evidence, transport: str = "eof") -> Verdict:
    """The verdict on a stream: its judgement (see _judge) and its counters."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {TRANSPORTS}, not {transport!r}")
    e = evidence
    items = e.items
    key = (
        e.protocol,
        transport,
        e.limit,
        e.errors > 0,
        e.error_code,
        e.error_type,
        e.end_marker,
        e.events == 0,
        e.residual_bytes > 0,
        e.malformed_events > 0,
        e.sequence_gap,
        tuple([raw for _index, raw in e.finishes]),
        e.blocked,
        e.guardrail,
        e.text > 0 or bool(items & d.ITEM_TEXT),
        e.reasoning > 0 or bool(items & d.ITEM_REASONING),
        e.refusal > 0 or bool(items & d.ITEM_REFUSAL),
        e.tool_calls > 0 or bool(items & d.ITEM_TOOL),
        e.tool_malformed,
        e.output > 0 or bool(items & d.ITEM_OUTPUT),
        e.hidden_reasoning,
    )
    head = (_judge_cached if len(e.finishes) <= _CACHED_FINISHES else _judge)(*key)
    values = head.copy()
    values["residual_bytes"] = e.residual_bytes
    values["events"] = e.events
    values["bytes"] = e.bytes
    values["comments"] = e.comments
    values["malformed_events"] = e.malformed_events
    values["text_events"] = e.text
    values["reasoning_events"] = e.reasoning
    values["refusal_events"] = e.refusal
    values["tool_calls"] = e.tool_calls
    values["output_events"] = e.output
    values["choices"] = len(e.finishes)
    values["model"] = None if e.model is None else _model_name(e.model)
    return _verdict(values)

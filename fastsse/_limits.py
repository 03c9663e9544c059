"""Bounds and argument checks shared by both scanner twins."""

from __future__ import annotations

from ._protocols import PROTOCOLS
from ._verdict import TRANSPORTS

# The largest legitimate event is Responses' terminal event, which repeats the whole answer
# (text, tool calls, encrypted reasoning): a few MB for the longest outputs models produce
# today.  8 MiB leaves room for that while a gateway judging hundreds of streams at once
# holds at most this much per stream, whatever a broken or hostile upstream sends.
DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024
# A single line can carry a whole event (all data arrives on one "data:" line), so the line
# bound defaults to the event bound; set it lower to catch run-away lines early.
DEFAULT_MAX_LINE_BYTES = DEFAULT_MAX_EVENT_BYTES

# Choices (n > 1) and tool calls tracked per stream: each costs a small fixed state.
MAX_CHOICES = 128
MAX_TOOL_CALLS = 1024
# Deeper JSON nesting than this is treated as malformed (no provider nests past ~20).
MAX_JSON_DEPTH = 512

AUTO = "auto"  # a scanner's protocol when it is to recognize the stream's own
UNKNOWN_PROTOCOL = "unknown"  # a verdict's protocol when no event named one
PROTOCOL_CHOICES = (AUTO,) + PROTOCOLS


def check_options(protocol: str, max_event_bytes: int, max_line_bytes: int) -> None:
    if protocol not in PROTOCOL_CHOICES:
        raise ValueError(f"protocol must be one of {PROTOCOL_CHOICES}, not {protocol!r}")
    for name, value in (("max_event_bytes", max_event_bytes), ("max_line_bytes", max_line_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")


def check_transport(transport: str) -> None:
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {TRANSPORTS}, not {transport!r}")

"""From posted bytes to the row that is stored: scanning, the silent rule, model fallback.

Plain functions and one small class, no HTTP: the routes call these, and so do the tests.
"""

from __future__ import annotations

import hashlib
import math
import operator
import re
import time
from datetime import datetime

import fastsse

from .verdict_fields import FROM_VERDICT

# The verdict's attributes the row copies, read in one call.
_VERDICT_COLUMNS = tuple(column for column, _attr in FROM_VERDICT)
_VERDICT_VALUES = operator.attrgetter(*(attr for _column, attr in FROM_VERDICT))

MAX_TOOL_CHARS = 64
UNKNOWN_TOOL = "unknown"
_TOOL_JUNK = re.compile(r"[^a-z0-9._-]")


# Without its compiled scanner (no compiler where fastsse was installed, or
# FASTSSE_NO_EXTENSIONS=1) fastsse judges with its Python twin, which gives the same verdicts
# but costs 200 to 5,000 times more on hostile bodies (16 MiB of 16-byte frames: 32 s; of "{}"
# lines: 48 s).  The service then judges each chunk in a thread, where the event loop gets
# the interpreter back every few milliseconds, and warns at start-up.
JUDGE_IN_THREAD = fastsse.IMPLEMENTATION != "cython"


class BodyTooLarge(Exception):
    """The posted stream passed MAX_BODY_BYTES."""


class JudgingTooCostly(Exception):
    """Judging the posted stream took longer than MAX_SCAN_SECONDS: read no further."""


class StreamJudge:
    """Scans a posted stream chunk by chunk as it arrives: memory stays bounded by fastsse, and
    the time it takes by ``max_scan_seconds``."""

    def __init__(
        self, protocol: str, *, max_body_bytes: int, max_event_bytes: int, max_scan_seconds: float = math.inf
    ) -> None:
        self._scanner = fastsse.Scanner(protocol, max_event_bytes=max_event_bytes, max_line_bytes=max_event_bytes)
        self._digest = hashlib.sha256()
        self._max_body_bytes = max_body_bytes
        self._max_scan_seconds = max_scan_seconds
        self.received = 0
        self.scan_seconds = 0.0

    def feed(self, chunk: bytes) -> None:
        self.received += len(chunk)
        if self.received > self._max_body_bytes:
            raise BodyTooLarge
        self._digest.update(chunk)
        started = time.perf_counter()
        self._scanner.feed(chunk)
        self.scan_seconds += time.perf_counter() - started
        if self.scan_seconds > self._max_scan_seconds:
            raise JudgingTooCostly(
                f"judging the stream took more than MAX_SCAN_SECONDS ({self._max_scan_seconds:g} s)"
                + ("" if fastsse.IMPLEMENTATION == "cython" else " with fastsse's Python scanner")
                + ": read no further, nothing stored"
            )

    def close(self, transport: str) -> tuple[fastsse.Verdict, str]:
        """The verdict, and the SHA-256 of the bytes (to tell a retried post from a conflict)."""
        started = time.perf_counter()
        verdict = self._scanner.close(transport)
        self.scan_seconds += time.perf_counter() - started
        return verdict, self._digest.hexdigest()


def sanitize_tool(raw: str | None) -> str:
    """Tool names are labels, not free text: lowercase, a small alphabet, length-capped."""
    tool = _TOOL_JUNK.sub("", (raw or "").strip().lower())[:MAX_TOOL_CHARS]
    return tool or UNKNOWN_TOOL


def is_silent(verdict: fastsse.Verdict, transport: str, upstream_status: int | None) -> bool:
    """A failure whose transport looked clean: the kind a client accepts as a success."""
    clean = transport == "eof" and (upstream_status is None or upstream_status < 400)
    return clean and not verdict.complete


# Suffixes that name a snapshot or an alias of the same model, not another model:
# gpt-4o-2024-08-06, claude-sonnet-4-5-20250929, claude-3-5-sonnet@20240620, gpt-4-0613,
# mistral-large-2407, gemini-1.5-pro-002, claude-3-5-sonnet-latest, ...-preview-05-20.
_SNAPSHOT_SUFFIX = re.compile(r"(?:[-@]\d{4}-\d{2}-\d{2}|[-@]\d{8}|-\d{2}-\d{2}|-\d{4}|-\d{3}|-latest)$")


def model_family(name: str) -> str:
    """The model a name means, without provider prefix or snapshot date."""
    family = name.strip().lower().rsplit("/", 1)[-1]  # openai/gpt-4o, models/gemini-2.5-pro
    while True:
        shorter = _SNAPSHOT_SUFFIX.sub("", family)
        if shorter == family or not shorter:
            return family
        family = shorter


def is_model_fallback(requested: str | None, served: str | None) -> bool:
    if not requested or not served:
        return False
    return model_family(requested) != model_family(served)


def verdict_row(
    verdict: fastsse.Verdict,
    *,
    body_sha256: str,
    gateway: str,
    stream_id: str,
    tool: str,
    upstream_status: int | None,
    model_requested: str | None,
    request_id: str | None,
    attempt: int | None,
    received_at: datetime,
    ended_at: datetime | None = None,
) -> dict:
    """The columns of one verdicts row as the writer takes them (service/verdict_fields.py):
    what the post says, what the service derives from it, and the verdict's own fields; the
    writer adds the id and the previous attempt."""
    row = {
        "gateway": gateway,
        "stream_id": stream_id,
        "body_sha256": body_sha256,
        "received_at": received_at,
        "ended_at": received_at if ended_at is None else ended_at,
        "tool": tool,
        "silent": is_silent(verdict, verdict.transport, upstream_status),
        "upstream_status": upstream_status,
        "model_requested": model_requested,
        "model_fallback": is_model_fallback(model_requested, verdict.model),
        "request_id": request_id,
        "attempt": attempt,
    }
    row.update(zip(_VERDICT_COLUMNS, _VERDICT_VALUES(verdict), strict=True))
    return row

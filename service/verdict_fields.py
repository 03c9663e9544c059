"""The fields of a stored verdict, in one place.

The verdicts table (``models.VERDICTS``), the row the ingest route builds
(``judging.verdict_row``) and the API's ``VerdictOut`` (``api/schemas.py``) all derive from
``FIELDS``.  The migrations stay written out, as migrations must; the tests hold them, the
table, the API's schema and ``fastsse.Verdict`` to this list (tests/service/test_verdict_fields.py).

Nothing here is payload: state and category, counts, identifiers and times.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import BigInteger, Boolean, DateTime, Integer, SmallInteger, String
from sqlalchemy.types import TypeEngine

# Where a field's value comes from.
VERDICT = "verdict"  # fastsse's Verdict, attribute `attr` (or the same name)
POST = "post"  # the ingest request and what the service knows of it (judging.verdict_row)
WRITER = "writer"  # set by the writer when the row is stored (the previous attempt)


@dataclass(frozen=True)
class VerdictField:
    name: str  # the column
    python: type  # its type in the API
    sql: TypeEngine
    nullable: bool = False
    source: str = VERDICT
    attr: str | None = None  # the Verdict attribute, where its name is not the column's
    api: str | None = ""  # the API's name: "" the column's, None: not in the API
    description: str | None = None

    @property
    def api_name(self) -> str | None:
        return self.name if self.api == "" else self.api

    @property
    def verdict_attr(self) -> str:
        return self.attr or self.name


def _text(length: int) -> String:
    return String(length)


# In the API's order (VerdictOut): what a reader wants first comes first.  The row's id comes
# before all of these (models.VERDICTS).
FIELDS: tuple[VerdictField, ...] = (
    VerdictField("stream_id", str, _text(128), source=POST),
    VerdictField("gateway", str, _text(64), source=POST, description="The gateway whose credential posted the stream."),
    VerdictField("tool", str, _text(64), source=POST),
    # SHA-256 of the posted bytes: tells a retried post (same bytes) from a conflicting one.
    VerdictField("body_sha256", str, _text(64), source=POST, api=None),
    # Rates, rollups and retention go by ended_at.
    VerdictField(
        "received_at", datetime, DateTime(timezone=True), source=POST, description="When the service received the post."
    ),
    VerdictField(
        "ended_at",
        datetime,
        DateTime(timezone=True),
        source=POST,
        description="When the stream ended, as the gateway said (ended_at), else when the post arrived.",
    ),
    VerdictField(
        "category",
        str,
        _text(32),
        description="The first failure found, in fastsse's fixed order; 'complete' only when none was found.",
    ),
    VerdictField("complete", bool, Boolean()),
    VerdictField(
        "silent",
        bool,
        Boolean(),
        source=POST,
        description="Failed while the transport looked clean (transport=eof, "
        "upstream_status < 400): a failure clients take as success.",
    ),
    VerdictField("retryable", bool, Boolean()),
    # One of fastsse's fixed sentences (it depends on more than the category), never payload.
    VerdictField("message", str, _text(200)),
    VerdictField("protocol", str, _text(16)),
    VerdictField("finish_reason", str, _text(32), nullable=True),
    VerdictField("finish_reason_raw", str, _text(64), nullable=True),
    VerdictField("transport", str, _text(16)),
    VerdictField("upstream_status", int, SmallInteger(), nullable=True, source=POST),
    VerdictField("end_marker_seen", bool, Boolean()),
    VerdictField("finish_reason_seen", bool, Boolean()),
    VerdictField("residual_bytes", int, BigInteger()),
    VerdictField("events", int, BigInteger()),
    VerdictField("bytes", int, BigInteger()),
    VerdictField("comments", int, BigInteger()),
    VerdictField("malformed_events", int, BigInteger()),
    VerdictField("text_events", int, BigInteger()),
    VerdictField("reasoning_events", int, BigInteger()),
    VerdictField("refusal_events", int, BigInteger()),
    VerdictField("tool_calls", int, Integer()),
    VerdictField(
        "output_events",
        int,
        BigInteger(),
        description="Output that is not text: audio, images, approval requests, tool results.",
    ),
    VerdictField("choices", int, Integer()),
    VerdictField("error_code", str, _text(64), nullable=True),
    VerdictField("limit_kind", str, _text(16), nullable=True, attr="limit", api="limit"),
    VerdictField(
        "model_served",
        str,
        _text(128),
        nullable=True,
        attr="model",
        api="model",
        description="The model the stream says served it.",
    ),
    VerdictField("model_requested", str, _text(128), nullable=True, source=POST),
    VerdictField(
        "model_fallback",
        bool,
        Boolean(),
        source=POST,
        description="Served by a different model than requested (a dated variant of the same model is not one).",
    ),
    VerdictField("request_id", str, _text(128), nullable=True, source=POST),
    VerdictField("attempt", int, Integer(), nullable=True, source=POST),
    # The attempt stored before this one for the same gateway and request_id, if any: its
    # category and whether it was retryable.  Set when the row is written; never changed.
    VerdictField(
        "previous_category",
        str,
        _text(32),
        nullable=True,
        source=WRITER,
        description="The category of the attempt stored before this one for the same "
        "gateway and request_id; null for a first.",
    ),
    VerdictField("previous_retryable", bool, Boolean(), nullable=True, source=WRITER),
)

BY_NAME = {field.name: field for field in FIELDS}
# (column, Verdict attribute) of every field copied from fastsse's verdict.
FROM_VERDICT = tuple((f.name, f.verdict_attr) for f in FIELDS if f.source == VERDICT)
# (API name, column) of every field the API shows, in its order (the id first).
API_COLUMNS = (("id", "id"), *((f.api_name, f.name) for f in FIELDS if f.api_name is not None))

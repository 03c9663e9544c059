"""What the API answers, as pydantic models: they are the OpenAPI documentation too."""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import BaseModel, Field

from ..db import as_utc


class VerdictOut(BaseModel):
    """A stored verdict: fastsse's verdict fields plus what the service knows of the stream."""

    id: int
    stream_id: str
    gateway: str = Field(description="The gateway whose credential posted the stream.")
    tool: str
    received_at: datetime
    category: str = Field(description="The first failure found, in fastsse's fixed order; "
                                      "'complete' only when none was found.")
    complete: bool
    silent: bool = Field(description="Failed while the transport looked clean (transport=eof, "
                                     "upstream_status < 400): a failure clients take as success.")
    retryable: bool
    message: str
    protocol: str
    finish_reason: str | None
    finish_reason_raw: str | None
    transport: str
    upstream_status: int | None
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
    choices: int
    error_code: str | None
    limit: str | None
    model: str | None = Field(description="The model the stream says served it.")
    model_requested: str | None
    model_fallback: bool = Field(description="Served by a different model than requested "
                                             "(a dated variant of the same model is not one).")
    request_id: str | None
    attempt: int | None

    @classmethod
    def from_row(cls, row) -> VerdictOut:
        values = dict(row)
        values["limit"] = values.pop("limit_kind")
        values["model"] = values.pop("model_served")
        values["received_at"] = as_utc(values["received_at"])
        return cls.model_validate(values)


# VerdictOut's fields, and the row column each comes from where the names differ.
_ROW_COLUMN = {"limit": "limit_kind", "model": "model_served"}
_FIELDS = tuple((name, _ROW_COLUMN.get(name, name)) for name in VerdictOut.model_fields)


def verdict_json(row) -> bytes:
    """A stored row as VerdictOut's JSON, without building the model: the ingest route answers
    every post with it (tests check that it equals VerdictOut's own serialization)."""
    values = {name: row[column] for name, column in _FIELDS}
    values["received_at"] = _utc_text(values["received_at"])
    return json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode()


def _utc_text(moment: datetime) -> str:
    """As pydantic writes a UTC datetime: ISO 8601 with a Z."""
    text = as_utc(moment).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class ParameterError(BaseModel):
    type: str
    loc: list[str]
    msg: str
    input: str | None = None


class ValidationProblem(BaseModel):
    """A 422: every parameter that is wrong, and why."""

    detail: list[ParameterError]


class VerdictPage(BaseModel):
    verdicts: list[VerdictOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next (older) page; "
                                                "null on the last page.")


class RateGroup(BaseModel):
    gateway: str | None = None
    tool: str | None = None
    protocol: str | None = None
    total: int
    silent: int
    rate: float = Field(description="silent / total: the share of streams that failed silently.")
    failed: int = Field(description="Streams whose category is not complete.")
    model_fallbacks: int
    bytes: int
    by_category: dict[str, int]


class Rates(BaseModel):
    window: int = Field(description="Seconds covered (whole minutes, the current one included).")
    since: datetime
    by: list[str]
    groups: list[RateGroup]


class Problem(BaseModel):
    detail: str

"""What the API answers, as pydantic models: they are the OpenAPI documentation too."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec
from pydantic import BaseModel, Field, create_model

from ..db import as_utc
from ..verdict_fields import API_COLUMNS, FIELDS, VerdictField


class _StoredVerdict(BaseModel):
    """What every stored verdict answer can do: be built from a verdicts row."""

    @classmethod
    def from_row(cls, row) -> _StoredVerdict:
        values = {name: row[column] for name, column in API_COLUMNS}
        values["received_at"] = as_utc(values["received_at"])
        values["ended_at"] = as_utc(values["ended_at"])
        return cls.model_validate(values)


def _api_field(field: VerdictField) -> tuple[Any, Any]:
    annotation = field.python | None if field.nullable else field.python
    return annotation, Field(description=field.description)


# A stored verdict: fastsse's verdict fields plus what the service knows of the stream, one
# field per column the API shows (service/verdict_fields.py), the row's id first.
if TYPE_CHECKING:  # a type checker cannot see the fields of a model made at run time
    VerdictOut = _StoredVerdict
else:
    VerdictOut = create_model(
        "VerdictOut",
        __base__=_StoredVerdict,
        __doc__="A stored verdict: fastsse's verdict fields plus what the service knows of the stream.",
        id=(int, ...),
        **{f.api_name: _api_field(f) for f in FIELDS if f.api_name is not None},
    )


_ENCODE = msgspec.json.Encoder().encode


def verdict_json(row) -> bytes:
    """A stored row as VerdictOut's JSON, without building the model: the ingest route answers
    every post with it (tests check that it equals VerdictOut's own serialization; msgspec
    writes a UTC time as pydantic does, with a Z)."""
    values = {name: row[column] for name, column in API_COLUMNS}
    values["received_at"] = as_utc(values["received_at"])
    values["ended_at"] = as_utc(values["ended_at"])
    return _ENCODE(values)


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
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next (older) page; null on the last page.")


class Counts(BaseModel):
    total: int = Field(description="Verdicts stored.")
    silent: int = Field(description="Of them, failed while the transport looked clean.")
    rate: float = Field(description="silent / total: the share of streams that failed silently (0 when total is 0).")
    failed: int = Field(description="Verdicts whose category is not complete.")
    model_fallbacks: int = Field(description="Streams served by another model than requested.")
    bytes: int


class RateGroup(Counts):
    gateway: str | None = None
    tool: str | None = None
    protocol: str | None = None
    by_category: dict[str, int] = Field(description="Verdicts per category.")
    silent_by_category: dict[str, int] = Field(description="Silent failures per category.")


class Rates(BaseModel):
    window: int = Field(description="Seconds covered (whole minutes; without until, the current minute included).")
    since: datetime
    until: datetime | None = Field(None, description="The first minute not covered; null: now.")
    by: list[str]
    groups: list[RateGroup]
    folded: dict[str, int] = Field(
        default_factory=dict,
        description="How many gateways or tools were folded into the '(other)' groups (see top); empty when none were.",
    )


class SeriesGroup(Counts):
    gateway: str | None = None
    tool: str | None = None
    protocol: str | None = None


class SeriesPoint(BaseModel):
    start: datetime = Field(description="The bucket's first minute.")
    groups: list[SeriesGroup]


class Series(BaseModel):
    since: datetime
    until: datetime | None = Field(None, description="The first minute not covered; absent: now.")
    bucket: int = Field(description="Seconds per bucket; buckets start at multiples of it since 1970-01-01 UTC.")
    by: str | None
    points: list[SeriesPoint] = Field(description="Buckets with at least one verdict, in order.")
    folded: dict[str, int] = Field(
        default_factory=dict,
        description="How many gateways or tools were folded into the '(other)' groups (see top); empty when none were.",
    )


class RetryGroup(BaseModel):
    gateway: str | None = None
    tool: str | None = None
    protocol: str | None = None
    requests: int = Field(description="First attempts posted with a request_id.")
    first_failures: int = Field(description="Of them, failed.")
    retries: int = Field(description="Attempts that followed an earlier one of their request.")
    recoveries: int = Field(description="Retries that completed after a failed attempt.")
    never_recovered: int = Field(
        description="first_failures - recoveries (at least 0): failed requests no retry has completed yet."
    )
    retries_of_final: int = Field(
        description="Retries of a failure that was not retryable "
        "(a token limit, a filter): the same request "
        "hits the same wall."
    )


class Retries(BaseModel):
    window: int
    since: datetime
    until: datetime | None = Field(None, description="The first minute not covered; absent: now.")
    by: list[str]
    groups: list[RetryGroup]
    folded: dict[str, int] = Field(
        default_factory=dict,
        description="How many gateways or tools were folded into the '(other)' groups (see top); empty when none were.",
    )


class RequestChain(BaseModel):
    gateway: str
    attempts: list[VerdictOut] = Field(description="In the order they were stored.")


class RequestAttempts(BaseModel):
    request_id: str
    chains: list[RequestChain] = Field(description="One per gateway that posted it.")


class Problem(BaseModel):
    detail: str


class BatchItem(BaseModel):
    """What became of one stream of a batch: what its own post would have been answered."""

    index: int = Field(description="The stream's place in the batch, from 0.")
    stream_id: str | None = Field(description="Its stream_id; null when its head's parameters were wrong.")
    status: int = Field(
        description="201 stored, 200 stored before with the same bytes, 409 stored before with "
        "other bytes, 422 a parameter is wrong, 503 not stored (or, as detail says, not known)."
    )
    verdict: VerdictOut | None = Field(None, description="With 201 and 200: the stored verdict.")
    detail: str | list[ParameterError] | None = Field(None, description="Otherwise: why.")


class BatchAnswer(BaseModel):
    """A batch read whole: one item per stream, in the order they came."""

    items: list[BatchItem]

"""Ingest without HTTP: the parameters of a post, and from posted bytes to a stored verdict.

``ingest`` returns what became of a post, an outcome (``Stored``, or ``Refused`` with the
reason), never an HTTP answer: the route in ``api/routes/streams.py`` authenticates, calls
``parse_query`` and ``ingest``, and turns the outcome into an answer (its ``ANSWERS`` table);
tests call these two directly.  The parameters are one table
(``PARAMETERS``): the OpenAPI document is made from it, and ``parse_query`` checks exactly what
it documents.  This is the hot path of the service, so the table is read by a few lines of
plain Python instead of FastAPI's per-parameter machinery (which cost about as much per request
as the whole HTTP stack does).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import hashlib
import logging
import re
from collections.abc import AsyncIterable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qsl

import fastsse

from . import metrics
from .auth import Gateway
from .config import Settings
from .content_encoding import BodyDecoder, BodyTooCostly, UndecodableBody
from .db import utcnow
from .judging import JUDGE_IN_THREAD, BodyTooLarge, JudgingTooCostly, StreamJudge, sanitize_tool, verdict_row
from .uploads import UploadBrokeOff, UploadClock
from .writer import CONFLICT, CREATED, REUSED, Message, VerdictWriter, WriteResult, WriterUnavailable

log = logging.getLogger(__name__)

# Identifiers a gateway picks (stream ids, request ids, model names): stored as sent, so they
# are checked, not rewritten.
IDENTIFIER_PATTERN = r"^[A-Za-z0-9._:/@+=-]+$"
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_INTEGER = re.compile(r"^[+-]?[0-9]{1,12}$")


@dataclass(frozen=True, slots=True)
class Parameter:
    """One query parameter: its documentation, which is also the rule parse_query applies."""

    name: str
    description: str
    schema: dict
    required: bool = False

    def parse(self, raw: str):
        """The value, or ValueError with the reason."""
        schema = self.schema
        if schema.get("format") == "date-time":
            return parse_time(raw)
        if schema["type"] == "integer":
            if not _INTEGER.match(raw):
                raise ValueError("must be an integer")
            value = int(raw)
            if not schema["minimum"] <= value <= schema["maximum"]:
                raise ValueError(f"must be between {schema['minimum']} and {schema['maximum']}")
            return value
        if "enum" in schema:
            if raw not in schema["enum"]:
                raise ValueError(f"must be one of {', '.join(schema['enum'])}")
            return raw
        if len(raw) < schema.get("minLength", 0):
            raise ValueError("must not be empty")
        if len(raw) > schema["maxLength"]:
            raise ValueError(f"must be at most {schema['maxLength']} characters")
        if "pattern" in schema and not _IDENTIFIER.match(raw):
            raise ValueError("may hold only letters, digits and . _ : / @ + = -")
        return raw


def _identifier(limit: int, **schema) -> dict:
    return {"type": "string", "maxLength": limit, "pattern": IDENTIFIER_PATTERN, **schema}


PARAMETERS = (
    Parameter(
        "stream_id",
        "The idempotency key of this stream, unique per gateway: a retried "
        "post with the same bytes gets the stored verdict back.",
        _identifier(128, minLength=1),
        required=True,
    ),
    Parameter(
        "protocol",
        "The protocol of the stream; auto recognizes it from the first event that names one.",
        {"type": "string", "enum": [fastsse.AUTO, *fastsse.PROTOCOLS], "default": fastsse.AUTO},
    ),
    Parameter(
        "tool",
        "The client tool (codex, claude-code, ...); lowercased, cut to [a-z0-9._-] and 64 characters.",
        {"type": "string", "maxLength": 256},
    ),
    Parameter(
        "transport",
        "How the upstream connection ended, as the gateway saw it.",
        {"type": "string", "enum": list(fastsse.TRANSPORTS), "default": "eof"},
    ),
    Parameter(
        "upstream_status",
        "The HTTP status the provider answered with.",
        {"type": "integer", "minimum": 100, "maximum": 599},
    ),
    Parameter("model_requested", "The model the client asked for (to tell a model fallback).", _identifier(128)),
    Parameter("request_id", "Links the attempts of one request (its retries).", _identifier(128)),
    Parameter(
        "attempt",
        "Which attempt of request_id this is, as the gateway counts them.",
        {"type": "integer", "minimum": 0, "maximum": 1_000_000},
    ),
    Parameter(
        "ended_at",
        "When the stream ended, as the gateway saw it (ISO 8601 with a zone; "
        "default: when the post arrives). A gateway that posts later, from a spool, "
        "keeps each verdict at its own time. At most 5 minutes ahead of the service's "
        "clock, and not older than RETENTION_DAYS (400 days when that is 0).",
        {"type": "string", "format": "date-time"},
    ),
)
# How far ahead of the service's clock a gateway's ended_at may be (clock skew).
MAX_CLOCK_SKEW = timedelta(minutes=5)
UNLIMITED_RETENTION_DAYS = 400
_BY_NAME = {parameter.name: parameter for parameter in PARAMETERS}


def openapi_parameters() -> list[dict]:
    return [
        {"name": p.name, "in": "query", "required": p.required, "description": p.description, "schema": p.schema}
        for p in PARAMETERS
    ]


class InvalidParameters(ValueError):
    """What is wrong with a post's parameters, in the shape FastAPI reports a 422."""

    def __init__(self, errors: list[dict]) -> None:
        super().__init__("; ".join(f"{e['loc'][-1]}: {e['msg']}" for e in errors))
        self.errors = errors


def parse_time(raw: str) -> datetime:
    """An ISO 8601 time with a zone, in UTC."""
    text = raw.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"  # Python 3.10's fromisoformat does not read "Z"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("must be an ISO 8601 time, such as 2026-12-01T09:30:00Z") from None
    if moment.tzinfo is None:
        raise ValueError("must carry its zone (Z or +hh:mm)")
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:  # year 1 at +01:00, say: no such time in UTC
        raise ValueError("is out of range once in UTC") from None


@dataclass(frozen=True, slots=True)
class IngestParams:
    stream_id: str
    protocol: str = fastsse.AUTO
    tool: str | None = None
    transport: str = "eof"
    upstream_status: int | None = None
    model_requested: str | None = None
    request_id: str | None = None
    attempt: int | None = None
    ended_at: datetime | None = None


def parse_query(pairs: Iterable[tuple[str, str]] | bytes) -> IngestParams:
    """The parameters of a post (its query string, or its (name, value) pairs as Starlette
    has parsed them already), checked as PARAMETERS documents them; unknown ones are ignored
    (a newer gateway may send more)."""
    if isinstance(pairs, bytes):
        pairs = query_pairs(pairs.decode("latin-1"))
    values: dict = {}
    errors = []
    for name, raw in pairs:
        parameter = _BY_NAME.get(name)
        if parameter is None:
            continue
        if name in values:
            errors.append(_error("value_error", name, "is given more than once", raw))
            continue
        try:
            values[name] = parameter.parse(raw)
        except ValueError as exc:
            values[name] = None
            errors.append(_error("value_error", name, str(exc), raw))
    for parameter in PARAMETERS:
        if parameter.required and parameter.name not in values:
            errors.append(_error("missing", parameter.name, "is required", None))
    if errors:
        raise InvalidParameters(errors)
    return IngestParams(**values)


def query_pairs(query: str) -> list[tuple[str, str]]:
    """What ``parse_qsl(query, keep_blank_values=True)`` gives, in a third of its time where
    nothing is escaped (a gateway's posts, mostly)."""
    if "%" in query or "+" in query:
        return parse_qsl(query, keep_blank_values=True)
    return [(name, value) for name, _, value in (pair.partition("=") for pair in query.split("&") if pair)]


def _error(kind: str, name: str, message: str, raw: str | None) -> dict:
    return {"type": kind, "loc": ["query", name], "msg": message, "input": raw}


class Refusal(enum.Enum):
    """Why a post's verdict was not stored (the route answers each with its own status)."""

    TOO_LARGE = "too_large"  # the body passed MAX_BODY_BYTES
    TOO_SLOW = "too_slow"  # the upload passed one of its timeouts
    BROKE_OFF = "broke_off"  # the client went away before the body was whole
    BAD_SIGNATURE = "bad_signature"  # a signed post whose body is not the one its signature covers
    UNDECODABLE = "undecodable"  # the body is not what its Content-Encoding says
    INVALID = "invalid"  # a parameter is wrong for this service (ended_at out of range)
    CONFLICT = "conflict"  # the stream_id was stored with other bytes
    REUSED = "reused"  # the webhook-id of a signed post was used by another post
    UNAVAILABLE = "unavailable"  # not stored now (the writer's queue is full, the database down)


@dataclass(frozen=True, slots=True)
class Stored:
    """The verdict is committed: ``row`` as stored (for a repeated post, the first one's)."""

    row: dict
    created: bool  # False: the same stream_id with the same bytes was stored before


@dataclass(frozen=True, slots=True)
class Refused:
    """Nothing stored, and why.  ``errors``: for INVALID, the parameters' errors in the shape
    FastAPI reports them."""

    refusal: Refusal
    detail: str
    errors: list[dict] | None = None


Outcome = Stored | Refused


async def ingest(
    chunks: AsyncIterable[bytes],
    params: IngestParams,
    gateway: Gateway,
    *,
    settings: Settings,
    writer: VerdictWriter,
    declared_length: str | None = None,
    decoder: BodyDecoder | None = None,
) -> Outcome:
    """Judge the posted bytes as they arrive, store the verdict, and say what became of it.

    ``gateway`` is the authenticated caller; if it signed the post, the body must be the one
    its signature covers.  ``chunks`` raises ``UploadBrokeOff`` if the upload breaks off.
    ``decoder``: the body's Content-Encoding, if it has one; what it decodes to is judged,
    bounded and hashed (a stream posted compressed or not is the same stream), and a signature
    covers the body as sent.
    """
    if gateway.reporter:  # an application's reporter posts its own answers: its name is their tool
        params = dataclasses.replace(params, tool=gateway.name)
    if declared_length is not None and declared_length.isdigit() and (int(declared_length) > settings.max_body_bytes):
        return _too_large(settings)  # refused before a byte of it is read

    now = utcnow()
    out_of_range = ended_at_refusal(params, settings, now)
    if out_of_range is not None:
        return out_of_range

    judge = StreamJudge(
        params.protocol,
        max_body_bytes=settings.max_body_bytes,
        max_event_bytes=settings.max_event_bytes,
        max_scan_seconds=settings.max_scan_seconds,
    )
    clock = UploadClock(settings.upload_idle_timeout_seconds, settings.upload_timeout_seconds)
    sent = hashlib.sha256() if decoder is not None and gateway.signed is not None else None
    try:
        if decoder is None:
            async for chunk in chunks:
                clock.tick()
                if JUDGE_IN_THREAD:
                    await asyncio.to_thread(judge.feed, chunk)
                else:
                    judge.feed(chunk)
        else:
            async for chunk in chunks:
                clock.tick()
                if sent is not None:
                    sent.update(chunk)
                async for piece in decoder.pieces(chunk):
                    if JUDGE_IN_THREAD:
                        await asyncio.to_thread(judge.feed, piece)
                    else:
                        judge.feed(piece)
            decoder.finish()
    except BodyTooLarge:
        return _too_large(settings)  # the rest is never read
    except JudgingTooCostly as exc:
        return Refused(Refusal.TOO_LARGE, str(exc))
    except (BodyTooCostly, UndecodableBody, UploadBrokeOff, asyncio.CancelledError) as exc:
        refusal = upload_refusal(exc, clock, f"stream_id={params.stream_id}", judge.received)
        if refusal is None:
            raise
        return refusal
    finally:
        clock.stop()

    verdict, body_sha256 = judge.close(params.transport)
    signed = gateway.signed
    if signed is not None and (body_sha256 if sent is None else sent.hexdigest()) != signed.body_sha256:
        return Refused(
            Refusal.BAD_SIGNATURE, "the body's SHA-256 is not the one its content-digest names; nothing stored"
        )
    row = stream_row(judge, verdict, body_sha256, gateway.name, params, now)
    try:
        result = await writer.write(
            row,
            timeout=settings.write_timeout_seconds,
            message=None if signed is None else Message(signed.message_id, signed.timestamp),
        )
    except WriterUnavailable as exc:
        return unavailable(exc)
    return written(result, params.stream_id)


def _too_large(settings: Settings) -> Refused:
    return Refused(Refusal.TOO_LARGE, f"the body is larger than MAX_BODY_BYTES ({settings.max_body_bytes})")


def upload_refusal(exc: BaseException, clock: UploadClock, what: str, received: int) -> Refused | None:
    """What a post whose body stopped being read with ``exc`` is answered; None if ``exc`` is no
    fault of the upload (a cancellation from outside), which the caller re-raises.  ``what``
    names the post in the log (``stream_id=...``, ``a batch``); ``received``: bytes read."""
    if isinstance(exc, BodyTooCostly):  # (its message already says nothing is stored)
        return Refused(Refusal.TOO_LARGE, str(exc))
    if isinstance(exc, UndecodableBody):
        return Refused(Refusal.UNDECODABLE, str(exc))
    if isinstance(exc, UploadBrokeOff):
        log.info("upload of %s broke off after %d bytes; nothing stored", what, received)
        return Refused(Refusal.BROKE_OFF, "the upload broke off; nothing stored")
    expired = clock.expired() if isinstance(exc, asyncio.CancelledError) else None
    if expired is None:
        return None
    log.info("upload of %s timed out after %d bytes (%s); nothing stored", what, received, expired)
    return Refused(Refusal.TOO_SLOW, f"the upload was too slow: {expired}; nothing stored")


def ended_at_refusal(params: IngestParams, settings: Settings, now: datetime) -> Refused | None:
    """A post's ended_at outside what the service keeps (or ahead of its clock), refused."""
    if params.ended_at is None:
        return None
    oldest = now - timedelta(days=settings.retention_days or UNLIMITED_RETENTION_DAYS)
    if oldest <= params.ended_at <= now + MAX_CLOCK_SKEW:
        return None
    reason = (
        "is more than 5 minutes ahead of the service's clock"
        if params.ended_at > now
        else "is older than the verdicts are kept"
    )
    errors = [_error("value_error", "ended_at", reason, params.ended_at.isoformat())]
    return Refused(Refusal.INVALID, f"ended_at {reason}", errors)


def stream_row(
    judge: StreamJudge, verdict: fastsse.Verdict, body_sha256: str, gateway: str, params: IngestParams, now: datetime
) -> dict:
    """The row of a judged stream (counted in the scan metrics)."""
    metrics.SCAN_SECONDS.observe(judge.scan_seconds)
    metrics.STREAM_BYTES.observe(judge.received)
    return verdict_row(
        verdict,
        body_sha256=body_sha256,
        gateway=gateway,
        stream_id=params.stream_id,
        tool=sanitize_tool(params.tool),
        upstream_status=params.upstream_status,
        model_requested=params.model_requested,
        request_id=params.request_id,
        attempt=params.attempt,
        received_at=now,
        ended_at=params.ended_at,
    )


def unavailable(exc: WriterUnavailable) -> Refused:
    """The writer could not say the verdict is stored: not stored, or (``exc.unknown``) not
    known, which is counted."""
    if exc.unknown:
        metrics.INGEST_OUTCOME_UNKNOWN.labels("commit_timeout" if "in time" in exc.reason else "database_error").inc()
        return Refused(
            Refusal.UNAVAILABLE,
            f"the outcome is unknown: {exc.reason}, and the verdict may still be stored; a retry "
            "with the same stream_id and bytes is safe (answered 200 with the verdict if it was stored)",
        )
    return Refused(Refusal.UNAVAILABLE, f"not stored: {exc.reason}; retry later")


def written(result: WriteResult, stream_id: str) -> Outcome:
    """What the writer's commit made of a verdict."""
    if result.outcome == CONFLICT:
        return Refused(Refusal.CONFLICT, f"stream_id {stream_id!r} was already posted with different bytes")
    if result.outcome == REUSED:
        return Refused(
            Refusal.REUSED,
            "this webhook-id was used by another post (another stream_id or other bytes): "
            "each signed post needs an id of its own; nothing stored",
        )
    stored = result.row
    created = result.outcome == CREATED
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "verdict gateway=%s stream_id=%s category=%s silent=%s %s",
            stored["gateway"],
            stored["stream_id"],
            stored["category"],
            stored["silent"],
            "stored" if created else "already stored",
        )
    return Stored(stored, created)

"""POST /v1/streams: a gateway posts the raw bytes of one stream and gets its verdict back;
POST /v1/streams/batch: many streams in one body, each answered on its own.

The work is in ``service/ingest.py`` and ``service/batches.py``, which say what became of the
post; ``answer_post`` authenticates, reads the parameters, admits the post, and turns the
outcome into an answer (``ANSWERS``).  One of two paths sends it: ``serve_post``, plain ASGI,
which every post takes, and the FastAPI routes, which document the operations (see
``serve_post``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from dataclasses import dataclass

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import PlainTextResponse, Response
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect

from ... import metrics
from ...batches import MAX_HEAD_BYTES, BatchOutcome, ingest_batch
from ...content_encoding import ENCODINGS, UnknownEncoding, content_decoder, content_encoding_of
from ...ingest import (
    InvalidParameters,
    Outcome,
    Refusal,
    Refused,
    ingest,
    openapi_parameters,
    parse_query,
)
from ...uploads import UploadBrokeOff
from ..deps import ingest_caller, request_target
from ..schemas import BatchAnswer, Problem, ValidationProblem, VerdictOut, verdict_json

router = APIRouter(prefix="/v1/streams", tags=["ingest"])
BATCH_PATH = router.prefix + "/batch"

RETRY_AFTER_SECONDS = "5"
CLIENT_CLOSED_REQUEST = 499  # nginx's "client closed request": the upload broke off

# What each refusal is answered: its status and headers.
ANSWERS: dict[Refusal, tuple[int, Mapping[str, str] | None]] = {
    Refusal.TOO_LARGE: (413, None),
    Refusal.TOO_SLOW: (408, {"Connection": "close"}),
    Refusal.BROKE_OFF: (CLIENT_CLOSED_REQUEST, None),  # nobody is listening: no body
    Refusal.BAD_SIGNATURE: (401, {"WWW-Authenticate": "Bearer"}),
    Refusal.UNDECODABLE: (400, None),
    Refusal.INVALID: (422, None),
    Refusal.CONFLICT: (409, None),
    Refusal.REUSED: (409, None),
    Refusal.UNAVAILABLE: (503, {"Retry-After": RETRY_AFTER_SECONDS}),
}


@dataclass(frozen=True, slots=True)
class Answer:
    """What the route sends: a status, a JSON body (or none), and headers."""

    status: int
    body: bytes = b""
    headers: Mapping[str, str] | None = None
    # A batch's 207: the status of each of its streams (what the ingest metrics count)
    statuses: tuple[int, ...] | None = None


def json_body(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def problem(status: int, detail: str, headers: Mapping[str, str] | None = None) -> Answer:
    return Answer(status, json_body({"detail": detail}), headers)


def batch_answer(batch: BatchOutcome) -> Answer:
    """207, and for each stream what its own post would have been answered: its verdict, or
    why not."""
    items, statuses = [], []
    for index, (params, outcome) in enumerate(batch.outcomes):
        head: dict[str, object] = {"index": index, "stream_id": None if params is None else params.stream_id}
        if isinstance(outcome, Refused):
            head["status"] = status = ANSWERS[outcome.refusal][0]
            head["detail"] = outcome.detail if outcome.errors is None else outcome.errors
            items.append(json_body(head))
        else:
            head["status"] = status = 201 if outcome.created else 200
            items.append(json_body(head)[:-1] + b',"verdict":' + verdict_json(outcome.row) + b"}")
        statuses.append(status)
    return Answer(207, b'{"items":[' + b",".join(items) + b"]}", statuses=tuple(statuses))


def answer_for(outcome: Outcome) -> Answer:
    """A stored verdict is 201 (new) or 200 (stored before); a refusal as ANSWERS says."""
    if not isinstance(outcome, Refused):
        return Answer(201 if outcome.created else 200, verdict_json(outcome.row))
    status, headers = ANSWERS[outcome.refusal]
    if outcome.refusal is Refusal.BROKE_OFF:
        return Answer(status)
    if outcome.errors is not None:
        return Answer(status, json_body({"detail": outcome.errors}), headers)
    return problem(status, outcome.detail, headers)


CONTENT_ENCODING = {
    "name": "Content-Encoding",
    "in": "header",
    "required": False,
    "description": f"How the body is compressed, if it is: one of {', '.join(ENCODINGS)} or identity "
    "(any case; empty is identity). Any other is a 415; see the 413 for the bounds on what it "
    "decodes to.",
    "schema": {"type": "string", "examples": [*ENCODINGS, "identity"]},
}

RAW_STREAM_BODY = {
    # An empty body is a capture too: the provider closed the stream before its first byte.
    "required": False,
    "description": "The captured response body, byte for byte, as the gateway received it "
    "(possibly empty). It is scanned as it arrives (chunked uploads welcome) and "
    "never stored. It may be compressed, as its Content-Encoding header says (gzip, "
    "deflate or zstd): decoded as it arrives, what it decodes to is the stream.",
    "content": {
        media: {"schema": {"type": "string", "format": "binary"}}
        for media in ("text/event-stream", "application/octet-stream")
    },
}


@router.post(
    "",
    status_code=201,
    response_model=VerdictOut,
    summary="Judge one captured stream and store its verdict",
    openapi_extra={"parameters": [*openapi_parameters(), CONTENT_ENCODING], "requestBody": RAW_STREAM_BODY},
    responses={
        200: {
            "model": VerdictOut,
            "description": "This stream_id was already stored with the same bytes: the stored verdict, counted once.",
        },
        401: {"model": Problem, "description": "Missing or wrong credentials: nothing stored."},
        409: {
            "model": Problem,
            "description": "This stream_id was stored with other bytes, or this webhook-id was "
            "used by another post (with Retry-After: a post of it is in progress).",
        },
        408: {
            "model": Problem,
            "description": "The upload was too slow (UPLOAD_IDLE_TIMEOUT_"
            "SECONDS, UPLOAD_TIMEOUT_SECONDS): nothing stored.",
        },
        400: {
            "model": Problem,
            "description": "The body is not what its Content-Encoding says (corrupt, or cut "
            "before its compressed data ends): nothing stored.",
        },
        413: {
            "model": Problem,
            "description": "The body passed MAX_BODY_BYTES (a compressed body: what it decodes "
            "to, and as sent), decodes to more than MAX_DECODED_RATIO times its size, or holds "
            "more than 64 gzip members or zstd frames: nothing stored.",
        },
        429: {
            "model": Problem,
            "description": "Too many credentials from this client address matched nothing "
            "(FAILED_CREDENTIALS_BURST), or a reporter's streams a minute are spent "
            "(REPORT_STREAMS_PER_MINUTE): retry after Retry-After seconds.",
        },
        415: {
            "model": Problem,
            "description": f"The body's Content-Encoding is not one of {', '.join(ENCODINGS)} "
            "(nor identity; one encoding at most): nothing stored.",
        },
        422: {"model": ValidationProblem, "description": "A parameter is missing or wrong."},
        503: {
            "model": Problem,
            "description": "Not stored (overloaded, or the write queue is full), or, when the "
            "detail says the outcome is unknown, a commit that timed out or failed while under way "
            "and may still be stored; in either case a retry after Retry-After seconds is safe "
            "(the same stream_id and bytes get the stored verdict, 200, if it was stored).",
        },
    },
)
async def post_stream(request: Request) -> Response:
    return await _routed(request, batch=False)


async def _routed(request: Request, *, batch: bool) -> Response:
    """What the FastAPI routes answer: ``answer_post``'s answer, as a Response."""
    answer = await answer_post(
        request.app.state,
        request.headers,
        request_target(request.scope),
        request.client.host if request.client else None,
        () if batch else request.query_params.multi_items(),
        _request_body(request),
        batch=batch,
    )
    return Response(
        answer.body,
        status_code=answer.status,
        headers=answer.headers,
        media_type="application/json" if answer.body else None,
    )


BATCH_BODY = {
    "required": True,
    "description": "The streams one after another, each a head and its bytes: the head is one line "
    "of JSON (at most "
    f"{MAX_HEAD_BYTES // 1024} KiB, ending with a line break) holding this operation's parameters "
    "of POST /v1/streams (stream_id required; numbers as numbers or strings) and length, the "
    "number of bytes of the stream that follow it; blank lines between streams are skipped. The "
    "body may be compressed as a whole, as its Content-Encoding says. MAX_BODY_BYTES bounds the "
    "whole batch (decoded), MAX_BATCH_STREAMS the number of its streams.",
    "content": {
        media: {"schema": {"type": "string", "format": "binary"}}
        for media in ("application/x-fastsse-batch", "application/octet-stream")
    },
}


@router.post(
    "/batch",
    status_code=207,
    response_model=BatchAnswer,
    summary="Judge many captured streams and store their verdicts together",
    response_description="The batch was read whole: one item per stream, in order, with what its "
    "own post would have been answered; the streams answered 201 or 200 are stored, those answered "
    "409 or 422 are not, nor those answered 503 unless the detail says the outcome is unknown.",
    openapi_extra={"parameters": [CONTENT_ENCODING], "requestBody": BATCH_BODY},
    responses={
        400: {
            "model": Problem,
            "description": "The body is not a batch (a head that is not one, a stream cut short, "
            "no stream at all), or not what its Content-Encoding says: nothing stored.",
        },
        401: {"model": Problem, "description": "Missing or wrong credentials: nothing stored."},
        408: {"model": Problem, "description": "The upload was too slow: nothing stored."},
        409: {
            "model": Problem,
            "description": "A signed batch whose webhook-id is in progress in another post: nothing stored.",
        },
        413: {
            "model": Problem,
            "description": "The batch passed MAX_BODY_BYTES (decoded, or as sent) or MAX_BATCH_STREAMS, "
            "decodes to more than MAX_DECODED_RATIO times its size, or holds more than 64 gzip "
            "members or zstd frames: nothing stored.",
        },
        415: {"model": Problem, "description": "An unknown Content-Encoding: nothing stored."},
        429: {
            "model": Problem,
            "description": "Too many credentials from this client address matched nothing, or a "
            "reporter's streams a minute are spent.",
        },
        503: {"model": Problem, "description": "Overloaded: nothing stored, retry after Retry-After seconds."},
    },
)
async def post_batch(request: Request) -> Response:
    return await _routed(request, batch=True)


async def answer_post(
    state,
    headers: Mapping[str, str],
    target: bytes,
    client: str | None,
    query: Iterable[tuple[str, str]] | bytes,
    chunks: AsyncIterable[bytes],
    *,
    batch: bool = False,
) -> Answer:
    """What a post (``batch``: a batch) is answered, on either path.  Every answer is counted,
    a batch's as the answers of its streams, and so is an exception that escapes (as a 500)."""
    statuses: tuple[int, ...] = (500,)  # unless an answer is made: what an exception turns into
    try:
        answer = await _answer(state, headers, target, client, query, chunks, batch)
        statuses = answer.statuses or (answer.status,)
        return answer
    finally:
        for status in statuses:
            metrics.count_ingest_answer(status)


async def _answer(
    state,
    headers: Mapping[str, str],
    target: bytes,
    client: str | None,
    query: Iterable[tuple[str, str]] | bytes,
    chunks: AsyncIterable[bytes],
    batch: bool,
) -> Answer:
    """Authenticate, read the parameters, admit the post, ingest it."""
    try:
        gateway = ingest_caller(state, headers, target, client)
    except HTTPException as exc:  # 401 or 429: answered as FastAPI's handler answers it
        return problem(exc.status_code, exc.detail, exc.headers)
    try:
        # (judged as if it were the stream's bytes, a compressed body would be a silent failure)
        decoder = content_decoder(
            content_encoding_of(headers),
            max_ratio=state.settings.max_decoded_ratio,
            max_bytes=state.settings.max_body_bytes,
        )
    except UnknownEncoding as exc:
        return problem(415, str(exc))
    params = None
    if not batch:  # (a batch's streams carry their own)
        try:
            params = parse_query(query)
        except InvalidParameters as exc:
            return Answer(422, json_body({"detail": exc.errors}))
    not_admitted = state.admission.admit(gateway)
    if not_admitted is not None:
        return problem(not_admitted.status, not_admitted.detail, {"Retry-After": not_admitted.retry_after})
    streams = 1  # what the post cost a reporter's budget
    try:
        if params is None:
            read = await ingest_batch(
                chunks,
                gateway,
                settings=state.settings,
                writer=state.writer,
                declared_length=headers.get("content-length"),
                decoder=decoder,
            )
            if isinstance(read, Refused):
                return answer_for(read)
            streams = len(read.outcomes)
            return batch_answer(read)
        outcome = await ingest(
            chunks,
            params,
            gateway,
            settings=state.settings,
            writer=state.writer,
            declared_length=headers.get("content-length"),
            decoder=decoder,
        )
        return answer_for(outcome)
    finally:
        state.admission.release(gateway, streams)


async def serve_post(state, scope, receive, send, *, batch: bool = False) -> None:
    """POST /v1/streams as a plain ASGI application: what ``post_stream`` answers, without
    FastAPI's routing, middleware, request and response objects around it (those cost a worker
    about a fifth of a post's time).  The app (``app.Service``) sends every post here; the
    FastAPI route above stays, for the OpenAPI document and as the path tests compare this
    one with.  An exception that escapes is answered 500 and raised on to the server, as
    FastAPI's ServerErrorMiddleware does."""
    try:
        answer = await answer_post(
            state,
            Headers(scope=scope),
            request_target(scope),
            scope["client"][0] if scope.get("client") else None,
            scope["query_string"],
            _body(receive),
            batch=batch,
        )
    except Exception:
        await PlainTextResponse("Internal Server Error", 500)(scope, receive, send)
        raise
    # In the order Starlette's Response sends them: the answer's own, then the body's.
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in (answer.headers or {}).items()
    ]
    headers.append((b"content-length", str(len(answer.body)).encode()))
    if answer.body:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})


async def _body(receive) -> AsyncIterator[bytes]:
    """The request's body as it arrives: what ``Request.stream()`` yields, but for the empty
    chunk it adds at the end."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise UploadBrokeOff
        body = message.get("body", b"")
        if body:
            yield body
        if not message.get("more_body", False):
            return


async def _request_body(request: Request) -> AsyncIterator[bytes]:
    """``request.stream()``, with a client that went away said as ingest says it."""
    try:
        async for chunk in request.stream():
            yield chunk
    except ClientDisconnect:
        raise UploadBrokeOff from None

"""POST /v1/streams: a gateway posts the raw bytes of one stream and gets its verdict back."""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from ... import metrics
from ...db import utcnow
from ...judging import BodyTooLarge, StreamJudge, sanitize_tool, verdict_row
from ...writer import CONFLICT, CREATED, WriterUnavailable
from ..deps import UNAUTHORIZED, IngestCaller, SettingsDep
from ..schemas import Problem, VerdictOut

log = logging.getLogger("service.ingest")
router = APIRouter(prefix="/v1/streams", tags=["ingest"])

# Identifiers a gateway picks: stored as sent, so they are checked, not rewritten.
IDENTIFIER = r"^[A-Za-z0-9._:/@+=-]+$"
RETRY_AFTER_SECONDS = "5"
CLIENT_CLOSED_REQUEST = 499

RAW_STREAM_BODY = {
    # An empty body is a capture too: the provider closed the stream before its first byte.
    "required": False,
    "description": "The captured response body, byte for byte, as the gateway received it "
                   "(possibly empty). It is scanned as it arrives (chunked uploads welcome) and "
                   "never stored.",
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
    openapi_extra={"requestBody": RAW_STREAM_BODY},
    responses={
        200: {"model": VerdictOut, "description": "This stream_id was already stored with the "
                                                  "same bytes: the stored verdict, counted once."},
        401: {"model": Problem, "description": "Missing or wrong credentials: nothing stored."},
        409: {"model": Problem, "description": "This stream_id was stored with other bytes."},
        413: {"model": Problem, "description": "The body passed MAX_BODY_BYTES."},
        503: {"model": Problem, "description": "Not stored (database down or write queue full); "
                                               "retry after Retry-After seconds."},
    },
)
async def post_stream(
    request: Request,
    gateway: IngestCaller,
    settings: SettingsDep,
    stream_id: Annotated[str, Query(min_length=1, max_length=128, pattern=IDENTIFIER,
                                    description="The idempotency key of this stream.")],
    protocol: Literal["auto", "chat", "responses", "anthropic", "gemini"] = "auto",
    tool: Annotated[str | None, Query(max_length=256, description=(
        "The client tool (codex, claude-code, ...); lowercased, cut to 64 characters."))] = None,
    transport: Annotated[Literal["eof", "reset", "timeout", "error"], Query(description=(
        "How the upstream connection ended, as the gateway saw it."))] = "eof",
    upstream_status: Annotated[int | None, Query(ge=100, le=599)] = None,
    model_requested: Annotated[str | None, Query(max_length=128, pattern=IDENTIFIER)] = None,
    request_id: Annotated[str | None, Query(max_length=128, pattern=IDENTIFIER, description=(
        "Links the attempts of one request."))] = None,
    attempt: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
) -> Response:
    too_large = f"the body is larger than MAX_BODY_BYTES ({settings.max_body_bytes})"
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > settings.max_body_bytes:
        return _refuse(413, too_large)  # refused before a byte of it is read

    judge = StreamJudge(protocol, max_body_bytes=settings.max_body_bytes,
                        max_event_bytes=settings.max_event_bytes)
    try:
        async for chunk in request.stream():
            judge.feed(chunk)
            if gateway.webhook is not None:
                gateway.webhook.update(chunk)
    except BodyTooLarge:
        return _refuse(413, too_large)  # the rest is never read
    except ClientDisconnect:
        log.info("upload of stream_id=%s broke off after %d bytes; nothing stored",
                 stream_id, judge.received)
        # Nobody is listening any more; 499 (nginx's "client closed request") labels the metric.
        return Response(status_code=CLIENT_CLOSED_REQUEST)

    gateway_name = gateway.name
    if gateway.webhook is not None:
        gateway_name = gateway.webhook.signer()
        if gateway_name is None:
            return _refuse(401, "the webhook signature matches no gateway's secret",
                           UNAUTHORIZED)

    verdict, body_sha256 = judge.close(transport)
    metrics.SCAN_SECONDS.observe(judge.scan_seconds)
    metrics.STREAM_BYTES.observe(judge.received)
    row = verdict_row(
        verdict, body_sha256=body_sha256, gateway=gateway_name, stream_id=stream_id,
        tool=sanitize_tool(tool), upstream_status=upstream_status,
        model_requested=model_requested, request_id=request_id, attempt=attempt,
        received_at=utcnow(),
    )
    try:
        result = await request.app.state.writer.write(row,
                                                      timeout=settings.write_timeout_seconds)
    except WriterUnavailable as exc:
        return _refuse(503, f"not stored: {exc.reason}; retry later",
                       {"Retry-After": RETRY_AFTER_SECONDS})

    if result.outcome == CONFLICT:
        return _refuse(409, f"stream_id {stream_id!r} was already posted with different bytes")
    status = 201 if result.outcome == CREATED else 200
    stored = VerdictOut.from_row(result.row)
    log.info("verdict gateway=%s stream_id=%s category=%s silent=%s %s", stored.gateway,
             stored.stream_id, stored.category, stored.silent,
             "stored" if status == 201 else "already stored")
    return JSONResponse(stored.model_dump(mode="json"), status_code=status)


def _refuse(status: int, detail: str, headers: dict | None = None) -> Response:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


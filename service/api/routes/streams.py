"""POST /v1/streams: a gateway posts the raw bytes of one stream and gets its verdict back.

The work is in ``service.ingest``; this route authenticates, reads the parameters and sends
what ``ingest`` answers.  ``IngestFastPath`` brings every post to it directly (see there).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response

from ... import metrics
from ...ingest import OVERLOAD_RETRY_AFTER_SECONDS, InvalidParameters, ingest, openapi_parameters, parse_query, problem
from ..deps import ingest_caller
from ..schemas import Problem, ValidationProblem, VerdictOut

router = APIRouter(prefix="/v1/streams", tags=["ingest"])

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
    openapi_extra={"parameters": openapi_parameters(), "requestBody": RAW_STREAM_BODY},
    responses={
        200: {"model": VerdictOut, "description": "This stream_id was already stored with the "
                                                  "same bytes: the stored verdict, counted once."},
        401: {"model": Problem, "description": "Missing or wrong credentials: nothing stored."},
        409: {"model": Problem, "description": "This stream_id was stored with other bytes."},
        408: {"model": Problem, "description": "The upload was too slow (UPLOAD_IDLE_TIMEOUT_"
                                               "SECONDS, UPLOAD_TIMEOUT_SECONDS): nothing stored."},
        413: {"model": Problem, "description": "The body passed MAX_BODY_BYTES."},
        422: {"model": ValidationProblem, "description": "A parameter is missing or wrong."},
        503: {"model": Problem, "description": "Not stored (overloaded, database down or write "
                                               "queue full); retry after Retry-After seconds."},
    },
)
async def post_stream(request: Request) -> Response:
    status = 500  # unless an answer is made: what an exception that escapes turns into
    try:
        gateway = ingest_caller(request)
        try:
            params = parse_query(request.query_params.multi_items())
        except InvalidParameters as exc:
            status = 422
            return JSONResponse({"detail": exc.errors}, status_code=422)
        state = request.app.state
        # A signed post is known to be a gateway's only once its body is in: such posts get
        # slots of their own (a quarter as many), so that unverified ones, however many,
        # never take the slots of the gateways that authenticated up front.
        pool = "signed" if gateway.webhook is not None else "bearer"
        limit = state.settings.max_inflight_posts
        if pool == "signed":
            limit = max(1, limit // 4)
        if state.inflight_posts[pool] >= limit:
            answer = problem(503, f"overloaded: {limit} posts in progress (MAX_INFLIGHT_POSTS); "
                                  f"nothing stored, retry after {OVERLOAD_RETRY_AFTER_SECONDS} s",
                             {"Retry-After": OVERLOAD_RETRY_AFTER_SECONDS})
        else:
            state.inflight_posts[pool] += 1
            try:
                answer = await ingest(request.stream(), params, gateway,
                                      settings=state.settings, writer=state.writer,
                                      declared_length=request.headers.get("content-length"))
            finally:
                state.inflight_posts[pool] -= 1
        status = answer.status
        return Response(answer.body, status_code=status, headers=answer.headers,
                        media_type="application/json" if answer.body else None)
    except HTTPException as exc:
        status = exc.status_code  # 401 from the credentials check
        raise
    finally:
        metrics.count_ingest_answer(status)


class IngestFastPath:
    """ASGI middleware: POST /v1/streams goes to ``post_stream`` directly.

    The hot path of the service, taken past FastAPI's routing, dependency and exception layers
    (they cost a worker about as much per post as judging and storing the stream does).  The
    FastAPI route above stays: it documents the operation, and it answers exactly as this
    does (tests hold the two to the same answers).  Every other request goes on to FastAPI;
    an unexpected exception still reaches the app's error handling outside this middleware.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] != router.prefix or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        try:
            response = await post_stream(Request(scope, receive))
        except HTTPException as exc:  # as FastAPI's handler answers it
            response = JSONResponse({"detail": exc.detail}, status_code=exc.status_code,
                                    headers=exc.headers)
        await response(scope, receive, send)

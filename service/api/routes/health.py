"""Probes and metrics: unauthenticated, and free of anything a caller posted."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import SQLAlchemyError

from ... import metrics
from ...db import ping

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is up")
def healthz() -> dict:
    return {"status": "ok"}


@router.get("/readyz", summary="The database answers", responses={503: {"description": "not ready"}})
async def readyz(request: Request) -> Response:
    try:
        await run_in_threadpool(ping, request.app.state.engine)
    except SQLAlchemyError:
        return JSONResponse(
            {"status": "unavailable", "database": "unreachable"}, status_code=503, headers={"Retry-After": "5"}
        )
    return JSONResponse({"status": "ok", "database": "reachable"})


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def prometheus_metrics() -> Response:
    body, content_type = metrics.render()
    return Response(body, media_type=content_type)

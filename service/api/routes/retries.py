"""GET /v1/retries: what retries achieved, per group; GET /v1/requests/{request_id}: one
request's attempts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query

from ...ingest import IDENTIFIER_PATTERN
from ...queries import DEFAULT_TOP, request_attempts, retry_outcomes
from ..deps import ReadCaller, SessionDep
from ..filters import FilterDep, GroupingDep, Label, SpanDep, TopDep
from ..schemas import Problem, RequestAttempts, RequestChain, Retries, VerdictOut

router = APIRouter(tags=["read"])


@router.get(
    "/v1/retries",
    response_model=Retries,
    response_model_exclude_none=True,
    summary="Retry outcomes per group",
    description="Counted over the verdicts posted with a request_id, each where it "
    "falls in time: a recovery is counted in the minute of the retry that "
    "completed, so a window that cuts a chain shows part of it.",
    responses={401: {"model": Problem}},
)
def get_retries(
    _team: ReadCaller,
    session: SessionDep,
    span: SpanDep,
    where: FilterDep,
    by: GroupingDep,
    top: TopDep = DEFAULT_TOP,
) -> Retries:
    groups, folded = retry_outcomes(session, span, by=by, where=where, top=top)
    return Retries.model_validate(
        {
            "window": span.window,
            "since": span.since,
            "until": span.until,
            "by": list(by),
            "groups": groups,
            "folded": folded,
        }
    )


@router.get(
    "/v1/requests/{request_id}",
    response_model=RequestAttempts,
    summary="Every stored attempt of one request",
    responses={401: {"model": Problem}, 404: {"model": Problem}},
)
def get_request(
    _team: ReadCaller,
    session: SessionDep,
    request_id: Annotated[str, Path(max_length=128, pattern=IDENTIFIER_PATTERN)],
    gateway: Annotated[
        Label | None,
        Query(max_length=64, description=("Only this gateway's attempts (request ids are the gateways' own).")),
    ] = None,
) -> RequestAttempts:
    chains = request_attempts(session, request_id, gateway)
    if not chains:
        raise HTTPException(404, f"no verdict was posted with request_id {request_id!r}")
    return RequestAttempts(
        request_id=request_id,
        chains=[
            RequestChain(gateway=name, attempts=[VerdictOut.from_row(row) for row in rows])
            for name, rows in chains.items()
        ],
    )

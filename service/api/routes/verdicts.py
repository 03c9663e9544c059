"""GET /v1/verdicts: stored verdicts, newest first, filtered, with cursor pagination; and one
verdict by its id."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query

from ...ingest import IDENTIFIER_PATTERN
from ...queries import BIGINT_MAX, BadCursor, VerdictFilter, get_verdict, list_verdicts
from ..deps import ReadCaller, SessionDep, invalid_parameter
from ..filters import CategoryName, IsoTime, Label
from ..schemas import Problem, VerdictOut, VerdictPage

router = APIRouter(prefix="/v1/verdicts", tags=["read"])


@router.get("", response_model=VerdictPage, summary="List stored verdicts", responses={401: {"model": Problem}})
def get_verdicts(
    _team: ReadCaller,
    session: SessionDep,
    tool: Label | None = None,
    protocol: Label | None = None,
    category: Annotated[CategoryName | None, Query(description="Only this category.")] = None,
    gateway: Label | None = None,
    silent: bool | None = None,
    complete: Annotated[bool | None, Query(description="false: the failures only.")] = None,
    request_id: Annotated[str | None, Query(max_length=128, pattern=IDENTIFIER_PATTERN)] = None,
    retry: Annotated[
        bool | None, Query(description=("true: only attempts that followed an earlier one of their request."))
    ] = None,
    since: Annotated[IsoTime | None, Query(description="ISO 8601, by ended_at; inclusive.")] = None,
    until: Annotated[IsoTime | None, Query(description="ISO 8601, by ended_at; exclusive.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[
        str | None,
        Query(max_length=64, pattern=r"^[A-Za-z0-9_-]+$", description=("next_cursor of the previous page (opaque).")),
    ] = None,
) -> VerdictPage:
    where = VerdictFilter(
        tool=tool,
        protocol=protocol,
        category=category,
        gateway=gateway,
        silent=silent,
        complete=complete,
        request_id=request_id,
        retry=retry,
        since=since,
        until=until,
    )
    try:
        rows, next_cursor = list_verdicts(session, where, limit=limit, cursor=cursor)
    except BadCursor as exc:
        raise invalid_parameter("cursor", cursor or "", str(exc)) from None
    return VerdictPage(verdicts=[VerdictOut.from_row(row) for row in rows], next_cursor=next_cursor)


@router.get(
    "/{verdict_id}",
    response_model=VerdictOut,
    summary="One stored verdict",
    responses={401: {"model": Problem}, 404: {"model": Problem}},
)
def get_one_verdict(
    _team: ReadCaller, session: SessionDep, verdict_id: Annotated[int, Path(ge=1, le=BIGINT_MAX)]
) -> VerdictOut:
    row = get_verdict(session, verdict_id)
    if row is None:
        raise HTTPException(404, f"no verdict has the id {verdict_id}")
    return VerdictOut.from_row(row)

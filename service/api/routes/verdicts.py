"""GET /v1/verdicts: stored verdicts, newest first, filtered, with cursor pagination."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from ...queries import BadCursor, VerdictFilter, list_verdicts
from ..deps import ReadCaller, SessionDep, invalid_parameter
from ..schemas import Problem, VerdictOut, VerdictPage

router = APIRouter(prefix="/v1/verdicts", tags=["read"])


@router.get("", response_model=VerdictPage, summary="List stored verdicts",
            responses={401: {"model": Problem}})
def get_verdicts(
    _team: ReadCaller,
    session: SessionDep,
    tool: str | None = None,
    protocol: str | None = None,
    category: str | None = None,
    gateway: str | None = None,
    silent: bool | None = None,
    since: Annotated[datetime | None, Query(description="ISO 8601; inclusive.")] = None,
    until: Annotated[datetime | None, Query(description="ISO 8601; exclusive.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=64, pattern=r"^[A-Za-z0-9_-]+$", description=(
        "next_cursor of the previous page (opaque)."))] = None,
) -> VerdictPage:
    where = VerdictFilter(tool=tool, protocol=protocol, category=category, gateway=gateway,
                          silent=silent, since=since, until=until)
    try:
        rows, next_cursor = list_verdicts(session, where, limit=limit, cursor=cursor)
    except BadCursor as exc:
        raise invalid_parameter("cursor", cursor, str(exc)) from None
    return VerdictPage(verdicts=[VerdictOut.from_row(row) for row in rows],
                       next_cursor=next_cursor)

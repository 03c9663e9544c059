"""GET /v1/rates: silent-failure rates per group over a time window, from the rollups."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from ...queries import RATE_DIMENSIONS, silent_rates
from ..deps import ReadCaller, SessionDep
from ..schemas import Problem, Rates

router = APIRouter(prefix="/v1/rates", tags=["read"])

_WINDOW = re.compile(r"^(\d+)([smhd]?)$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_WINDOW_SECONDS = 400 * 86400


def parse_window(text: str) -> int:
    match = _WINDOW.match(text.strip())
    if not match:
        raise ValueError("window must be seconds (3600) or a number with s, m, h or d (15m, 7d)")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if not 60 <= seconds <= MAX_WINDOW_SECONDS:
        raise ValueError("window must be between 1 minute and 400 days")
    return seconds


def parse_by(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in RATE_DIMENSIONS]
    if unknown or not names:
        raise ValueError(f"by must be a comma-separated subset of {','.join(RATE_DIMENSIONS)}")
    return names


@router.get("", response_model=Rates, response_model_exclude_none=True,
            summary="Silent-failure rates per group",
            responses={401: {"model": Problem}, 422: {"model": Problem}})
def get_rates(
    _team: ReadCaller,
    session: SessionDep,
    window: Annotated[str, Query(description="Seconds, or 15m / 1h / 7d.")] = "3600",
    by: Annotated[str, Query(description="Group by any of gateway,tool,protocol.")] = "tool,protocol",
) -> Rates:
    try:
        seconds = parse_window(window)
        dimensions = parse_by(by)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    since, groups = silent_rates(session, window_seconds=seconds, by=dimensions)
    return Rates(window=seconds, since=since, by=list(dimensions), groups=groups)

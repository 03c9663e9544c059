"""GET /v1/rates: silent-failure rates per group over a time window, from the rollups."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query

from ...queries import RATE_DIMENSIONS, silent_rates
from ..deps import ReadCaller, SessionDep, invalid_parameter
from ..schemas import Problem, Rates

router = APIRouter(prefix="/v1/rates", tags=["read"])

_WINDOW = re.compile(r"^(\d+)([smhd]?)$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_WINDOW_SECONDS = 400 * 86400
BY_PATTERN = r"^(gateway|tool|protocol)(,(gateway|tool|protocol))*$"


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
            responses={401: {"model": Problem}})
def get_rates(
    _team: ReadCaller,
    session: SessionDep,
    # The patterns document the forms; the parsers below check them and say what is wrong.
    window: Annotated[str, Query(description="Seconds, or 15m / 1h / 7d (1 minute to 400 days).",
                                 json_schema_extra={"pattern": r"^\d+[smhd]?$"})] = "3600",
    by: Annotated[str, Query(description="Group by any of gateway,tool,protocol.",
                             json_schema_extra={"pattern": BY_PATTERN})] = "tool,protocol",
) -> Rates:
    try:
        seconds = parse_window(window)
    except ValueError as exc:
        raise invalid_parameter("window", window, str(exc)) from None
    try:
        dimensions = parse_by(by)
    except ValueError as exc:
        raise invalid_parameter("by", by, str(exc)) from None
    since, groups = silent_rates(session, window_seconds=seconds, by=dimensions)
    return Rates(window=seconds, since=since, by=list(dimensions), groups=groups)

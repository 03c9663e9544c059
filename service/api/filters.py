"""Query parameters the counting read endpoints share: the time span, and the group filters."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated

from fastapi import Depends, Query
from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

import fastsse

from ..queries import FOLDED, MAX_TOP, RATE_DIMENSIONS, RollupFilter, Span
from .deps import invalid_parameter

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


_ISO_DATE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}")


def _iso_only(value):
    """A time parameter is an ISO 8601 time, as documented (pydantic would also take a
    number as Unix seconds, which the schema does not say)."""
    if not isinstance(value, datetime) and not _ISO_DATE.match(str(value)):
        raise ValueError("must be an ISO 8601 time, such as 2026-12-01T09:30:00Z")
    return value


def _in_utc(value: datetime) -> datetime:
    """No zone means UTC; a time that has no UTC equivalent (year 1 at +00:01) is refused."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError("is out of range once in UTC") from None


IsoTime = Annotated[datetime, BeforeValidator(_iso_only), AfterValidator(_in_utc)]


def _no_nul(value: str) -> str:
    if "\x00" in value:  # PostgreSQL's text cannot hold one: a 422, not a database error
        raise ValueError("must not hold a NUL character")
    return value


# A filter's value: any text a label may be, but a NUL.
Label = Annotated[str, AfterValidator(_no_nul)]


def _a_category(value: str) -> str:
    if value not in fastsse.CATEGORIES:
        raise ValueError(f"must be one of fastsse's categories: {', '.join(fastsse.CATEGORIES)}")
    return value


# A category filter: one of fastsse's own (a misspelt one is a 422 that lists them, not an
# empty page).
CategoryName = Annotated[
    str, AfterValidator(_a_category), WithJsonSchema({"type": "string", "enum": list(fastsse.CATEGORIES)})
]


def parse_by(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in RATE_DIMENSIONS]
    if unknown or not names:
        raise ValueError(f"by must be a comma-separated subset of {','.join(RATE_DIMENSIONS)}")
    return names


async def time_span(
    # The patterns document the forms; the parsers check them and say what is wrong.
    window: Annotated[
        str,
        Query(
            description="Seconds, or 15m / 1h / 7d (1 minute to 400 days): the span that ends now.",
            json_schema_extra={"pattern": r"^\d+[smhd]?$"},
        ),
    ] = "3600",
    since: Annotated[
        IsoTime | None,
        Query(description=("ISO 8601 (no zone means UTC): the span starts here instead, at the minute.")),
    ] = None,
    until: Annotated[
        IsoTime | None,
        Query(description=("ISO 8601: with since, the span ends here (the minute excluded) instead of now.")),
    ] = None,
) -> Span:
    try:
        seconds = parse_window(window)
    except ValueError as exc:
        raise invalid_parameter("window", window, str(exc)) from None
    if until is not None and since is None:
        raise invalid_parameter("until", str(until), "until needs since")
    span = Span.of(seconds=seconds, since=since, until=until)
    if span.until is not None and span.until <= span.since:
        raise invalid_parameter("until", str(until), "until must be a later minute than since")
    if span.until is None and span.window < -60:  # (a few seconds ahead: clocks differ)
        raise invalid_parameter("since", str(since), "since is ahead of the service's clock: give until too")
    if span.window > MAX_WINDOW_SECONDS:
        raise invalid_parameter("since", str(since), "the span must be at most 400 days")
    return span


async def group_filter(
    gateway: Annotated[Label | None, Query(max_length=64, description="Only this gateway.")] = None,
    tool: Annotated[Label | None, Query(max_length=64, description="Only this tool.")] = None,
    protocol: Annotated[Label | None, Query(max_length=16, description="Only this protocol.")] = None,
) -> RollupFilter:
    return RollupFilter(gateway=gateway, tool=tool, protocol=protocol)


async def grouping(
    by: Annotated[
        str, Query(description="Group by any of gateway,tool,protocol.", json_schema_extra={"pattern": BY_PATTERN})
    ] = "tool,protocol",
) -> tuple[str, ...]:
    try:
        return parse_by(by)
    except ValueError as exc:
        raise invalid_parameter("by", by, str(exc)) from None


SpanDep = Annotated[Span, Depends(time_span)]
FilterDep = Annotated[RollupFilter, Depends(group_filter)]
GroupingDep = Annotated[tuple[str, ...], Depends(grouping)]
# Gateways and tools come from clients: a read folds all but the busiest (queries.FOLDED).
TopDep = Annotated[
    int,
    Query(
        ge=1,
        le=MAX_TOP,
        description="How many gateways and how many tools keep groups of their own: those with the most "
        f"verdicts in the span. The others are folded into groups whose gateway or tool is {FOLDED!r} "
        "(no real one is named so), and `folded` says how many were; filter by one to see it alone.",
    ),
]

"""GET /v1/series: silent-failure rates and volume over time, per tool, protocol or gateway;
as JSON, or drawn as an SVG chart (the dashboard shows it)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response

from ... import charts
from ...queries import DEFAULT_TOP, MAX_SERIES_POINTS, bucket_for, series
from ..deps import ReadCaller, SessionDep, invalid_parameter
from ..filters import FilterDep, SpanDep, TopDep
from ..schemas import Problem, Series

router = APIRouter(prefix="/v1/series", tags=["read"])

Dimension = Annotated[
    Literal["tool", "protocol", "gateway"] | None,
    Query(description=("One line per tool, protocol or gateway; all verdicts together when absent.")),
]
Bucket = Annotated[
    int | None,
    Query(
        ge=60,
        le=86400,
        description=(
            "Seconds per bucket (a multiple of 60); by default about 60 to 200 buckets, from 1 "
            "minute for an hour to 6 hours for a month."
        ),
    ),
]


def _series(session, span, where, by, bucket, top) -> Series:
    bucket = bucket or bucket_for(span.window)
    if bucket % 60:
        raise invalid_parameter("bucket", str(bucket), "bucket must be whole minutes")
    if span.window // bucket > MAX_SERIES_POINTS:
        raise invalid_parameter(
            "bucket", str(bucket), f"bucket is too small for the span (at most {MAX_SERIES_POINTS} buckets)"
        )
    points, folded = series(session, span, bucket_seconds=bucket, by=by, where=where, top=top)
    return Series.model_validate(
        {"since": span.since, "until": span.until, "bucket": bucket, "by": by, "points": points, "folded": folded}
    )


@router.get("", response_model=Series, summary="Rates and volume over time", responses={401: {"model": Problem}})
def get_series(
    _team: ReadCaller,
    session: SessionDep,
    span: SpanDep,
    where: FilterDep,
    by: Dimension = None,
    bucket: Bucket = None,
    top: TopDep = DEFAULT_TOP,
) -> Series:
    return _series(session, span, where, by, bucket, top)


@router.get(
    ".svg",
    summary="Rates and volume over time, drawn as an SVG chart",
    response_class=Response,
    responses={200: {"content": {"image/svg+xml": {}}}, 401: {"model": Problem}},
)
def get_series_svg(
    _team: ReadCaller,
    session: SessionDep,
    span: SpanDep,
    where: FilterDep,
    by: Dimension = None,
    bucket: Bucket = None,
    lines: Annotated[
        int, Query(ge=1, le=12, description="Draw the busiest this many groups; the rest are counted as others.")
    ] = 6,
) -> Response:
    # The lines beyond the busiest are drawn as one (charts.OTHERS): folded at once.
    drawn = _series(session, span, where, by, bucket, top=lines)
    return Response(charts.series_svg(drawn.model_dump(), lines=lines), media_type="image/svg+xml")

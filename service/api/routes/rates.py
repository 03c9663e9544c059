"""GET /v1/rates: silent-failure rates per group over a span, from the rollups."""

from __future__ import annotations

from fastapi import APIRouter

from ...queries import DEFAULT_TOP, silent_rates
from ..deps import ReadCaller, SessionDep
from ..filters import FilterDep, GroupingDep, SpanDep, TopDep
from ..schemas import Problem, Rates

router = APIRouter(prefix="/v1/rates", tags=["read"])


@router.get(
    "",
    response_model=Rates,
    response_model_exclude_none=True,
    summary="Silent-failure rates per group",
    responses={401: {"model": Problem}},
)
def get_rates(
    _team: ReadCaller,
    session: SessionDep,
    span: SpanDep,
    where: FilterDep,
    by: GroupingDep,
    top: TopDep = DEFAULT_TOP,
) -> Rates:
    groups, folded = silent_rates(session, span, by=by, where=where, top=top)
    return Rates.model_validate(
        {
            "window": span.window,
            "since": span.since,
            "until": span.until,
            "by": list(by),
            "groups": groups,
            "folded": folded,
        }
    )

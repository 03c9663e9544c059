"""Reads: verdicts (listing, one verdict, a request's attempts), and from the per-minute rollups
the silent-failure rates, their series over time and the retry outcomes.

Everything that counts reads the rollups, so that its cost follows the minutes and groups of
the window asked for, not the number of verdict rows.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import Integer, cast, func, select
from sqlalchemy.orm import Session

from .db import as_utc, utcnow
from .models import VERDICTS, VerdictRollup
from .rollups import minute_of

BIGINT_MAX = 2**63 - 1  # the ids are BIGINT: a larger one is refused before the database sees it

RATE_DIMENSIONS = ("gateway", "tool", "protocol")
RATE_COUNTS = ("verdicts", "silent", "model_fallbacks", "bytes")
RETRY_COUNTS = ("requests", "first_failures", "retries", "recoveries", "retries_of_final")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


# Values of these dimensions come from clients (a gateway's name; a tool, which the tap takes
# from a User-Agent): a count read shows the ``top`` busiest of each and folds the rest into one
# value, FOLDED, so that its answer and the page stay small however many there are.  The
# protocols are fastsse's own few.
FOLDED_DIMENSIONS = ("gateway", "tool")
# No gateway or tool is named so: both are letters, digits, '.', '_' and '-' only.
FOLDED = "(other)"
DEFAULT_TOP = 100
MAX_TOP = 1000


@dataclass(frozen=True, slots=True)
class Busiest:
    """Per folded dimension of a grouping: the values kept, and how many were folded."""

    kept: dict[str, frozenset]
    folded: dict[str, int]

    def key(self, group: dict, by: tuple[str, ...]) -> tuple:
        return tuple(FOLDED if name in self.kept and group[name] not in self.kept[name] else group[name] for name in by)


def busiest(groups, by: tuple[str, ...], top: int, weight) -> Busiest:
    """The ``top`` values of each folded dimension in ``by`` with the most ``weight(group)``
    over ``groups`` (ties by name)."""
    kept: dict[str, frozenset] = {}
    folded: dict[str, int] = {}
    for name in by:
        if name not in FOLDED_DIMENSIONS:
            continue
        totals: dict = {}
        for group in groups:
            totals[group[name]] = totals.get(group[name], 0) + weight(group)
        if len(totals) > top:
            ranked = sorted(totals, key=lambda value: (-totals[value], value))
            kept[name] = frozenset(ranked[:top])
            folded[name] = len(totals) - top
    return Busiest(kept, folded)


def fold(groups: list[dict], by: tuple[str, ...], busy: Busiest, empty, add) -> list[dict]:
    """The groups, those of folded values merged (``empty(key_values)`` makes a group,
    ``add(into, group)`` adds one to it), in the order of their keys, FOLDED last."""
    if not busy.folded:
        return groups
    merged: dict[tuple, dict] = {}
    for group in groups:
        key = busy.key(group, by)
        into = merged.get(key)
        if into is None:
            into = merged[key] = empty(dict(zip(by, key, strict=True)))
        add(into, group)
    return [merged[key] for key in sorted(merged, key=_folded_last)]


def _folded_last(key: tuple) -> tuple:
    return tuple((value == FOLDED, value) for value in key)


class BadCursor(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class VerdictFilter:
    tool: str | None = None
    protocol: str | None = None
    category: str | None = None
    gateway: str | None = None
    silent: bool | None = None
    complete: bool | None = None
    request_id: str | None = None
    retry: bool | None = None  # true: attempts after another; false: the others
    since: datetime | None = None  # inclusive; without a zone: UTC
    until: datetime | None = None  # exclusive


@dataclass(frozen=True, slots=True)
class Span:
    """Whole minutes: from the minute of ``since`` to the minute of ``until`` (excluded), or
    to now with the current minute included.  ``window``: the seconds asked for."""

    since: datetime
    until: datetime | None = None
    window: int = 3600

    @classmethod
    def of(
        cls,
        *,
        seconds: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        now: datetime | None = None,
    ) -> Span:
        now = now or utcnow()
        if since is None:
            seconds = seconds or 3600
            since = now - timedelta(seconds=seconds)
        else:
            seconds = int(((until or now) - since).total_seconds())
        return cls(minute_of(since), None if until is None else minute_of(until), seconds)


@dataclass(frozen=True, slots=True)
class RollupFilter:
    gateway: str | None = None
    tool: str | None = None
    protocol: str | None = None


def encode_cursor(row_id: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{row_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, _, row_id = text.partition(":")
        if version != "v1" or not re.fullmatch(r"[0-9]{1,19}", row_id) or int(row_id) > BIGINT_MAX:
            raise ValueError
        return int(row_id)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BadCursor("cursor is not one this API handed out") from None


# -- verdict rows ---------------------------------------------------------------------------


def list_verdicts(
    session: Session, where: VerdictFilter, *, limit: int, cursor: str | None = None
) -> tuple[list[dict], str | None]:
    """Newest first; the cursor is the id to continue below, so pages never shift."""
    table = VERDICTS
    query = select(table).order_by(table.c.id.desc()).limit(limit + 1)
    for column in ("tool", "protocol", "category", "gateway", "silent", "complete", "request_id"):
        value = getattr(where, column)
        if value is not None:
            query = query.where(table.c[column] == value)
    if where.retry is not None:
        previous = table.c.previous_category
        query = query.where(previous.is_not(None) if where.retry else previous.is_(None))
    # Compared in UTC: SQLite compares stored times as text, without their zone.
    if where.since is not None:
        query = query.where(table.c.ended_at >= as_utc(where.since))
    if where.until is not None:
        query = query.where(table.c.ended_at < as_utc(where.until))
    if cursor is not None:
        query = query.where(table.c.id < decode_cursor(cursor))
    rows = [dict(row) for row in session.execute(query).mappings()]
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1]["id"])
    return rows, None


def get_verdict(session: Session, verdict_id: int) -> dict | None:
    table = VERDICTS
    found = session.execute(select(table).where(table.c.id == verdict_id)).mappings().first()
    return None if found is None else dict(found)


def request_attempts(session: Session, request_id: str, gateway: str | None = None) -> dict[str, list[dict]]:
    """Every stored attempt of a request, per gateway, in the order they were stored (the
    request_chain index: no scan)."""
    table = VERDICTS
    query = select(table).where(table.c.request_id == request_id).order_by(table.c.gateway, table.c.id)
    if gateway is not None:
        query = query.where(table.c.gateway == gateway)
    chains: dict[str, list[dict]] = {}
    for row in session.execute(query).mappings():
        chains.setdefault(row["gateway"], []).append(dict(row))
    return chains


# -- counts, from the rollups ---------------------------------------------------------------


def _counted(session: Session, span: Span, where: RollupFilter, keys: list, counts: tuple):
    table = VerdictRollup.__table__
    query = (
        select(*keys, *(func.sum(table.c[name]) for name in counts)).where(table.c.minute >= span.since).group_by(*keys)
    )
    if span.until is not None:
        query = query.where(table.c.minute < span.until)
    for name in RATE_DIMENSIONS:
        value = getattr(where, name)
        if value is not None:
            query = query.where(table.c[name] == value)
    return session.execute(query)


def _rate_group(key_values: dict) -> dict:
    return {
        **key_values,
        "total": 0,
        "silent": 0,
        "failed": 0,
        "model_fallbacks": 0,
        "bytes": 0,
        "by_category": {},
        "silent_by_category": {},
    }


def _add_rates(group: dict, category: str, verdicts, silent, fallbacks, size) -> None:
    verdicts, silent = int(verdicts), int(silent)
    group["total"] += verdicts
    group["silent"] += silent
    group["model_fallbacks"] += int(fallbacks)
    group["bytes"] += int(size)
    group["by_category"][category] = group["by_category"].get(category, 0) + verdicts
    if silent:
        group["silent_by_category"][category] = group["silent_by_category"].get(category, 0) + silent
    if category != "complete":
        group["failed"] += verdicts


def _with_rate(group: dict) -> dict:
    group["rate"] = group["silent"] / group["total"] if group["total"] else 0.0
    return group


def _merge_rates(into: dict, group: dict) -> None:
    for name in ("total", "silent", "failed", "model_fallbacks", "bytes"):
        into[name] += group[name]
    for breakdown in ("by_category", "silent_by_category"):
        mine = into[breakdown]
        for category, count in group[breakdown].items():
            mine[category] = mine.get(category, 0) + count


def silent_rates(
    session: Session,
    span: Span,
    *,
    by: tuple[str, ...],
    where: RollupFilter = RollupFilter(),
    top: int = DEFAULT_TOP,
) -> tuple[list[dict], dict[str, int]]:
    """Counts per group over the span, the groups of all but the ``top`` busiest gateways and
    tools folded (FOLDED); and per dimension, how many values were folded."""
    table = VerdictRollup.__table__
    keys = [table.c[name] for name in by]
    groups: dict[tuple, dict] = {}
    for row in _counted(session, span, where, [*keys, table.c.category], RATE_COUNTS):
        key = tuple(row[: len(by)])
        group = groups.get(key)
        if group is None:
            group = groups[key] = _rate_group(dict(zip(by, key, strict=True)))
        _add_rates(group, row[len(by)], *row[len(by) + 1 :])
    ordered = [groups[key] for key in sorted(groups)]
    busy = busiest(ordered, by, top, weight=_verdicts)
    return [_with_rate(group) for group in fold(ordered, by, busy, _rate_group, _merge_rates)], busy.folded


def _verdicts(group: dict) -> int:
    return group["total"]


# Bucket sizes of a series, by the span they cover: about 60 to 200 points, on round times.
SERIES_BUCKETS = (
    (3600, 60),
    (6 * 3600, 300),
    (24 * 3600, 900),
    (3 * 86400, 3600),
    (7 * 86400, 2 * 3600),
    (31 * 86400, 6 * 3600),
)
MAX_SERIES_POINTS = 2000


def bucket_for(seconds: int) -> int:
    for span, bucket in SERIES_BUCKETS:
        if seconds <= span:
            return bucket
    return 86400


def _bucket_index(session: Session, bucket_seconds: int):
    minute = VerdictRollup.__table__.c.minute
    if session.get_bind().dialect.name == "sqlite":
        epoch = cast(func.strftime("%s", minute), Integer)
        return epoch // bucket_seconds
    return cast(func.floor(func.extract("epoch", minute) / bucket_seconds), Integer)


def series(
    session: Session,
    span: Span,
    *,
    bucket_seconds: int,
    by: str | None,
    where: RollupFilter = RollupFilter(),
    top: int = DEFAULT_TOP,
) -> tuple[list[dict], dict[str, int]]:
    """Rates per time bucket (aligned to multiples of its size since 1970, UTC) and group, all
    but the ``top`` busiest gateways or tools over the whole span folded (FOLDED); and how many
    values were folded."""
    table = VerdictRollup.__table__
    index = _bucket_index(session, bucket_seconds).label("bucket")
    keys = [index] + ([table.c[by]] if by else [])
    buckets: dict[int, dict[tuple, dict]] = {}
    for row in _counted(session, span, where, [*keys, table.c.category], RATE_COUNTS):
        bucket, key = int(row[0]), tuple(row[1 : len(keys)])
        groups = buckets.setdefault(bucket, {})
        group = groups.get(key)
        if group is None:
            group = groups[key] = _rate_group({by: key[0]} if by else {})
        _add_rates(group, row[len(keys)], *row[len(keys) + 1 :])
    dimensions = (by,) if by else ()
    busy = busiest((g for groups in buckets.values() for g in groups.values()), dimensions, top, weight=_verdicts)
    points = []
    for bucket, groups in sorted(buckets.items()):
        ordered = fold([groups[key] for key in sorted(groups)], dimensions, busy, _rate_group, _merge_rates)
        for group in ordered:  # the category breakdowns are for the rates endpoint
            del group["by_category"], group["silent_by_category"]
        points.append(
            {"start": EPOCH + timedelta(seconds=bucket * bucket_seconds), "groups": [_with_rate(g) for g in ordered]}
        )
    return points, busy.folded


RETRY_FIELDS = (*RETRY_COUNTS, "never_recovered")


def _retry_group(key_values: dict) -> dict:
    return {**key_values, **dict.fromkeys(RETRY_FIELDS, 0)}


def _merge_retries(into: dict, group: dict) -> None:
    for name in RETRY_FIELDS:
        into[name] += group[name]


def retry_outcomes(
    session: Session,
    span: Span,
    *,
    by: tuple[str, ...],
    where: RollupFilter = RollupFilter(),
    top: int = DEFAULT_TOP,
) -> tuple[list[dict], dict[str, int]]:
    """Retry chains per group over the span: first attempts, how many failed, the retries,
    how many recovered a failure, and the retries of a failure that was not retryable; all
    but the ``top`` busiest gateways and tools folded (FOLDED), and how many were."""
    table = VerdictRollup.__table__
    keys = [table.c[name] for name in by]
    result = []
    for row in _counted(session, span, where, keys, RETRY_COUNTS):
        counts = dict(zip(RETRY_COUNTS, map(int, row[len(by) :]), strict=True))
        if not any(counts.values()):
            continue  # a group with no verdict posted with a request_id
        counts["never_recovered"] = max(counts["first_failures"] - counts["recoveries"], 0)
        result.append({**dict(zip(by, row[: len(by)], strict=True)), **counts})
    ordered = sorted(result, key=lambda group: tuple(group.get(name) or "" for name in by))
    busy = busiest(ordered, by, top, weight=_attempts)
    return fold(ordered, by, busy, _retry_group, _merge_retries), busy.folded


def _attempts(group: dict) -> int:
    return group["requests"] + group["retries"]

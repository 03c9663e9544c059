"""Reads: verdict listing with cursor pagination, and silent-failure rates from the rollups."""

from __future__ import annotations

import base64
import binascii
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .db import as_utc, utcnow
from .models import StoredVerdict, VerdictRollup
from .writer import minute_of

RATE_DIMENSIONS = ("gateway", "tool", "protocol")


class BadCursor(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class VerdictFilter:
    tool: str | None = None
    protocol: str | None = None
    category: str | None = None
    gateway: str | None = None
    silent: bool | None = None
    since: datetime | None = None  # inclusive; without a zone: UTC
    until: datetime | None = None  # exclusive


def encode_cursor(row_id: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{row_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, _, row_id = text.partition(":")
        if version != "v1" or not row_id.isdigit():
            raise ValueError
        return int(row_id)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BadCursor("cursor is not one this API handed out") from None


def list_verdicts(session: Session, where: VerdictFilter, *, limit: int,
                  cursor: str | None = None) -> tuple[list[dict], str | None]:
    """Newest first; the cursor is the id to continue below, so pages never shift."""
    table = StoredVerdict.__table__
    query = select(table).order_by(table.c.id.desc()).limit(limit + 1)
    for column in ("tool", "protocol", "category", "gateway", "silent"):
        value = getattr(where, column)
        if value is not None:
            query = query.where(table.c[column] == value)
    # Compared in UTC: SQLite compares stored times as text, without their zone.
    if where.since is not None:
        query = query.where(table.c.received_at >= as_utc(where.since))
    if where.until is not None:
        query = query.where(table.c.received_at < as_utc(where.until))
    if cursor is not None:
        query = query.where(table.c.id < decode_cursor(cursor))
    rows = [dict(row) for row in session.execute(query).mappings()]
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1]["id"])
    return rows, None


def silent_rates(session: Session, *, window_seconds: int, by: tuple[str, ...],
                 now: datetime | None = None) -> tuple[datetime, list[dict]]:
    """Counts per group over the window, read from the per-minute rollups (O(buckets))."""
    since = minute_of((now or utcnow()) - timedelta(seconds=window_seconds))
    table = VerdictRollup.__table__
    keys = [table.c[name] for name in by]
    query = (
        select(*keys, table.c.category, func.sum(table.c.verdicts), func.sum(table.c.silent),
               func.sum(table.c.model_fallbacks), func.sum(table.c.bytes))
        .where(table.c.minute >= since)
        .group_by(*keys, table.c.category)
    )
    groups: dict[tuple, dict] = defaultdict(
        lambda: {"total": 0, "silent": 0, "failed": 0, "model_fallbacks": 0, "bytes": 0,
                 "by_category": {}}
    )
    for row in session.execute(query):
        key = tuple(row[: len(by)])
        category, verdicts, silent, fallbacks, size = row[len(by):]
        group = groups[key]
        group["total"] += int(verdicts)
        group["silent"] += int(silent)
        group["model_fallbacks"] += int(fallbacks)
        group["bytes"] += int(size)
        group["by_category"][category] = group["by_category"].get(category, 0) + int(verdicts)
        if category != "complete":
            group["failed"] += int(verdicts)
    result = []
    for key in sorted(groups):
        group = groups[key]
        group.update(zip(by, key))
        group["rate"] = group["silent"] / group["total"] if group["total"] else 0.0
        result.append(group)
    return since, result

"""The per-minute rollups: what one stored verdict adds to its bucket.

Every store adds a batch's rollups in the transaction that stores its verdicts (the PostgreSQL
store counts them in SQL, the others with rollup_counts; the tests hold both to the same
figures); the metrics count the same (metrics.count_stored) and the reads sum the buckets
(queries.py).
"""

from __future__ import annotations

from datetime import datetime

from .db import as_utc
from .models import VerdictRollup

ROLLUP_COLUMNS = tuple(c.name for c in VerdictRollup.__table__.columns)
ROLLUP_KEY = tuple(c.name for c in VerdictRollup.__table__.primary_key)
ROLLUP_COUNTS = tuple(name for name in ROLLUP_COLUMNS if name not in ROLLUP_KEY)
# The SET clause that adds a bucket's counts to the stored bucket's (INSERT ... ON CONFLICT).
ADD_COUNTS = ", ".join(f"{n} = verdict_rollups.{n} + excluded.{n}" for n in ROLLUP_COUNTS)


def minute_of(moment: datetime) -> datetime:
    """The bucket a moment falls in."""
    return as_utc(moment).replace(second=0, microsecond=0)


def rollup_counts(row: dict) -> tuple[int, ...]:
    """What one stored verdict adds to its rollup bucket, in ROLLUP_COUNTS order.  The
    PostgreSQL statement counts the same in SQL (the tests hold both backends to it)."""
    first = row["request_id"] is not None and row["previous_category"] is None
    retry = row["previous_category"] is not None
    after_failure = retry and row["previous_category"] != "complete"
    return (
        1,
        row["silent"],
        row["model_fallback"],
        row["bytes"],
        first,
        first and not row["complete"],
        retry,
        after_failure and row["complete"],
        after_failure and row["previous_retryable"] is False,
    )

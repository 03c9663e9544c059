"""Retention: the verdicts of streams that ended too long ago are removed (rollups are kept).

The writer prunes between batches, every RETENTION_INTERVAL_SECONDS (stores/base.py); the
``fastsse-service prune`` command does it at once.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from datetime import datetime

from sqlalchemy import Engine, delete, select

from . import partitions
from .db import sqlite_path
from .models import VERDICTS
from .sqlite_lock import SqliteWriteLock

PRUNE_BATCH_ROWS = 5_000


def prune(engine: Engine, older_than: datetime, *, lock: AbstractContextManager | None = None) -> int:
    """Remove the verdicts of streams that ended before ``older_than``; returns how many.

    PostgreSQL drops whole day partitions (service/partitions.py).  Otherwise the rows are
    deleted, in small transactions, each holding ``lock`` (by default SQLite's write lock of
    the file, which the services writing it take too: their writers never wait inside SQLite,
    where one of them may be holding its event loop)."""
    if partitions.is_partitioned(engine):
        return partitions.prune(engine, older_than)
    if lock is None:
        lock = (
            SqliteWriteLock(sqlite_path(engine.url.render_as_string()))
            if engine.dialect.name == "sqlite"
            else nullcontext()
        )
    total = 0
    while True:
        with lock, engine.begin() as connection:
            doomed = (
                select(VERDICTS.c.id).where(VERDICTS.c.ended_at < older_than).limit(PRUNE_BATCH_ROWS).scalar_subquery()
            )
            deleted = connection.execute(delete(VERDICTS).where(VERDICTS.c.id.in_(doomed))).rowcount
        total += deleted
        if deleted < PRUNE_BATCH_ROWS:
            return total

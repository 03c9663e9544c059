"""A store: where the writer's batches go.  The writer (service/writer.py) does the group
commit; a store does the database's part, as httpx's client hands requests to a transport.

Each store writes a batch of rows and its rollups in one transaction, on a connection of its
own that it keeps from batch to batch (a connection from the pool would be pinged at every
checkout) and drops after a failure, so that the next batch connects afresh.
"""

from __future__ import annotations

import asyncio
import logging
import random
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta

from sqlalchemy import Engine, select, tuple_

from .. import partitions
from ..db import utcnow
from ..models import VERDICTS
from ..retention import prune

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (gateway, stream_id)
# A signed post's id as kept: (gateway, webhook-id, stream_id, body_sha256, webhook-timestamp).
Message = tuple[str, str, str, str, int]
# What insert() returns for each new row: its id, its previous attempt's category and retryable.
Inserted = tuple[int, "str | None", "bool | None"]


class Store:
    """The database's part of a batch.  Subclasses write to one kind of database; the base
    reads back and keeps up through SQLAlchemy, which serves every kind."""

    # held around every write of the database (see SQLite's)
    lock: AbstractContextManager = nullcontext()

    def __init__(self, engine: Engine | None, shard: int | None = None) -> None:
        self.engine = engine
        # The rollup rows this store adds to are its own (see VerdictRollup.shard).
        self.shard = random.randrange(1, 2**31) if shard is None else shard

    async def insert(self, rows: list[dict]) -> dict[Key, Inserted]:
        """Insert the rows that are new (a duplicate key inserts nothing) and their rollups,
        and commit.  Returns, by (gateway, stream_id) of each new row: its id and its previous
        attempt's category and retryable."""
        raise NotImplementedError

    async def keep_messages(self, messages: list[Message]) -> dict[tuple[str, str], tuple[str, str]]:
        """Keep the ids of signed posts that are new, and commit.  Returns, by (gateway,
        webhook-id) of each id that was kept before: the (stream_id, body_sha256) of its post."""
        raise NotImplementedError

    async def forget_messages(self, *, before: int) -> None:
        """Let go of the ids of signed posts signed before ``before`` (Unix seconds)."""
        raise NotImplementedError

    async def forget_keys(self, keys: list[Key]) -> None:
        """Delete stored keys whose verdicts are gone (only PostgreSQL keeps keys apart)."""
        raise RuntimeError(f"stored keys without their verdicts: {len(keys)}")

    async def read(self, keys: list[Key]) -> dict[Key, dict]:
        """The stored verdicts of these keys, committed by now, read as any reader would."""
        if not keys:
            return {}
        return await asyncio.to_thread(self._read, keys)

    def _read(self, keys: list[Key]) -> dict[Key, dict]:
        assert self.engine is not None
        with self.engine.connect() as connection:
            found = connection.execute(
                select(VERDICTS).where(tuple_(VERDICTS.c.gateway, VERDICTS.c.stream_id).in_(keys))
            ).mappings()
            return {(row["gateway"], row["stream_id"]): dict(row) for row in found}

    async def upkeep(self, retention: timedelta | None) -> None:
        """Between batches, now and then: PostgreSQL's partitions made ahead of time, and
        verdicts past ``retention`` removed.  Raises what the database raises."""
        await asyncio.to_thread(self._upkeep, retention)

    def _upkeep(self, retention: timedelta | None) -> None:
        assert self.engine is not None
        if partitions.is_partitioned(self.engine):
            for name in partitions.make_ahead(self.engine, utcnow().date()):
                log.info("made partition %s", name)
        if retention is not None:
            older_than: datetime = utcnow() - retention
            deleted = prune(self.engine, older_than, lock=self.lock)
            if deleted:
                log.info("pruned %d verdict rows older than %s", deleted, retention)

    async def close(self) -> None:
        """Let the connection go."""

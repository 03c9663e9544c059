"""The writer: one thread that commits verdicts in shared transactions (group commit).

Requests put their row on a bounded queue and wait.  The writer takes whatever has queued up
(up to a batch), writes all rows and their per-minute rollups in one transaction, commits, and
only then answers each request.  A full queue or a failed transaction answers 503: a 2xx is only
ever sent for a committed row.  Old rows are pruned between batches (rollups are kept).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import queue
import threading
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone

from sqlalchemy import Engine, delete, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from . import metrics
from .db import as_utc
from .models import StoredVerdict, VerdictRollup

log = logging.getLogger("service.writer")

CREATED = "created"  # a new row was committed
DUPLICATE = "duplicate"  # the same stream_id with the same bytes was already stored
CONFLICT = "conflict"  # the same stream_id was already stored with different bytes

PRUNE_BATCH_ROWS = 5_000


class WriterUnavailable(Exception):
    """The verdict could not be committed now; the caller should retry later."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclasses.dataclass(frozen=True, slots=True)
class WriteResult:
    outcome: str
    row: dict  # the stored row (for a duplicate or conflict: the one stored first)


@dataclasses.dataclass(slots=True)
class _Pending:
    row: dict
    tool_label: str
    done: concurrent.futures.Future


def minute_of(moment: datetime) -> datetime:
    return as_utc(moment).replace(second=0, microsecond=0)


class VerdictWriter:
    def __init__(
        self,
        engine: Engine,
        *,
        queue_size: int,
        batch_size: int,
        metrics_tools: frozenset[str],
        retention_days: float = 0.0,
        retention_interval_seconds: float = 3600.0,
    ) -> None:
        self._engine = engine
        self._queue: queue.Queue[_Pending | None] = queue.Queue(maxsize=queue_size)
        self._batch_size = batch_size
        self._metrics_tools = metrics_tools
        self._retention = timedelta(days=retention_days) if retention_days else None
        self._retention_interval = retention_interval_seconds
        self._next_prune = 0.0
        self._insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
        self._thread = threading.Thread(target=self._run, name="verdict-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Commit what is queued, then stop."""
        self._queue.put(None)
        self._thread.join()

    async def write(self, row: dict, *, timeout: float) -> WriteResult:
        pending = _Pending(row, metrics.tool_label(row["tool"], self._metrics_tools),
                           concurrent.futures.Future())
        try:
            self._queue.put_nowait(pending)
        except queue.Full:
            raise WriterUnavailable("the write queue is full") from None
        metrics.DB_WRITE_QUEUE_DEPTH.inc()
        try:
            return await asyncio.wait_for(asyncio.wrap_future(pending.done), timeout)
        except asyncio.TimeoutError:  # the builtin TimeoutError from Python 3.11 on
            # The row may still be committed later; a retry with the same stream_id then gets
            # the stored verdict back (200), so nothing is counted twice.
            raise WriterUnavailable("the database did not commit in time") from None

    # -- the writer thread ------------------------------------------------------------------

    def _run(self) -> None:
        stopping = False
        while not stopping:
            try:
                # Wake up now and then even when idle, so retention runs without traffic.
                first = self._queue.get(timeout=min(self._retention_interval, 60.0))
            except queue.Empty:
                self._prune_when_due()
                continue
            batch = []
            if first is None:
                stopping = True
            else:
                batch.append(first)
            while len(batch) < self._batch_size:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            if batch:
                metrics.DB_WRITE_QUEUE_DEPTH.dec(len(batch))
                self._commit(batch)
            self._prune_when_due()

    def _commit(self, batch: list[_Pending]) -> None:
        started = time.perf_counter()
        try:
            results = self._write_batch([p.row for p in batch])
        except Exception as exc:
            # Whatever went wrong, the transaction rolled back: answer 503 and keep the thread
            # alive for the next batch.  Database trouble is expected; anything else is a bug.
            metrics.DB_WRITE_ERRORS.inc()
            if isinstance(exc, SQLAlchemyError):
                log.warning("group commit of %d verdicts failed: %s", len(batch),
                            type(exc).__name__)
            else:
                log.exception("group commit of %d verdicts failed", len(batch))
            for pending in batch:
                _settle(pending.done, exception=WriterUnavailable("the database is unavailable"))
            return
        metrics.DB_WRITE_SECONDS.observe(time.perf_counter() - started)
        metrics.DB_WRITE_BATCH.observe(len(batch))
        for pending, result in zip(batch, results):
            if result.outcome == CREATED:
                metrics.count_stored(pending.tool_label, result.row)
            _settle(pending.done, result=result)

    def _write_batch(self, rows: list[dict]) -> list[WriteResult]:
        """Insert the rows and their rollups in one transaction; a duplicate key inserts nothing."""
        first_of_key: dict[tuple[str, str], dict] = {}
        for row in rows:
            first_of_key.setdefault((row["gateway"], row["stream_id"]), row)
        candidates = list(first_of_key.values())

        with self._engine.begin() as connection:
            table = StoredVerdict.__table__
            inserted = connection.execute(
                self._insert(table)
                .on_conflict_do_nothing(index_elements=["gateway", "stream_id"])
                .returning(table.c.gateway, table.c.stream_id, table.c.id),
                candidates,
            ).all()
            new_ids = {(g, s): row_id for g, s, row_id in inserted}
            stored: dict[tuple[str, str], dict] = {}
            for key, row in first_of_key.items():
                if key in new_ids:
                    stored[key] = {**row, "id": new_ids[key]}
            missing = [key for key in first_of_key if key not in new_ids]
            if missing:
                existing = connection.execute(
                    select(table).where(tuple_(table.c.gateway, table.c.stream_id).in_(missing))
                ).mappings()
                for found in existing:
                    stored[(found["gateway"], found["stream_id"])] = dict(found)
            self._add_to_rollups(connection, [stored[key] for key in new_ids])

        results = []
        for row in rows:
            key = (row["gateway"], row["stream_id"])
            kept = stored[key]
            if row is first_of_key[key] and key in new_ids:
                results.append(WriteResult(CREATED, kept))
            elif kept["body_sha256"] == row["body_sha256"]:
                results.append(WriteResult(DUPLICATE, kept))
            else:
                results.append(WriteResult(CONFLICT, kept))
        return results

    def _add_to_rollups(self, connection, rows: list[dict]) -> None:
        buckets: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for row in rows:
            key = (minute_of(row["received_at"]), row["gateway"], row["tool"], row["protocol"],
                   row["category"])
            counts = buckets[key]
            counts[0] += 1
            counts[1] += row["silent"]
            counts[2] += row["model_fallback"]
            counts[3] += row["bytes"]
        if not buckets:
            return
        table = VerdictRollup.__table__
        values = [
            {"minute": k[0], "gateway": k[1], "tool": k[2], "protocol": k[3], "category": k[4],
             "verdicts": c[0], "silent": c[1], "model_fallbacks": c[2], "bytes": c[3]}
            # Sorted, so that writers in several processes lock rollup rows in the same order.
            for k, c in sorted(buckets.items())
        ]
        statement = self._insert(table)
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["minute", "gateway", "tool", "protocol", "category"],
                set_={
                    name: table.c[name] + statement.excluded[name]
                    for name in ("verdicts", "silent", "model_fallbacks", "bytes")
                },
            ),
            values,
        )

    def _prune_when_due(self) -> None:
        if self._retention is None or time.monotonic() < self._next_prune:
            return
        self._next_prune = time.monotonic() + self._retention_interval
        try:
            deleted = prune(self._engine, datetime.now(timezone.utc) - self._retention)
        except SQLAlchemyError as exc:
            log.warning("pruning old verdicts failed: %s", type(exc).__name__)
            self._next_prune = time.monotonic() + 60
            return
        if deleted:
            log.info("pruned %d verdict rows older than %s", deleted, self._retention)


def prune(engine: Engine, older_than: datetime) -> int:
    """Delete verdict rows received before ``older_than``, in small transactions."""
    table = StoredVerdict.__table__
    total = 0
    while True:
        with engine.begin() as connection:
            doomed = (select(table.c.id).where(table.c.received_at < older_than)
                      .limit(PRUNE_BATCH_ROWS).scalar_subquery())
            deleted = connection.execute(delete(table).where(table.c.id.in_(doomed))).rowcount
        total += deleted
        if deleted < PRUNE_BATCH_ROWS:
            return total


def _settle(future: concurrent.futures.Future, *, result=None, exception=None) -> None:
    try:
        if exception is not None:
            future.set_exception(exception)
        else:
            future.set_result(result)
    except concurrent.futures.InvalidStateError:
        pass  # the request stopped waiting (timeout or disconnect); the commit stands

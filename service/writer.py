"""The writer: commits verdicts in shared transactions (group commit), one writer per process.

Requests put their row on a bounded queue and wait.  The writer, a task on the event loop that
serves the requests, takes whatever has queued up (up to a batch), writes all rows and their
per-minute rollups in one transaction, commits, and only then answers each request.  A full
queue or a failed transaction answers 503: a 2xx is only ever sent for a committed row.  Old
rows are pruned between batches (rollups are kept).

PostgreSQL is written through psycopg's asynchronous connection, so that a batch never leaves
the event loop: a writer thread beside the loop had cost a worker a quarter of each post's CPU,
most of it in handing the interpreter lock back and forth some thirty times a batch.  A batch
is one statement there (its rows as one JSON parameter, prepared once, adding their rollups
too).  SQLite's driver can only block: a batch (a prepared statement per row, one for the
rollups) runs on the loop itself while no other process is writing the file, and in a thread
when it has to wait its turn (see _SqliteStore.insert).  The rare things that block on either
database run in a thread: reading back the verdicts of duplicates, and upkeep.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import fcntl
import logging
import os
import random
import sqlite3
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from pathlib import Path

import msgspec
import psycopg
from sqlalchemy import Engine, PoolProxiedConnection, delete, select, tuple_
from sqlalchemy.exc import SQLAlchemyError

from . import metrics, partitions
from .db import SQLITE_BUSY_TIMEOUT_MS, as_utc, postgres_connect_args, sqlite_path, utcnow
from .models import VERDICTS, VerdictRollup
from .verdict_fields import FIELDS, WRITER

log = logging.getLogger("service.writer")

CREATED = "created"  # a new row was committed
DUPLICATE = "duplicate"  # the same stream_id with the same bytes was already stored
CONFLICT = "conflict"  # the same stream_id was already stored with different bytes

PRUNE_BATCH_ROWS = 5_000
# psycopg prepares a statement once it has run this many times, or when asked (prepare=True)
PREPARE_ONLY_WHEN_ASKED = 2**62


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
    done: asyncio.Future


def minute_of(moment: datetime) -> datetime:
    return as_utc(moment).replace(second=0, microsecond=0)


# -- how a batch reaches each database ------------------------------------------------------
# PostgreSQL: a whole wave is one parameter, a JSON array of its rows, which the database turns
# back into rows (json_populate_recordset).  Encoding that array is one call of msgspec's
# encoder (under 1 µs a row), where binding every value of every row would be Python work (and
# the standard library's encoder, calling back into Python for every time, took about 10 µs a
# row).  SQLite: see _SqliteStore.
# Each row's previous attempt (the verdict stored last for its gateway and request_id) is
# looked up as it is inserted.
CHAIN_COLUMNS = ("previous_category", "previous_retryable")
INPUT_COLUMNS = tuple(field.name for field in FIELDS if field.source != WRITER)
assert CHAIN_COLUMNS == tuple(field.name for field in FIELDS if field.source == WRITER)
_ENCODE = msgspec.json.Encoder().encode
ROLLUP_COLUMNS = tuple(c.name for c in VerdictRollup.__table__.columns)
ROLLUP_KEY = tuple(c.name for c in VerdictRollup.__table__.primary_key)
ROLLUP_COUNTS = tuple(name for name in ROLLUP_COLUMNS if name not in ROLLUP_KEY)
_ADD_COUNTS = ", ".join(f"{n} = verdict_rollups.{n} + excluded.{n}" for n in ROLLUP_COUNTS)


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


class _Store:
    """Writes a batch of rows and its rollups, on a connection of its own that it keeps from
    batch to batch (a connection from the pool would be pinged at every checkout) and drops
    after a failure, so that the next batch connects afresh."""

    # held around every write of the database (see SQLite's)
    lock: AbstractContextManager = nullcontext()

    async def insert(self, rows: list[dict]) -> dict[tuple[str, str], tuple]:
        """Insert the rows that are new (a duplicate key inserts nothing) and their rollups,
        and commit.  Returns, by (gateway, stream_id) of each new row: its id and its previous
        attempt's category and retryable."""
        raise NotImplementedError

    async def forget_keys(self, keys: list[tuple[str, str]]) -> None:
        """Delete stored keys whose verdicts are gone (only PostgreSQL keeps keys apart)."""
        raise RuntimeError(f"stored keys without their verdicts: {len(keys)}")

    async def close(self) -> None:
        """Let the connection go."""


def _waves(rows: list[dict]) -> list[list[dict]]:
    """The batch in waves where no two rows are attempts of one request: a statement looks up
    each row's previous attempt among the rows stored before it, not among its own."""
    waves: list[list[dict]] = []
    chains: list[set] = []
    for row in rows:
        chain = None if row["request_id"] is None else (row["gateway"], row["request_id"])
        wave = 0
        while wave < len(waves) and chain is not None and chain in chains[wave]:
            wave += 1
        if wave == len(waves):
            waves.append([])
            chains.append(set())
        waves[wave].append(row)
        chains[wave].add(chain)
    return waves


class _PostgresStore(_Store):
    """One statement a wave, in autocommit: the rows, each with its previous attempt, and their
    rollups counted from exactly the rows it inserted, in one atomic statement that commits as
    it ends (one round trip; the waves of one batch commit together).  With verdicts
    partitioned (service/partitions.py), a row is inserted only when its key is new in
    verdict_keys, in the same statement."""

    _COUNTED = (
        "count(*)",
        "count(*) FILTER (WHERE silent)",
        "count(*) FILTER (WHERE model_fallback)",
        "sum(bytes)",
        "count(*) FILTER (WHERE request_id IS NOT NULL AND previous_category IS NULL)",
        "count(*) FILTER (WHERE request_id IS NOT NULL AND previous_category IS NULL AND NOT complete)",
        "count(*) FILTER (WHERE previous_category IS NOT NULL)",
        "count(*) FILTER (WHERE previous_category <> 'complete' AND complete)",
        "count(*) FILTER (WHERE previous_category <> 'complete' AND previous_retryable = false)",
    )
    assert len(_COUNTED) == len(ROLLUP_COUNTS)
    assert ROLLUP_COLUMNS[:6] == ("minute", "gateway", "tool", "protocol", "category", "shard")

    @classmethod
    def statement(cls, *, keyed: bool, chained: bool) -> str:
        """The statement for a wave; ``chained``: some of its rows have a request_id, whose
        previous attempts it looks up.  A wave without one (most are) is given no lookup at
        all: its plan takes in every partition of verdicts, each of which the database opens
        and locks at every execution, even where no row needs the lookup (a fifth to a
        quarter of the statement's time with a week of partitions)."""
        if chained:
            category, retryable = "previous.category", "previous.retryable"
            lookup = (
                " LEFT JOIN LATERAL (SELECT p.category, p.retryable FROM verdicts AS p "
                "WHERE r.request_id IS NOT NULL AND p.gateway = r.gateway "
                "AND p.request_id = r.request_id ORDER BY p.id DESC LIMIT 1) AS previous "
                "ON true"
            )
        else:
            category, retryable, lookup = "NULL::text", "NULL::boolean", ""
        incoming = (
            f"incoming AS (SELECT {', '.join(f'r.{c}' for c in INPUT_COLUMNS)}, "
            f"{category} AS previous_category, {retryable} AS previous_retryable "
            f"FROM json_populate_recordset(NULL::verdicts, %s) AS r{lookup})"
        )
        insert = f"INSERT INTO verdicts ({', '.join(INPUT_COLUMNS + CHAIN_COLUMNS)}) "
        if keyed:
            new = (
                f"keyed AS (INSERT INTO verdict_keys (gateway, stream_id) "
                f"SELECT gateway, stream_id FROM incoming ORDER BY gateway, stream_id "
                f"ON CONFLICT DO NOTHING "
                f"RETURNING gateway, stream_id), "
                f"inserted AS ({insert}SELECT incoming.* FROM incoming "
                f"JOIN keyed USING (gateway, stream_id) "
            )
        else:
            new = f"inserted AS ({insert}SELECT * FROM incoming ON CONFLICT (gateway, stream_id) DO NOTHING "
        return (
            f"WITH {incoming}, {new}"
            f"RETURNING id, gateway, stream_id, ended_at, tool, protocol, category, complete, "
            f"silent, model_fallback, bytes, request_id, {', '.join(CHAIN_COLUMNS)}), "
            f"rolled AS (INSERT INTO verdict_rollups ({', '.join(ROLLUP_COLUMNS)}) "
            f"SELECT date_trunc('minute', ended_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', "
            f"gateway, tool, protocol, category, %s, {', '.join(cls._COUNTED)} FROM inserted "
            f"GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5 "
            f"ON CONFLICT ({', '.join(ROLLUP_KEY)}) DO UPDATE SET {_ADD_COUNTS}) "
            f"SELECT gateway, stream_id, id, {', '.join(CHAIN_COLUMNS)} FROM inserted"
        )

    def __init__(self, engine: Engine, shard: int) -> None:
        self._connect_args = postgres_connect_args(engine)
        self._shard = shard
        self._connection: psycopg.AsyncConnection | None = None
        self._statements: dict[bool, str] = {}

    async def _connected(self) -> psycopg.AsyncConnection:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        # Autocommit: each statement commits as it ends.  The engine's connections prepare
        # nothing (prepare_threshold None, see db.py), and psycopg then ignores prepare=True
        # too: the database had parsed, analysed and planned the statement at every batch,
        # two thirds of a one-row statement's time.  This one prepares what asks for it.
        connection = await psycopg.AsyncConnection.connect(
            **{**self._connect_args, "prepare_threshold": PREPARE_ONLY_WHEN_ASKED}, autocommit=True
        )
        try:
            # An unpartitioned verdicts table (a schema before migration 0004, as the
            # partitioning benchmark keeps one) holds its unique key itself.
            cursor = await connection.execute("SELECT to_regclass('verdict_keys') IS NOT NULL")
            found = await cursor.fetchone()
        except BaseException:
            await connection.close()
            raise
        keyed = found is not None and bool(found[0])
        self._statements = {chained: self.statement(keyed=keyed, chained=chained) for chained in (False, True)}
        self._connection = connection
        return connection

    async def insert(self, rows: list[dict]) -> dict[tuple[str, str], tuple]:
        connection = await self._connected()
        new: dict[tuple, tuple] = {}
        waves = _waves(rows)
        try:
            # One wave commits as its statement ends; several (attempts of one request in one
            # batch) commit together, so that the batch is stored whole or not at all.
            async with connection.transaction() if len(waves) > 1 else nullcontext(), connection.cursor() as cursor:
                for wave in waves:
                    chained = any(row["request_id"] is not None for row in wave)
                    await cursor.execute(self._statements[chained], (_ENCODE(wave).decode(), self._shard), prepare=True)
                    new.update(
                        ((gateway, stream_id), tuple(rest)) for gateway, stream_id, *rest in await cursor.fetchall()
                    )
        except BaseException:
            await self._drop()
            raise
        return new

    async def forget_keys(self, keys: list[tuple[str, str]]) -> None:
        connection = await self._connected()
        try:
            await connection.execute(
                "DELETE FROM verdict_keys WHERE (gateway, stream_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                ([g for g, _ in keys], [s for _, s in keys]),
            )
        except BaseException:
            await self._drop()
            raise

    async def _drop(self) -> None:
        """Let the connection go (after a failure: the next batch connects afresh)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                await connection.close()
            except Exception:  # the connection is gone already
                pass

    async def close(self) -> None:
        await self._drop()


class _SqliteStore(_Store):
    """SQLite has no INSERT inside WITH: each row in a statement of its own, the rollups
    counted here (rollup_counts) in one more, then one COMMIT.  sqlite3 binds a row's values to
    a prepared statement faster than SQLite reads them back out of a JSON array (30 against
    75 µs a row, most of it one json_extract per column).  Each row is inserted after the rows
    before it, so its previous attempt is looked up among them too (and only where it has a
    request_id): no waves are needed here.  Where a batch runs: see insert()."""

    _INSERT = (
        f"INSERT INTO verdicts ({', '.join(INPUT_COLUMNS + CHAIN_COLUMNS)}) "
        f"VALUES ({', '.join(f':{c}' for c in INPUT_COLUMNS)}, {{}}) "
        f"ON CONFLICT (gateway, stream_id) DO NOTHING "
        f"RETURNING id, {', '.join(CHAIN_COLUMNS)}"
    )
    _PREVIOUS = (
        "(SELECT p.{} FROM verdicts AS p WHERE p.gateway = :gateway "
        "AND p.request_id = :request_id ORDER BY p.id DESC LIMIT 1)"
    )
    INSERT_VERDICT = _INSERT.format("NULL, NULL")
    INSERT_ATTEMPT = _INSERT.format(f"{_PREVIOUS.format('category')}, {_PREVIOUS.format('retryable')}")
    ADD_ROLLUPS = (
        f"INSERT INTO verdict_rollups ({', '.join(ROLLUP_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(ROLLUP_COLUMNS))}) "
        f"ON CONFLICT ({', '.join(ROLLUP_KEY)}) DO UPDATE SET {_ADD_COUNTS}"
    )

    def __init__(self, engine: Engine, shard: int) -> None:
        self._engine = engine
        self._shard = shard
        self._connection: PoolProxiedConnection | None = None
        self._busy_timeout_ms: int | None = None  # the connection's, as last set here
        self.lock: _SqliteWriteLock = _SqliteWriteLock(sqlite_path(engine.url.render_as_string()))
        # Times are stored as the text SQLAlchemy stores, so that reads through SQLAlchemy
        # find them.
        processor = VERDICTS.c.received_at.type.dialect_impl(engine.dialect).bind_processor(engine.dialect)
        self._time_text = processor or datetime.isoformat

    async def insert(self, rows: list[dict]) -> dict[tuple[str, str], tuple]:
        # sqlite3 lets go of the interpreter lock at every row it steps through, and a thread
        # then waits for the busy event loop to hand it back, row after row.  So a batch runs
        # on the event loop itself whenever no other process is writing the file (its commit
        # then holds the loop for the fsync, a fraction of a millisecond), and in a thread when
        # it has to wait for the file's turn: another service's writer holds the lock, or
        # something that writes without it (a migration, the sqlite3 shell) holds SQLite's own,
        # which the batch on the loop does not wait for.
        if self.lock.enter_now():
            try:
                return self._insert(rows, wait=False)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
            finally:
                self.lock.leave()
        return await asyncio.to_thread(self._insert_in_turn, rows)

    def _insert_in_turn(self, rows: list[dict]) -> dict[tuple[str, str], tuple]:
        with self.lock:
            return self._insert(rows, wait=True)

    def _insert(self, rows: list[dict], *, wait: bool) -> dict[tuple[str, str], tuple]:
        """Under the lock: the batch, on the connection kept for it; ``wait``: for SQLite's
        own lock, if another connection holds it (else sqlite3.OperationalError at once)."""
        if self._connection is None:
            self._connection = self._engine.raw_connection()
            self._busy_timeout_ms = None
        connection = self._connection
        driver = connection.driver_connection
        assert driver is not None  # a live connection of the pool
        try:
            busy_timeout_ms = SQLITE_BUSY_TIMEOUT_MS if wait else 0
            if busy_timeout_ms != self._busy_timeout_ms:
                driver.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
                self._busy_timeout_ms = busy_timeout_ms
            return self._write(driver, rows)
        except BaseException:
            self._connection = None
            try:
                connection.invalidate()
            except Exception:  # the connection is gone already
                pass
            raise

    def _write(self, connection, rows: list[dict]) -> dict[tuple, tuple]:
        new = {}
        stored = []
        text = self._time_text
        cursor = connection.cursor()
        try:
            for row in rows:
                statement = self.INSERT_VERDICT if row["request_id"] is None else self.INSERT_ATTEMPT
                inserted = cursor.execute(
                    statement, {**row, "received_at": text(row["received_at"]), "ended_at": text(row["ended_at"])}
                ).fetchone()
                if inserted is None:  # its key was stored before
                    continue
                row_id, category, retryable = inserted
                retryable = None if retryable is None else bool(retryable)
                new[(row["gateway"], row["stream_id"])] = (row_id, category, retryable)
                stored.append({**row, "previous_category": category, "previous_retryable": retryable})
            cursor.executemany(self.ADD_ROLLUPS, self._rollups(stored))
        finally:
            cursor.close()
        connection.commit()
        return new

    async def close(self) -> None:
        if self._connection is not None:
            self._connection.close()  # back to the pool
            self._connection = None

    def _rollups(self, rows: list[dict]) -> list[tuple]:
        """The rows' additions to the per-minute rollups, sorted so that writers lock rollup
        rows in one order."""
        buckets: dict[tuple, list[int]] = {}
        for row in rows:
            key = (minute_of(row["ended_at"]), row["gateway"], row["tool"], row["protocol"], row["category"])
            counts = buckets.setdefault(key, [0] * len(ROLLUP_COUNTS))
            for i, count in enumerate(rollup_counts(row)):
                counts[i] += count
        return [(self._time_text(key[0]), *key[1:], self._shard, *counts) for key, counts in sorted(buckets.items())]


class VerdictWriter:
    """The group commit of one process: a task on the event loop that serves its posts
    (``start`` and ``stop`` are awaited on that loop, ``write`` is called on it)."""

    def __init__(
        self,
        engine: Engine,
        *,
        queue_size: int,
        batch_size: int,
        metrics_tools: frozenset[str],
        batch_wait_seconds: float = 0.0,
        retention_days: float = 0.0,
        retention_interval_seconds: float = 3600.0,
    ) -> None:
        self._engine = engine
        self._queue: collections.deque[_Pending] = collections.deque()  # bounded by queue_size
        self._queue_size = queue_size
        self._arrived = asyncio.Event()  # a row was queued, or stop() was called
        self._stopping = False
        self._task: asyncio.Task | None = None
        self._batch_size = batch_size
        self._batch_wait = batch_wait_seconds
        self._metrics_tools = metrics_tools
        self._retention = timedelta(days=retention_days) if retention_days else None
        self._retention_interval = retention_interval_seconds
        self._next_upkeep = 0.0  # at once: the partitions before the first batch
        # This writer's own rollup rows (see VerdictRollup.shard).
        self.shard = random.randrange(1, 2**31)
        postgres = engine.dialect.name == "postgresql"
        self._store: _Store = (_PostgresStore if postgres else _SqliteStore)(engine, self.shard)

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="verdict-writer")
        self._task.add_done_callback(_report_a_crash)

    async def stop(self) -> None:
        """Commit what is queued, then stop."""
        self._stopping = True
        self._arrived.set()
        try:
            if self._task is not None:
                await self._task
        except Exception:  # logged as it happened (_report_a_crash)
            pass
        finally:
            await self._store.close()

    async def write(self, row: dict, *, timeout: float) -> WriteResult:
        if self._stopping or (self._task is not None and self._task.done()):
            raise WriterUnavailable("the service is stopping")
        if len(self._queue) >= self._queue_size:
            raise WriterUnavailable("the write queue is full")
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._queue.append(_Pending(row, metrics.tool_label(row["tool"], self._metrics_tools), done))
        self._arrived.set()
        metrics.DB_WRITE_QUEUE_DEPTH.inc()
        # The row may still be committed after the timeout; a retry with the same stream_id
        # then gets the stored verdict back (200), so nothing is counted twice.
        timer = loop.call_later(timeout, _expire, done)
        try:
            return await done
        finally:
            timer.cancel()

    # -- the writer's task --------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._batches()
        finally:
            # Only a bug ends the batches with verdicts still queued: they get their 503 now,
            # not when their timeouts come.
            left = list(self._queue)
            self._queue.clear()
            metrics.DB_WRITE_QUEUE_DEPTH.dec(len(left))
            _settle(left, [WriterUnavailable("the writer stopped")] * len(left))

    async def _batches(self) -> None:
        await self._maintain_when_due()
        shared = False  # the last commit carried more than one verdict: they arrive together
        while self._queue or not self._stopping:
            if not self._queue:
                self._arrived.clear()
                try:
                    # Wake up now and then even when idle, so upkeep runs without traffic.
                    await asyncio.wait_for(self._arrived.wait(), min(self._retention_interval, 60.0))
                except asyncio.TimeoutError:
                    await self._maintain_when_due()
                continue
            # Under load, a commit that waits a moment for more verdicts carries more of them:
            # fewer transactions, less work per verdict for the writer and for the database.
            # It waits only while verdicts arrive together, so that a quiet service commits
            # each verdict at once.
            if shared and self._batch_wait > 0 and not self._stopping:
                await asyncio.sleep(self._batch_wait)
            batch = [self._queue.popleft() for _ in range(min(len(self._queue), self._batch_size))]
            metrics.DB_WRITE_QUEUE_DEPTH.dec(len(batch))
            shared = len(batch) > 1
            try:
                await self._commit(batch)
            except BaseException:  # a bug (see _run): the batch in hand gets its 503 too
                _settle(batch, [WriterUnavailable("the writer stopped")] * len(batch))
                raise
            await self._maintain_when_due()

    async def _commit(self, batch: list[_Pending]) -> None:
        started = time.perf_counter()
        try:
            results = await self._write_batch([p.row for p in batch])
        except Exception as exc:
            # Whatever went wrong, the transaction rolled back: answer 503 and keep the writer
            # alive for the next batch.  Database trouble is expected; anything else is a bug.
            metrics.DB_WRITE_ERRORS.inc()
            if _is_database_trouble(exc):
                log.warning("group commit of %d verdicts failed: %s", len(batch), type(exc).__name__)
            else:
                log.exception("group commit of %d verdicts failed", len(batch))
            failure = WriterUnavailable("the database is unavailable")
            _settle(batch, [failure] * len(batch))
            return
        metrics.DB_WRITE_SECONDS.observe(time.perf_counter() - started)
        metrics.DB_WRITE_BATCH.observe(len(batch))
        for pending, result in zip(batch, results, strict=True):
            if isinstance(result, WriteResult) and result.outcome == CREATED:
                metrics.count_stored(pending.tool_label, result.row, rollup_counts(result.row))
        _settle(batch, results)

    async def _write_batch(self, rows: list[dict]) -> list[WriteResult | WriterUnavailable]:
        """Insert the rows and their rollups in one transaction; a duplicate key inserts nothing.
        Once that has committed, every new row is answered as created (and counted), even if
        what follows fails: the rows that needed it are then answered 503."""
        first_of_key: dict[tuple[str, str], dict] = {}
        for row in rows:
            first_of_key.setdefault((row["gateway"], row["stream_id"]), row)
        new_ids = await self._store.insert(list(first_of_key.values()))  # raises: none stored
        stored: dict[tuple[str, str], dict] = {}
        failed: WriterUnavailable | None = None
        try:
            # Stored before: committed by now, read back as any reader would.
            stored = await self._read_back([key for key in first_of_key if key not in new_ids])
            orphans = [key for key in first_of_key if key not in new_ids and key not in stored]
            if orphans:
                # PostgreSQL: a key whose verdict is gone (retention dropped its day while a
                # post of it was on its way).  The key goes, and the verdict is stored anew.
                await self._store.forget_keys(orphans)
                again = await self._store.insert([first_of_key[key] for key in orphans])
                new_ids.update(again)
                stored.update(await self._read_back([key for key in orphans if key not in again]))
        except Exception as exc:
            if not _is_database_trouble(exc):
                raise  # a bug: the whole batch is answered 503
            metrics.DB_WRITE_ERRORS.inc()
            log.warning(
                "after a commit of %d verdicts, the rest of the batch failed: %s", len(new_ids), type(exc).__name__
            )
            failed = WriterUnavailable("the database is unavailable")
        for key, (row_id, previous_category, previous_retryable) in new_ids.items():
            stored[key] = row = first_of_key[key]  # the request's own row, stored now
            row["id"] = row_id
            row["previous_category"] = previous_category
            row["previous_retryable"] = previous_retryable

        results: list[WriteResult | WriterUnavailable] = []
        for row in rows:
            key = (row["gateway"], row["stream_id"])
            kept = stored.get(key)
            if kept is None:  # its key and its verdict came and went again meanwhile
                results.append(failed or WriterUnavailable("the verdict was removed while it was being stored"))
            elif row is first_of_key[key] and key in new_ids:
                results.append(WriteResult(CREATED, kept))
            elif kept["body_sha256"] == row["body_sha256"]:
                results.append(WriteResult(DUPLICATE, kept))
            else:
                results.append(WriteResult(CONFLICT, kept))
        return results

    async def _read_back(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], dict]:
        if not keys:
            return {}
        return await asyncio.to_thread(self._read, keys)

    def _read(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], dict]:
        table = VERDICTS
        with self._engine.connect() as connection:
            found = connection.execute(
                select(table).where(tuple_(table.c.gateway, table.c.stream_id).in_(keys))
            ).mappings()
            return {(row["gateway"], row["stream_id"]): dict(row) for row in found}

    async def _maintain_when_due(self) -> None:
        """Between batches, every retention interval: PostgreSQL's partitions made ahead of
        time, and verdicts past retention removed."""
        if time.monotonic() >= self._next_upkeep:
            await asyncio.to_thread(self._maintain)

    def _maintain(self) -> None:
        self._next_upkeep = time.monotonic() + self._retention_interval
        try:
            if partitions.is_partitioned(self._engine):
                for name in partitions.make_ahead(self._engine, utcnow().date()):
                    log.info("made partition %s", name)
            if self._retention is not None:
                deleted = prune(self._engine, utcnow() - self._retention, lock=self._store.lock)
                if deleted:
                    log.info("pruned %d verdict rows older than %s", deleted, self._retention)
        except SQLAlchemyError as exc:
            log.warning("database upkeep failed (tried again in a minute): %s", type(exc).__name__)
            self._next_upkeep = time.monotonic() + 60
        except Exception:  # a bug: logged, and the writer goes on storing verdicts
            log.exception("database upkeep failed (tried again in a minute)")
            self._next_upkeep = time.monotonic() + 60


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
            _SqliteWriteLock(sqlite_path(engine.url.render_as_string()))
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


class _SqliteWriteLock:
    """One writer at a time across the processes of one SQLite file, with an flock beside it.

    SQLite lets one transaction write at a time and makes the others poll for its lock, sleeping
    longer and longer; a blocking flock hands the turn over the moment the writer before commits.
    """

    def __init__(self, database: Path | None) -> None:
        self._path = None if database is None else Path(f"{database}.writer-lock")
        self._fd: int | None = None
        self._local = threading.Lock()  # the prune and the batches of one process

    def __enter__(self):
        self._local.acquire()
        try:
            self._lock_file(fcntl.LOCK_EX)
        except BaseException:
            self._local.release()
            raise
        return self

    def enter_now(self) -> bool:
        """Take the lock if nobody holds it (then leave() it), without waiting."""
        if not self._local.acquire(blocking=False):
            return False
        try:
            self._lock_file(fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._local.release()
            return False
        except BaseException:
            self._local.release()
            raise
        return True

    def _lock_file(self, operation: int) -> None:
        if self._path is None:  # an in-memory database: one process only
            return
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, operation)

    def __exit__(self, *exc) -> None:
        self.leave()

    def leave(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._local.release()


def _is_database_trouble(exc: Exception) -> bool:
    """What the database may raise at any time (answered 503 and logged without a traceback),
    from SQLAlchemy or from the driver, which the writer also uses without SQLAlchemy; any
    other exception is a bug."""
    return isinstance(exc, (SQLAlchemyError, WriterUnavailable)) or type(exc).__module__.startswith(
        ("psycopg", "sqlite3")
    )


def _report_a_crash(task: asyncio.Task) -> None:
    """The writer's task ended on an exception (a bug: it catches what the database raises)."""
    if not task.cancelled() and task.exception() is not None:
        log.error(
            "the verdict writer stopped; every post gets 503 until the service restarts", exc_info=task.exception()
        )


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLite's lock is held by another connection."""
    name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+
    return name in ("SQLITE_BUSY", "SQLITE_LOCKED") if name else "locked" in str(exc)


def _expire(done: asyncio.Future) -> None:
    if not done.done():
        done.set_exception(WriterUnavailable("the database did not commit in time"))


def _settle(batch: list[_Pending], outcomes: list) -> None:
    """Hand every request of the batch its result (or its 503)."""
    for pending, outcome in zip(batch, outcomes, strict=True):
        if pending.done.done():
            continue  # the request stopped waiting (timeout or disconnect); the commit stands
        if isinstance(outcome, BaseException):
            pending.done.set_exception(outcome)
        else:
            pending.done.set_result(outcome)

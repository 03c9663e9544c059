"""The writer: one thread per process that commits verdicts in shared transactions (group commit).

Requests put their row on a bounded queue and wait.  The writer takes whatever has queued up
(up to a batch), writes all rows and their per-minute rollups in one transaction, commits, and
only then answers each request.  A full queue or a failed transaction answers 503: a 2xx is only
ever sent for a committed row.  Old rows are pruned between batches (rollups are kept).

The thread shares the interpreter with the event loop, so a batch costs it as little Python as
can be: no SQLAlchemy on the way (PostgreSQL: the rows as one JSON parameter of one statement,
prepared once, that also adds their rollups; SQLite: a prepared statement per row and one for
the rollups), and one wake-up of the event loop that answers every request of the batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import logging
import os
import queue
import random
import threading
import time
from collections import defaultdict
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy import Engine, PoolProxiedConnection, delete, select, tuple_
from sqlalchemy.exc import SQLAlchemyError

from . import metrics, partitions
from .db import as_utc, sqlite_path, utcnow
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
    loop: asyncio.AbstractEventLoop


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
    return (1, row["silent"], row["model_fallback"], row["bytes"], first,
            first and not row["complete"], retry, after_failure and row["complete"],
            after_failure and row["previous_retryable"] is False)


class _Store:
    """Writes a batch of rows and its rollups, on a connection of its own that it keeps from
    batch to batch (a connection from the pool would be pinged at every checkout) and drops
    after a failure, so that the next batch connects afresh."""

    def __init__(self, engine: Engine, shard: int) -> None:
        self._engine = engine
        self._shard = shard
        self._connection: PoolProxiedConnection | None = None
        # held around every write of the database (see SQLite's)
        self.lock: AbstractContextManager = nullcontext()

    def insert(self, rows: list[dict]) -> dict[tuple[str, str], tuple]:
        """Insert the rows that are new (a duplicate key inserts nothing) and their rollups,
        and commit.  Returns, by (gateway, stream_id) of each new row: its id and its previous
        attempt's category and retryable."""
        if self._connection is None:
            self._connection = self._engine.raw_connection()
            self._connected(self._connection.driver_connection)
        connection = self._connection
        try:
            return self._write(connection.driver_connection,
                               [(wave, self._encode(wave)) for wave in _waves(rows)])
        except BaseException:
            self._connection = None
            try:
                connection.invalidate()
            except Exception:  # the connection is gone already
                pass
            raise

    def _encode(self, rows: list[dict]):
        """A wave of rows as the store's statements take it: here, as the one JSON parameter
        of a statement (times in RFC 3339, as PostgreSQL reads them)."""
        return _ENCODE(rows).decode()

    def _connected(self, connection) -> None:
        """A new connection: learn what the schema needs."""

    def forget_keys(self, keys: list[tuple[str, str]]) -> None:
        """Delete stored keys whose verdicts are gone (only PostgreSQL keeps keys apart)."""
        raise RuntimeError(f"stored keys without their verdicts: {len(keys)}")

    def _write(self, connection, waves: list[tuple[list[dict], Any]]) -> dict[tuple, tuple]:
        """Write the waves of rows (each with what _encode made of it) on the driver's
        connection, commit."""
        raise NotImplementedError

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()  # back to the pool
            self._connection = None


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
    it ends (one round trip).  With verdicts partitioned (service/partitions.py), a row is
    inserted only when its key is new in verdict_keys, in the same statement."""

    _COUNTED = ("count(*)", "count(*) FILTER (WHERE silent)",
                "count(*) FILTER (WHERE model_fallback)", "sum(bytes)",
                "count(*) FILTER (WHERE request_id IS NOT NULL AND previous_category IS NULL)",
                "count(*) FILTER (WHERE request_id IS NOT NULL AND previous_category IS NULL "
                "AND NOT complete)",
                "count(*) FILTER (WHERE previous_category IS NOT NULL)",
                "count(*) FILTER (WHERE previous_category <> 'complete' AND complete)",
                "count(*) FILTER (WHERE previous_category <> 'complete' "
                "AND previous_retryable = false)")
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
            lookup = (" LEFT JOIN LATERAL (SELECT p.category, p.retryable FROM verdicts AS p "
                      "WHERE r.request_id IS NOT NULL AND p.gateway = r.gateway "
                      "AND p.request_id = r.request_id ORDER BY p.id DESC LIMIT 1) AS previous "
                      "ON true")
        else:
            category, retryable, lookup = "NULL::text", "NULL::boolean", ""
        incoming = (f"incoming AS (SELECT {', '.join(f'r.{c}' for c in INPUT_COLUMNS)}, "
                    f"{category} AS previous_category, {retryable} AS previous_retryable "
                    f"FROM json_populate_recordset(NULL::verdicts, %s) AS r{lookup})")
        insert = f"INSERT INTO verdicts ({', '.join(INPUT_COLUMNS + CHAIN_COLUMNS)}) "
        if keyed:
            new = (f"keyed AS (INSERT INTO verdict_keys (gateway, stream_id) "
                   f"SELECT gateway, stream_id FROM incoming ORDER BY gateway, stream_id "
                   f"ON CONFLICT DO NOTHING "
                   f"RETURNING gateway, stream_id), "
                   f"inserted AS ({insert}SELECT incoming.* FROM incoming "
                   f"JOIN keyed USING (gateway, stream_id) ")
        else:
            new = (f"inserted AS ({insert}SELECT * FROM incoming "
                   f"ON CONFLICT (gateway, stream_id) DO NOTHING ")
        return (
            f"WITH {incoming}, {new}"
            f"RETURNING id, gateway, stream_id, ended_at, tool, protocol, category, complete, "
            f"silent, model_fallback, bytes, request_id, {', '.join(CHAIN_COLUMNS)}), "
            f"rolled AS (INSERT INTO verdict_rollups ({', '.join(ROLLUP_COLUMNS)}) "
            f"SELECT date_trunc('minute', ended_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', "
            f"gateway, tool, protocol, category, %s, {', '.join(cls._COUNTED)} FROM inserted "
            f"GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5 "
            f"ON CONFLICT ({', '.join(ROLLUP_KEY)}) DO UPDATE SET {_ADD_COUNTS}) "
            f"SELECT gateway, stream_id, id, {', '.join(CHAIN_COLUMNS)} FROM inserted")

    def forget_keys(self, keys: list[tuple[str, str]]) -> None:
        driver = None if self._connection is None else self._connection.driver_connection
        assert driver is not None  # insert() came first, on this connection
        with driver.cursor() as cursor:
            cursor.execute("DELETE FROM verdict_keys WHERE (gateway, stream_id) IN "
                           "(SELECT * FROM unnest(%s::text[], %s::text[]))",
                           ([g for g, _ in keys], [s for _, s in keys]))

    def _connected(self, connection) -> None:
        # The engine's connections prepare nothing (prepare_threshold None, see db.py), and
        # psycopg then ignores prepare=True too: without this, the database parsed, analysed
        # and planned the statement at every execution, two thirds of a one-row statement's
        # time.  On the writer's connection, only what asks for it is prepared.
        connection.prepare_threshold = PREPARE_ONLY_WHEN_ASKED
        # An unpartitioned verdicts table (a schema before migration 0004, as the partitioning
        # benchmark keeps one) holds its unique key itself.
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass('verdict_keys') IS NOT NULL")
            keyed = cursor.fetchone()[0]
            self._statements = {chained: self.statement(keyed=keyed, chained=chained)
                                for chained in (False, True)}
        connection.commit()

    def _write(self, connection, waves: list[tuple[list[dict], str]]) -> dict[tuple, tuple]:
        connection.autocommit = True  # reset when it goes back to the pool (close)
        new: dict[tuple, tuple] = {}
        with connection.cursor() as cursor:
            for rows, wave in waves:
                chained = any(row["request_id"] is not None for row in rows)
                cursor.execute(self._statements[chained], (wave, self._shard), prepare=True)
                new.update(((gateway, stream_id), rest) for gateway, stream_id, *rest in cursor)
        return new

    def close(self) -> None:
        driver = None if self._connection is None else self._connection.driver_connection
        if driver is not None:  # as the pool hands it out
            driver.autocommit = False
            driver.prepare_threshold = None
        super().close()


class _SqliteStore(_Store):
    """SQLite has no INSERT inside WITH: each row in a statement of its own, the rollups
    counted here (rollup_counts) in one more, then one COMMIT.  sqlite3 binds a row's values to
    a prepared statement faster than SQLite reads them back out of a JSON array (30 against
    75 µs a row, most of it one json_extract per column).  A row is inserted after the rows
    before it, so its previous attempt is looked up among them too (and only where it has a
    request_id)."""

    _INSERT = (f"INSERT INTO verdicts ({', '.join(INPUT_COLUMNS + CHAIN_COLUMNS)}) "
               f"VALUES ({', '.join(f':{c}' for c in INPUT_COLUMNS)}, {{}}) "
               f"ON CONFLICT (gateway, stream_id) DO NOTHING "
               f"RETURNING id, {', '.join(CHAIN_COLUMNS)}")
    _PREVIOUS = ("(SELECT p.{} FROM verdicts AS p WHERE p.gateway = :gateway "
                 "AND p.request_id = :request_id ORDER BY p.id DESC LIMIT 1)")
    INSERT_VERDICT = _INSERT.format("NULL, NULL")
    INSERT_ATTEMPT = _INSERT.format(
        f"{_PREVIOUS.format('category')}, {_PREVIOUS.format('retryable')}")
    ADD_ROLLUPS = (
        f"INSERT INTO verdict_rollups ({', '.join(ROLLUP_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(ROLLUP_COLUMNS))}) "
        f"ON CONFLICT ({', '.join(ROLLUP_KEY)}) DO UPDATE SET {_ADD_COUNTS}")

    def __init__(self, engine: Engine, shard: int) -> None:
        super().__init__(engine, shard)
        self.lock = _SqliteWriteLock(sqlite_path(engine.url.render_as_string()))
        # Times are stored as the text SQLAlchemy stores, so that reads through SQLAlchemy
        # find them.
        processor = VERDICTS.c.received_at.type.dialect_impl(
            engine.dialect).bind_processor(engine.dialect)
        self._time_text = processor or datetime.isoformat

    def _encode(self, rows: list[dict]) -> list[dict]:
        text = self._time_text
        return [{**row, "received_at": text(row["received_at"]),
                 "ended_at": text(row["ended_at"])} for row in rows]

    def _write(self, connection, waves: list[tuple[list[dict], list[dict]]]
               ) -> dict[tuple, tuple]:
        new = {}
        stored = []
        with self.lock:
            cursor = connection.cursor()
            try:
                for rows, values in waves:
                    for row, bound in zip(rows, values, strict=True):
                        statement = (self.INSERT_VERDICT if row["request_id"] is None
                                     else self.INSERT_ATTEMPT)
                        inserted = cursor.execute(statement, bound).fetchone()
                        if inserted is None:  # its key was stored before
                            continue
                        row_id, category, retryable = inserted
                        retryable = None if retryable is None else bool(retryable)
                        new[(row["gateway"], row["stream_id"])] = (row_id, category, retryable)
                        stored.append({**row, "previous_category": category,
                                       "previous_retryable": retryable})
                cursor.executemany(self.ADD_ROLLUPS, self._rollups(stored))
            finally:
                cursor.close()
            connection.commit()
        return new

    def _rollups(self, rows: list[dict]) -> list[tuple]:
        """The rows' additions to the per-minute rollups, sorted so that writers lock rollup
        rows in one order."""
        buckets: dict[tuple, list[int]] = {}
        for row in rows:
            key = (minute_of(row["ended_at"]), row["gateway"], row["tool"], row["protocol"],
                   row["category"])
            counts = buckets.setdefault(key, [0] * len(ROLLUP_COUNTS))
            for i, count in enumerate(rollup_counts(row)):
                counts[i] += count
        return [(self._time_text(key[0]), *key[1:], self._shard, *counts)
                for key, counts in sorted(buckets.items())]


class VerdictWriter:
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
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._queue_size = queue_size
        self._waiting = 0  # rows queued and not yet taken by the writer (the queue's bound)
        self._waiting_lock = threading.Lock()
        self._batch_size = batch_size
        self._batch_wait = batch_wait_seconds
        self._metrics_tools = metrics_tools
        self._retention = timedelta(days=retention_days) if retention_days else None
        self._retention_interval = retention_interval_seconds
        self._next_upkeep = 0.0  # at once: the partitions before the first batch
        # This writer's own rollup rows (see VerdictRollup.shard).
        self.shard = random.randrange(1, 2**31)
        postgres = engine.dialect.name == "postgresql"
        self._store = (_PostgresStore if postgres else _SqliteStore)(engine, self.shard)
        self._thread = threading.Thread(target=self._run, name="verdict-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Commit what is queued, then stop."""
        self._queue.put(None)
        self._thread.join()
        self._store.close()

    async def write(self, row: dict, *, timeout: float) -> WriteResult:
        loop = asyncio.get_running_loop()
        with self._waiting_lock:
            if self._waiting >= self._queue_size:
                raise WriterUnavailable("the write queue is full")
            self._waiting += 1
        done = loop.create_future()
        self._queue.put(_Pending(row, metrics.tool_label(row["tool"], self._metrics_tools), done,
                                 loop))
        metrics.DB_WRITE_QUEUE_DEPTH.inc()
        # The row may still be committed after the timeout; a retry with the same stream_id
        # then gets the stored verdict back (200), so nothing is counted twice.
        timer = loop.call_later(timeout, _expire, done)
        try:
            return await done
        finally:
            timer.cancel()

    # -- the writer thread ------------------------------------------------------------------

    def _run(self) -> None:
        self._maintain_when_due()
        stopping = False
        shared = False  # the last commit carried more than one verdict: they arrive together
        while not stopping:
            try:
                # Wake up now and then even when idle, so upkeep runs without traffic.
                first = self._queue.get(timeout=min(self._retention_interval, 60.0))
            except queue.Empty:
                self._maintain_when_due()
                continue
            batch = []
            if first is None:
                stopping = True
            else:
                batch.append(first)
            # Under load, a commit that waits a moment for more verdicts carries more of them:
            # fewer transactions, less work per verdict for the writer and for the database.
            # It waits only while verdicts arrive together, so that a quiet service commits
            # each verdict at once.  It sleeps through the wait, then takes what came: taking
            # each verdict as it arrived woke this thread, and handed it the interpreter, once
            # a verdict (a sixth of a post's CPU went into those hand-overs).
            if shared and not stopping and self._batch_wait > 0:
                time.sleep(self._batch_wait)
            while len(batch) < self._batch_size:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            shared = len(batch) > 1
            if batch:
                with self._waiting_lock:
                    self._waiting -= len(batch)
                metrics.DB_WRITE_QUEUE_DEPTH.dec(len(batch))
                self._commit(batch)
            self._maintain_when_due()

    def _commit(self, batch: list[_Pending]) -> None:
        started = time.perf_counter()
        try:
            results = self._write_batch([p.row for p in batch])
        except Exception as exc:
            # Whatever went wrong, the transaction rolled back: answer 503 and keep the thread
            # alive for the next batch.  Database trouble is expected; anything else is a bug.
            metrics.DB_WRITE_ERRORS.inc()
            if isinstance(exc, (SQLAlchemyError, WriterUnavailable)) or _is_driver_error(exc):
                log.warning("group commit of %d verdicts failed: %s", len(batch),
                            type(exc).__name__)
            else:
                log.exception("group commit of %d verdicts failed", len(batch))
            failure = WriterUnavailable("the database is unavailable")
            _answer(batch, [failure] * len(batch))
            return
        metrics.DB_WRITE_SECONDS.observe(time.perf_counter() - started)
        metrics.DB_WRITE_BATCH.observe(len(batch))
        for pending, result in zip(batch, results, strict=True):
            if result.outcome == CREATED:
                metrics.count_stored(pending.tool_label, result.row, rollup_counts(result.row))
        _answer(batch, results)

    def _write_batch(self, rows: list[dict]) -> list[WriteResult]:
        """Insert the rows and their rollups in one transaction; a duplicate key inserts nothing."""
        first_of_key: dict[tuple[str, str], dict] = {}
        for row in rows:
            first_of_key.setdefault((row["gateway"], row["stream_id"]), row)
        new_ids = self._store.insert(list(first_of_key.values()))
        # Stored before: committed by now, read back as any reader would.
        stored = self._read_back([key for key in first_of_key if key not in new_ids])
        orphans = [key for key in first_of_key if key not in new_ids and key not in stored]
        if orphans:
            # PostgreSQL: a key whose verdict is gone (retention dropped its day while a post
            # of it was on its way).  The key goes, and the verdict is stored anew.
            self._store.forget_keys(orphans)
            again = self._store.insert([first_of_key[key] for key in orphans])
            new_ids.update(again)
            stored.update(self._read_back([key for key in orphans if key not in again]))
        for key, (row_id, previous_category, previous_retryable) in new_ids.items():
            stored[key] = row = first_of_key[key]  # the request's own row, stored now
            row["id"] = row_id
            row["previous_category"] = previous_category
            row["previous_retryable"] = previous_retryable

        results = []
        for row in rows:
            key = (row["gateway"], row["stream_id"])
            kept = stored.get(key)
            if kept is None:  # its key and its verdict came and went again meanwhile
                raise WriterUnavailable("the verdict was removed while it was being stored")
            if row is first_of_key[key] and key in new_ids:
                results.append(WriteResult(CREATED, kept))
            elif kept["body_sha256"] == row["body_sha256"]:
                results.append(WriteResult(DUPLICATE, kept))
            else:
                results.append(WriteResult(CONFLICT, kept))
        return results

    def _read_back(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], dict]:
        if not keys:
            return {}
        table = VERDICTS
        with self._engine.connect() as connection:
            found = connection.execute(
                select(table).where(tuple_(table.c.gateway, table.c.stream_id).in_(keys))
            ).mappings()
            return {(row["gateway"], row["stream_id"]): dict(row) for row in found}

    def _maintain_when_due(self) -> None:
        """Between batches, every retention interval: PostgreSQL's partitions made ahead of
        time, and verdicts past retention removed."""
        if time.monotonic() < self._next_upkeep:
            return
        self._next_upkeep = time.monotonic() + self._retention_interval
        try:
            if partitions.is_partitioned(self._engine):
                for name in partitions.make_ahead(self._engine, utcnow().date()):
                    log.info("made partition %s", name)
            if self._retention is not None:
                with self._store.lock:
                    deleted = prune(self._engine, utcnow() - self._retention)
                if deleted:
                    log.info("pruned %d verdict rows older than %s", deleted, self._retention)
        except SQLAlchemyError as exc:
            log.warning("database upkeep failed (tried again in a minute): %s",
                        type(exc).__name__)
            self._next_upkeep = time.monotonic() + 60
        except Exception:  # a bug: logged, and the writer goes on storing verdicts
            log.exception("database upkeep failed (tried again in a minute)")
            self._next_upkeep = time.monotonic() + 60


def prune(engine: Engine, older_than: datetime) -> int:
    """Remove the verdicts of streams that ended before ``older_than``; returns how many.

    PostgreSQL drops whole day partitions (service/partitions.py).  Otherwise the rows are
    deleted, in small transactions."""
    if partitions.is_partitioned(engine):
        return partitions.prune(engine, older_than)
    total = 0
    while True:
        with engine.begin() as connection:
            doomed = (select(VERDICTS.c.id).where(VERDICTS.c.ended_at < older_than)
                      .limit(PRUNE_BATCH_ROWS).scalar_subquery())
            deleted = connection.execute(
                delete(VERDICTS).where(VERDICTS.c.id.in_(doomed))).rowcount
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
        if self._path is None:  # an in-memory database: one process only
            return self
        try:
            if self._fd is None:
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._local.release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._local.release()


def _is_driver_error(exc: Exception) -> bool:
    """A database error raised by the driver itself (the writer uses it without SQLAlchemy)."""
    module = type(exc).__module__
    return module.startswith(("psycopg", "sqlite3"))


def _expire(done: asyncio.Future) -> None:
    if not done.done():
        done.set_exception(WriterUnavailable("the database did not commit in time"))


def _answer(batch: list[_Pending], outcomes: list) -> None:
    """Hand every request its result with one wake-up of each event loop involved."""
    by_loop: dict[asyncio.AbstractEventLoop, list] = defaultdict(list)
    for pending, outcome in zip(batch, outcomes, strict=True):
        by_loop[pending.loop].append((pending.done, outcome))
    for loop, answers in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, answers)
        except RuntimeError:
            pass  # that loop has closed: nobody is waiting any more


def _settle(answers: list) -> None:
    for done, outcome in answers:
        if done.done():
            continue  # the request stopped waiting (timeout or disconnect); the commit stands
        if isinstance(outcome, BaseException):
            done.set_exception(outcome)
        else:
            done.set_result(outcome)

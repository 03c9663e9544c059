"""SQLite: a batch through sqlite3, with the file's writers taking turns (sqlite_lock.py).

SQLite's driver can only block: a batch (a prepared statement per row, one for the rollups)
runs on the event loop itself while no other process is writing the file, and in a thread when
it has to wait its turn (see SqliteStore._writing).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from sqlalchemy import Engine, PoolProxiedConnection

from ..db import SQLITE_BUSY_TIMEOUT_MS, sqlite_path
from ..models import VERDICTS
from ..rollups import ADD_COUNTS, ROLLUP_COLUMNS, ROLLUP_COUNTS, ROLLUP_KEY, minute_of, rollup_counts
from ..sqlite_lock import SqliteWriteLock
from .base import Inserted, Key, Message, Store
from .postgres import CHAIN_COLUMNS, INPUT_COLUMNS

_Arg = TypeVar("_Arg")
_Result = TypeVar("_Result")


class SqliteStore(Store):
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
        f"ON CONFLICT ({', '.join(ROLLUP_KEY)}) DO UPDATE SET {ADD_COUNTS}"
    )

    def __init__(self, engine: Engine, shard: int | None = None) -> None:
        super().__init__(engine, shard)
        self._engine = engine
        self._connection: PoolProxiedConnection | None = None
        self._busy_timeout_ms: int | None = None  # the connection's, as last set here
        self.lock: SqliteWriteLock = SqliteWriteLock(sqlite_path(engine.url.render_as_string()))
        # Times are stored as the text SQLAlchemy stores, so that reads through SQLAlchemy
        # find them.
        processor = VERDICTS.c.received_at.type.dialect_impl(engine.dialect).bind_processor(engine.dialect)
        self._time_text = processor or datetime.isoformat

    async def insert(self, rows: list[dict]) -> dict[Key, Inserted]:
        return await self._writing(self._write, rows)

    async def keep_messages(self, messages: list[Message]) -> dict[tuple[str, str], tuple[str, str]]:
        return await self._writing(self._keep, messages) if messages else {}

    async def forget_messages(self, *, before: int) -> None:
        await self._writing(self._forget, before)

    async def _writing(self, work: Callable[[sqlite3.Connection, _Arg], _Result], arg: _Arg) -> _Result:
        """``work(connection, arg)``, in the file's turn.  sqlite3 lets go of the interpreter
        lock at every row it steps through, and a thread then waits for the busy event loop to
        hand it back, row after row.  So a batch runs on the event loop itself whenever no
        other process is writing the file (its commit then holds the loop for the fsync, a
        fraction of a millisecond), and in a thread when it has to wait for the file's turn:
        another service's writer holds the lock, or something that writes without it (a
        migration, the sqlite3 shell) holds SQLite's own, which the batch on the loop does not
        wait for."""
        if self.lock.enter_now():
            try:
                return self._on_connection(work, arg, wait=False)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
            finally:
                self.lock.leave()
        return await asyncio.to_thread(self._in_turn, work, arg)

    def _in_turn(self, work: Callable[[sqlite3.Connection, _Arg], _Result], arg: _Arg) -> _Result:
        with self.lock:
            return self._on_connection(work, arg, wait=True)

    def _on_connection(self, work: Callable[[sqlite3.Connection, _Arg], _Result], arg: _Arg, *, wait: bool) -> _Result:
        """Under the lock: ``work`` on the connection kept for it; ``wait``: for SQLite's own
        lock, if another connection holds it (else sqlite3.OperationalError at once)."""
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
            return work(driver, arg)
        except BaseException:
            self._connection = None
            try:
                connection.invalidate()
            except Exception:  # the connection is gone already
                pass
            raise

    _KEEP_MESSAGE = (
        "INSERT INTO webhook_messages (gateway, webhook_id, stream_id, body_sha256, webhook_timestamp) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1"
    )
    _KEPT_MESSAGE = "SELECT stream_id, body_sha256 FROM webhook_messages WHERE gateway = ? AND webhook_id = ?"

    def _keep(self, connection: sqlite3.Connection, messages: list[Message]) -> dict[tuple[str, str], tuple[str, str]]:
        before = {}
        cursor = connection.cursor()
        try:
            for message in messages:
                if cursor.execute(self._KEEP_MESSAGE, message).fetchone() is None:
                    found = cursor.execute(self._KEPT_MESSAGE, message[:2]).fetchone()
                    if found is not None:
                        before[message[:2]] = tuple(found)
        finally:
            cursor.close()
        connection.commit()
        return before

    def _forget(self, connection: sqlite3.Connection, before: int) -> None:
        connection.execute("DELETE FROM webhook_messages WHERE webhook_timestamp < ?", (before,))
        connection.commit()

    def _write(self, connection: sqlite3.Connection, rows: list[dict]) -> dict[Key, Inserted]:
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
        return [(self._time_text(key[0]), *key[1:], self.shard, *counts) for key, counts in sorted(buckets.items())]


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLite's lock is held by another connection."""
    name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+
    return name in ("SQLITE_BUSY", "SQLITE_LOCKED") if name else "locked" in str(exc)

"""PostgreSQL: a batch through psycopg's asynchronous connection, so that it never leaves the
event loop (a writer thread beside the loop had cost a worker a quarter of each post's CPU,
most of it in handing the interpreter lock back and forth some thirty times a batch).

A wave of a batch is one statement: its rows as one JSON parameter, a JSON array the database
turns back into rows (json_populate_recordset), prepared once, adding their rollups too.
Encoding that array is one call of msgspec's encoder (under 1 µs a row), where binding every
value of every row would be Python work (the standard library's encoder, calling back into
Python for every time, took about 10 µs a row).  Each row's previous attempt (the verdict
stored last for its gateway and request_id) is looked up as it is inserted.
"""

from __future__ import annotations

from contextlib import nullcontext

import msgspec
import psycopg
from sqlalchemy import Engine

from ..db import postgres_connect_args
from ..rollups import ADD_COUNTS, ROLLUP_COLUMNS, ROLLUP_COUNTS, ROLLUP_KEY
from ..verdict_fields import FIELDS, WRITER
from .base import Inserted, Key, Message, Store

CHAIN_COLUMNS = ("previous_category", "previous_retryable")
INPUT_COLUMNS = tuple(field.name for field in FIELDS if field.source != WRITER)
assert CHAIN_COLUMNS == tuple(field.name for field in FIELDS if field.source == WRITER)
# psycopg prepares a statement once it has run this many times, or when asked (prepare=True)
PREPARE_ONLY_WHEN_ASKED = 2**62
_ENCODE = msgspec.json.Encoder().encode


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


class PostgresStore(Store):
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
            f"ON CONFLICT ({', '.join(ROLLUP_KEY)}) DO UPDATE SET {ADD_COUNTS}) "
            f"SELECT gateway, stream_id, id, {', '.join(CHAIN_COLUMNS)} FROM inserted"
        )

    def __init__(self, engine: Engine, shard: int | None = None) -> None:
        super().__init__(engine, shard)
        self._connect_args = postgres_connect_args(engine)
        self._connection: psycopg.AsyncConnection | None = None
        self._statements: dict[bool, str] = {}

    @property
    def connection(self) -> psycopg.AsyncConnection | None:
        """The connection batches go through (None before the first, or after a failure)."""
        return self._connection

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

    async def insert(self, rows: list[dict]) -> dict[Key, Inserted]:
        connection = await self._connected()
        new: dict[tuple, tuple] = {}
        waves = _waves(rows)
        try:
            # One wave commits as its statement ends; several (attempts of one request in one
            # batch) commit together, so that the batch is stored whole or not at all.
            async with connection.transaction() if len(waves) > 1 else nullcontext(), connection.cursor() as cursor:
                for wave in waves:
                    chained = any(row["request_id"] is not None for row in wave)
                    await cursor.execute(self._statements[chained], (_ENCODE(wave).decode(), self.shard), prepare=True)
                    new.update(
                        ((gateway, stream_id), tuple(rest)) for gateway, stream_id, *rest in await cursor.fetchall()
                    )
        except BaseException:
            await self._drop()
            raise
        return new

    # The ids of signed posts, in one order (two writers keeping the same ids never wait for
    # each other in a circle); then, in a statement of its own that sees what other writers
    # committed meanwhile, the posts of the ids that were kept before.
    _KEEP_MESSAGES = (
        "INSERT INTO webhook_messages (gateway, webhook_id, stream_id, body_sha256, webhook_timestamp) "
        "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[]) "
        "ON CONFLICT DO NOTHING RETURNING gateway, webhook_id"
    )
    _KEPT_MESSAGES = (
        "SELECT gateway, webhook_id, stream_id, body_sha256 FROM webhook_messages "
        "WHERE (gateway, webhook_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
    )

    async def keep_messages(self, messages: list[Message]) -> dict[tuple[str, str], tuple[str, str]]:
        if not messages:
            return {}
        connection = await self._connected()
        ordered = sorted(messages)
        try:
            cursor = await connection.execute(
                self._KEEP_MESSAGES, [list(column) for column in zip(*ordered, strict=True)]
            )
            new = {tuple(key) for key in await cursor.fetchall()}
            before = [message[:2] for message in ordered if message[:2] not in new]
            if not before:
                return {}
            cursor = await connection.execute(
                self._KEPT_MESSAGES, [list(column) for column in zip(*before, strict=True)]
            )
            return {(gateway, msg_id): (stream_id, sha) for gateway, msg_id, stream_id, sha in await cursor.fetchall()}
        except BaseException:
            await self._drop()
            raise

    async def forget_messages(self, *, before: int) -> None:
        connection = await self._connected()
        try:
            await connection.execute("DELETE FROM webhook_messages WHERE webhook_timestamp < %s", (before,))
        except BaseException:
            await self._drop()
            raise

    async def forget_keys(self, keys: list[Key]) -> None:
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

"""The schema, durability settings, retention and the writer's back-pressure."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from alembic import command
from prometheus_client import REGISTRY
from sqlalchemy import func, select, text, update

import fastsse
from fastsse_service.db import alembic_config, make_engine, migrate
from fastsse_service.judging import verdict_row
from fastsse_service.models import StoredVerdict, VerdictRollup
from fastsse_service.retention import prune
from fastsse_service.stores import Store, open_store
from fastsse_service.writer import CREATED, VerdictWriter, WriterUnavailable
from loadtests.localhost import wait_until
from loadtests.wire import short_stream

from .conftest import INGEST, REPO


async def queued(writer: VerdictWriter, count: int) -> None:
    """Until ``count`` verdicts wait in the writer's queue (the tasks that write them have run)."""
    for _ in range(1000):
        if writer.queued >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{writer.queued} verdicts queued, not {count}")


class Bug(BaseException):
    """What the writer's handling of database trouble does not catch (as a bug would not be)."""


class Faulty(Store):
    """A real store, with the faults a test asks for: the next inserts raise ``insert_faults``
    in turn, every read raises ``read_fault`` while it is set."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner.engine, inner.shard)
        self.inner = inner
        self.lock = inner.lock
        self.insert_faults: list[BaseException] = []
        self.read_fault: BaseException | None = None

    async def insert(self, rows):
        if self.insert_faults:
            raise self.insert_faults.pop(0)
        return await self.inner.insert(rows)

    async def forget_keys(self, keys):
        await self.inner.forget_keys(keys)

    async def keep_messages(self, messages):
        return await self.inner.keep_messages(messages)

    async def forget_messages(self, *, before):
        await self.inner.forget_messages(before=before)

    async def read(self, keys):
        if self.read_fault is not None:
            raise self.read_fault
        return await self.inner.read(keys)

    async def upkeep(self, retention):
        await self.inner.upkeep(retention)

    async def close(self):
        await self.inner.close()


def test_migrations_match_the_models_and_go_down_and_up(database_url):
    config = alembic_config(database_url)
    command.check(config)  # raises when the models and migrations/ drifted apart
    command.downgrade(config, "base")
    command.upgrade(config, "head")
    command.check(config)


def test_postgres_commits_synchronously_even_if_the_database_says_otherwise(postgres_url):
    name = postgres_url.rsplit("/", 1)[1]
    engine = make_engine(postgres_url)
    with engine.connect() as connection:
        connection.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
        connection.commit()
    engine.dispose()
    engine = make_engine(postgres_url)
    with engine.connect() as connection:
        assert connection.execute(text("SHOW synchronous_commit")).scalar_one() == "on"
    engine.dispose()


def test_sqlite_is_durable_and_concurrent(sqlite_url):
    engine = make_engine(sqlite_url)
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
        assert connection.execute(text("PRAGMA synchronous")).scalar_one() == 2  # FULL
    engine.dispose()


def counts(url: str) -> tuple[int, int]:
    engine = make_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(select(func.count()).select_from(StoredVerdict)).scalar_one()
        rolled = connection.execute(select(func.sum(VerdictRollup.verdicts))).scalar_one()
    engine.dispose()
    return rows, rolled


def age_row(url: str, stream_id: str, days: float) -> None:
    engine = make_engine(url)
    with engine.begin() as connection:
        then = datetime.now(timezone.utc) - timedelta(days=days)
        connection.execute(
            update(StoredVerdict).where(StoredVerdict.stream_id == stream_id).values(received_at=then, ended_at=then)
        )
    engine.dispose()


def test_prune_deletes_old_rows_and_keeps_rollups(client, database_url):
    for i in range(3):
        assert (
            client.post(
                "/v1/streams", params={"stream_id": f"p{i}"}, content=short_stream(), headers=INGEST
            ).status_code
            == 201
        )
    age_row(database_url, "p0", 40)
    age_row(database_url, "p1", 31)
    engine = make_engine(database_url)
    assert prune(engine, datetime.now(timezone.utc) - timedelta(days=30)) == 2
    assert prune(engine, datetime.now(timezone.utc) - timedelta(days=30)) == 0
    engine.dispose()
    assert counts(database_url) == (1, 3)


def test_the_writer_prunes_by_itself_when_retention_is_set(serve, database_url):
    server = serve(retention_days=1, retention_interval_seconds=0.2)
    with httpx.Client(base_url=server.url) as http:
        for i in range(2):
            assert (
                http.post(
                    "/v1/streams", params={"stream_id": f"keep{i}"}, content=short_stream(), headers=INGEST
                ).status_code
                == 201
            )
    age_row(database_url, "keep0", 2)
    wait_until(lambda: counts(database_url)[0] == 1, what="the old verdict pruned", timeout=10)
    assert counts(database_url) == (1, 2)


def test_a_full_write_queue_is_refused_at_once(sqlite_url):
    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    writer = VerdictWriter(open_store(engine), queue_size=1, batch_size=10, metrics_tools=frozenset())
    row = {"tool": "codex"}

    async def two_writes():
        with pytest.raises(WriterUnavailable, match="in time") as timed_out:
            await writer.write(row, timeout=0.05)  # queued, but nobody commits (not started)
        assert timed_out.value.unknown  # it may still be committed
        with pytest.raises(WriterUnavailable, match="queue is full") as full:
            await writer.write(row, timeout=5)
        assert not full.value.unknown  # never queued: surely not stored

    asyncio.run(two_writes())
    engine.dispose()


class Slow(Faulty):
    """A store whose inserts wait until the test lets them go on."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.go_on = asyncio.Event()

    async def insert(self, rows):
        await self.go_on.wait()
        return await self.inner.insert(rows)


def test_a_commit_that_times_out_says_the_outcome_is_unknown_and_a_retry_is_safe(sqlite_url):
    """The 503 of a commit that did not finish in WRITE_TIMEOUT_SECONDS: the commit goes on and
    may store the verdict, so the answer says the outcome is unknown (and a metric counts it); the
    retry then gets the stored verdict, counted once."""
    from fastsse_service.auth import Gateway
    from fastsse_service.config import Settings
    from fastsse_service.ingest import IngestParams, Refused, Stored, ingest

    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    store = Slow(open_store(engine))
    writer = VerdictWriter(store, queue_size=10, batch_size=10, metrics_tools=frozenset())
    settings = Settings(database_url=sqlite_url, write_timeout_seconds=0.1)

    def unknown_total():
        return REGISTRY.get_sample_value("fastsse_ingest_outcome_unknown_total", {"reason": "commit_timeout"}) or 0

    async def chunks():
        yield short_stream()

    async def post():
        return await ingest(chunks(), IngestParams(stream_id="late"), Gateway("gw1"), settings=settings, writer=writer)

    async def run():
        await writer.start()
        try:
            before = unknown_total()
            first = await post()
            counted = unknown_total() - before
            store.go_on.set()
            while counts(sqlite_url)[0] == 0:  # the commit goes on after the answer
                await asyncio.sleep(0.01)
            return first, counted, await post()
        finally:
            await writer.stop()

    first, counted, retry = asyncio.run(run())
    engine.dispose()
    assert isinstance(first, Refused) and first.refusal.value == "unavailable"
    assert "outcome is unknown" in first.detail and "retry" in first.detail and "not stored" not in first.detail
    assert counted == 1
    assert isinstance(retry, Stored) and not retry.created  # the same bytes: answered 200
    assert counts(sqlite_url) == (1, 1)


def test_the_alembic_command_line_finds_no_drift(tmp_path):
    """What CI's reviewers run by hand: `alembic check` from the repository root."""
    url = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    migrate(url)
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "check"],
        cwd=REPO,
        env={**os.environ, "DATABASE_URL": url},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "No new upgrade operations detected" in result.stdout + result.stderr


def complete_row(stream_id: str) -> dict:
    """A verdicts row for a complete chat stream, as the ingest route builds it."""
    return verdict_row(
        fastsse.scan(short_stream()),
        body_sha256="0" * 64,
        gateway="gw1",
        stream_id=stream_id,
        tool="codex",
        upstream_status=200,
        model_requested=None,
        request_id=None,
        attempt=None,
        received_at=datetime.now(timezone.utc),
    )


def test_verdicts_that_wait_together_share_one_transaction(sqlite_url):
    """Group commit: what queued up while the writer was busy is committed at once."""
    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    writer = VerdictWriter(open_store(engine), queue_size=100, batch_size=50, metrics_tools=frozenset())
    rows = [complete_row(f"g{i}") for i in range(7)]

    def batches():
        return tuple(
            REGISTRY.get_sample_value(f"fastsse_db_write_batch_verdicts_{part}") or 0 for part in ("sum", "count")
        )

    before = batches()

    async def seven_requests():
        waiting = [asyncio.ensure_future(writer.write(row, timeout=10)) for row in rows]
        await queued(writer, 7)  # all seven, before the writer runs
        await writer.start()
        try:
            return await asyncio.gather(*waiting)
        finally:
            await writer.stop()

    results = asyncio.run(seven_requests())
    engine.dispose()
    assert [r.outcome for r in results] == [CREATED] * 7
    after = batches()
    assert (after[0] - before[0], after[1] - before[1]) == (7, 1)  # 7 verdicts, 1 transaction
    assert counts(sqlite_url) == (7, 7)


def test_a_batch_wait_gathers_the_verdicts_that_arrive_meanwhile(sqlite_url):
    """WRITE_BATCH_WAIT_SECONDS: after a shared commit, the next one waits for more."""
    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    writer = VerdictWriter(
        open_store(engine), queue_size=100, batch_size=50, metrics_tools=frozenset(), batch_wait_seconds=2.0
    )

    def batches():
        return REGISTRY.get_sample_value("fastsse_db_write_batch_verdicts_count") or 0

    async def spaced():
        await writer.start()
        try:
            await asyncio.gather(
                *(writer.write(complete_row(f"w{i}"), timeout=10) for i in range(2))
            )  # a shared commit
            before = batches()
            waiting = []
            for i in range(3):  # one at a time, well within the wait (2 s)
                waiting.append(asyncio.ensure_future(writer.write(complete_row(f"later{i}"), timeout=10)))
                await asyncio.sleep(0.05)  # the scenario: verdicts arriving apart
            results = await asyncio.gather(*waiting)
            return results, batches() - before
        finally:
            await writer.stop()

    results, commits = asyncio.run(spaced())
    engine.dispose()
    assert [r.outcome for r in results] == [CREATED] * 3
    assert commits == 1
    assert counts(sqlite_url) == (5, 5)


def test_the_postgres_writer_prepares_its_statement_once(postgres_url):
    """The engine's connections prepare nothing (db.py), so the writer's connection has to
    allow it: otherwise the database parses and plans the statement at every batch."""
    migrate(postgres_url)
    engine = make_engine(postgres_url)
    writer = VerdictWriter(open_store(engine), queue_size=100, batch_size=50, metrics_tools=frozenset())

    async def three_batches():
        await writer.start()
        try:
            for batch in range(3):
                results = await asyncio.gather(
                    *(writer.write(complete_row(f"p{batch}-{i}"), timeout=10) for i in range(3))
                )
                assert [r.outcome for r in results] == [CREATED] * 3
            cursor = await writer.store.connection.execute("SELECT statement FROM pg_prepared_statements")
            return await cursor.fetchall()
        finally:
            await writer.stop()

    prepared = asyncio.run(three_batches())
    assert len(prepared) == 1 and "json_populate_recordset" in prepared[0][0]
    with engine.connect() as pooled:  # the pool's connections prepare nothing
        assert pooled.connection.driver_connection.prepare_threshold is None
    engine.dispose()


def _while_held_elsewhere(writer, hold, release):
    """Hold a lock of the file (``hold``), post, and ``release`` it once ten ticks of 10 ms
    have passed on the event loop: how long the ticks took, and what the post got.  A post
    that waited for the lock on the loop would hold the ticks until a timer released it, after
    30 s (SQLite's busy timeout is as long)."""
    import threading

    released = threading.Lock()

    def release_once() -> None:
        if released.acquire(blocking=False):
            release()

    async def post():
        await writer.start()
        try:
            hold()
            unstuck = threading.Timer(30, release_once)
            unstuck.start()
            try:
                waiting = asyncio.ensure_future(writer.write(complete_row("in-turn"), timeout=60))
                started = time.monotonic()
                for _ in range(10):
                    await asyncio.sleep(0.01)
                ticks = time.monotonic() - started
                assert not waiting.done()
            finally:
                unstuck.cancel()
                release_once()
            return ticks, await waiting
        finally:
            await writer.stop()

    return asyncio.run(post())


def test_an_sqlite_batch_waits_for_another_writers_turn_off_the_event_loop(sqlite_url, tmp_path):
    """A batch runs on the event loop only when the file's write lock is free; while another
    process holds it, the batch waits in a thread and the loop goes on serving."""
    import fcntl

    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    writer = VerdictWriter(open_store(engine), queue_size=10, batch_size=10, metrics_tools=frozenset())
    lock_file = open(f"{tmp_path / 'verdicts.sqlite3'}.writer-lock", "a")  # as another process
    ticks, result = _while_held_elsewhere(
        writer,
        lambda: fcntl.flock(lock_file, fcntl.LOCK_EX),
        lambda: fcntl.flock(lock_file, fcntl.LOCK_UN),
    )
    lock_file.close()
    engine.dispose()
    assert ticks < 10  # the loop went on while the lock was held (30 s, had it waited on the loop)
    assert result.outcome == CREATED
    assert counts(sqlite_url) == (1, 1)


def test_an_sqlite_batch_waits_for_a_writer_without_the_lock_off_the_event_loop(sqlite_url):
    """Something that writes the file without the service's lock (a migration, the sqlite3
    shell): the batch on the loop does not wait for SQLite's lock, it goes to a thread."""
    import sqlite3

    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    writer = VerdictWriter(open_store(engine), queue_size=10, batch_size=10, metrics_tools=frozenset())
    other = sqlite3.connect(make_engine(sqlite_url).url.database, check_same_thread=False, isolation_level=None)
    ticks, result = _while_held_elsewhere(
        writer, lambda: other.execute("BEGIN IMMEDIATE"), lambda: other.execute("COMMIT")
    )
    other.close()
    engine.dispose()
    assert ticks < 10  # the loop went on while the lock was held (30 s, had it waited on the loop)
    assert result.outcome == CREATED
    assert counts(sqlite_url) == (1, 1)


def test_a_failed_transaction_answers_503_and_the_writer_carries_on(sqlite_url):
    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    store = Faulty(open_store(engine))
    store.insert_faults.append(RuntimeError("a bug in the first batch"))
    writer = VerdictWriter(store, queue_size=10, batch_size=10, metrics_tools=frozenset())
    row = complete_row("after-bug")

    async def twice():
        await writer.start()
        try:
            with pytest.raises(WriterUnavailable):
                await writer.write(row, timeout=10)
            return await writer.write(row, timeout=10)
        finally:
            await writer.stop()

    assert asyncio.run(twice()).outcome == CREATED
    engine.dispose()
    assert counts(sqlite_url) == (1, 1)


def test_a_failure_after_the_commit_still_answers_and_counts_the_rows_it_stored(sqlite_url):
    """The batch committed, then reading back a duplicate's stored verdict failed: the new row
    is still answered 201 and counted (its retry would be a 200, never counted), the duplicate
    gets its 503."""
    import sqlite3

    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    store = Faulty(open_store(engine))
    writer = VerdictWriter(store, queue_size=10, batch_size=10, metrics_tools=frozenset())

    def stored_total():
        return sum(
            sample.value
            for metric in REGISTRY.collect()
            if metric.name == "fastsse_streams"
            for sample in metric.samples
            if sample.name == "fastsse_streams_total"
        )

    async def posts():
        await writer.start()
        try:
            await writer.write(complete_row("kept"), timeout=10)

            store.read_fault = sqlite3.OperationalError("disk I/O error")
            before = stored_total()
            waiting = [asyncio.ensure_future(writer.write(complete_row(name), timeout=10)) for name in ("new", "kept")]
            answers = await asyncio.gather(*waiting, return_exceptions=True)
            return answers, stored_total() - before
        finally:
            await writer.stop()

    (new, again), counted = asyncio.run(posts())
    engine.dispose()
    assert new.outcome == CREATED and isinstance(again, WriterUnavailable) and again.unknown
    assert counted == 1
    assert counts(sqlite_url) == (2, 2)


def test_a_writer_that_dies_answers_503_at_once_and_still_stops(sqlite_url, caplog):
    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    store = Faulty(open_store(engine))
    store.insert_faults.append(Bug("a bug outside the batch's own error handling"))
    writer = VerdictWriter(store, queue_size=10, batch_size=1, metrics_tools=frozenset())

    async def posts():
        waiting = [asyncio.ensure_future(writer.write(complete_row(f"d{i}"), timeout=30)) for i in range(3)]
        await queued(writer, 3)
        await writer.start()
        started = time.monotonic()
        answers = await asyncio.gather(*waiting, return_exceptions=True)
        waited = time.monotonic() - started
        with pytest.raises(WriterUnavailable, match="stopping"):
            await writer.write(complete_row("later"), timeout=30)
        await writer.stop()  # does not raise the bug again
        return answers, waited

    answers, waited = asyncio.run(posts())
    engine.dispose()
    assert [type(a) for a in answers] == [WriterUnavailable] * 3
    assert waited < 5  # not their 30 s timeouts
    assert "the verdict writer stopped" in caplog.text


def test_the_alembic_command_line_works_in_the_checkout(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}"}
    for args in (["upgrade", "head"], ["check"]):
        result = subprocess.run(
            [sys.executable, "-m", "alembic", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr

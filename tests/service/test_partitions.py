"""PostgreSQL's day partitions of verdicts: made ahead, one key per stream whatever its day,
rows moved out of the default partition, retention by dropping whole days, and the migration
from the plain table and back."""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import httpx
import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import text

import fastsse
from fastsse_service import partitions
from fastsse_service.app import create_app
from fastsse_service.config import Settings
from fastsse_service.db import alembic_config, make_engine, migrate
from fastsse_service.judging import verdict_row
from fastsse_service.retention import prune
from loadtests.wire import short_stream

from .conftest import INGEST, TOKENS, ThreadServer


@pytest.fixture
def pg(postgres_url):
    migrate(postgres_url)
    return postgres_url


@contextmanager
def running(url: str):
    settings = Settings(
        database_url=url, ingest_tokens=TOKENS["INGEST_TOKENS"], read_tokens=TOKENS["READ_TOKENS"], retention_days=0
    )
    with (
        ThreadServer(create_app(settings)) as server,
        httpx.Client(base_url=server.url, headers=INGEST, timeout=30) as http,
    ):
        yield http


def post(
    http: httpx.Client, stream_id: str, ended_at: datetime | None = None, body: bytes | None = None
) -> httpx.Response:
    params = {"stream_id": stream_id}
    if ended_at is not None:
        params["ended_at"] = ended_at.isoformat()
    return http.post("/v1/streams", params=params, content=body or short_stream())


def query(url: str, sql: str, **params):
    engine = make_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(text(sql), params).all()
    engine.dispose()
    return rows


def where_stored(url: str) -> dict[str, str]:
    """Each stored stream_id, with the partition that holds it."""
    return dict(query(url, "SELECT stream_id, tableoid::regclass::text FROM verdicts"))


def keys(url: str) -> list[str]:
    return sorted(key for (key,) in query(url, "SELECT stream_id FROM verdict_keys"))


def test_the_writer_makes_the_partitions_of_yesterday_to_a_week_ahead(pg):
    today = datetime.now(timezone.utc).date()
    with running(pg) as http:
        assert post(http, "today").status_code == 201
    engine = make_engine(pg)
    assert partitions.is_partitioned(engine)
    with engine.connect() as connection:
        made = partitions.day_partitions(connection)
    engine.dispose()
    assert sorted(made) == [today + timedelta(days=n) for n in range(-1, partitions.DAYS_AHEAD + 1)]
    assert where_stored(pg) == {"today": partitions.name_of(today)}
    assert keys(pg) == ["today"]


def test_a_stream_id_is_stored_once_whatever_day_it_ended(pg):
    now = datetime.now(timezone.utc)
    with running(pg) as http:
        first = post(http, "s1", ended_at=now - timedelta(days=3))  # the default partition
        assert first.status_code == 201
        again = post(http, "s1", ended_at=now)  # today's partition, had it been new
        assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
        other = post(http, "s1", ended_at=now, body=short_stream(text="other bytes"))
        assert other.status_code == 409
    assert where_stored(pg) == {"s1": partitions.DEFAULT}
    assert keys(pg) == ["s1"]


def test_making_a_day_partition_moves_that_days_rows_out_of_the_default(pg):
    now = datetime.now(timezone.utc)
    day = (now - timedelta(days=3)).date()
    with running(pg) as http:
        assert post(http, "late", ended_at=now - timedelta(days=3)).status_code == 201
        assert post(http, "later", ended_at=now - timedelta(days=5)).status_code == 201
        engine = make_engine(pg)
        with engine.begin() as connection:
            partitions.make_day(connection, day)
        engine.dispose()
        assert where_stored(pg) == {"late": partitions.name_of(day), "later": partitions.DEFAULT}
        assert post(http, "late", ended_at=now - timedelta(days=3)).status_code == 200
        # New rows of that day go to its partition now.
        assert post(http, "late2", ended_at=now - timedelta(days=3)).status_code == 201
    assert where_stored(pg)["late2"] == partitions.name_of(day)


def test_retention_drops_whole_days_and_the_keys_of_their_rows(pg):
    now = datetime.now(timezone.utc)
    cutoff = now - timedelta(days=30)
    ended = {
        "old-day": now - timedelta(days=40),  # in a day partition, wholly past retention
        "old-default": now - timedelta(days=35),  # in the default partition
        "cutoff-day": partitions.start_of(cutoff.date()),  # past retention, its day is not
        "new": now,
    }
    engine = make_engine(pg)
    for day in {ended["old-day"].date(), cutoff.date()}:
        with engine.begin() as connection:
            partitions.make_day(connection, day)
    with running(pg) as http:
        for stream_id, moment in ended.items():
            assert post(http, stream_id, ended_at=moment).status_code == 201
        assert prune(engine, cutoff) == 2
        assert prune(engine, cutoff) == 0
        assert sorted(where_stored(pg)) == ["cutoff-day", "new"]
        assert keys(pg) == ["cutoff-day", "new"]
        with engine.connect() as connection:
            assert ended["old-day"].date() not in partitions.day_partitions(connection)
        # The rollups stay; a stream_id whose verdict is gone can be stored again.
        assert query(pg, "SELECT sum(verdicts) FROM verdict_rollups")[0][0] == 4
        assert post(http, "old-day").status_code == 201
    engine.dispose()


def insert_plain(url: str, stream_id: str, ended_at: datetime | None = None) -> None:
    """A verdict stored as the writer of revision 0003 stored it, in the plain table: the
    columns that revision has (today's writer needs today's schema)."""
    engine = make_engine(url)
    table = sa.Table("verdicts", sa.MetaData(), autoload_with=engine)
    body = short_stream()
    row = verdict_row(
        fastsse.scan(body),
        body_sha256=hashlib.sha256(body).hexdigest(),  # as the service hashes a post
        gateway="gw1",
        stream_id=stream_id,
        tool="codex",
        upstream_status=200,
        model_requested=None,
        request_id=None,
        attempt=None,
        received_at=datetime.now(timezone.utc),
        ended_at=ended_at,
    )
    try:
        with engine.begin() as connection:
            connection.execute(table.insert().values({k: v for k, v in row.items() if k in table.c}))
    finally:
        engine.dispose()


def test_the_migration_keeps_every_verdict_both_ways(postgres_url):
    config = alembic_config(postgres_url)
    command.upgrade(config, "0003")
    now = datetime.now(timezone.utc)
    for n in range(3):
        insert_plain(postgres_url, f"m{n}")
    with pytest.raises(sa.exc.IntegrityError):  # the plain table's own key
        insert_plain(postgres_url, "m0")
    insert_plain(postgres_url, "old", ended_at=now - timedelta(days=20))
    command.upgrade(config, "head")
    # Every day with rows has its partition: the default one starts empty.
    today = partitions.name_of(now.date())
    assert where_stored(postgres_url) == {
        "m0": today,
        "m1": today,
        "m2": today,
        "old": partitions.name_of((now - timedelta(days=20)).date()),
    }
    assert keys(postgres_url) == ["m0", "m1", "m2", "old"]
    with running(postgres_url) as http:
        assert post(http, "m0").status_code == 200
        assert post(http, "m3").status_code == 201
    assert where_stored(postgres_url)["m3"] == today
    ids = query(postgres_url, "SELECT id FROM verdicts ORDER BY id")
    command.downgrade(config, "0003")
    assert query(postgres_url, "SELECT id FROM verdicts ORDER BY id") == ids
    assert query(postgres_url, "SELECT to_regclass('verdict_keys')") == [(None,)]
    with pytest.raises(sa.exc.IntegrityError):  # the key holds again on the plain table
        insert_plain(postgres_url, "m3")
    insert_plain(postgres_url, "m4")  # the id sequence went on, and goes on
    assert query(postgres_url, "SELECT max(id) FROM verdicts")[0][0] > ids[-1][0]


def test_a_key_left_without_its_verdict_is_healed_by_the_next_post(pg):
    """A post on its way while retention drops its day can leave a key behind: the next post
    of that stream_id stores its verdict rather than failing on the missing row."""
    engine = make_engine(pg)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO verdict_keys (gateway, stream_id) VALUES ('gw1', 'orphan')"))
    engine.dispose()
    with running(pg) as http:
        answer = post(http, "orphan")
        assert answer.status_code == 201, answer.text
        assert post(http, "orphan").status_code == 200
    assert keys(pg) == ["orphan"] and list(where_stored(pg)) == ["orphan"]

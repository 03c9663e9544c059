"""PostgreSQL keeps the verdicts table in day partitions: made ahead of the streams that will
fill them, and dropped whole when retention is past them.

* ``verdicts_p20261201`` holds the verdicts of streams that ended on 2026-12-01 (UTC).  The
  service makes the partitions of yesterday to ``DAYS_AHEAD`` days ahead, when its writer starts
  and then every ``RETENTION_INTERVAL_SECONDS``; replicas take turns (an advisory lock).
* ``verdicts_default`` holds what no day partition does: a late post of a stream that ended
  before yesterday, or every stream if the upkeep could not run for a week.  Nothing is ever
  refused for want of a partition.  When a day partition is made, the rows of its day move out
  of the default partition into it.
* A partitioned table's unique keys must hold its partition key, so ``(gateway, stream_id)``
  cannot be unique in ``verdicts`` itself: ``verdict_keys`` holds every stored key, and the
  writer stores a row only when its key is new (migration 0004).
* Retention drops a day partition once the whole day is older than RETENTION_DAYS, so a
  verdict is kept at least RETENTION_DAYS and less than one day more; the keys of its rows go
  first.  The default partition's old rows are deleted one by one, as SQLite's are.

SQLite keeps one plain table with the unique key in it; nothing here runs there.
"""

from __future__ import annotations

import logging
import re
from datetime import date, datetime, time, timedelta, timezone

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import OperationalError

log = logging.getLogger(__name__)

DAYS_AHEAD = 7
PREFIX = "verdicts_p"
DEFAULT = "verdicts_default"
_DAY_NAME = re.compile(rf"^{PREFIX}(\d{{8}})$")
# Two replicas never make or drop partitions at the same time (any fixed number will do).
_UPKEEP_LOCK = 0x66617374  # "fast"
# Making or dropping a partition takes locks that wait behind running reads; rather than
# block the writer's inserts behind them, give up and try again at the next upkeep.
_LOCK_TIMEOUT = "2s"
DEFAULT_DELETE_BATCH = 5_000
_DROP_ATTEMPTS = 5


def is_partitioned(engine: Engine) -> bool:
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as connection:
        return (
            connection.execute(text("SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('verdicts')")).scalar()
            is True
        )


def is_partition(name: str) -> bool:
    return name == DEFAULT or _DAY_NAME.match(name) is not None


def name_of(day: date) -> str:
    return f"{PREFIX}{day:%Y%m%d}"


def start_of(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=timezone.utc)


def day_partitions(connection: Connection) -> dict[date, str]:
    """The day partitions that exist, by day."""
    names = connection.execute(
        text(
            "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'verdicts'::regclass"
        )
    ).scalars()
    found = {}
    for name in names:
        match = _DAY_NAME.match(name)
        if match:
            found[datetime.strptime(match.group(1), "%Y%m%d").date()] = name
    return found


def make_day(connection: Connection, day: date) -> None:
    """Make the partition of one day, moving that day's rows out of the default partition.

    Attaching checks that the default partition holds no row of the new range, so the rows of
    that day move first.  The whole table is locked meanwhile: a query planned before the new
    partition exists and run after the move would miss the rows moved (nothing is moved unless
    the upkeep could not run for a week, or a late post landed in the default partition, which
    is then small: the lock is brief).  One transaction: the caller's.
    """
    name, low, high = name_of(day), start_of(day), start_of(day + timedelta(days=1))
    bounds = {"low": low, "high": high}
    connection.execute(text("LOCK TABLE verdicts IN ACCESS EXCLUSIVE MODE"))
    connection.execute(text(f"CREATE TABLE {name} (LIKE verdicts INCLUDING DEFAULTS)"))
    moved = connection.execute(
        text(
            f"WITH moved AS (DELETE FROM {DEFAULT} WHERE ended_at >= :low AND ended_at < :high "
            f"RETURNING *) INSERT INTO {name} SELECT * FROM moved"
        ),
        bounds,
    ).rowcount
    # Times go in as literals: partition bounds take no parameters.
    connection.execute(
        text(
            f"ALTER TABLE verdicts ATTACH PARTITION {name} FOR VALUES "
            f"FROM ('{low.isoformat()}') TO ('{high.isoformat()}')"
        )
    )
    if moved:
        log.info("partition %s made, %d rows moved into it from %s", name, moved, DEFAULT)


def drop_day(connection: Connection, name: str, batch_rows: int = DEFAULT_DELETE_BATCH) -> int:
    """Drop a day partition and the keys of its rows; returns how many rows it held.

    The keys go in batches in the partition's id order, each batch found by its primary key:
    one join of the whole partition with verdict_keys would read all of verdict_keys, which
    holds every day's keys.  Then the table is locked (the wait is tried again when it times
    out, keeping the deletions done), the keys of rows stored since then go too, and the
    partition is dropped.  One transaction, the caller's: the keys and the rows go together.
    """
    total, after = _unkey_rows(connection, name, 0, batch_rows)
    for attempt in range(_DROP_ATTEMPTS):
        connection.execute(text("SAVEPOINT before_drop"))
        try:
            connection.execute(text("LOCK TABLE verdicts IN ACCESS EXCLUSIVE MODE"))
        except OperationalError:  # lock_timeout, behind a long query
            connection.execute(text("ROLLBACK TO SAVEPOINT before_drop"))
            if attempt == _DROP_ATTEMPTS - 1:
                raise
            continue
        break
    more, _ = _unkey_rows(connection, name, after, batch_rows)
    connection.execute(text(f"DROP TABLE {name}"))
    return total + more


def _unkey_rows(connection: Connection, name: str, after: int, batch_rows: int) -> tuple[int, int]:
    """Delete the keys of the partition's rows with an id past ``after``; returns how many,
    and the last id seen."""
    total = 0
    while True:
        last, count = connection.execute(
            text(
                f"WITH batch AS (SELECT id, gateway, stream_id FROM {name} WHERE id > :after "
                f"ORDER BY id LIMIT :batch), "
                f"{_unkeyed('batch')} SELECT max(id), count(*) FROM batch"
            ),
            {"after": after, "batch": batch_rows},
        ).one()
        total += count
        after = after if last is None else last
        if count < batch_rows:
            return total, after


def make_ahead(engine: Engine, today: date, *, days_ahead: int = DAYS_AHEAD) -> list[str]:
    """Make the missing partitions from yesterday to ``days_ahead`` days after today."""
    made = []
    wanted = [today + timedelta(days=n) for n in range(-1, days_ahead + 1)]
    for day in wanted:
        with engine.begin() as connection:
            if not _take_turn(connection) or day in day_partitions(connection):
                continue
            make_day(connection, day)
        made.append(name_of(day))
    return made


def prune(engine: Engine, older_than: datetime, batch_rows: int = DEFAULT_DELETE_BATCH) -> int:
    """Drop the day partitions that end before ``older_than`` and delete the default
    partition's rows of streams that ended before it; returns how many rows went."""
    total = 0
    with engine.connect() as connection:
        days = day_partitions(connection)
    for day, name in sorted(days.items()):
        if start_of(day + timedelta(days=1)) > older_than:
            break
        with engine.begin() as connection:
            if not _take_turn(connection):
                return total
            total += drop_day(connection, name, batch_rows)
        log.info("dropped partition %s", name)
    while True:
        with engine.begin() as connection:
            deleted = connection.execute(
                text(
                    f"WITH gone AS (DELETE FROM {DEFAULT} WHERE ctid = ANY(ARRAY("
                    f"SELECT ctid FROM {DEFAULT} WHERE ended_at < :older LIMIT :batch)) "
                    f"RETURNING gateway, stream_id), {_unkeyed('gone')} SELECT count(*) FROM gone"
                ),
                {"older": older_than, "batch": batch_rows},
            ).scalar_one()
        total += deleted
        if deleted < batch_rows:
            return total


def _unkeyed(rows: str) -> str:
    """A WITH clause that deletes the keys of the rows named ``rows`` (an earlier clause)."""
    return (
        f"unkeyed AS (DELETE FROM verdict_keys AS k USING {rows} "
        f"WHERE k.gateway = {rows}.gateway AND k.stream_id = {rows}.stream_id)"
    )


def _take_turn(connection: Connection) -> bool:
    """Within the caller's transaction: this process's turn at making and dropping
    partitions, with a bounded wait for each lock after it."""
    connection.execute(text(f"SET LOCAL lock_timeout = '{_LOCK_TIMEOUT}'"))
    return connection.execute(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _UPKEEP_LOCK}).scalar() is True

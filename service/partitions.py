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

log = logging.getLogger("service.partitions")

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


def is_partitioned(engine: Engine) -> bool:
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as connection:
        return connection.execute(text(
            "SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('verdicts')")
        ).scalar() is True


def is_partition(name: str) -> bool:
    return name == DEFAULT or _DAY_NAME.match(name) is not None


def name_of(day: date) -> str:
    return f"{PREFIX}{day:%Y%m%d}"


def start_of(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=timezone.utc)


def day_partitions(connection: Connection) -> dict[date, str]:
    """The day partitions that exist, by day."""
    names = connection.execute(text(
        "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'verdicts'::regclass")).scalars()
    found = {}
    for name in names:
        match = _DAY_NAME.match(name)
        if match:
            found[datetime.strptime(match.group(1), "%Y%m%d").date()] = name
    return found


def make_day(connection: Connection, day: date) -> None:
    """Make the partition of one day, moving that day's rows out of the default partition.

    Attaching checks that the default partition holds no row of the new range, so the rows of
    that day move first, with the default partition locked against new ones meanwhile (the
    parent first, as an insert locks them).  One transaction: the caller's.
    """
    name, low, high = name_of(day), start_of(day), start_of(day + timedelta(days=1))
    bounds = {"low": low, "high": high}
    connection.execute(text("LOCK TABLE verdicts IN SHARE UPDATE EXCLUSIVE MODE"))
    connection.execute(text(f"LOCK TABLE {DEFAULT} IN ACCESS EXCLUSIVE MODE"))
    connection.execute(text(f"CREATE TABLE {name} (LIKE verdicts INCLUDING DEFAULTS)"))
    moved = connection.execute(text(
        f"WITH moved AS (DELETE FROM {DEFAULT} WHERE ended_at >= :low AND ended_at < :high "
        f"RETURNING *) INSERT INTO {name} SELECT * FROM moved"), bounds).rowcount
    # Times go in as literals: partition bounds take no parameters.
    connection.execute(text(
        f"ALTER TABLE verdicts ATTACH PARTITION {name} FOR VALUES "
        f"FROM ('{low.isoformat()}') TO ('{high.isoformat()}')"))
    if moved:
        log.info("partition %s made, %d rows moved into it from %s", name, moved, DEFAULT)


def drop_day(connection: Connection, name: str) -> int:
    """Drop a day partition and the keys of its rows; returns how many rows it held."""
    held = connection.execute(text(
        f"WITH rows AS (SELECT gateway, stream_id FROM {name}), "
        f"unkeyed AS (DELETE FROM verdict_keys AS k USING rows "
        f"WHERE k.gateway = rows.gateway AND k.stream_id = rows.stream_id) "
        f"SELECT count(*) FROM rows")).scalar_one()
    connection.execute(text(f"DROP TABLE {name}"))
    return held


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


def prune(engine: Engine, older_than: datetime,
          batch_rows: int = DEFAULT_DELETE_BATCH) -> int:
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
            total += drop_day(connection, name)
        log.info("dropped partition %s", name)
    while True:
        with engine.begin() as connection:
            deleted = connection.execute(text(
                f"WITH gone AS (DELETE FROM {DEFAULT} WHERE ctid = ANY(ARRAY("
                f"SELECT ctid FROM {DEFAULT} WHERE ended_at < :older LIMIT :batch)) "
                f"RETURNING gateway, stream_id), "
                f"unkeyed AS (DELETE FROM verdict_keys AS k USING gone "
                f"WHERE k.gateway = gone.gateway AND k.stream_id = gone.stream_id) "
                f"SELECT count(*) FROM gone"),
                {"older": older_than, "batch": batch_rows}).scalar_one()
        total += deleted
        if deleted < batch_rows:
            return total


def _take_turn(connection: Connection) -> bool:
    """Within the caller's transaction: this process's turn at making and dropping
    partitions, with a bounded wait for each lock after it."""
    connection.execute(text(f"SET LOCAL lock_timeout = '{_LOCK_TIMEOUT}'"))
    return connection.execute(text("SELECT pg_try_advisory_xact_lock(:key)"),
                              {"key": _UPKEEP_LOCK}).scalar() is True

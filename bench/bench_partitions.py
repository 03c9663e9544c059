"""PostgreSQL's verdicts in day partitions against one plain table: ingest, and retention.

1. Ingest: the service on PostgreSQL (``--workers`` 1), driven by the same ``wrk`` load as
   ``bench_service.py`` (POST of a complete 20 KB chat stream, a new stream_id each), on the
   partitioned schema (migrations to head) and on the plain table (migrations to 0003, then
   stamped as head so that the service leaves it as it is; its writer then keeps the unique key
   in the table itself).  The two alternate, ``--rounds`` times each, on fresh databases.
2. Retention of one day out of ``--rows`` verdict rows spread over 30 days (the rows of
   ``bench_rates.py``, and their keys): the plain table deletes that day's rows in batches, as
   the service did before partitions (then VACUUM, which a deleting table needs to reuse its
   space); the partitioned one drops that day's partition and deletes the keys of its rows
   (then VACUUM of the keys).

    python bench/bench_partitions.py                      # 10 million rows: about 25 minutes
    python bench/bench_partitions.py --rows 1000000 --rounds 1 --seconds 6    # a few minutes
    python bench/bench_partitions.py --no-ingest          # retention only

Needs ``wrk`` and PostgreSQL at 127.0.0.1:5432 with trust auth (``--admin-dsn``), where it
creates and drops scratch databases.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from alembic import command
from sqlalchemy import text

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_rates import CATEGORIES, DAYS, FILL, PAIRS, PROTOCOLS, TOOLS, TRANSIENT  # noqa: E402
from bench_service import (  # noqa: E402
    ADMIN_DSN,
    Scratch,
    committed_rows,
    print_row,
    run_load,
    start_service,
)

from fastsse_service import partitions  # noqa: E402
from fastsse_service.db import alembic_config, make_engine, utcnow  # noqa: E402
from fastsse_service.retention import prune  # noqa: E402
from loadtests.wire import complete_stream  # noqa: E402

SCHEMAS = ("plain table", "day partitions")


def prepare(url: str, schema: str) -> None:
    config = alembic_config(url)
    if schema == "plain table":
        command.upgrade(config, "0003")
        command.stamp(config, "head")
    else:
        command.upgrade(config, "head")


def ingest(args, scratch: Scratch, root: Path) -> None:
    body = root / "chat.sse"
    body.write_bytes(complete_stream("chat", 20_000, seed=20_000))
    print(
        f"1. ingest: wrk -t{args.threads} -c{args.connections} -d{args.seconds:g}s, POST of "
        f"a complete {body.stat().st_size / 1000:.1f} kB chat stream, a new stream_id each; "
        f"the service on PostgreSQL, {args.workers} worker(s), durable commits"
    )
    print(f"\n  {'schema':<34} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7}   {'':>7}  {'errors':>6}")
    totals = {schema: [] for schema in SCHEMAS}
    for round_ in range(args.rounds):
        for schema in SCHEMAS:
            url = scratch.postgres()
            prepare(url, schema)
            server = start_service(url, args.workers, root / f"{schema}.log")
            try:
                result = run_load(server, [body], args, f"r{round_}")
                stored = committed_rows(server)
            finally:
                server.stop()
            totals[schema].append(result["rps"])
            print_row(f"{schema}, round {round_ + 1}", result, extra=f"   {stored} stored (warm-up included)")
    plain, parted = (sum(totals[s]) / len(totals[s]) for s in SCHEMAS)
    print(
        f"  mean: plain {plain:.0f} req/s, partitioned {parted:.0f} req/s: partitioned / plain = {parted / plain:.2f}"
    )


# bench_rates.py's rows, ending at the start of today rather than now: DAYS whole days.
FILL_WHOLE_DAYS = FILL.replace("now()", "CAST(:until AS timestamptz)")
assert FILL_WHOLE_DAYS != FILL


def fill(url: str, schema: str, rows: int) -> float:
    """The rows of bench_rates.py, spread over the DAYS days before today, and their keys."""
    engine = make_engine(url)
    started = time.perf_counter()
    today = utcnow().date()
    if schema == "day partitions":
        for n in range(DAYS + 1):
            with engine.begin() as connection:
                partitions.make_day(connection, today - timedelta(days=n))
    values = {
        "tools": TOOLS,
        "protocols": PROTOCOLS,
        "n_pairs": len(PAIRS),
        "categories": CATEGORIES,
        "n_categories": len(CATEGORIES),
        "transient": TRANSIENT,
        "span": DAYS * 86400,
        "rows": rows,
        "until": partitions.start_of(today),
    }
    step = 1_000_000
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL synchronous_commit = off"))  # filling only
        for start in range(1, rows + 1, step):
            connection.execute(text(FILL_WHOLE_DAYS), {**values, "start": start, "stop": min(start + step - 1, rows)})
        if schema == "day partitions":
            connection.execute(text("INSERT INTO verdict_keys SELECT gateway, stream_id FROM verdicts"))
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
    engine.dispose()
    return time.perf_counter() - started


def size_of(url: str) -> int:
    engine = make_engine(url)
    with engine.connect() as connection:
        size = connection.execute(
            text(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class AS c "
                "WHERE c.relkind = 'r' AND c.relname ~ '^verdict(s|_keys)'"
            )
        ).scalar_one()
    engine.dispose()
    return int(size)


def retention(args, scratch: Scratch) -> None:
    print(f"\n2. retention: one day out of {args.rows:,} verdict rows over {DAYS} days")
    print(
        f"\n  {'schema':<16} {'fill s':>8} {'rows gone':>10} {'remove s':>9} {'vacuum s':>9} "
        f"{'GiB before':>11} {'GiB after':>10}"
    )
    for schema in SCHEMAS:
        url = scratch.postgres()
        prepare(url, schema)
        filled = fill(url, schema, args.rows)
        before = size_of(url)
        engine = make_engine(url)
        # The end of the oldest day: everything that ended before it goes (one whole day).
        cutoff = partitions.start_of(utcnow().date() - timedelta(days=DAYS - 1))
        started = time.perf_counter()
        gone = prune(engine, cutoff)
        removed = time.perf_counter() - started
        # What the removal left for VACUUM to reclaim: the plain table's deleted rows, or the
        # deleted keys (the dropped partition leaves nothing behind).
        started = time.perf_counter()
        with engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(
                text("VACUUM verdicts" if schema == "plain table" else "VACUUM verdict_keys")
            )
        vacuum = time.perf_counter() - started
        engine.dispose()
        print(
            f"  {schema:<16} {filled:8.0f} {gone:10,} {removed:9.2f} {vacuum:9.2f} "
            f"{before / 2**30:11.2f} {size_of(url) / 2**30:10.2f}",
            flush=True,
        )
        scratch.drop()  # one 10-million-row database at a time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=12)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-ingest", action="store_true")
    parser.add_argument("--no-retention", action="store_true")
    parser.add_argument("--admin-dsn", default=ADMIN_DSN)
    args = parser.parse_args()
    if not args.no_ingest and not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    with tempfile.TemporaryDirectory(prefix="bench-partitions-") as tmp:
        scratch = Scratch(args.admin_dsn, Path(tmp))
        try:
            if not args.no_ingest:
                ingest(args, scratch, Path(tmp))
            if not args.no_retention:
                retention(args, scratch)
        finally:
            scratch.drop()


if __name__ == "__main__":
    main()

"""GET /v1/rates reads the per-minute rollups: its cost follows the buckets, not the rows.

Fills a scratch PostgreSQL database with N verdict rows spread over 7 days (generated in SQL,
with the rollups derived from them exactly as the writer keeps them), then times, in one run:

* the rates query of the service (``service.queries.silent_rates``) over 1 hour and 7 days;
* the same answer computed from the raw rows (GROUP BY over ``verdicts``), for comparison.

    python bench/bench_rates.py --rows 10000000
    python bench/bench_rates.py --admin-dsn "host=127.0.0.1 dbname=postgres user=postgres"
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import psycopg
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.db import make_engine, make_sessionmaker, migrate, utcnow  # noqa: E402
from service.queries import silent_rates  # noqa: E402

# A realistic mix: a few busy (tool, protocol) pairs, two gateways, and most streams complete,
# so a minute holds a few dozen buckets whatever its traffic.
PAIRS = [("codex", "responses")] * 3 + [("claude-code", "anthropic")] * 3 + [
    ("codex", "chat"), ("gemini-cli", "gemini"), ("aider", "chat"), ("cursor", "chat")]
TOOLS = [tool for tool, _ in PAIRS]
PROTOCOLS = [protocol for _, protocol in PAIRS]
CATEGORIES = ["complete"] * 16 + ["no_end_marker", "truncated_length"]

FILL = """
INSERT INTO verdicts (gateway, stream_id, body_sha256, received_at, tool, protocol, category,
    complete, silent, retryable, transport, upstream_status, finish_reason, finish_reason_raw,
    message, end_marker_seen, finish_reason_seen, residual_bytes, events, bytes, comments,
    malformed_events, text_events, reasoning_events, refusal_events, tool_calls, choices,
    model_served, model_fallback)
SELECT 'gw' || (i % 2), 's' || i, md5(i::text) || md5(i::text),
    now() - (i % 604800) * interval '1 second',
    (CAST(:tools AS text[]))[1 + (i * 7919) % :n_pairs],
    (CAST(:protocols AS text[]))[1 + (i * 7919) % :n_pairs],
    (CAST(:categories AS text[]))[1 + (i / 3) % :n_categories],
    false, false, false, 'eof', 200, 'stop', 'stop', 'm', true, true, 0, 50,
    8000 + i % 20000, 0, 0, 40, 0, 0, 0, 1, 'gpt-4o', false
FROM generate_series(CAST(:start AS bigint), CAST(:stop AS bigint)) AS i
"""
FIX_FLAGS = """
UPDATE verdicts SET complete = (category = 'complete'),
    silent = (category NOT IN ('complete', 'transport_error'))
"""
ROLLUP = """
INSERT INTO verdict_rollups (minute, gateway, tool, protocol, category, shard, verdicts,
    silent, model_fallbacks, bytes)
SELECT date_trunc('minute', received_at), gateway, tool, protocol, category, 0, count(*),
    count(*) FILTER (WHERE silent), count(*) FILTER (WHERE model_fallback), sum(bytes)
FROM verdicts GROUP BY 1, 2, 3, 4, 5
"""
FROM_ROWS = """
SELECT tool, protocol, category, count(*), count(*) FILTER (WHERE silent)
FROM verdicts WHERE received_at >= :since GROUP BY tool, protocol, category
"""


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--admin-dsn", default="host=127.0.0.1 port=5432 dbname=postgres "
                                                "user=postgres")
    args = parser.parse_args()
    name = f"fastsse_bench_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(args.admin_dsn, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    parts = dict(item.split("=", 1) for item in args.admin_dsn.split())
    url = (f"postgresql+psycopg://{parts.get('user', 'postgres')}@{parts.get('host', '127.0.0.1')}"
           f":{parts.get('port', '5432')}/{name}")
    try:
        migrate(url)
        engine = make_engine(url)
        started = time.perf_counter()
        step = 1_000_000
        with engine.begin() as connection:
            connection.execute(text("SET LOCAL synchronous_commit = off"))  # filling only
            for start in range(1, args.rows + 1, step):
                connection.execute(text(FILL), {
                    "tools": TOOLS, "protocols": PROTOCOLS, "n_pairs": len(PAIRS),
                    "categories": CATEGORIES,
                    "n_categories": len(CATEGORIES), "start": start,
                    "stop": min(start + step - 1, args.rows)})
            connection.execute(text(FIX_FLAGS))
            connection.execute(text(ROLLUP))
        with engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(
                text("VACUUM ANALYZE"))
            rollups = connection.execute(text("SELECT count(*) FROM verdict_rollups")).scalar()
        print(f"filled {args.rows:,} verdict rows over 7 days and {rollups:,} rollup buckets "
              f"in {time.perf_counter() - started:.0f} s")

        session = make_sessionmaker(engine)()
        for label, seconds in (("1h", 3600), ("7d", 7 * 86400)):
            rollup_s, (_since, groups) = timed(
                lambda: silent_rates(session, window_seconds=seconds, by=("tool", "protocol")))
            since = utcnow() - timedelta(seconds=seconds)
            rows_s, raw = timed(lambda: session.execute(text(FROM_ROWS), {"since": since}).all(),
                                repeat=1)
            total = sum(g["total"] for g in groups)
            raw_total = sum(r[3] for r in raw)
            print(f"  window {label}: rates from rollups {rollup_s * 1000:8.1f} ms "
                  f"({len(groups)} groups, {total:,} verdicts); GROUP BY over the rows "
                  f"{rows_s * 1000:8.1f} ms ({raw_total:,} verdicts): "
                  f"{rows_s / rollup_s:,.0f}x")
        session.close()
        engine.dispose()
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    main()

"""Every read the dashboard makes, on tens of millions of verdict rows in PostgreSQL.

Fills a scratch PostgreSQL database (created and dropped here) with N verdict rows spread over
30 days (in their day partitions, with their keys), generated in SQL: a realistic mix of tools
and protocols, two gateways, mostly complete streams, and 60 % of the rows posted with a
request_id, in chains of up to three attempts, each with its previous attempt as the writer
records it. The rollups are derived from the rows exactly as the writer keeps them. Then it
times, best of three, the functions the read endpoints call (``service.queries``, the same
code, without HTTP), for each window the page offers and for a selected cell:

* ``/v1/rates`` by tool and protocol (the matrix, the categories, model fallback) and by
  gateway (the gateway filter);
* ``/v1/series.svg`` by tool (the series, drawn);
* ``/v1/retries`` by tool;
* ``/v1/verdicts`` of recent retries and of recent failures;
* ``/v1/requests/{id}`` (one request's attempts);

and, for comparison, the rates computed from the raw rows with GROUP BY.

    python bench/bench_rates.py --rows 10000000          # about 6 minutes to fill
    python bench/bench_rates.py --rows 1000000 --admin-dsn "host=127.0.0.1 user=postgres"
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import psycopg
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastsse_service import charts, partitions  # noqa: E402
from fastsse_service.db import make_engine, make_sessionmaker, migrate, utcnow  # noqa: E402
from fastsse_service.queries import (  # noqa: E402
    RollupFilter,
    Span,
    VerdictFilter,
    bucket_for,
    list_verdicts,
    request_attempts,
    retry_outcomes,
    series,
    silent_rates,
)

DAYS = 30
# A realistic mix: a few busy (tool, protocol) pairs, two gateways, and most streams complete,
# so a minute holds a few dozen buckets whatever its traffic.
PAIRS = (
    [("codex", "responses")] * 3
    + [("claude-code", "anthropic")] * 3
    + [("codex", "chat"), ("gemini-cli", "gemini"), ("aider", "chat"), ("cursor", "chat")]
)
TOOLS = [tool for tool, _ in PAIRS]
PROTOCOLS = [protocol for _, protocol in PAIRS]
CATEGORIES = ["complete"] * 16 + ["no_end_marker", "truncated_length"]
TRANSIENT = ["no_end_marker"]  # retryable; a truncated_length or a complete one is not

# The category of row i (also used for its previous attempt, row i - 1).
CATEGORY = "(CAST(:categories AS text[]))[1 + ((({i}) * 7919) / 3) % :n_categories]"
# Rows 3k+1 .. 3k+3 are the attempts 1, 2, 3 of request k, for 3 requests in 5.
CHAINED = "(i / 3) % 5 < 3"
FILL = f"""
INSERT INTO verdicts (gateway, stream_id, body_sha256, received_at, ended_at, tool, protocol,
    category, complete, silent, retryable, transport, upstream_status, finish_reason,
    finish_reason_raw, message, end_marker_seen, finish_reason_seen, residual_bytes, events,
    bytes, comments, malformed_events, text_events, reasoning_events, refusal_events,
    tool_calls, choices, model_served, model_fallback, request_id, attempt,
    previous_category, previous_retryable)
SELECT 'gw' || ((i / 3) % 2), 's' || i, md5(i::text) || md5(i::text),
    now() - (:span - :span * i / CAST(:rows AS float8)) * interval '1 second',
    now() - (:span - :span * i / CAST(:rows AS float8)) * interval '1 second',
    (CAST(:tools AS text[]))[1 + ((i / 3) * 7919) % :n_pairs],
    (CAST(:protocols AS text[]))[1 + ((i / 3) * 7919) % :n_pairs],
    {CATEGORY.format(i="i")},
    false, false, false, 'eof', 200, 'stop', 'stop', 'm', true, true, 0, 50,
    8000 + i % 20000, 0, 0, 40, 0, 0, 0, 1, 'gpt-4o', i % 97 = 0,
    CASE WHEN {CHAINED} THEN 'r' || (i / 3) END,
    CASE WHEN {CHAINED} THEN i % 3 + 1 END,
    CASE WHEN {CHAINED} AND i % 3 > 0 THEN {CATEGORY.format(i="i - 1")} END,
    CASE WHEN {CHAINED} AND i % 3 > 0 THEN {CATEGORY.format(i="i - 1")} = ANY(:transient) END
FROM generate_series(CAST(:start AS bigint), CAST(:stop AS bigint)) AS i
"""
FIX_FLAGS = """
UPDATE verdicts SET complete = (category = 'complete'),
    silent = (category NOT IN ('complete', 'transport_error')),
    retryable = (category = ANY(:transient))
"""
# The rollups as the writer counts them (rollups.rollup_counts).
ROLLUP = """
INSERT INTO verdict_rollups (minute, gateway, tool, protocol, category, shard, verdicts,
    silent, model_fallbacks, bytes, requests, first_failures, retries, recoveries,
    retries_of_final)
SELECT date_trunc('minute', ended_at), gateway, tool, protocol, category, 0, count(*),
    count(*) FILTER (WHERE silent), count(*) FILTER (WHERE model_fallback), sum(bytes),
    count(*) FILTER (WHERE request_id IS NOT NULL AND previous_category IS NULL),
    count(*) FILTER (WHERE request_id IS NOT NULL AND previous_category IS NULL AND NOT complete),
    count(*) FILTER (WHERE previous_category IS NOT NULL),
    count(*) FILTER (WHERE previous_category <> 'complete' AND complete),
    count(*) FILTER (WHERE previous_category <> 'complete' AND NOT previous_retryable)
FROM verdicts GROUP BY 1, 2, 3, 4, 5
"""
KEYS = "INSERT INTO verdict_keys SELECT gateway, stream_id FROM verdicts"
FROM_ROWS = """
SELECT tool, protocol, category, count(*), count(*) FILTER (WHERE silent)
FROM verdicts WHERE ended_at >= :since GROUP BY tool, protocol, category
"""
WINDOWS = (("1h", 3600), ("24h", 86400), ("7d", 7 * 86400), ("30d", 30 * 86400))


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def page_calls(session, span: Span, where: RollupFilter):
    """What the dashboard asks for, by panel: (name, call)."""
    since = span.since
    chosen = VerdictFilter(tool=where.tool, protocol=where.protocol, gateway=where.gateway, since=since)
    matrix = RollupFilter(gateway=where.gateway)

    def drawn_series():
        bucket = bucket_for(span.window)
        points, _ = series(session, span, bucket_seconds=bucket, by="tool", where=where, top=6)
        return charts.series_svg(
            {"since": span.since, "until": span.until, "bucket": bucket, "by": "tool", "points": points}
        )

    return [
        ("rates by tool, protocol", lambda: silent_rates(session, span, by=("tool", "protocol"), where=matrix)),
        ("rates by gateway", lambda: silent_rates(session, span, by=("gateway",))),
        ("series.svg by tool", drawn_series),
        ("retries by tool", lambda: retry_outcomes(session, span, by=("tool",), where=where)),
        ("recent retries", lambda: list_verdicts(session, dataclasses.replace(chosen, retry=True), limit=8)),
        ("recent failures", lambda: list_verdicts(session, dataclasses.replace(chosen, complete=False), limit=12)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--admin-dsn", default="host=127.0.0.1 port=5432 dbname=postgres user=postgres")
    args = parser.parse_args()
    name = f"fastsse_bench_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(args.admin_dsn, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    parts = dict(item.split("=", 1) for item in args.admin_dsn.split())
    url = (
        f"postgresql+psycopg://{parts.get('user', 'postgres')}@{parts.get('host', '127.0.0.1')}"
        f":{parts.get('port', '5432')}/{name}"
    )
    try:
        migrate(url)
        engine = make_engine(url)
        started = time.perf_counter()
        today = utcnow().date()
        for n in range(DAYS + 1):  # the day partitions, as a service running 30 days made them
            with engine.begin() as connection:
                partitions.make_day(connection, today - timedelta(days=n))
        step = 1_000_000
        values = {
            "tools": TOOLS,
            "protocols": PROTOCOLS,
            "n_pairs": len(PAIRS),
            "categories": CATEGORIES,
            "n_categories": len(CATEGORIES),
            "transient": TRANSIENT,
            "span": DAYS * 86400,
            "rows": args.rows,
        }
        with engine.begin() as connection:
            connection.execute(text("SET LOCAL synchronous_commit = off"))  # filling only
            for start in range(1, args.rows + 1, step):
                connection.execute(text(FILL), {**values, "start": start, "stop": min(start + step - 1, args.rows)})
            connection.execute(text(FIX_FLAGS), values)
            connection.execute(text(ROLLUP))
            connection.execute(text(KEYS))
        with engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
            rollups = connection.execute(text("SELECT count(*) FROM verdict_rollups")).scalar()
            size = connection.execute(
                text(
                    "SELECT (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class AS c "
                    "WHERE c.relkind = 'r' AND c.relname ~ '^verdict(s|_keys)'), "
                    "pg_total_relation_size('verdict_rollups')"
                )
            ).one()
        print(
            f"filled {args.rows:,} verdict rows over {DAYS} days and {rollups:,} rollup "
            f"buckets in {time.perf_counter() - started:.0f} s; verdicts and their keys "
            f"{size[0] / 2**30:.2f} GiB with indexes ({size[0] / args.rows:.0f} bytes a "
            f"row), rollups {size[1] / 2**20:.0f} MiB"
        )

        session = make_sessionmaker(engine)()
        for selection in (RollupFilter(), RollupFilter(tool="codex", protocol="responses")):
            label = (
                "the whole page"
                if selection.tool is None
                else f"a selected cell ({selection.tool} on {selection.protocol})"
            )
            print(f"\n  {label}: best of 3, ms")
            print(f"  {'call':<26}" + "".join(f"{w:>9}" for w, _ in WINDOWS))
            spans = [Span.of(seconds=seconds) for _, seconds in WINDOWS]
            names = [call for call, _ in page_calls(session, spans[0], selection)]
            table = {call: [] for call in names}
            for span in spans:
                for call, fn in page_calls(session, span, selection):
                    table[call].append(timed(fn)[0] * 1000)
            for call in names:
                print(f"  {call:<26}" + "".join(f"{ms:9.1f}" for ms in table[call]))
        request = args.rows // 6 // 5 * 5  # a request that has attempts (see CHAINED)
        chain_s, chains = timed(lambda: request_attempts(session, f"r{request}", f"gw{request % 2}"))
        print(
            f"\n  one request's attempts (/v1/requests/{{id}}): {chain_s * 1000:.1f} ms "
            f"({sum(len(c) for c in chains.values())} attempts)"
        )

        print("\n  rates from the rollups vs GROUP BY over the rows:")
        for label, seconds in WINDOWS[::2]:
            span = Span.of(seconds=seconds)
            rollup_s, (groups, _) = timed(lambda span=span: silent_rates(session, span, by=("tool", "protocol")))
            since = utcnow() - timedelta(seconds=seconds)
            rows_s, raw = timed(lambda since=since: session.execute(text(FROM_ROWS), {"since": since}).all(), repeat=1)
            total = sum(g["total"] for g in groups)
            raw_total = sum(r[3] for r in raw)
            print(
                f"  window {label:>3}: rollups {rollup_s * 1000:8.1f} ms ({total:,} verdicts); "
                f"GROUP BY over the rows {rows_s * 1000:8.1f} ms ({raw_total:,}): "
                f"{rows_s / rollup_s:,.0f}x"
            )
        session.close()
        engine.dispose()
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    main()

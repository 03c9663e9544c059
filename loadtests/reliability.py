"""Reliability runs, each bounded in time and on 127.0.0.1 only:

    python -m loadtests.reliability overload [--quick]   # about twice capacity, then recovery
    python -m loadtests.reliability soak --seconds 600   # flat memory and file descriptors
    python -m loadtests.reliability pg-kill [--quick]    # the database crashes mid-load

``overload`` starts the service (PostgreSQL, one worker) and drives it with wrk (a C load
generator): first at its capacity, then with paced connections offering about twice what it
sustained, then at capacity again.  It passes when the excess was refused quickly (503 with
Retry-After), no request hung until wrk's timeout, the acknowledged posts are exactly the rows
stored, and the service sustains its capacity again afterwards.

``soak`` runs locust's realistic traffic for a long time while sampling the service's memory
(RSS) and open file descriptors every second, and fails when either grows: the slope of a
least-squares line over the run after its warm-up (the first fifth), against a bound (1 MB and
1 descriptor a minute; a leak of a kilobyte a post would be about 18 MB a minute here).

``pg-kill`` runs locust against the service on a throwaway PostgreSQL, kills the database
(``pg_ctl -m immediate``, no shutdown checkpoint) a third of the way in and starts it again a
few seconds later.  It passes when every post locust saw acknowledged is stored, exactly once;
posts refused meanwhile got 503 with Retry-After, and locust's retries of them landed; and the
service stored posts again after the restart without being restarted itself.

Each prints its figures and a JSON line (``RESULT {...}``) that the tests read.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

from loadtests.load import ADMIN_DSN, Service, run_locust
from loadtests.wire import complete_stream
from loadtests.wrk import post_streams


def rows(database: str) -> int:
    with psycopg.connect(ADMIN_DSN.replace("dbname=postgres", f"dbname={database}")) as db:
        return db.execute("SELECT count(*) FROM verdicts").fetchone()[0]


def overload(args) -> dict:
    if not shutil.which("wrk"):
        raise SystemExit("needs wrk (apt-get install wrk)")
    scratch = Path(tempfile.mkdtemp(prefix="fastsse-overload-"))
    bodies = []
    for n, (protocol, size) in enumerate(
        (("chat", 4_000), ("anthropic", 20_000), ("responses", 8_000), ("gemini", 2_000))
    ):
        path = scratch / f"body-{n}.sse"
        path.write_bytes(complete_stream(protocol, size, seed=n))
        bodies.append(path)
    seconds = 4 if args.quick else 15
    service = Service("postgres", 1, scratch)
    try:
        url, token = service.url, service.ingest_token

        def wrk(**options):
            return post_streams(url, token, bodies, count_statuses=True, **options)

        warm = wrk(tag="warm", seconds=2, connections=8)
        capacity = wrk(tag="capacity", seconds=seconds, connections=16)
        # Each of the connections waits `pace` ms between requests: together they offer about
        # twice the capacity, whatever the service answers.
        connections = 256
        pace = max(1, int(connections / (2 * capacity["rps"]) * 1000))
        over = wrk(tag="over", seconds=seconds, connections=connections, pace_ms=pace)
        # What the paced connections would offer if answered at once: an upper bound.
        over["offered_rps"] = connections / (pace / 1000)
        after = wrk(tag="after", seconds=seconds, connections=16)
        stored = rows(service.scratch)
    finally:
        service.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    acknowledged = sum(phase["acknowledged"] for phase in (warm, capacity, over, after))
    # Posts still in flight when wrk stops are stored but never counted: at most one per
    # connection per phase.
    in_flight = 8 + 16 + connections + 16
    result = {
        "capacity": capacity,
        "overload": over,
        "after": after,
        "stored": stored,
        "acknowledged_total": acknowledged,
        "in_flight_bound": in_flight,
    }
    print(f"capacity   {capacity['rps']:7.0f} req/s  p99 {capacity['p99_ms']:7.1f} ms  {capacity['statuses']}")
    print(
        f"overload   {over['rps']:7.0f} req/s answered (about {over['offered_rps']:.0f} "
        f"offered by {connections} paced connections)  p50 {over['p50_ms']:.1f} ms  "
        f"p99 {over['p99_ms']:.1f} ms  max {over['max_ms']:.0f} ms  {over['statuses']}  "
        f"timeouts {over['timeouts']}  socket errors {over['socket_errors']}"
    )
    print(f"recovered  {after['rps']:7.0f} req/s  p99 {after['p99_ms']:7.1f} ms  {after['statuses']}")
    print(
        f"acknowledged {acknowledged} posts (the warm-up's included), rows stored {stored} "
        f"(at most {in_flight} more: the posts in flight when each wrk run stopped)"
    )
    return result


def _sample(pid: int) -> tuple[float, int]:
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope, per minute."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    num = sum((t - mean_t) * (v - mean_v) for t, v in points)
    den = sum((t - mean_t) ** 2 for t, _ in points) or 1.0
    return num / den * 60


def soak(args) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="fastsse-soak-"))
    service = Service(args.database, 1, scratch)
    samples: list[tuple[float, float, int]] = []
    stop = threading.Event()
    started = time.monotonic()

    def sample() -> None:
        while not stop.wait(1.0):
            rss, fds = _sample(service.process.pid)
            samples.append((time.monotonic() - started, rss, fds))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        locust = run_locust(service.url, service.ingest_token, args.users, args.seconds, scratch, [])
    finally:
        stop.set()
        sampler.join()
        service.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    warmup = args.warmup_seconds if args.warmup_seconds is not None else args.seconds / 5
    steady = [sample for sample in samples if sample[0] >= warmup]
    rss_slope = slope([(t, r) for t, r, _ in steady])
    fd_slope = slope([(t, f) for t, _, f in steady])
    total = locust["Aggregated"]
    result = {
        "seconds": args.seconds,
        "requests": int(total["Request Count"]),
        "failures": int(total["Failure Count"]),
        "rss_mb_first": steady[0][1],
        "rss_mb_last": steady[-1][1],
        "rss_mb_per_min": rss_slope,
        "fds_first": steady[0][2],
        "fds_last": steady[-1][2],
        "fds_per_min": fd_slope,
        "ok": rss_slope <= args.max_rss_mb_per_min and fd_slope <= args.max_fds_per_min,
    }
    print(f"soak {args.seconds} s, {result['requests']} posts, {result['failures']} failures")
    print(
        f"  RSS {result['rss_mb_first']:.1f} -> {result['rss_mb_last']:.1f} MB, slope "
        f"{rss_slope:+.2f} MB/min (bound {args.max_rss_mb_per_min})"
    )
    print(
        f"  fds {result['fds_first']} -> {result['fds_last']}, slope {fd_slope:+.2f}/min (bound {args.max_fds_per_min})"
    )
    return result


def pg_kill(args) -> dict:
    from loadtests.throwaway_postgres import ThrowawayPostgres

    seconds = 20 if args.quick else 60
    scratch = Path(tempfile.mkdtemp(prefix="fastsse-pgkill-"))
    database = ThrowawayPostgres()
    database.start()
    ack_log = scratch / "acknowledged.txt"
    service = None
    timeline = {}
    try:
        service = Service("external", 1, scratch, database_url=database.url)

        def crash() -> None:
            time.sleep(seconds / 3)
            timeline["killed"] = time.monotonic()
            database.stop("immediate")
            time.sleep(args.outage_seconds)
            database.start()
            timeline["restarted"] = time.monotonic()

        crasher = threading.Thread(target=crash)
        started = time.monotonic()
        crasher.start()
        locust = run_locust(
            service.url,
            service.ingest_token,
            args.users,
            seconds,
            scratch,
            ["--ack-log", str(ack_log), "--max-post-retries", "10"],
        )
        crasher.join()
        with psycopg.connect(database.dsn) as db:
            stored = [row[0] for row in db.execute("SELECT stream_id FROM verdicts")]
            after_restart = db.execute(
                "SELECT count(*) FROM verdicts WHERE received_at > now() - make_interval(secs => %s)",
                (time.monotonic() - timeline["restarted"],),
            ).fetchone()[0]
    finally:
        if service is not None:
            service.stop()
        database.destroy()
    acknowledged = ack_log.read_text().split() if ack_log.exists() else []
    missing = set(acknowledged) - set(stored)
    refused = locust.get("POST /v1/streams [retry after 503]", {})
    result = {
        "seconds": seconds,
        "outage_seconds": args.outage_seconds,
        "killed_at": round(timeline["killed"] - started, 1),
        "acknowledged": len(acknowledged),
        "stored": len(stored),
        "stored_distinct": len(set(stored)),
        "missing": len(missing),
        "duplicates_acknowledged": len(acknowledged) - len(set(acknowledged)),
        "retried_posts": int(refused.get("Request Count", 0)),
        "stored_after_restart": after_restart,
        "failures": {name: int(row["Failure Count"]) for name, row in locust.items() if int(row["Failure Count"])},
    }
    print(f"pg-kill: {seconds} s of load, PostgreSQL killed at {result['killed_at']} s for {args.outage_seconds} s")
    print(
        f"  acknowledged {result['acknowledged']}, stored {result['stored']} "
        f"({result['missing']} acknowledged and missing, "
        f"{result['stored'] - result['stored_distinct']} stored twice)"
    )
    print(f"  posts retried after a 503: {result['retried_posts']}; stored after the restart: {after_restart}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.reliability")
    commands = parser.add_subparsers(dest="command", required=True)
    over = commands.add_parser("overload", help="about twice capacity, then recovery (wrk)")
    over.add_argument("--quick", action="store_true", help="4 s phases instead of 15 s")
    long_run = commands.add_parser("soak", help="a long locust run; memory and fds stay flat")
    long_run.add_argument("--seconds", type=int, default=600)
    long_run.add_argument("--users", type=int, default=8)
    long_run.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    long_run.add_argument(
        "--warmup-seconds",
        type=float,
        help="samples before this are left out (default: the first fifth; "
        "caches and metric label sets fill in the first minute)",
    )
    long_run.add_argument("--max-rss-mb-per-min", type=float, default=1.0)
    long_run.add_argument("--max-fds-per-min", type=float, default=1.0)
    kill = commands.add_parser("pg-kill", help="the database killed and restarted mid-load")
    kill.add_argument("--quick", action="store_true", help="20 s of load instead of 60 s")
    kill.add_argument("--users", type=int, default=8)
    kill.add_argument("--outage-seconds", type=float, default=4.0)
    args = parser.parse_args(argv)
    run = {"overload": overload, "soak": soak, "pg-kill": pg_kill}[args.command]
    result = run(args)
    print("RESULT " + json.dumps(result))
    if args.command == "soak":
        return 0 if result["ok"] and not result["failures"] else 1
    if args.command == "pg-kill":
        # (A stream stored twice is impossible by the unique index; a post acknowledged twice
        # would mean a retry that landed again and was answered as new.)
        healthy = (
            result["missing"] == 0
            and result["duplicates_acknowledged"] == 0
            and result["stored_after_restart"] > 0
            and result["retried_posts"] > 0
        )
        return 0 if healthy else 1
    over_result = result["overload"]
    healthy = (
        over_result["timeouts"] == 0
        and over_result["socket_errors"] == 0
        and over_result["no_retry_after"] == 0
        and result["acknowledged_total"] <= result["stored"] <= result["acknowledged_total"] + result["in_flight_bound"]
    )
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())

"""Realistic load, headless and bounded: ``python -m loadtests.load``.

Starts the service (PostgreSQL by default, a scratch database it drops afterwards; or SQLite)
with ``--workers`` workers on 127.0.0.1, runs locust (``loadtests/locustfile.py``) against it
for ``--duration`` seconds, writes locust's HTML report and CSV files into ``--report-dir``,
and prints what the service sustained: streams/s and MB/s stored (from the service's own
rates), p50/p99 and error counts (from locust).

    python -m loadtests.load --duration 60 --users 24 --workers 1
    python -m loadtests.load --url http://127.0.0.1:8000 --token SECRET   # a running service

Locust is Python: on a small machine it takes CPU from the service it measures, so these
figures are a floor; the service's capacity is measured with wrk (bench/bench_service.py).
"""

from __future__ import annotations

import argparse
import csv
import os
import secrets
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from loadtests.localhost import free_port, wait_until_answering

REPO = Path(__file__).resolve().parents[1]
ADMIN_DSN = "host=127.0.0.1 port=5432 dbname=postgres user=postgres"


class Service:
    """``python -m fastsse_service serve`` on a scratch database, stopped (and dropped) on exit."""

    def __init__(
        self, database: str, workers: int, log_dir: Path, env: dict | None = None, database_url: str | None = None
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ingest_token, self.read_token = secrets.token_hex(12), secrets.token_hex(12)
        self.scratch = None
        if database == "postgres":
            import psycopg

            self.scratch = f"fastsse_load_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{self.scratch}"')
            url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{self.scratch}"
        elif database == "external":
            url = database_url
        else:
            url = f"sqlite:///{log_dir / 'load.sqlite3'}"
        self.log = open(log_dir / "service.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fastsse_service", "serve", "--port", str(self.port), "--workers", str(workers)],
            cwd=REPO,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                "DATABASE_URL": url,
                "RETENTION_DAYS": "0",
                "INGEST_TOKENS": f"load:{self.ingest_token}",
                "READ_TOKENS": f"load:{self.read_token}",
                **(env or {}),
            },
        )
        if not wait_until_answering(f"{self.url}/readyz", self.process, interval=0.2):
            self.stop()
            raise SystemExit(f"the service did not start (see {log_dir / 'service.log'})")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(60)
        self.log.close()
        if self.scratch:
            import psycopg

            with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{self.scratch}" WITH (FORCE)')


def stored(url: str, read_token: str, window: str = "1h") -> tuple[int, int]:
    """(verdicts, bytes) the service stored in the window, by its own rates."""
    answer = httpx.get(
        f"{url}/v1/rates", params={"window": window}, headers={"authorization": f"Bearer {read_token}"}, timeout=30
    )
    answer.raise_for_status()
    groups = answer.json()["groups"]
    return sum(g["total"] for g in groups), sum(g["bytes"] for g in groups)


def run_locust(url: str, token: str, users: int, seconds: int, report_dir: Path, extra: list[str]) -> dict:
    prefix = report_dir / "load"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(REPO / "loadtests" / "locustfile.py"),
            "--headless",
            "--users",
            str(users),
            "--spawn-rate",
            str(users),
            "--run-time",
            f"{seconds}s",
            "--stop-timeout",
            "10",
            "--host",
            url,
            "--ingest-token",
            token,
            "--html",
            str(report_dir / "report.html"),
            "--csv",
            str(prefix),
            "--only-summary",
            "--loglevel",
            "WARNING",
            *extra,
        ],
        cwd=REPO,
        check=False,
        timeout=seconds + 180,
        stdout=subprocess.DEVNULL,
    )
    rows = {}
    with open(f"{prefix}_stats.csv", newline="") as file:
        for row in csv.DictReader(file):
            rows[row["Name"] or "Aggregated"] = row
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=60, help="seconds of load")
    parser.add_argument("--users", type=int, default=24, help="simulated gateways")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--url", help="load this service instead of starting one")
    parser.add_argument("--token", help="its ingest token (with --url)")
    parser.add_argument("--read-token", help="its read token (with --url), for the figures")
    parser.add_argument("--report-dir", type=Path, default=Path("load-report"))
    parser.add_argument("locust_args", nargs="*", help="more locust options, after --")
    args = parser.parse_args(argv)
    args.report_dir.mkdir(parents=True, exist_ok=True)

    service = None
    if args.url:
        url, token, read_token = args.url, args.token or "", args.read_token
    else:
        service = Service(args.database, args.workers, Path(tempfile.mkdtemp(prefix="fastsse-load-")))
        url, token, read_token = service.url, service.ingest_token, service.read_token
    try:
        before = stored(url, read_token) if read_token else (0, 0)
        started = time.monotonic()
        rows = run_locust(url, token, args.users, args.duration, args.report_dir, args.locust_args)
        elapsed = time.monotonic() - started
        after = stored(url, read_token) if read_token else (0, 0)
    finally:
        if service is not None:
            service.stop()
    total = rows["Aggregated"]
    verdicts, size = after[0] - before[0], after[1] - before[1]
    where = args.url or f"{args.database}, {args.workers} worker(s)"
    print(f"{where}: {args.users} gateways for {args.duration} s")
    if read_token:
        print(
            f"  stored      {verdicts / elapsed:8.0f} streams/s  {size / elapsed / 1e6:7.1f} MB/s"
            f"  ({verdicts} verdicts, {size / 1e6:.0f} MB)"
        )
    print(
        f"  requests    {float(total['Requests/s']):8.0f} /s  p50 {total['50%']} ms  "
        f"p99 {total['99%']} ms  failures {total['Failure Count']} of {total['Request Count']}"
    )
    for name, row in rows.items():
        if name != "Aggregated" and int(row["Failure Count"]):
            print(f"  failed: {name}: {row['Failure Count']}")
    print(f"  report: {args.report_dir / 'report.html'}, {args.report_dir}/load_*.csv")
    return 0 if int(total["Failure Count"]) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

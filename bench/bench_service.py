"""The ingestion service against its own HTTP stack, side by side in one run, driven by wrk.

Starts, one after another on 127.0.0.1: the bare endpoint (``bench/bare_app.py``: the same
server stack and route, reading the body and answering a small JSON), the service without its
database (``bench/nodb_app.py``: everything but the store, the most the service could serve
here with any database), then the service on SQLite and on PostgreSQL, each with 1 and 2
workers, and drives each with the same load from ``wrk`` (a C load generator: a Python client
would measure itself).  Every post is a complete stream with a new ``stream_id``, so that the
service judges, stores and commits every one (but for the configuration without a database,
which stores nothing).

Prints requests/s, p50 and p99 per configuration and the ratio to the bare endpoint with the
same number of workers, and what a post cost in CPU: in the server's processes, in PostgreSQL's
(all of its processes), in wrk, and on the whole machine, with the machine's idle share (the
server, the database and the load generator share its cores); then MB/s and streams/s by
stream size (2 KB, 20 KB, 200 KB) and for a mix of the four protocols; then the same 20 KB
streams posted as they are and zstd- and gzip-compressed, side by side (the bytes on the wire and
the server's CPU a stream); then 2 kB and 20 kB streams posted alone and in batches (streams
stored a second, side by side); then where the service's CPU goes (a py-spy sampling profile of one
worker under the same load, grouped by what the code does).

    python bench/bench_service.py                 # about 4 minutes
    python bench/bench_service.py --quick         # about 2 minutes: shorter runs, main table
    python bench/bench_service.py --only pg2      # one configuration

Needs ``wrk`` (Debian package) and, for the profile, ``py-spy`` (PyPI); PostgreSQL at
127.0.0.1:5432 with trust auth (``--admin-dsn``), where it creates and drops a scratch database.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import importlib.util
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psycopg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from loadtests.localhost import free_port, wait_until_answering  # noqa: E402
from loadtests.wire import PROTOCOLS, complete_stream  # noqa: E402
from loadtests.wrk import post_streams  # noqa: E402

TOKEN = "bench-secret-token"
ADMIN_DSN = "host=127.0.0.1 port=5432 dbname=postgres user=postgres"
CORES = os.cpu_count() or 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc's CPU times


class Server:
    """A server process on 127.0.0.1 (the service, or the bare endpoint)."""

    def __init__(self, command: list[str], env: dict, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._log = open(log, "wb")
        self.process = subprocess.Popen(
            [*command, "--port", str(self.port)],
            cwd=REPO,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            start_new_session=True,
        )
        if not wait_until_answering(f"{self.url}/healthz", self.process):
            self.stop()
            raise SystemExit(f"{command} did not start:\n{log.read_text()}")

    def worker_pids(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        pids = [int(p) for p in children.read_text().split()] if children.exists() else []
        return pids or [self.process.pid]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


def wrk(
    url: str,
    bodies: list[Path],
    *,
    seconds: float,
    connections: int,
    threads: int,
    tag: str,
    batch: int = 0,
    prepared: bool = False,
) -> dict:
    """The benchmark's load: loadtests/wrk.py's posts, without counting statuses (wrk's cost
    per post is part of what the rows report)."""
    return post_streams(
        url,
        TOKEN,
        bodies,
        tag=tag,
        seconds=seconds,
        connections=connections,
        threads=threads,
        batch=batch,
        prepared_batches=prepared,
    )


class Scratch:
    """Fresh databases for each run: SQLite files in a temporary directory, PostgreSQL
    databases on the admin server (dropped at the end)."""

    def __init__(self, admin_dsn: str, root: Path) -> None:
        self.admin_dsn = admin_dsn
        self.root = root
        self.created: list[str] = []

    def sqlite(self) -> str:
        return f"sqlite:///{self.root / f'bench-{uuid.uuid4().hex[:8]}.sqlite3'}"

    def postgres(self) -> str:
        name = f"fastsse_bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        parts = dict(item.split("=", 1) for item in self.admin_dsn.split())
        return (
            f"postgresql+psycopg://{parts.get('user', 'postgres')}@"
            f"{parts.get('host', '127.0.0.1')}:{parts.get('port', '5432')}/{name}"
        )

    def drop(self) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as admin:
            for name in self.created:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.created.clear()


def service_environment(database_url: str) -> dict:
    """The settings every benchmarked service runs with (retention off: nothing is pruned)."""
    return {"DATABASE_URL": database_url, "INGEST_TOKENS": f"bench:{TOKEN}", "RETENTION_DAYS": "0"}


def server_stack() -> str:
    """The event loop and HTTP parser uvicorn picks here."""
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return f"uvicorn, {loop}, {http}"


def start_service(database_url: str, workers: int, log: Path) -> Server:
    return Server(
        [sys.executable, "-m", "fastsse_service", "serve", "--workers", str(workers)],
        service_environment(database_url),
        log,
    )


def start_bare(workers: int, log: Path) -> Server:
    # The service's own server options (event loop, HTTP parser, logging), on the bare app.
    return Server([sys.executable, str(REPO / "bench" / "bare_app.py"), "--workers", str(workers)], {}, log)


def start_without_database(database_url: str, workers: int, log: Path) -> Server:
    # The service, served as `serve` serves it, with a store that keeps nothing.
    return Server(
        [sys.executable, str(REPO / "bench" / "nodb_app.py"), "--workers", str(workers)],
        service_environment(database_url),
        log,
    )


def committed_rows(server: Server) -> int:
    text = httpx.get(f"{server.url}/metrics").text
    return int(sum(float(v) for v in re.findall(r"^fastsse_streams_total\{[^}]*\} (\S+)$", text, re.M)))


def run_load(
    server: Server,
    bodies: list[Path],
    args,
    tag: str,
    *,
    batch: int = 0,
    prepared: tuple[list[Path], list[Path]] | None = None,
) -> dict:
    """wrk's figures, and the CPU each post cost: the server's processes, PostgreSQL's, wrk
    itself, and the whole machine (they all share its cores).  ``batch``: posts are batches of
    that many streams; ``prepared``: posts are these batch files, made beforehand (for the
    warm-up, and for the run: each stream is posted once), of ``batch`` streams each."""
    warmup = wrk(
        server.url,
        bodies if prepared is None else prepared[0],
        seconds=args.warmup,
        connections=args.connections,
        threads=args.threads,
        tag=tag + "w",
        batch=batch,
        prepared=prepared is not None,
    )
    served = [server.process.pid, *server.worker_pids()]
    served_before, postgres_before = cpu_seconds(served), postgres_cpu()
    wrk_before, machine_before = waited_children_cpu(), machine_cpu()
    result = wrk(
        server.url,
        bodies if prepared is None else prepared[1],
        seconds=args.seconds,
        connections=args.connections,
        threads=args.threads,
        tag=tag,
        batch=batch,
        prepared=prepared is not None,
    )
    postgres_after = postgres_cpu()
    (busy_after, idle_after), (busy_before, idle_before) = machine_cpu(), machine_before
    busy, idle = busy_after - busy_before, idle_after - idle_before
    spent = {
        "service": cpu_seconds(served) - served_before,
        # a backend that connected during the run counts in full
        "postgres": sum(seconds - postgres_before.get(pid, 0.0) for pid, seconds in postgres_after.items()),
        "wrk": waited_children_cpu() - wrk_before,
        "machine": busy,
    }
    result["cpu_us"] = {name: value / result["requests"] * 1e6 for name, value in spent.items()}
    result["posted"] = (warmup["requests"] + result["requests"]) * max(batch, 1)  # streams, warm-up included
    result["idle"] = idle / (busy + idle)
    return result


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU of these processes so far (/proc/PID/stat)."""
    return sum(_process_cpu(pid) or 0.0 for pid in set(pids))


def _process_cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):  # gone
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15)


def postgres_cpu() -> dict[int, float]:
    """CPU so far of every PostgreSQL server process on this machine, by pid: the backends of
    every connection and the background processes (WAL writer, checkpointer, ...).  The
    benchmark's database server is the local one; another one here would count too."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                name = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if name == "postgres":
                seconds = _process_cpu(int(entry.name))
                if seconds is not None:
                    found[int(entry.name)] = seconds
    return found


def machine_cpu() -> tuple[float, float]:
    """CPU seconds of the whole machine so far, busy and idle (/proc/stat; idle includes
    waiting for the disk).  Time a hypervisor gave to other machines (steal) is neither: this
    machine's CPU was not idle, nor was it ours."""
    user, nice, system, idle, iowait, irq, softirq = map(
        int, Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]
    )
    return ((user + nice + system + irq + softirq) / CLOCK_TICKS, (idle + iowait) / CLOCK_TICKS)


def waited_children_cpu() -> float:
    """User and system CPU of the child processes waited for so far (wrk's runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_text(result: dict, postgres: bool) -> str:
    cpu = result["cpu_us"]
    parts = [
        f"{name} {cpu[name]:.0f}"
        for name in ("service", "postgres", "wrk", "machine")
        if postgres or name != "postgres"
    ]
    return (
        f"   CPU µs a post: {', '.join(parts)} (machine idle {result['idle']:.0%}; "
        f"all busy: {CORES * 1e6 / cpu['machine']:,.0f}/s)"
    )


def print_row(name: str, result: dict, bare: dict | None = None, extra: str = "") -> None:
    ratio = f"{result['rps'] / bare['rps'] * 100:5.0f} %" if bare else "      "
    errors = result["non_2xx"] + result["socket_errors"]
    print(
        f"  {name:<34} {result['rps']:8.0f} {result['p50_ms']:7.1f} {result['p99_ms']:7.1f}"
        f"   {ratio}  {errors:>6}{extra}",
        flush=True,
    )


# --------------------------------------------------------------------------- the profile
# A worker's threads share one interpreter lock, and every request and every batch needs it:
# the profile samples only stacks that hold it (py-spy --gil), so waiting on the network, the
# disk or the lock itself is left out.  Each sample goes to the first group that claims one of
# its frames, from the innermost out.
PROFILE_GROUPS = (
    # ours: what the bare endpoint does not do
    ("scanning (fastsse)", ("fastsse/", "judging.py:feed:scan", "judging.py:close")),
    ("hashing (SHA-256 of the body)", ("judging.py:feed:digest",)),
    ("logging", ("logging/",)),
    ("metrics (prometheus_client)", ("prometheus_client/", "service/metrics.py")),
    ("database driver (psycopg, sqlite3)", ("psycopg/", "psycopg_pool/", "sqlite3/")),
    ("SQLAlchemy", ("sqlalchemy/",)),
    ("writer (batching, JSON, answers)", ("service/writer.py",)),
    (
        "parameters and credentials",
        ("service/ingest.py:parse_query", "service/ingest.py:parse", "service/auth.py", "service/api/deps.py"),
    ),
    ("response building (verdict JSON)", ("service/api/schemas.py",)),
    ("the ingest route, the rest", ("service/",)),
    # the HTTP stack: the bare endpoint runs all of these too
    ("stack: HTTP protocol (uvicorn, httptools)", ("uvicorn/protocols/", "httptools/", "h11/")),
    (
        "stack: FastAPI dependencies and validation",
        ("fastapi/dependencies/", "pydantic/", "pydantic_core/", "fastapi/_compat"),
    ),
    ("stack: routing, middleware, responses (Starlette, FastAPI)", ("starlette/", "fastapi/")),
    (
        "stack: event loop and tasks (asyncio, uvloop)",
        ("asyncio/", "uvloop/", "anyio/", "contextlib.py", "concurrent/", "threading.py", "queue.py"),
    ),
)


def classify(frames: list[str]) -> str:
    for frame in reversed(frames):  # innermost first
        # py-spy raw frames: "function (path/to/file.py:line)"
        match = re.match(r"^(.*) \((.*):(\d+)\)$", frame)
        if not match:
            continue
        function, path, line = match.groups()
        function = function.rsplit(".", 1)[-1]  # py-spy names methods Class.method
        key = f"{path.replace(chr(92), '/')}:{function}"
        if path.endswith("service/judging.py") and function == "feed":
            key = "judging.py:feed:" + ("digest" if "digest" in _source_line(path, int(line)) else "scan")
        elif path.endswith("service/judging.py") and function == "close":
            key = "judging.py:close"
        for group, needles in PROFILE_GROUPS:
            if any(needle in key for needle in needles):
                return group
    return "other"


def _source_line(path: str, line: int) -> str:
    lines = Path(path).read_text().splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


def profile(server: Server, bodies: list[Path], args, scratch: Path) -> None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        print("  (py-spy is not installed: pip install py-spy)")
        return
    pid = server.worker_pids()[0]
    out = scratch / "profile.txt"
    recorder = subprocess.Popen(
        [
            spy,
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--rate",
            "250",
            "--nonblocking",
            "--gil",
            "--threads",
            "--duration",
            str(int(args.seconds)),
            "--output",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(0.5)
    result = wrk(
        server.url,
        bodies,
        seconds=args.seconds,
        connections=args.connections,
        threads=args.threads,
        tag="profile",
    )
    _, errors = recorder.communicate(timeout=60)
    if recorder.returncode != 0 or not out.exists():
        print(f"  (py-spy failed: {errors.decode(errors='replace').strip()[:300]})")
        return
    groups: collections.Counter[str] = collections.Counter()
    threads = 0  # samples outside the event loop's thread (SQLite's batches, upkeep)
    for line in out.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        if "MainThread" not in stack.split(";", 1)[0]:
            threads += int(count)
        groups[classify(stack.split(";"))] += int(count)
    total = sum(groups.values()) or 1
    print(
        f"  {result['rps']:.0f} req/s while sampled; {total} samples holding the interpreter "
        f"lock; {threads / total * 100:.0f} % of them outside the event loop's thread"
    )
    for group, count in groups.most_common():
        print(f"  {count / total * 100:5.1f} %  {group}")


# --------------------------------------------------------------------------- main
CONFIGS = {
    "bare1": ("bare endpoint, 1 worker", None, 1),
    "bare2": ("bare endpoint, 2 workers", None, 2),
    "nodb1": ("service without database, 1 worker", "nothing", 1),
    "nodb2": ("service without database, 2 workers", "nothing", 2),
    "sqlite1": ("service, SQLite, 1 worker", "sqlite", 1),
    "sqlite2": ("service, SQLite, 2 workers", "sqlite", 2),
    "pg1": ("service, PostgreSQL, 1 worker", "postgres", 1),
    "pg2": ("service, PostgreSQL, 2 workers", "postgres", 2),
}


# (what, a configuration with 2 workers, one with 1).  The last line bounds the second: the
# service on PostgreSQL does all that the service without a database does, and more.
SCALING = (
    ("sqlite: 2 workers / 1 worker", "sqlite2", "sqlite1"),
    ("pg: 2 workers / 1 worker", "pg2", "pg1"),
    ("no database, 2 workers / pg, 1 worker (the most pg's could be)", "nodb2", "pg1"),
)


def print_scaling(results: dict) -> None:
    for what, two, one in SCALING:
        if two in results and one in results:
            print(f"  {what} = {results[two]['rps'] / results[one]['rps']:.2f}x")


def print_medians(rounds: list[dict]) -> None:
    """Each configuration's median over the rounds, and the median of its ratios to the bare
    endpoint of the same round (each ratio measured side by side)."""
    print(f"\n  medians of {len(rounds)} rounds")
    for key, (name, backend, workers) in CONFIGS.items():
        runs = [r for r in rounds if key in r]
        if not runs:
            continue
        line = f"  {name:<34} {statistics.median(r[key]['rps'] for r in runs):8.0f}"
        ratios = [r[key]["rps"] / r[f"bare{workers}"]["rps"] for r in runs if backend and f"bare{workers}" in r]
        if ratios:
            line += f"   {statistics.median(ratios):.0%} of bare (rounds: {', '.join(f'{x:.0%}' for x in ratios)})"
        print(line)
    for what, two, one in SCALING:
        scaling = [r[two]["rps"] / r[one]["rps"] for r in rounds if two in r and one in r]
        if scaling:
            print(f"  {what} = {statistics.median(scaling):.2f}x (rounds: {', '.join(f'{x:.2f}' for x in scaling)})")


def print_bounds(rounds: list[dict]) -> None:
    """What 2 workers could serve at most on this machine, with every core busy at the CPU a
    post cost them (medians over the rounds), beside the two targets: 1.5x one worker, and
    70 % of the bare endpoint with 2 workers."""
    lines = []
    for backend in ("sqlite", "pg"):
        runs = [r for r in rounds if all(k in r for k in (f"{backend}1", f"{backend}2", "bare2"))]
        if not runs:
            continue
        bound = statistics.median(CORES * 1e6 / r[f"{backend}2"]["cpu_us"]["machine"] for r in runs)
        scaled = statistics.median(1.5 * r[f"{backend}1"]["rps"] for r in runs)
        of_bare = statistics.median(0.7 * r["bare2"]["rps"] for r in runs)
        lines.append(
            f"  {backend}: {bound:,.0f}/s at most, against 1.5x one worker "
            f"{scaled:,.0f}/s and 70 % of the bare endpoint {of_bare:,.0f}/s"
        )
    if lines:
        print("\n  2 workers, every core busy at the CPU a post cost them (medians):")
        print("\n".join(lines))


def compressed_posts(bodies: dict, scratch: Scratch, args, root: Path) -> None:
    """The 20 kB streams of every protocol in turn, posted as they are, zstd-compressed and
    gzip-compressed (Content-Encoding), to the service on PostgreSQL with 1 worker: the bytes
    on the wire, and the server's CPU a stream, side by side (``--rounds`` times in turn)."""
    try:  # the service's own dependency: the standard library's from 3.14, its backport before
        from compression import zstd
    except ImportError:
        from backports import zstd

    plain = [bodies[protocol, 20_000] for protocol in PROTOCOLS]
    variants = {"as they are": plain, "zstd (level 3)": [], "gzip (level 6)": []}
    for path in plain:
        data = path.read_bytes()
        variants["zstd (level 3)"].append(_write(path.with_suffix(".sse.zst"), zstd.compress(data, 3)))
        variants["gzip (level 6)"].append(_write(path.with_suffix(".sse.gz"), gzip.compress(data, 6, mtime=0)))
    raw = sum(p.stat().st_size for p in plain)
    print(
        f"\n  compressed posts: the {len(plain)} protocols' 20 kB streams in turn, PostgreSQL, 1 worker"
        f" ({args.rounds} round(s) in turn; CPU a stream: the server's processes)"
    )
    print(f"  {'body':<20} {'bytes/stream':>12} {'fewer':>6} {'streams/s':>9} {'server µs':>9} {'vs plain':>8}")
    found: dict[str, list[dict]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, paths in variants.items():
            server = start_service(scratch.postgres(), 1, root / "compressed.log")
            try:
                result = run_load(server, paths, args, "z")
            finally:
                server.stop()
            found[name].append(result)
    plain_us = statistics.median(r["cpu_us"]["service"] for r in found["as they are"])
    _print_compressed(variants, found, raw, plain_us)
    compressed_batches(plain, scratch, args, root)


def _print_compressed(variants: dict, found: dict, raw: int, plain_us: float) -> None:
    for name, paths in variants.items():
        size = sum(p.stat().st_size for p in paths)
        us = statistics.median(r["cpu_us"]["service"] for r in found[name])
        rps = statistics.median(r["rps"] for r in found[name])
        errors = sum(r["non_2xx"] + r["socket_errors"] for r in found[name])
        print(
            f"  {name:<20} {size / len(paths):12,.0f} {raw / size:5.1f}x {rps:9.0f} {us:9.0f} "
            f"{us / plain_us * 100 - 100:+7.1f}%" + (f"   {errors} errors" if errors else ""),
            flush=True,
        )


# (stream size, batch sizes posted side by side with the same streams posted alone)
BATCH_LOADS = ((2_000, (16, 64)), (20_000, (64,)))


def batched_posts(bodies: dict, scratch: Scratch, args, root: Path) -> None:
    """The streams of every protocol in turn, 2 kB (short answers, tool calls) and 20 kB, each
    posted alone and posted in batches (POST /v1/streams/batch), to the service on PostgreSQL
    with 1 worker and durable commits: streams stored a second, and the server's CPU a stream,
    side by side (``--rounds`` times in turn).  Every stream has a stream_id of its own; the
    rows committed are counted afterwards, since wrk sees a batch's 207, not each stream's own
    status."""
    print(
        f"\n  batches: the {len(PROTOCOLS)} protocols' streams in turn, PostgreSQL, 1 worker, durable commits"
        f" ({args.rounds} round(s) in turn; CPU a stream: the server's processes)"
    )
    print(
        f"  {'posted':<28} {'streams/s':>9} {'vs alone':>8} {'server µs':>9} {'p50 ms':>7} {'p99 ms':>7}"
        "  stored (each round)"
    )
    for stream_size, batch_sizes in BATCH_LOADS:
        paths = [bodies[protocol, stream_size] for protocol in PROTOCOLS]
        found: dict[int, list[dict]] = {size: [] for size in (0, *batch_sizes)}
        for _ in range(args.rounds):
            for size in found:
                server = start_service(scratch.postgres(), 1, root / "batches.log")
                try:
                    result = run_load(server, paths, args, "b", batch=size)
                    result["stored"] = committed_rows(server)
                finally:
                    server.stop()
                per = max(size, 1)
                result["streams_per_s"] = result["rps"] * per
                result["stream_us"] = result["cpu_us"]["service"] / per
                found[size].append(result)
        alone = statistics.median(r["streams_per_s"] for r in found[0])
        for size, results in found.items():
            rate = statistics.median(r["streams_per_s"] for r in results)
            us = statistics.median(r["stream_us"] for r in results)
            p50 = statistics.median(r["p50_ms"] for r in results)
            p99 = statistics.median(r["p99_ms"] for r in results)
            errors = sum(r["non_2xx"] + r["socket_errors"] for r in results)
            name = f"{stream_size // 1000} kB, " + ("alone" if not size else f"in batches of {size}")
            # every stream answered was stored, or the difference shows (wrk sees only the 207s;
            # the posts in flight when wrk stops are stored but not counted by it)
            stored = "/".join(
                "all" if r["stored"] >= r["posted"] else f"{r['stored']:,} of {r['posted']:,}" for r in results
            )
            print(
                f"  {name:<28} {rate:9.0f} {rate / alone:7.2f}x {us:9.1f} {p50:7.1f} {p99:7.1f}  {stored}"
                + (f"   {errors} errors" if errors else ""),
                flush=True,
            )


COMPRESSED_BATCH = 64
# Batches made beforehand for the compressed batches' runs (wrk cannot compress): enough that
# each stream is posted once in a run, at what 1 worker stores here (about 200 batches of 64
# 20 kB streams a second), plus a margin; a run that posts more shows it in the stored column.
# The runs are shorter than the others' (RUN_SECONDS), which keeps the batches to make few.
PREPARED_BATCHES_PER_SECOND = 300
RUN_SECONDS = (1.0, 4.0)  # warm-up, run


def compressed_batches(plain: list[Path], scratch: Scratch, args, root: Path) -> None:
    """20 kB streams of every protocol in batches of 64, posted as they are, zstd- and
    gzip-compressed (the whole batch, as the tap's poster sends it): a batch's one decoder
    serves 64 streams.  The batches as they are wrk makes as it goes (a stream_id each), the
    compressed ones are made beforehand, each of 64 different streams."""
    try:
        from compression import zstd
    except ImportError:
        from backports import zstd
    from fastsse_service.tap.spool import batch_item

    size = COMPRESSED_BATCH
    # 64 different streams in each batch (the same stream twice in one batch would compress
    # as a repeat, which real batches do not hold), of the same kind as the single posts'
    streams = [
        complete_stream(protocol, 20_000, seed=20_000 + k)
        for k in range(-(-size // len(PROTOCOLS)))
        for protocol in PROTOCOLS
    ]
    compressors = {
        "zstd (level 3)": (".batch.zst", lambda data: zstd.compress(data, 3)),
        "gzip (level 6)": (".batch.gz", lambda data: gzip.compress(data, 6, mtime=0)),
    }
    run_args = argparse.Namespace(**{**vars(args), "warmup": RUN_SECONDS[0], "seconds": RUN_SECONDS[1]})
    counts = {
        phase: int(seconds * PREPARED_BATCHES_PER_SECOND) for phase, seconds in zip("wm", RUN_SECONDS, strict=True)
    }
    directory = root / "batches"
    directory.mkdir(exist_ok=True)
    variants: dict[str, tuple[list[Path], list[Path]] | None] = {"as they are": None}
    variants.update((name, ([], [])) for name in compressors)
    wire = dict.fromkeys(variants, 0)
    for phase, count in counts.items():
        for n in range(count):
            body = b"".join(
                batch_item({"stream_id": f"{phase}{n}-{i}", "tool": "codex"}, streams[(n * size + i) % len(streams)])
                for i in range(size)
            )
            wire["as they are"] += len(body) if phase == "m" else 0
            for name, (suffix, compress) in compressors.items():
                packed = compress(body)
                prepared = variants[name]
                assert prepared is not None
                prepared[phase == "m"].append(_write(directory / f"{phase}{n}{suffix}", packed))
                wire[name] += len(packed) if phase == "m" else 0
    raw = wire["as they are"]
    print(
        f"  in batches of {size}, the whole batch compressed ({RUN_SECONDS[1]:g} s runs after "
        f"{RUN_SECONDS[0]:g} s of warm-up):"
    )
    found: dict[str, list[dict]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, prepared in variants.items():
            server = start_service(scratch.postgres(), 1, root / "compressed.log")
            try:
                result = run_load(server, plain, run_args, "zb", batch=size, prepared=prepared)
                result["stored"] = committed_rows(server)
            finally:
                server.stop()
            found[name].append(result)
    plain_us = statistics.median(r["cpu_us"]["service"] for r in found["as they are"]) / size
    for name, results in found.items():
        us = statistics.median(r["cpu_us"]["service"] for r in results) / size
        rate = statistics.median(r["rps"] for r in results) * size
        errors = sum(r["non_2xx"] + r["socket_errors"] for r in results)
        stored = "/".join(
            "all" if r["stored"] >= r["posted"] else f"{r['stored']:,} of {r['posted']:,}" for r in results
        )
        per_stream = wire[name] / (counts["m"] * size)
        print(
            f"  {name:<20} {per_stream:12,.0f} {raw / wire[name]:5.1f}x {rate:9.0f} {us:9.1f} "
            f"{us / plain_us * 100 - 100:+7.1f}%   stored: {stored}" + (f"   {errors} errors" if errors else ""),
            flush=True,
        )


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=20_000, help="bytes per stream (main table)")
    parser.add_argument("--quick", action="store_true", help="5 s runs, main table only")
    parser.add_argument("--only", choices=sorted(CONFIGS), action="append")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the main table's configurations this many times in turn, "
        "and print the medians: the machine's speed drifts between runs",
    )
    parser.add_argument("--no-sizes", action="store_true")
    parser.add_argument("--no-compression", action="store_true")
    parser.add_argument("--no-batches", action="store_true")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--admin-dsn", default=ADMIN_DSN)
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.warmup, args.no_sizes, args.no_compression, args.no_batches = 5, 2, True, True, True
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")

    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        root = Path(tmp)
        bodies = {}
        for protocol in PROTOCOLS:
            for size in (2_000, 20_000, 200_000, args.size):
                path = root / f"{protocol}-{size}.sse"
                path.write_bytes(complete_stream(protocol, size, seed=size))
                bodies[protocol, size] = path
        main_body = [bodies["chat", args.size]]
        scratch = Scratch(args.admin_dsn, root)
        import fastsse

        print(
            f"fastsse {fastsse.__version__} ({fastsse.IMPLEMENTATION} scanner), "
            f"{os.cpu_count()} CPUs, server stack: {server_stack()}"
        )
        print(
            f"load: wrk -t{args.threads} -c{args.connections} -d{args.seconds:g}s "
            f"(after {args.warmup:g} s of warm-up), POST of a complete "
            f"{main_body[0].stat().st_size / 1000:.1f} kB chat stream, a new stream_id each;"
            " durable commits (PostgreSQL synchronous_commit=on, SQLite synchronous=FULL)"
        )
        print(f"\n  {'configuration':<34} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7}   {'of bare':>7}  {'errors':>6}")
        rounds: list[dict] = []
        try:
            for _ in range(args.rounds):
                results: dict = {}
                rounds.append(results)
                for key, (name, backend, workers) in CONFIGS.items():
                    if args.only and key not in args.only:
                        continue
                    log = root / f"{key}.log"
                    if backend is None:
                        server = start_bare(workers, log)
                    elif backend == "nothing":
                        server = start_without_database(scratch.sqlite(), workers, log)
                    else:
                        url = scratch.sqlite() if backend == "sqlite" else scratch.postgres()
                        server = start_service(url, workers, log)
                    try:
                        result = run_load(server, main_body, args, key)
                        stored = committed_rows(server) if backend in ("sqlite", "postgres") else None
                    finally:
                        server.stop()
                    results[key] = result
                    bare = results.get(f"bare{workers}") if backend else None
                    extra = "" if stored is None else f"   {stored} stored (warm-up included)"
                    print_row(name, result, bare, extra + cpu_text(result, postgres=backend == "postgres"))
                print_scaling(results)
            if len(rounds) > 1:
                print_medians(rounds)
            print_bounds(rounds)

            if not args.no_sizes:
                print("\n  by stream size, service on PostgreSQL, 2 workers (MB = 10^6 bytes of posted streams)")
                print(f"  {'streams':<34} {'streams/s':>9} {'MB/s':>7} {'p50 ms':>7} {'p99 ms':>7}  {'errors':>6}")
                loads = [(f"chat, {size // 1000} kB", [bodies["chat", size]]) for size in (2_000, 20_000, 200_000)]
                loads.append((f"{len(PROTOCOLS)} protocols in turn, 20 kB", [bodies[d, 20_000] for d in PROTOCOLS]))
                for name, paths in loads:
                    server = start_service(scratch.postgres(), 2, root / "sizes.log")
                    try:
                        result = run_load(server, paths, args, "size")
                    finally:
                        server.stop()
                    mean = sum(p.stat().st_size for p in paths) / len(paths)
                    errors = result["non_2xx"] + result["socket_errors"]
                    print(
                        f"  {name:<34} {result['rps']:9.0f} {result['rps'] * mean / 1e6:7.1f} "
                        f"{result['p50_ms']:7.1f} {result['p99_ms']:7.1f}  {errors:>6}",
                        flush=True,
                    )

            if not args.no_compression:
                compressed_posts(bodies, scratch, args, root)
            if not args.no_batches:
                batched_posts(bodies, scratch, args, root)

            if not args.no_profile:
                print("\n  where the service's CPU goes: PostgreSQL, 1 worker, the same load")
                server = start_service(scratch.postgres(), 1, root / "profile.log")
                try:
                    profile(server, main_body, args, root)
                finally:
                    server.stop()
        finally:
            scratch.drop()


if __name__ == "__main__":
    main()

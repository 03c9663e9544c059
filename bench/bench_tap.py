"""What the tap adds to a client's stream: time to first byte and total time, through the tap
and straight to the upstream, side by side in one run.

Starts on 127.0.0.1 the mock provider, the verdict service (SQLite, in a scratch directory) and
``fastsse-service tap`` in front of the mock, posting to the service.  Then:

1. latency: ``curl`` (a C client, so the client does not measure itself) fetches one streamed
   answer at a time, alternating direct and through the tap, and reports time to first byte
   and total time (median and p99) per path and the difference;
2. throughput: ``wrk`` with C connections posts streamed requests for a fixed time, direct
   and through the tap, and reports requests/s and latency.

Every request through the tap is judged and posted; the run checks at the end that the
service stored a verdict for each (so the tap's measured cost includes its real work).

    python bench/bench_tap.py              # about a minute and a half
    python bench/bench_tap.py --quick      # about 30 seconds

Needs ``curl`` and ``wrk`` (Debian packages).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from loadtests.localhost import free_port  # noqa: E402

TOKEN = "bench-tap-secret"
READ_TOKEN = "bench-tap-read"
BODY = {
    "model": "mock-model",
    "stream": True,
    "stream_options": {"include_usage": True},
    "messages": [{"role": "user", "content": "hello"}],
}

WRK_SCRIPT = """
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["user-agent"] = "bench-wrk/1"
wrk.body = [[%s]]
"""


def start(command: list[str], log: Path, ready: str, env: dict | None = None):
    out = open(log, "wb")
    process = subprocess.Popen(
        command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
    )
    deadline = time.monotonic() + 60
    while ready not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{command[2:4]} did not start:\n{log.read_text()}")
        time.sleep(0.05)
    return process


def curl_times(url: str, agent: str) -> tuple[float, float]:
    out = subprocess.run(
        [
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-N",
            "-A",
            agent,
            "-H",
            "content-type: application/json",
            "--data-binary",
            json.dumps(BODY),
            "-w",
            "%{time_starttransfer} %{time_total}",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    first, total = (float(x) * 1000 for x in out.split())
    return first, total


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def wrk(url: str, connections: int, seconds: int, script: Path) -> dict:
    out = subprocess.run(
        [
            "wrk",
            "-t",
            str(min(2, connections)),
            "-c",
            str(connections),
            "-d",
            f"{seconds}s",
            "--latency",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])
    total = int(re.search(r"(\d+) requests in", out)[1])
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    latency = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", out, re.M))
    return {
        "rate": rate,
        "requests": total,
        "non2xx": int(errors[1]) if errors else 0,
        "p50": latency.get("50"),
        "p99": latency.get("99"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--requests", type=int, help="latency samples per path")
    parser.add_argument(
        "--sentences", type=int, default=40, help="the answer's length (40: about 1,300 events, 200 KB in chat)"
    )
    args = parser.parse_args()
    samples = args.requests or (100 if args.quick else 400)
    seconds = 5 if args.quick else 15
    for tool in ("curl", "wrk"):
        if not shutil.which(tool):
            raise SystemExit(f"needs {tool} (apt-get install {tool})")

    scratch = Path(tempfile.mkdtemp(prefix="fastsse-bench-tap-"))
    mock_port, service_port, tap_port = free_port(), free_port(), free_port()
    python = sys.executable
    processes = []
    try:
        processes.append(
            start(
                [
                    python,
                    "-m",
                    "loadtests.mock_provider",
                    "--port",
                    str(mock_port),
                    "--sentences",
                    str(args.sentences),
                    "--log",
                    os.devnull,
                ],
                scratch / "mock.log",
                "mock provider on",
            )
        )
        processes.append(
            start(
                [python, "-m", "fastsse_service", "serve", "--port", str(service_port)],
                scratch / "service.log",
                "Uvicorn running",
                {
                    "DATABASE_URL": f"sqlite:///{scratch / 'verdicts.sqlite3'}",
                    "INGEST_TOKENS": f"bench:{TOKEN}",
                    "READ_TOKENS": f"reader:{READ_TOKEN}",
                },
            )
        )
        processes.append(
            start(
                [
                    python,
                    "-m",
                    "fastsse_service",
                    "tap",
                    "--listen",
                    f"127.0.0.1:{tap_port}",
                    "--upstream",
                    f"http://127.0.0.1:{mock_port}",
                    "--ingest",
                    f"http://127.0.0.1:{service_port}",
                ],
                scratch / "tap.log",
                "Uvicorn running",
                {"TAP_INGEST_TOKEN": TOKEN, "TAP_SPOOL_DIR": str(scratch / "spool")},
            )
        )
        direct = f"http://127.0.0.1:{mock_port}/v1/chat/completions"
        tapped = f"http://127.0.0.1:{tap_port}/v1/chat/completions"
        size = len(httpx.post(direct, json=BODY).content)
        print(
            f"one streamed chat answer: {size} bytes; {samples} requests per path, alternating, one at a time (curl)\n"
        )
        for _ in range(10):  # warm both paths (connections, caches)
            curl_times(direct, "bench-warm/1"), curl_times(tapped, "bench-warm/1")
        times = {"direct": [], "tap": []}
        for _ in range(samples):
            times["direct"].append(curl_times(direct, "bench-direct/1"))
            times["tap"].append(curl_times(tapped, "bench-curl/1"))
        print(f"{'':8} {'first byte p50':>15} {'p99':>8} {'total p50':>11} {'p99':>8}   (ms)")
        medians = {}
        for path, pairs in times.items():
            first, total = [p[0] for p in pairs], [p[1] for p in pairs]
            medians[path] = (statistics.median(first), statistics.median(total))
            print(f"{path:8} {medians[path][0]:15.2f} {p99(first):8.2f} {medians[path][1]:11.2f} {p99(total):8.2f}")
        print(
            f"{'added':8} {medians['tap'][0] - medians['direct'][0]:15.2f} {'':8} "
            f"{medians['tap'][1] - medians['direct'][1]:11.2f}\n"
        )

        script = scratch / "post.lua"
        script.write_text(WRK_SCRIPT % json.dumps(BODY))
        print(f"wrk, {seconds} s per run, 2 threads")
        print(f"{'':8} {'connections':>11} {'req/s':>9} {'p50':>9} {'p99':>9} {'non-2xx':>8}")
        posted = 0
        for connections in (1, 16):
            for path, url in (("direct", direct), ("tap", tapped)):
                result = wrk(url, connections, seconds, script)
                posted += result["requests"] if path == "tap" else 0
                print(
                    f"{path:8} {connections:11} {result['rate']:9.0f} {result['p50']:>9} "
                    f"{result['p99']:>9} {result['non2xx']:8}"
                )

        expected = samples + posted
        stored, deadline = 0, time.monotonic() + 120
        while time.monotonic() < deadline:
            answer = httpx.get(
                f"http://127.0.0.1:{service_port}/v1/rates",
                params={"window": "1h", "by": "tool"},
                headers={"authorization": f"Bearer {READ_TOKEN}"},
            ).json()
            stored = sum(g["total"] for g in answer["groups"] if g["tool"] in ("bench-curl", "bench-wrk"))
            if stored >= expected:
                break
            time.sleep(0.5)
        print(
            f"\nverdicts stored for the tapped requests: {stored}; requests made: at least "
            f"{expected} (wrk does not count those still open when it stops)"
        )
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(30)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

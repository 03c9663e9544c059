"""The whole suite, several times in a row, with every core kept busy by another load.

A test that passes on an idle machine and fails on a busy one waits for a state with a sleep,
or times what it should order; this run finds it.  ``make test-loaded`` runs it as CI would
(five runs); it stops at the first run that fails, and always stops the load it started.

    python -m tests.loaded_runs --runs 5
    python -m tests.loaded_runs --runs 2 -- tests/service/test_tap.py    # pytest's arguments

The load is ``stress-ng --cpu N`` where Debian's stress-ng is installed, else one busy-loop
process per core.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def start_load(cores: int) -> list[subprocess.Popen]:
    """Processes that keep ``cores`` cores busy until stopped."""
    if shutil.which("stress-ng"):
        return [subprocess.Popen(["stress-ng", "--cpu", str(cores), "--quiet"], start_new_session=True)]
    spin = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", spin], start_new_session=True) for _ in range(cores)]


def stop_load(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # stress-ng's workers are in its group
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _stopped(signum, frame) -> None:
    raise SystemExit(f"stopped by signal {signum}")  # so that the load is stopped too


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="how many runs in a row (default 5)")
    parser.add_argument(
        "--cores", type=int, default=len(os.sched_getaffinity(0)), help="cores to keep busy (default: all)"
    )
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --); default: the whole suite")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, _stopped)
    load = start_load(args.cores)
    print(f"load: {args.cores} busy cores ({'stress-ng' if shutil.which('stress-ng') else 'busy loops'})", flush=True)
    try:
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args.pytest_args], cwd=REPO
            )
            took = time.monotonic() - started
            verdict = "passed" if done.returncode == 0 else f"FAILED (pytest exit {done.returncode})"
            print(f"run {run} of {args.runs}: {verdict} in {took:.0f} s", flush=True)
            if done.returncode != 0:
                return 1
    finally:
        stop_load(load)
    print(f"all {args.runs} runs passed under load")
    return 0


if __name__ == "__main__":
    sys.exit(main())

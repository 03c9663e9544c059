"""The load and reliability commands, at a CI size: each runs as a user runs it, and its own
pass/fail judgement (its exit status) is checked along with the figures it prints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import dependencies

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: float) -> tuple[int, str, dict]:
    done = subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    match = re.search(r"^RESULT (\{.*\})$", done.stdout, re.M)
    return done.returncode, done.stdout + done.stderr, json.loads(match[1]) if match else {}


@pytest.fixture
def postgres():
    dependencies.postgres().close()  # skips, or fails in CI, when PostgreSQL is unreachable


def test_the_load_command_runs_locust_and_reports(tmp_path):
    report = tmp_path / "report"
    code, output, _ = run(
        "loadtests.load",
        "--duration",
        "8",
        "--users",
        "6",
        "--database",
        "sqlite",
        "--report-dir",
        str(report),
        timeout=240,
    )
    assert code == 0, output  # every answer had the status and the category it should
    assert re.search(r"stored\s+\d+ streams/s\s+[\d.]+ MB/s", output), output
    assert (report / "report.html").stat().st_size > 10_000
    stats = (report / "load_stats.csv").read_text()
    for name in ("[chat]", "[responses]", "[anthropic]", "[gemini]"):
        assert f"POST /v1/streams {name}" in stats


def test_overload_is_refused_quickly_and_nothing_acknowledged_is_lost(postgres):
    dependencies.wrk()
    code, output, result = run("loadtests.reliability", "overload", "--quick", timeout=300)
    assert code == 0, output
    over, after = result["overload"], result["after"]
    assert over["statuses"].get("503", 0) > 0, f"the overload was not refused: {output}"
    assert over["no_retry_after"] == 0 and over["timeouts"] == 0 and over["socket_errors"] == 0
    assert over["max_ms"] < 5_000, "a request waited seconds instead of being refused"
    assert set(after["statuses"]) == {"201"}, "it did not recover when the load dropped"
    assert result["acknowledged_total"] <= result["stored"]


def test_a_soak_keeps_memory_and_descriptors_flat(postgres):
    # A minute, half of it warm-up (caches and metric label sets fill first); a looser bound
    # than the 10-minute command's, still far below a leak of a kilobyte a post (~18 MB/min).
    code, output, result = run(
        "loadtests.reliability",
        "soak",
        "--seconds",
        "60",
        "--users",
        "4",
        "--warmup-seconds",
        "30",
        "--max-rss-mb-per-min",
        "3",
        timeout=300,
    )
    assert result, output
    assert result["failures"] == 0, output
    assert result["fds_per_min"] <= 1.0, output
    assert code == 0, output


def test_a_database_killed_mid_load_loses_no_acknowledged_verdict(postgres):
    dependencies.postgres_server_programs()
    code, output, result = run("loadtests.reliability", "pg-kill", "--quick", timeout=300)
    assert result, output
    assert result["acknowledged"] > 0 and result["missing"] == 0, output
    assert result["duplicates_acknowledged"] == 0, "a retried post was acknowledged as new twice"
    assert result["retried_posts"] > 0, "no post was refused during the outage"
    assert result["stored_after_restart"] > 0, "the service did not recover by itself"
    assert code == 0, output

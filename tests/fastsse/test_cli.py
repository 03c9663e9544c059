"""The command line: fastsse scan PATH... prints one JSON verdict per path."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

COMPLETE = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
CUT = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'


def run(*args, stdin: bytes = b""):
    return subprocess.run([sys.executable, "-m", "fastsse", *args], input=stdin, capture_output=True, timeout=60)


@pytest.fixture
def streams(tmp_path):
    (tmp_path / "complete.sse").write_bytes(COMPLETE)
    (tmp_path / "cut.sse").write_bytes(CUT)
    return tmp_path


def test_scan_prints_one_verdict_per_path_in_order(streams):
    result = run("scan", str(streams / "cut.sse"), str(streams / "complete.sse"))
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [v["path"] for v in lines] == [str(streams / "cut.sse"), str(streams / "complete.sse")]
    assert [v["category"] for v in lines] == ["no_end_marker", "complete"]
    for verdict in lines:
        assert {"protocol", "category", "complete", "finish_reason", "retryable", "message"} <= set(verdict)


def test_scan_reads_stdin_and_takes_options():
    result = run("scan", "--protocol", "chat", "--transport", "reset", "-", stdin=COMPLETE)
    verdict = json.loads(result.stdout)
    assert (verdict["path"], verdict["protocol"], verdict["category"]) == ("-", "chat", "transport_error")


def test_max_event_bytes_option():
    result = run("scan", "--max-event-bytes", "16", "-", stdin=COMPLETE)
    assert json.loads(result.stdout)["category"] == "limit_exceeded"


def test_fail_on_incomplete_sets_the_exit_code(streams):
    assert run("scan", "--fail-on-incomplete", str(streams / "complete.sse")).returncode == 0
    result = run("scan", "--fail-on-incomplete", str(streams / "complete.sse"), str(streams / "cut.sse"))
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == 2


def test_unreadable_path_is_reported_and_the_rest_still_judged(streams):
    result = run("scan", str(streams / "missing.sse"), str(streams / "complete.sse"))
    assert result.returncode == 2
    assert b"cannot read" in result.stderr and b"missing.sse" in result.stderr
    assert json.loads(result.stdout)["category"] == "complete"


@pytest.mark.parametrize(
    "args", [["scan"], ["scan", "--protocol", "smoke", "-"], ["scan", "--max-event-bytes", "0", "-"]]
)
def test_bad_arguments_fail_with_a_reason(args):
    result = run(*args)
    assert result.returncode == 2
    assert b"error:" in result.stderr


def test_version_comes_from_the_package_metadata():
    from importlib import metadata

    import fastsse

    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == (
        f"fastsse {metadata.version('fastsse')} ({fastsse.IMPLEMENTATION} scanner)"
    )
    assert fastsse.__version__ == metadata.version("fastsse")

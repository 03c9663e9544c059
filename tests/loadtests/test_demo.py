"""`make demo` works: the service on SQLite, a past of generated traffic posted through the API."""

from __future__ import annotations

import sqlite3

from loadtests import demo
from loadtests.localhost import free_port


def test_the_demo_fills_a_dashboard(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert demo.main(["--port", str(free_port()), "--days", "2", "--streams", "300", "--trickle", "0"]) == 0
    connection = sqlite3.connect(tmp_path / "fastsse-demo.sqlite3")
    tools, chains, failed, gateways = connection.execute(
        "SELECT count(DISTINCT tool), sum(previous_category IS NOT NULL), sum(NOT complete), "
        "count(DISTINCT gateway) FROM verdicts"
    ).fetchone()
    total = connection.execute("SELECT count(*) FROM verdicts").fetchone()[0]
    oldest = connection.execute("SELECT min(ended_at) FROM verdicts").fetchone()[0]
    assert total >= 300 and tools == len(demo.TOOLS) and gateways == 2
    assert chains > 0 and 0 < failed < total / 5
    assert oldest < connection.execute("SELECT datetime('now', '-1 day')").fetchone()[0]

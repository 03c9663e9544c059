"""Labels whose values come from clients (gateways, and tools: the tap takes them from a
User-Agent) stay usable however many there are: the counting reads keep the busiest ``top`` of
each and fold the rest into one '(other)' value, with the totals unchanged (issue 25: 3,000
tools made /v1/rates 651 KB)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import insert

from fastsse_service.db import make_engine
from fastsse_service.models import VerdictRollup
from fastsse_service.queries import FOLDED

from .conftest import READ

PROTOCOLS = ("chat", "responses")


def seed(database_url: str, tools: int, *, gateways: int = 1, minutes: int = 1) -> None:
    """Rollups as the writer keeps them: tool-{i} has i + 1 verdicts a protocol and minute,
    one of them silent, and as many requests, one whose first attempt failed."""
    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    rows = [
        {
            "minute": now - timedelta(minutes=minute),
            "gateway": f"gw-{tool % gateways}",
            "tool": f"tool-{tool:05d}",
            "protocol": protocol,
            "category": "no_end_marker",
            "shard": 1,
            "verdicts": tool + 1,
            "silent": 1,
            "model_fallbacks": 0,
            "bytes": 100 * (tool + 1),
            "requests": tool + 1,
            "first_failures": 1,
            "retries": 0,
            "recoveries": 0,
            "retries_of_final": 0,
        }
        for tool in range(tools)
        for protocol in PROTOCOLS
        for minute in range(minutes)
    ]
    engine = make_engine(database_url)
    with engine.begin() as connection:
        connection.execute(insert(VerdictRollup.__table__), rows)
    engine.dispose()


def read(client, path: str, **params):
    answer = client.get(path, params=params, headers=READ)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_rates_keep_the_busiest_tools_and_fold_the_rest_with_the_totals_unchanged(client, database_url):
    seed(database_url, tools=10)
    rates = read(client, "/v1/rates", by="tool,protocol", top=3, window="1h")
    assert rates["folded"] == {"tool": 7}
    keys = [(g["tool"], g["protocol"]) for g in rates["groups"]]
    assert keys == [(f"tool-{i:05d}", p) for i in (7, 8, 9) for p in PROTOCOLS] + [(FOLDED, p) for p in PROTOCOLS]
    other = rates["groups"][-1]
    assert other["total"] == sum(range(1, 8)) and other["silent"] == 7
    assert other["by_category"] == {"no_end_marker": sum(range(1, 8))}
    assert other["rate"] == pytest.approx(7 / sum(range(1, 8)))
    everything = read(client, "/v1/rates", by="tool,protocol", window="1h")
    assert everything["folded"] == {} and len(everything["groups"]) == 20
    assert sum(g["total"] for g in rates["groups"]) == sum(g["total"] for g in everything["groups"])
    # One folded tool, asked for by name, is there alone.
    alone = read(client, "/v1/rates", by="tool", top=3, tool="tool-00002", window="1h")
    assert [(g["tool"], g["total"]) for g in alone["groups"]] == [("tool-00002", 6)] and alone["folded"] == {}


def test_a_protocol_is_never_folded_and_gateways_are(client, database_url):
    seed(database_url, tools=6, gateways=3)
    rates = read(client, "/v1/rates", by="gateway,protocol", top=1, window="1h")
    assert rates["folded"] == {"gateway": 2}
    assert [(g["gateway"], g["protocol"]) for g in rates["groups"]] == [
        ("gw-2", "chat"),
        ("gw-2", "responses"),
        (FOLDED, "chat"),
        (FOLDED, "responses"),
    ]


def test_series_fold_the_same_tools_in_every_bucket(client, database_url):
    seed(database_url, tools=5, minutes=3)
    series = read(client, "/v1/series", by="tool", top=2, window="1h")
    assert series["folded"] == {"tool": 3}
    for point in series["points"]:
        assert [g["tool"] for g in point["groups"]] == ["tool-00003", "tool-00004", FOLDED]
        assert point["groups"][-1]["total"] == 2 * (1 + 2 + 3)


def test_retries_fold_too(client, database_url):
    seed(database_url, tools=4)
    retries = read(client, "/v1/retries", by="tool", top=2, window="1h")
    assert retries["folded"] == {"tool": 2}
    assert [(g["tool"], g["requests"], g["never_recovered"]) for g in retries["groups"]] == [
        ("tool-00002", 6, 2),
        ("tool-00003", 8, 2),
        (FOLDED, 6, 4),
    ]


@pytest.mark.parametrize("top", ["0", "1001", "ten"])
def test_a_top_out_of_range_is_a_422(client, top):
    answer = client.get("/v1/rates", params={"top": top}, headers=READ)
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["query", "top"]


def test_ten_thousand_tools_make_small_answers(client, database_url):
    """By default, 100 tools of 10,000; the chart draws its few lines."""
    seed(database_url, tools=10_000)
    answer = client.get("/v1/rates", params={"by": "tool,protocol", "window": "1h"}, headers=READ)
    rates = answer.json()
    assert rates["folded"] == {"tool": 9_900} and len(rates["groups"]) == 2 * 101
    assert len(answer.content) < 100_000, len(answer.content)
    assert sum(g["total"] for g in rates["groups"]) == 2 * sum(range(1, 10_001))
    svg = client.get("/v1/series.svg", params={"by": "tool", "window": "1h"}, headers=READ)
    assert svg.status_code == 200 and svg.text.count("<polyline") <= 6 and len(svg.content) < 50_000
    assert "others" in svg.text and FOLDED not in svg.text

"""GET /v1/verdicts, /v1/rates, the probes and the OpenAPI document."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from fastsse_service.api.filters import parse_window
from fastsse_service.db import make_engine, make_sessionmaker
from fastsse_service.queries import Span, silent_rates
from loadtests.wire import short_stream

from .conftest import INGEST, READ


@pytest.fixture
def posted(client):
    """Six stored verdicts: 3 codex/chat (1 complete, 2 silent), 2 claude-code/anthropic, 1 reset."""
    plan = [
        ("codex", short_stream(), {}),
        ("codex", short_stream("chat", "F2"), {}),
        ("codex", short_stream("chat", "F4"), {}),
        ("claude-code", short_stream("anthropic"), {}),
        ("claude-code", short_stream("anthropic", "F4"), {}),
        ("codex", short_stream("chat", "F2"), {"transport": "reset"}),
    ]
    for i, (tool, body, extra) in enumerate(plan):
        response = client.post(
            "/v1/streams", params={"stream_id": f"r{i}", "tool": tool, **extra}, content=body, headers=INGEST
        )
        assert response.status_code == 201
    return plan


def verdicts(client, **params):
    response = client.get("/v1/verdicts", params=params, headers=READ)
    assert response.status_code == 200, response.text
    return response.json()


def test_verdicts_newest_first_with_filters(client, posted):
    page = verdicts(client)
    assert [v["stream_id"] for v in page["verdicts"]] == [f"r{i}" for i in range(5, -1, -1)]
    assert page["next_cursor"] is None
    assert {v["stream_id"] for v in verdicts(client, tool="claude-code")["verdicts"]} == {"r3", "r4"}
    assert [v["stream_id"] for v in verdicts(client, silent="true")["verdicts"]] == ["r4", "r2", "r1"]
    assert [v["stream_id"] for v in verdicts(client, category="transport_error")["verdicts"]] == ["r5"]
    assert len(verdicts(client, protocol="anthropic", silent="false")["verdicts"]) == 1
    assert verdicts(client, gateway="signer")["verdicts"] == []


def test_verdicts_time_range(client, posted):
    now = datetime.now(timezone.utc)
    assert len(verdicts(client, since=(now - timedelta(minutes=5)).isoformat())["verdicts"]) == 6
    assert verdicts(client, since=(now + timedelta(minutes=5)).isoformat())["verdicts"] == []
    assert verdicts(client, until=(now - timedelta(minutes=5)).isoformat())["verdicts"] == []
    # A time without a zone is UTC.
    naive = (now - timedelta(minutes=5)).replace(tzinfo=None).isoformat()
    assert len(verdicts(client, since=naive)["verdicts"]) == 6


def test_cursor_pagination_walks_every_row_once(client, posted):
    seen, cursor = [], None
    while True:
        params = {"limit": 4} if cursor is None else {"limit": 4, "cursor": cursor}
        page = verdicts(client, **params)
        seen += [v["stream_id"] for v in page["verdicts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"r{i}" for i in range(5, -1, -1)]


@pytest.mark.parametrize(
    "params", [{"cursor": "garbage"}, {"limit": 0}, {"limit": 1001}, {"since": "yesterday"}, {"silent": "maybe"}]
)
def test_bad_verdict_queries_get_422(client, params):
    response = client.get("/v1/verdicts", params=params, headers=READ)
    assert response.status_code == 422
    assert [error["loc"] for error in response.json()["detail"]] == [["query", *params]]


def test_rates_by_tool_and_protocol(client, posted):
    response = client.get("/v1/rates", params={"window": "1h"}, headers=READ)
    assert response.status_code == 200
    rates = response.json()
    assert rates["window"] == 3600 and rates["by"] == ["tool", "protocol"]
    groups = {(g["tool"], g["protocol"]): g for g in rates["groups"]}
    codex = groups[("codex", "chat")]
    assert (codex["total"], codex["silent"], codex["failed"]) == (4, 2, 3)
    assert codex["rate"] == 0.5
    assert codex["by_category"] == {"complete": 1, "no_end_marker": 1, "truncated_length": 1, "transport_error": 1}
    claude = groups[("claude-code", "anthropic")]
    assert (claude["total"], claude["silent"], claude["rate"]) == (2, 1, 0.5)
    assert "gateway" not in claude


def test_rates_by_gateway_only(client, posted):
    rates = client.get("/v1/rates", params={"window": "900", "by": "gateway"}, headers=READ).json()
    assert rates["groups"] == [
        {
            "gateway": "gw1",
            "total": 6,
            "silent": 3,
            "rate": 0.5,
            "failed": 4,
            "model_fallbacks": 0,
            "bytes": sum(len(body) for _, body, _ in posted),
            "by_category": {"complete": 2, "no_end_marker": 1, "truncated_length": 2, "transport_error": 1},
            "silent_by_category": {"no_end_marker": 1, "truncated_length": 2},
        }
    ]


def test_rates_window_excludes_older_minutes(database_url, client, posted):
    engine = make_engine(database_url)
    with make_sessionmaker(engine)() as session:
        later = datetime.now(timezone.utc) + timedelta(hours=2)
        groups, _ = silent_rates(session, Span.of(seconds=3600, now=later), by=("tool",))
        assert groups == []
        groups, _ = silent_rates(session, Span.of(seconds=3 * 3600, now=later), by=("tool",))
        assert sum(g["total"] for g in groups) == 6
    engine.dispose()


@pytest.mark.parametrize(
    "params", [{"window": "0"}, {"window": "1w"}, {"window": "30s"}, {"window": "401d"}, {"by": "category"}, {"by": ""}]
)
def test_bad_rate_queries_get_422_with_a_reason(client, params):
    response = client.get("/v1/rates", params=params, headers=READ)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["query", *params] and "must be" in error["msg"]


def test_a_since_ahead_of_the_clock_is_a_422(client):
    # It was a 200 with a window of minus 251,605,544,035 seconds.
    response = client.get("/v1/rates", params={"since": "9999-12-31T00:00:00Z"}, headers=READ)
    assert response.status_code == 422 and "ahead of the service's clock" in response.text


def test_window_forms():
    assert parse_window("3600") == parse_window("60m") == parse_window("1h") == 3600
    assert parse_window("7d") == 7 * 86400
    assert parse_window("90s") == 90


def test_probes(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["database"] == "reachable"


def test_openapi_documents_every_route(client):
    spec = client.get("/openapi.json").json()
    assert {"/v1/streams", "/v1/verdicts", "/v1/rates", "/healthz", "/readyz", "/metrics"} <= set(spec["paths"])
    ingest = spec["paths"]["/v1/streams"]["post"]
    assert {"200", "201", "400", "401", "409", "413", "415", "422", "503"} <= set(ingest["responses"])
    assert "text/event-stream" in ingest["requestBody"]["content"]
    params = {p["name"] for p in ingest["parameters"] if p["in"] == "query"}
    assert [p["name"] for p in ingest["parameters"] if p["in"] == "header"] == ["Content-Encoding"]
    assert params == {
        "stream_id",
        "protocol",
        "tool",
        "transport",
        "upstream_status",
        "model_requested",
        "request_id",
        "attempt",
        "ended_at",
    }


def test_rates_filters_and_an_explicit_span(client, posted):
    codex = client.get("/v1/rates", params={"tool": "codex", "by": "protocol"}, headers=READ).json()["groups"]
    assert [(g["protocol"], g["total"]) for g in codex] == [("chat", 4)]
    now = datetime.now(timezone.utc)
    span = {
        "since": (now - timedelta(minutes=10)).isoformat(),
        "until": (now + timedelta(minutes=2)).isoformat(),
        "by": "gateway",
    }
    rates = client.get("/v1/rates", params=span, headers=READ).json()
    assert rates["groups"][0]["total"] == 6 and rates["until"] is not None
    before = {**span, "until": (now - timedelta(minutes=5)).isoformat()}
    assert client.get("/v1/rates", params=before, headers=READ).json()["groups"] == []
    assert client.get("/v1/rates", params={"until": now.isoformat()}, headers=READ).status_code == 422


def test_series_buckets_and_its_chart(client, posted):
    series = client.get("/v1/series", params={"window": "1h", "by": "tool"}, headers=READ).json()
    assert series["bucket"] == 60 and series["by"] == "tool"
    totals = {}
    for point in series["points"]:
        assert datetime.fromisoformat(point["start"].replace("Z", "+00:00")).second == 0
        for group in point["groups"]:
            totals[group["tool"]] = totals.get(group["tool"], 0) + group["total"]
    assert totals == {"codex": 4, "claude-code": 2}
    week = client.get("/v1/series", params={"window": "7d"}, headers=READ).json()
    assert week["bucket"] == 7200 and week["by"] is None
    assert sum(g["total"] for p in week["points"] for g in p["groups"]) == 6
    svg = client.get("/v1/series.svg", params={"window": "1h", "by": "tool"}, headers=READ)
    assert svg.headers["content-type"].startswith("image/svg+xml")
    assert svg.text.startswith("<svg") and "codex (4 streams)" in svg.text
    assert "claude-code (2 streams)" in svg.text and "<script" not in svg.text
    too_fine = client.get("/v1/series", params={"window": "30d", "bucket": "60"}, headers=READ)
    assert too_fine.status_code == 422


def test_one_verdict_by_id_and_the_failures_only(client, posted):
    failures = client.get("/v1/verdicts", params={"complete": "false"}, headers=READ).json()
    assert [v["stream_id"] for v in failures["verdicts"]] == ["r5", "r4", "r2", "r1"]
    first = failures["verdicts"][0]
    one = client.get(f"/v1/verdicts/{first['id']}", headers=READ)
    assert one.status_code == 200 and one.json() == first
    assert client.get("/v1/verdicts/999999", headers=READ).status_code == 404

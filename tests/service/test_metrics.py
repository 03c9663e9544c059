"""Metric names and the series that exist before any traffic (alert rules divide by them)."""

from __future__ import annotations

import httpx
from prometheus_client import Counter, Gauge, Histogram

import fastsse
from fastsse_service import metrics
from loadtests.wire import short_stream

from .conftest import INGEST, metric_total

DEFINED = {name: value for name, value in vars(metrics).items() if isinstance(value, (Counter, Gauge, Histogram))}


def metric_name(metric) -> str:
    # prometheus_client keeps a counter's name without its _total suffix
    return metric._name + ("_total" if isinstance(metric, Counter) else "")


def test_every_metric_has_the_prefix_and_a_unit_or_total():
    assert DEFINED
    for metric in DEFINED.values():
        name = metric_name(metric)
        assert name.startswith("fastsse_"), name
        if isinstance(metric, Counter):
            assert name.endswith("_total"), name
        if isinstance(metric, Histogram):
            assert name.endswith(("_seconds", "_bytes", "_verdicts")), name


def test_alerting_series_exist_at_zero_before_any_traffic(service_process, sqlite_url):
    service = service_process({"DATABASE_URL": sqlite_url})
    text = httpx.get(f"{service.url}/metrics").text
    for name in ("fastsse_streams_total", "fastsse_silent_streams_total", "fastsse_stream_model_fallbacks_total"):
        for tool in ("codex", "claude-code", "other", "unknown"):
            for protocol in ("chat", "responses", "anthropic", "gemini", "unknown"):
                sample = f'{name}{{protocol="{protocol}",tool="{tool}"}} 0.0'
                assert sample in text, sample
    for status in ("201", "200", "409", "413", "422", "503"):
        assert f'fastsse_ingest_requests_total{{status="{status}"}} 0.0' in text
    assert (
        f'fastsse_build_info{{implementation="{fastsse.IMPLEMENTATION}",version="{fastsse.__version__}"}} 1.0'
    ) in text
    assert metric_total(text, "fastsse_db_write_queue_capacity") > 0


def test_a_silent_failure_counts_in_both_series(client):
    before = client.get("/metrics").text
    response = client.post(
        "/v1/streams", params={"stream_id": "m1", "tool": "codex"}, content=short_stream("chat", "F2"), headers=INGEST
    )
    assert response.status_code == 201
    after = client.get("/metrics").text

    def grown(name: str, **labels: str) -> float:
        return metric_total(after, name, **labels) - metric_total(before, name, **labels)

    assert grown("fastsse_streams_total", tool="codex", protocol="chat") == 1
    assert grown("fastsse_silent_streams_total", tool="codex", protocol="chat") == 1
    assert grown("fastsse_stream_verdicts_total", tool="codex", category="no_end_marker", silent="true") == 1
    assert grown("fastsse_ingest_requests_total", status="201") == 1


def test_a_post_without_a_tool_is_labelled_unknown(client):
    with httpx.Client(base_url=client.base_url) as http:
        before = http.get("/metrics").text
        http.post("/v1/streams", params={"stream_id": "no-tool"}, content=short_stream(), headers=INGEST)
        after = http.get("/metrics").text
    assert (
        metric_total(after, "fastsse_streams_total", tool="unknown")
        - metric_total(before, "fastsse_streams_total", tool="unknown")
    ) == 1

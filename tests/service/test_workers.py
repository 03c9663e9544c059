"""With --workers 2, /metrics adds up every worker's counts."""

from __future__ import annotations

import concurrent.futures

import httpx

from loadtests.wire import short_stream

from .conftest import INGEST, metric_total

POSTS = 80


def test_metrics_count_every_post_across_two_workers(service_process, database_url):
    service = service_process({"DATABASE_URL": database_url}, workers=2)
    bodies = [short_stream(), short_stream("chat", "F2")]

    def send(i: int) -> int:
        # A new connection each time, so the kernel spreads them over both workers.
        with httpx.Client(base_url=service.url, timeout=30) as http:
            return http.post(
                "/v1/streams", params={"stream_id": f"w{i}", "tool": "codex"}, content=bodies[i % 2], headers=INGEST
            ).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert list(pool.map(send, range(POSTS))) == [201] * POSTS
    with httpx.Client(base_url=service.url) as http:
        send(0)  # a duplicate: answered 200, not counted as a verdict
        scrapes = [http.get("/metrics").text for _ in range(6)]
    for text in scrapes:
        assert metric_total(text, "fastsse_stream_verdicts_total") == POSTS
        assert metric_total(text, "fastsse_stream_verdicts_total", category="complete") == POSTS / 2
        assert metric_total(text, "fastsse_stream_verdicts_total", silent="true") == POSTS / 2
        assert metric_total(text, "fastsse_streams_total", tool="codex") == POSTS
        assert metric_total(text, "fastsse_silent_streams_total", tool="codex") == POSTS / 2
        assert metric_total(text, "fastsse_ingest_requests_total", status="201") == POSTS
        assert metric_total(text, "fastsse_ingest_requests_total", status="200") == 1
        assert metric_total(text, "fastsse_stream_size_bytes_count") == POSTS + 1
    assert service.log().count("Started server process") == 2


def test_unknown_tools_share_one_label(client):
    with httpx.Client(base_url=client.base_url) as http:
        before = http.get("/metrics").text
        for i in range(5):
            http.post(
                "/v1/streams",
                params={"stream_id": f"t{i}", "tool": f"made-up-{i}"},
                content=short_stream(),
                headers=INGEST,
            )
        after = http.get("/metrics").text
    assert "made-up" not in after
    grown = metric_total(after, "fastsse_stream_verdicts_total", tool="other") - metric_total(
        before, "fastsse_stream_verdicts_total", tool="other"
    )
    assert grown == 5


def test_duplicates_racing_through_two_workers_store_one_row(service_process, database_url):
    service = service_process({"DATABASE_URL": database_url}, workers=2)
    body = short_stream(text="same bytes " * 40)

    def send(_: int) -> int:
        with httpx.Client(base_url=service.url, timeout=30) as http:
            return http.post("/v1/streams", params={"stream_id": "raced"}, content=body, headers=INGEST).status_code

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        statuses = sorted(pool.map(send, range(36)))
    assert statuses == [200] * 35 + [201]
    with httpx.Client(base_url=service.url) as http:
        assert metric_total(http.get("/metrics").text, "fastsse_stream_verdicts_total") == 1

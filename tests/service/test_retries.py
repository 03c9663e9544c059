"""Retry chains: every attempt kept, each with its previous attempt, and what retries achieved."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import fastsse
from fastsse_service.db import make_engine
from fastsse_service.judging import verdict_row
from fastsse_service.stores import open_store
from fastsse_service.writer import CREATED, VerdictWriter
from loadtests.wire import short_stream

from .conftest import INGEST, READ
from .test_storage import queued

COMPLETE, CUT, LENGTH = short_stream(), short_stream("chat", "F2"), short_stream("chat", "F4")
# (request, attempt, body): A recovers, B retries a token limit twice, then completes,
# C completes at once, D never recovers.
CHAINS = [
    ("A", 1, CUT),
    ("B", 1, LENGTH),
    ("C", 1, COMPLETE),
    ("D", 1, CUT),
    ("A", 2, COMPLETE),
    ("B", 2, LENGTH),
    ("B", 3, COMPLETE),
]


def post_chains(client) -> None:
    for request, attempt, body in CHAINS:
        response = client.post(
            "/v1/streams",
            content=body,
            headers=INGEST,
            params={"stream_id": f"{request}-{attempt}", "tool": "codex", "request_id": request, "attempt": attempt},
        )
        assert response.status_code == 201, response.text
    assert (
        client.post(
            "/v1/streams", content=CUT, headers=INGEST, params={"stream_id": "lone", "tool": "codex"}
        ).status_code
        == 201
    )


def test_each_attempt_knows_the_one_before(client):
    post_chains(client)
    chain = client.get("/v1/requests/B", headers=READ).json()
    [gateway] = chain["chains"]
    assert gateway["gateway"] == "gw1"
    attempts = [
        (a["attempt"], a["category"], a["previous_category"], a["previous_retryable"]) for a in gateway["attempts"]
    ]
    assert attempts == [
        (1, "truncated_length", None, None),
        (2, "truncated_length", "truncated_length", False),
        (3, "complete", "truncated_length", False),
    ]
    retry = client.get("/v1/verdicts", params={"request_id": "A"}, headers=READ).json()
    assert [(v["attempt"], v["previous_category"]) for v in retry["verdicts"]] == [(2, "no_end_marker"), (1, None)]
    assert client.get("/v1/requests/nope", headers=READ).status_code == 404
    assert client.get("/v1/requests/B", headers=INGEST).status_code == 401


def test_retry_outcomes_per_tool(client):
    post_chains(client)
    retries = client.get("/v1/retries", params={"by": "tool"}, headers=READ).json()
    assert retries["groups"] == [
        {
            "tool": "codex",
            "requests": 4,
            "first_failures": 3,
            "retries": 3,
            "recoveries": 2,
            "never_recovered": 1,
            "retries_of_final": 2,
        }
    ]
    # the same counts reach /v1/rates' groups' total
    rates = client.get("/v1/rates", params={"by": "tool"}, headers=READ).json()
    assert rates["groups"][0]["total"] == len(CHAINS) + 1


def test_attempts_of_one_request_in_one_batch_still_see_each_other(database_url):
    engine = make_engine(database_url)
    writer = VerdictWriter(open_store(engine), queue_size=10, batch_size=10, metrics_tools=frozenset())

    def row(stream_id: str, body: bytes, attempt: int) -> dict:
        return verdict_row(
            fastsse.scan(body),
            body_sha256=stream_id * 8,
            gateway="gw1",
            stream_id=stream_id,
            tool="codex",
            upstream_status=None,
            model_requested=None,
            request_id="same-batch",
            attempt=attempt,
            received_at=datetime.now(timezone.utc),
        )

    async def together():
        rows = [row("x1", CUT, 1), row("x2", CUT, 2), row("x3", COMPLETE, 3)]
        waiting = [asyncio.ensure_future(writer.write(r, timeout=10)) for r in rows]
        await queued(writer, 3)  # all three queue up before the writer runs: one batch
        await writer.start()
        try:
            return await asyncio.gather(*waiting)
        finally:
            await writer.stop()

    results = asyncio.run(together())
    engine.dispose()
    assert [r.outcome for r in results] == [CREATED] * 3
    assert [r.row["previous_category"] for r in results] == [None, "no_end_marker", "no_end_marker"]


def test_the_retry_counters_say_what_the_rollups_say(client):
    from .conftest import metric_total

    before = client.get("/metrics").text
    post_chains(client)
    after = client.get("/metrics").text
    retries = client.get("/v1/retries", params={"by": "tool"}, headers=READ).json()["groups"][0]
    for metric, field in [
        ("fastsse_requests_total", "requests"),
        ("fastsse_first_attempt_failures_total", "first_failures"),
        ("fastsse_retries_total", "retries"),
        ("fastsse_retry_recoveries_total", "recoveries"),
        ("fastsse_retries_of_final_total", "retries_of_final"),
    ]:
        grown = metric_total(after, metric, tool="codex") - metric_total(before, metric, tool="codex")
        assert grown == retries[field], metric

"""Applications' reporters post with a credential of their own (REPORT_TOKENS), which can only
report: a gateway credential in every application let one leaked copy post any tool, at any
pace, and hold every slot (audit security-2, L-N13).  A report credential's verdicts carry its
name as gateway and as tool, it posts at most REPORT_STREAMS_PER_MINUTE streams a minute and
holds at most REPORT_MAX_INFLIGHT_POSTS posts in progress, and it reads nothing."""

from __future__ import annotations

import httpx
import pytest

from fastsse_service.admission import StreamBudgets
from fastsse_service.auth import ConfigError, all_credentials
from fastsse_service.config import Settings
from loadtests.wire import short_stream

from .conftest import READ_SECRET
from .test_admission import open_upload, wait_in_progress
from .test_batches import BATCH, batch

REPORT_SECRET = "report-secret-of-myapp"
REPORT = {"Authorization": f"Bearer {REPORT_SECRET}"}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_budget_gives_a_minutes_worth_then_its_pace_and_a_batch_costs_its_streams():
    clock = Clock()
    budgets = StreamBudgets(60, clock=clock)
    budgets.spend("app", 59)
    assert budgets.retry_after("app") is None
    budgets.spend("app", 10)  # a batch read whole may go below nothing
    assert budgets.retry_after("app") == 10
    clock.now += 10
    assert budgets.retry_after("app") is None
    assert budgets.retry_after("other") is None


def test_a_report_name_may_not_be_a_gateways_too():
    settings = Settings(database_url="sqlite://", ingest_tokens="app:one-secret-long-enough", report_tokens="app:two")
    with pytest.raises(ConfigError, match="INGEST_TOKENS name too"):
        all_credentials(settings)


@pytest.fixture
def reporting(serve):
    return serve(report_tokens=f"myapp:{REPORT_SECRET}", report_streams_per_minute=4, report_max_inflight_posts=1)


def test_a_reporters_answers_are_its_own_whatever_tool_it_names(reporting):
    with httpx.Client(base_url=reporting.url, timeout=30) as client:
        one = client.post(
            "/v1/streams", params={"stream_id": "r-1", "tool": "codex"}, content=short_stream(), headers=REPORT
        )
        assert one.status_code == 201, one.text
        assert (one.json()["gateway"], one.json()["tool"]) == ("myapp", "myapp")
        body = batch(({"stream_id": "r-2", "tool": "claude-code"}, short_stream()), ({"stream_id": "r-3"}, b""))
        many = client.post(BATCH, content=body, headers=REPORT)
        assert many.status_code == 207, many.text
        assert {(i["verdict"]["gateway"], i["verdict"]["tool"]) for i in many.json()["items"]} == {("myapp", "myapp")}
        # It reads nothing, and signs nothing in.
        assert client.get("/v1/verdicts", headers=REPORT).status_code == 401
        signin = client.post("/signin", data={"token": REPORT_SECRET})
        assert signin.status_code == 401 and "a reporter" in signin.text


def test_a_reporter_posts_its_streams_a_minute_then_waits(reporting):
    with httpx.Client(base_url=reporting.url, timeout=30) as client:
        body = batch(*(({"stream_id": f"b-{n}"}, short_stream()) for n in range(3)))
        assert client.post(BATCH, content=body, headers=REPORT).status_code == 207  # 3 of 4
        assert client.post("/v1/streams?stream_id=s-1", content=short_stream(), headers=REPORT).status_code == 201
        refused = client.post("/v1/streams?stream_id=s-2", content=short_stream(), headers=REPORT)
        assert refused.status_code == 429 and "REPORT_STREAMS_PER_MINUTE" in refused.json()["detail"], refused.text
        assert int(refused.headers["retry-after"]) >= 1
        # a gateway is served meanwhile
        gateway = client.post(
            "/v1/streams?stream_id=g-1", content=short_stream(), headers={"Authorization": "Bearer ingest-secret-gw1"}
        )
        assert gateway.status_code == 201


def test_a_reporter_holds_at_most_its_posts_in_progress(reporting):
    body = short_stream()
    held = open_upload(reporting.port, "held", len(body), body[:10], secret=REPORT_SECRET)
    try:
        wait_in_progress(reporting, 1)
        second = httpx.post(f"{reporting.url}/v1/streams?stream_id=second", content=body, headers=REPORT, timeout=30)
        assert second.status_code == 503 and "REPORT_MAX_INFLIGHT_POSTS" in second.json()["detail"], second.text
    finally:
        held.close()


def test_a_read_token_is_no_report_token(reporting):
    answer = httpx.post(
        f"{reporting.url}/v1/streams?stream_id=x", content=b"", headers={"Authorization": f"Bearer {READ_SECRET}"}
    )
    assert answer.status_code == 401

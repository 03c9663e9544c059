"""The guard's reporter: what an application's guard judged reaches the verdict service, with the
parameters the tap sends, without slowing or failing the application."""

from __future__ import annotations

import asyncio
import os
import stat
from datetime import datetime, timezone

import httpx
import pytest

from fastsse.guard import StreamFailed
from fastsse_service.reporter import Reporter
from loadtests.localhost import wait_until
from loadtests.wire import EXPECTED_OVER_HTTP
from tests.service.conftest import INGEST_SECRET, READ

from .apps import anthropic_messages_async, openai_chat, openai_responses
from .conftest import REPORT_SECRET

CANARY = "CANARY-guard-7f3a"


def stored_since(service, since: str) -> list[dict]:
    answer = httpx.get(f"{service.url}/v1/verdicts", params={"since": since, "limit": 1000}, headers=READ, timeout=10)
    answer.raise_for_status()
    return sorted(answer.json()["verdicts"], key=lambda v: v["id"])


@pytest.fixture
def reporter(service, tmp_path):
    running = Reporter(service.url, INGEST_SECRET, spool_dir=tmp_path / "spool")
    yield running
    running.close(grace_seconds=5)


@pytest.mark.parametrize(
    ("app", "fault", "protocol", "mode"),
    [
        (openai_chat, "F0", "chat", "sync"),
        (openai_chat, "F2", "chat", "sync"),
        (openai_chat, "F4", "chat", "sync"),
        (openai_chat, "reset", "chat", "sync"),
        (openai_responses, "F5", "responses", "sync"),
        (anthropic_messages_async, "F1", "anthropic", "async"),
        (anthropic_messages_async, "error", "anthropic", "async"),
    ],
    ids=lambda value: getattr(value, "__name__", value),
)
def test_every_judged_answer_is_stored_as_the_tap_would_store_it(app, fault, protocol, mode, mock, service, reporter):
    since = datetime.now(timezone.utc).isoformat()
    base = f"http://127.0.0.1:{mock.port}" + ("" if fault == "F0" else f"/{fault}")
    try:
        asyncio.run(app(base, reporter=reporter)) if mode == "async" else app(base, reporter=reporter)
    except Exception as exc:  # noqa: BLE001 - the fault's; test_sdks holds what it must be
        assert fault != "F0", exc
    wait_until(lambda: reporter.waiting() == 0, what="the reporter posted everything", timeout=30)
    stored = stored_since(service, since)
    assert [v["category"] for v in stored] == [EXPECTED_OVER_HTTP[fault]]
    verdict = stored[0]
    assert verdict["protocol"] == protocol
    assert verdict["tool"] == ("openai-python" if protocol in ("chat", "responses") else "anthropic-python")
    assert verdict["model_requested"] == "mock-model"
    assert verdict["attempt"] == 1 and verdict["request_id"].startswith("tap-")
    assert reporter.dropped == 0 and not reporter.spool.pending() and not reporter.spool.rejected()


def test_a_report_token_stores_the_answers_as_its_applications(mock, service, tmp_path):
    """With a credential that can only report (REPORT_TOKENS), the verdicts are the
    application's: its name as gateway and tool, whatever the SDK's User-Agent says."""
    since = datetime.now(timezone.utc).isoformat()
    reporter = Reporter(service.url, REPORT_SECRET, spool_dir=tmp_path / "spool")
    try:
        openai_chat(f"http://127.0.0.1:{mock.port}", reporter=reporter)
        wait_until(lambda: reporter.waiting() == 0, what="the reporter posted everything", timeout=30)
    finally:
        reporter.close()
    [stored] = stored_since(service, since)
    assert (stored["gateway"], stored["tool"], stored["category"]) == ("myapp", "myapp", "complete")
    assert reporter.dropped == 0 and not reporter.spool.rejected()


def test_a_dead_service_never_fails_or_slows_the_application(mock, tmp_path):
    """Nothing listens where the reporter posts: the application's answer is whole and the
    judged answer waits in the spool (readable by its owner only: it holds payload), posted
    by the next reporter on that directory."""
    dead = Reporter("http://127.0.0.1:9", INGEST_SECRET, spool_dir=tmp_path / "spool")
    try:
        text = openai_chat(f"http://127.0.0.1:{mock.port}", reporter=dead)
        assert "Sentence 6 of 6" in text
        spooled = wait_until(dead.spool.pending, what="the answer spooled", timeout=10)
        assert len(spooled) == 1
        path = dead.spool.pending_dir / spooled[0].name
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    finally:
        dead.close(grace_seconds=0.1)


def test_what_was_spooled_is_posted_by_the_next_reporter(mock, service, tmp_path):
    since = datetime.now(timezone.utc).isoformat()
    first = Reporter("http://127.0.0.1:9", INGEST_SECRET, spool_dir=tmp_path / "spool")
    with pytest.raises(StreamFailed):
        openai_chat(f"http://127.0.0.1:{mock.port}/F1", reporter=first)
    wait_until(first.spool.pending, what="the answer spooled", timeout=10)
    first.close(grace_seconds=0.1)
    second = Reporter(service.url, INGEST_SECRET, spool_dir=tmp_path / "spool")
    try:
        wait_until(lambda: second.waiting() == 0 and not second.spool.pending(), what="posted", timeout=30)
    finally:
        second.close()
    assert [v["category"] for v in stored_since(service, since)] == ["no_end_marker"]


def test_a_full_hand_over_drops_and_counts_never_blocks(mock, tmp_path):
    tiny = Reporter("http://127.0.0.1:9", INGEST_SECRET, spool_dir=tmp_path / "spool", max_waiting_bytes=10)
    try:
        openai_chat(f"http://127.0.0.1:{mock.port}", reporter=tiny)
        assert tiny.dropped == 1 and not tiny.spool.pending()
    finally:
        tiny.close(grace_seconds=0.1)


def test_the_spool_never_holds_the_canary_after_posting_and_the_service_never_stores_it(mock, service, reporter):
    """The prompt (the request body) is read for the model's name and a digest; the answer's
    bytes go to the service, which keeps its verdict only."""
    import openai

    from .apps import guarded

    with openai.OpenAI(
        base_url=f"http://127.0.0.1:{mock.port}/v1", api_key="k", http_client=guarded(reporter=reporter)
    ) as client:
        for _ in client.chat.completions.create(
            model="mock-model", stream=True, messages=[{"role": "user", "content": CANARY}]
        ):
            pass
    wait_until(lambda: reporter.waiting() == 0, what="posted", timeout=30)
    listing = httpx.get(f"{service.url}/v1/verdicts", params={"limit": 1000}, headers=READ, timeout=10).text
    assert CANARY not in listing
    assert not any(
        CANARY.encode() in p.read_bytes() for p in (reporter.spool.pending_dir.parent).rglob("*") if p.is_file()
    )


def test_an_unreadable_spooled_file_is_set_aside_and_the_reporter_starts(mock, service, tmp_path):
    """A crash may leave a spooled file empty: it never stops a reporter (or a tap) from
    starting and posting the rest."""
    pending = tmp_path / "spool" / "pending"
    pending.mkdir(parents=True)
    (pending / "0000000000000000001-broken.stream").write_bytes(b"")
    (pending / "0000000000000000002-garbage.stream").write_bytes(b"not json\n")
    reporter = Reporter(service.url, INGEST_SECRET, spool_dir=tmp_path / "spool")
    try:
        assert sorted(reporter.spool.rejected()) == [
            "0000000000000000001-broken.stream",
            "0000000000000000002-garbage.stream",
        ]
        openai_chat(f"http://127.0.0.1:{mock.port}", reporter=reporter)
        wait_until(lambda: reporter.waiting() == 0, what="posted", timeout=30)
        assert not reporter.spool.pending()
    finally:
        reporter.close()

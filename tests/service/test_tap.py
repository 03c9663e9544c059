"""The gateway tap (``fastsse-service tap``) between a raw-socket client and the mock provider,
posting to a real service: the client gets the upstream's bytes unchanged and as they come,
including how the upstream's connection ended, and the service stores the verdict of every
fault with the right transport, tool, model and retry chain.  A dead or refusing service never
reaches the client; the spool keeps what it could not post, across restarts, within its bound.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

import httpx
import pytest

from fastsse_service.cli import http_protocol
from fastsse_service.config import TapSettings
from fastsse_service.tap.proxy import Capture, Tap
from fastsse_service.tap.spool import SUFFIX, Spool, Spooled
from loadtests.localhost import free_port, wait_until
from loadtests.wire import CONTENT_TYPES, EXPECTED_OVER_HTTP
from tests.loadtests.mock_helpers import CASES, STALL_SECONDS, Mock, generation, request, stream_path

from .conftest import INGEST_SECRET, READ, REPO, TOKENS, ThreadServer
from .raw_http import LATE, read_all, reset_by_peer, send_head, small_window_connection

CANARY = "CANARY-tap-7f3a1c-never-stored"
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"  # percent-encoded in the path
MODEL = {"gemini": "gemini-2.5-flash", "bedrock-converse": BEDROCK_MODEL, "bedrock-invoke": BEDROCK_MODEL}
# (from the path; the others from the body)


@pytest.fixture(scope="module")
def mock(tmp_path_factory):
    running = Mock(
        tmp_path_factory.mktemp("mock"),
        "--text",
        f"The answer mentions {CANARY} once and then goes on for a while. " * 8,
    )
    yield running
    running.stop()


def service_app(database_url: str):
    from fastsse_service.app import create_app
    from fastsse_service.config import Settings

    return create_app(
        Settings(
            database_url=database_url,
            ingest_tokens=TOKENS["INGEST_TOKENS"],
            read_tokens=TOKENS["READ_TOKENS"],
            retention_days=0,
        )
    )


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    from fastsse_service.db import migrate

    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'verdicts.sqlite3'}"
    migrate(url)
    with ThreadServer(service_app(url)) as running:
        yield running


class Taps:
    """Starts taps (in-process, under uvicorn) in front of the mock; all stopped at the end."""

    def __init__(self, tmp_path, mock) -> None:
        self.tmp_path, self.mock, self.running = tmp_path, mock, []

    def start(self, ingest: str, upstream_transport=None, **settings):
        values = {
            "upstream": f"http://127.0.0.1:{self.mock.port}",
            "ingest": ingest,
            "ingest_token": INGEST_SECRET,
            "spool_dir": self.tmp_path / "spool",
            "shutdown_grace_seconds": 0.5,
            **settings,
        }
        settings = TapSettings(**values)
        tap = Tap(settings, upstream_transport=upstream_transport)
        server = ThreadServer(tap, http=http_protocol(settings)).__enter__()  # as the command line runs it
        server.tap = tap
        self.running.append(server)
        return server

    def stop(self, server) -> None:
        self.running.remove(server)
        server.__exit__(None, None, None)


@pytest.fixture
def taps(tmp_path, mock):
    started = Taps(tmp_path, mock)
    yield started
    for server in list(started.running):
        started.stop(server)


def verdicts(service_url: str, **filters) -> list[dict]:
    answer = httpx.get(f"{service_url}/v1/verdicts", params=filters, headers=READ, timeout=10)
    answer.raise_for_status()
    return answer.json()["verdicts"]


def wait_for(service_url: str, count: int, timeout: float = 30, **filters) -> list[dict]:
    """At least ``count`` stored verdicts matching ``filters`` (the tap posts in the background)."""
    found = wait_until(
        lambda: (lambda got: got if len(got) >= count else None)(verdicts(service_url, **filters)),
        what=f"{count} verdicts stored with {filters}",
        timeout=timeout,
    )
    return sorted(found, key=lambda v: v["id"])


def spooled(directory) -> list:
    """The captures waiting in a spool directory (a ``.tmp`` being renamed is not one yet)."""
    return sorted(directory.glob(f"*{SUFFIX}"))


def through(
    tap,
    protocol: str,
    fault: str = "F0",
    *,
    agent: str = "tap-test/1",
    body: dict | None = None,
    headers: dict | None = None,
) -> dict:
    return request(
        tap.port,
        "POST",
        stream_path(protocol, f"/{fault}"),
        body or generation(protocol),
        {"user-agent": agent, **(headers or {})},
    )


# ---------------------------------------------------------------------------------------------
# relaying and judging
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("protocol", "fault"), CASES, ids=[f"{d}-{f}" for d, f in CASES])
def test_every_fault_is_relayed_unchanged_and_its_verdict_stored(mock, service, taps, protocol, fault):
    tap = taps.start(service.url)
    agent = f"case-{protocol}-{fault}/1.0"
    got = through(tap, protocol, fault, agent=agent)

    assert got["status"] == 200
    [sent] = [e for e in mock.entries() if e["user_agent"] == agent]
    assert hashlib.sha256(got["body"]).hexdigest() == sent["sha256"], "not the bytes sent"
    assert got["headers"]["content-type"].startswith(CONTENT_TYPES.get(protocol, "text/event-stream"))
    # A reset upstream is passed on as a body cut short: the client sees its stream break.
    assert got["ending"] == ("eof-inside-chunking" if fault == "reset" else "eof")

    [stored] = wait_for(service.url, 1, tool=agent.split("/")[0].lower())
    assert stored["category"] == EXPECTED_OVER_HTTP[fault]
    assert stored["transport"] == ("reset" if fault == "reset" else "eof")
    assert stored["protocol"] == protocol
    assert stored["upstream_status"] == 200
    assert stored["model_requested"] == MODEL.get(protocol, "mock-model")
    assert stored["request_id"].startswith("tap-") and stored["attempt"] == 1
    assert stored["bytes"] == len(got["body"])
    assert CANARY not in json.dumps(stored)


def test_bytes_reach_the_client_as_they_come_not_when_the_answer_ends(service, taps):
    # The stall fault sends its first events, then nothing for STALL_SECONDS: a tap that held
    # the answer back would show the client no silence inside it, however busy the machine.
    # Half the stall: a busy machine can shorten the silence seen (the events before it read late).
    tap = taps.start(service.url)
    got = through(tap, "chat", "stall", agent="stall-probe/1")
    assert got["longest_gap"] >= STALL_SECONDS * 0.5
    assert got["body"].startswith(b"data: ")


def test_an_upstream_silent_past_the_idle_timeout_is_cut_and_stored_as_a_timeout(service, taps):
    tap = taps.start(service.url, idle_timeout_seconds=STALL_SECONDS / 3)
    got = through(tap, "anthropic", "stall", agent="idle-probe/1")
    assert got["ending"] == "eof-inside-chunking"
    [stored] = wait_for(service.url, 1, tool="idle-probe")
    assert (stored["transport"], stored["category"]) == ("timeout", "transport_error")


def test_a_client_that_hangs_up_mid_answer_is_not_judged(mock, service, taps):
    # A person pressing Ctrl-C cut the answer, not the provider: no verdict is stored.
    tap = taps.start(service.url)
    data = json.dumps(generation("chat")).encode()
    with socket.create_connection(("127.0.0.1", tap.port), timeout=10) as sock:
        sock.sendall(
            b"POST /stall/v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
            b"user-agent: hang-up/1\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(data), data)
        )
        seen = b""
        while b"data: " not in seen:
            piece = sock.recv(65536)
            assert piece, "the tap sent no event before the stall"
            seen += piece
    wait_until(lambda: tap.tap.hung_up >= 1, what="the tap saw the client hang up", timeout=10)
    assert tap.tap.hung_up == 1
    through(tap, "chat", "F0", agent="hang-up-marker/1")
    assert wait_for(service.url, 1, tool="hang-up-marker")
    assert verdicts(service.url, tool="hang-up") == []


def test_tool_comes_from_the_user_agent_or_the_setting(service, taps):
    tap = taps.start(service.url)
    through(tap, "responses", agent="codex_exec/0.171.0 (Debian 12; x86_64) xterm")
    through(tap, "chat", agent="OpenAI/Python 3.57.0 tool-check")
    labelled = taps.start(service.url, tool="labelled-tool", spool_dir=taps.tmp_path / "other")
    through(labelled, "chat", agent="OpenAI/Python 3.57.0")
    assert wait_for(service.url, 1, tool="codex")
    assert wait_for(service.url, 1, tool="openai-python")
    assert wait_for(service.url, 1, tool="labelled-tool")


def test_a_retry_of_the_same_request_is_its_next_attempt(service, taps):
    tap = taps.start(service.url)
    body = generation("chat") | {"messages": [{"role": "user", "content": "retry me"}]}
    for asked in (body, body, body | {"model": "another-model"}):
        assert through(tap, "chat", "F1-once.retry-test", agent="retrier/1", body=asked)
    # Posted in order within a request; the other request may come between them.
    stored = sorted(
        wait_for(service.url, 3, tool="retrier"), key=lambda v: (v["model_requested"] != "mock-model", v["id"])
    )
    assert [(v["model_requested"], v["attempt"], v["category"]) for v in stored] == [
        ("mock-model", 1, "no_end_marker"),
        ("mock-model", 2, "complete"),
        ("another-model", 1, "complete"),
    ]
    assert stored[0]["request_id"] == stored[1]["request_id"] != stored[2]["request_id"]
    assert stored[1]["previous_category"] == "no_end_marker"
    # Someone else asking the same thing is not a retry of it.
    through(tap, "chat", "F0", agent="retrier2/1", body=body)
    through(tap, "chat", "F0", agent="retrier2/1", body=body, headers={"authorization": "Bearer somebody-else"})
    a, b = wait_for(service.url, 2, tool="retrier2")
    assert a["request_id"] != b["request_id"] and a["attempt"] == b["attempt"] == 1


def test_captures_reach_the_poster_in_the_order_their_streams_ended(tmp_path):
    """A slow spool write of a first attempt must not let its retry be posted before it."""
    tap = Tap(TapSettings(upstream="http://127.0.0.1:9", spool_dir=tmp_path))
    submitted = []
    tap.poster.submit = lambda spooled: submitted.append(spooled.name)

    def put(params, body):
        time.sleep(0.3 if params["attempt"] == "1" else 0)
        return Spooled(params["stream_id"], params["request_id"])

    tap.spool.put = put

    async def two_attempts():
        for attempt in ("1", "2"):
            params = {"stream_id": f"attempt-{attempt}", "request_id": "r", "attempt": attempt}
            tap._spooling.add(asyncio.create_task(tap._spool(params, b"")))
        await asyncio.gather(*tap._spooling)

    asyncio.run(two_attempts())
    assert submitted == ["attempt-1", "attempt-2"]


def test_requests_that_are_no_stream_pass_through_unjudged(mock, service, taps):
    tap = taps.start(service.url)
    whole = through(tap, "chat", "F0", agent="whole/1", body=generation("chat", stream=False))
    assert whole["status"] == 200 and json.loads(whole["body"])["object"] == "chat.completion"
    models = request(tap.port, "GET", "/v1/models", headers={"user-agent": "whole/1"})
    assert models["status"] == 200 and json.loads(models["body"])["data"]
    counted = request(tap.port, "POST", "/v1/messages/count_tokens", generation("anthropic"), {"user-agent": "whole/1"})
    assert json.loads(counted["body"]) == {"input_tokens": 12}
    through(tap, "chat", "F0", agent="whole-marker/1")  # posted after the others, in order
    assert wait_for(service.url, 1, tool="whole-marker")
    assert verdicts(service.url, tool="whole") == []


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a":' * 100_000])
def test_a_request_nested_past_the_json_parsers_depth_is_forwarded(service, taps, body):
    tap = taps.start(service.url)
    sock = send_head(
        tap.port,
        f"POST /v1/chat/completions HTTP/1.1\nhost: x\ncontent-length: {len(body)}\nconnection: close\n",
        body,
    )
    answer = read_all(sock)
    sock.close()
    # the mock's own answer to a body that is no JSON object: the request went through
    assert answer.startswith(b"HTTP/1.1 400 ") and b"not JSON" in answer, answer[:300]


def test_a_client_that_never_reads_its_stream_lets_the_upstream_go(service, taps):
    # A client that asks for a stream and never reads it held the tap's upstream connection
    # for good (at TAP_MAX_UPSTREAM_CONNECTIONS, every client got 503).
    class EndlessAnswer(httpx.AsyncByteStream):
        closed = False

        async def __aiter__(self):
            for _ in range(4096):  # 256 MiB at most: the test stops by itself
                await asyncio.sleep(0)  # (as a read from a real upstream waits for its socket)
                yield b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 65_000 + b'"}}]}\n\n'

        async def aclose(self):
            self.closed = True

    answer = EndlessAnswer()

    def upstream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=answer)

    tap = taps.start(service.url, upstream_transport=httpx.MockTransport(upstream), answer_idle_timeout_seconds=1)
    sock = small_window_connection(tap.port)
    try:
        body = json.dumps(generation("chat")).encode()
        head = f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {len(body)}\r\n\r\n"
        sock.sendall(head.encode() + body)
        wait_until(lambda: reset_by_peer(sock), what="the tap aborting the client that never reads", timeout=LATE)
        # let go, and not judged: nobody read the answer
        wait_until(lambda: answer.closed and tap.tap.hung_up == 1, what="the upstream's answer let go", timeout=LATE)
    finally:
        sock.close()


def test_an_unreachable_upstream_is_a_502_with_a_reason(service, taps):
    tap = taps.start(service.url, upstream=f"http://127.0.0.1:{free_port()}")
    got = through(tap, "chat", "F0")
    assert got["status"] == 502
    assert "could not reach its upstream" in json.loads(got["body"])["detail"]


def test_a_request_body_over_the_limit_is_a_413(service, taps):
    tap = taps.start(service.url, max_request_bytes=1000)
    body = generation("chat") | {"messages": [{"role": "user", "content": "x" * 2000}]}
    got = through(tap, "chat", "F0", body=body)
    assert got["status"] == 413 and "TAP_MAX_REQUEST_BYTES" in got["body"].decode()


CHAT = "POST /v1/chat/completions HTTP/1.1\nhost: x\ncontent-type: application/json\n"


def test_the_tap_refuses_a_declared_length_over_its_limit_before_reading(service, taps):
    tap = taps.start(service.url)
    with send_head(tap.port, CHAT + "content-length: 1000000000\n") as sock:
        got = read_all(sock)
    assert got.startswith(b"HTTP/1.1 413") and b"TAP_MAX_REQUEST_BYTES" in got, got[:300]
    assert tap.tap.buffered == 0


def test_the_tap_times_out_an_upload_that_stops_sending(service, taps):
    tap = taps.start(service.url, upload_idle_timeout_seconds=1)
    started = time.monotonic()  # before the upload: its timer cannot start any earlier
    with send_head(tap.port, CHAT + "content-length: 10000\n", b"{") as sock:
        got = read_all(sock)
    assert got.startswith(b"HTTP/1.1 408") and b"TAP_UPLOAD_IDLE_TIMEOUT_SECONDS" in got, got[:300]
    assert 0.95 < time.monotonic() - started < LATE
    wait_until(lambda: tap.tap.buffered == 0, what="the refused body's bytes released")


def test_the_tap_times_out_an_upload_dribbled_past_the_total(service, taps):
    tap = taps.start(service.url, upload_idle_timeout_seconds=5, upload_timeout_seconds=1.5)
    started = time.monotonic()
    got = b""
    with send_head(tap.port, CHAT + "content-length: 10000\n", b"{") as sock:
        sock.settimeout(0.2)
        while time.monotonic() - started < LATE + 5 and not got:
            try:
                sock.sendall(b" ")  # a byte now and then: never idle
                got = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        got += read_all(sock)
    assert got.startswith(b"HTTP/1.1 408") and b"TAP_UPLOAD_TIMEOUT_SECONDS" in got, got[:300]
    assert 1.45 < time.monotonic() - started < LATE + 5
    wait_until(lambda: tap.tap.buffered == 0, what="the refused body's bytes released")


def test_the_tap_bounds_the_request_bytes_it_holds_across_requests(service, taps):
    tap = taps.start(service.url, max_request_bytes=80_000, max_buffered_request_bytes=100_000)
    held = send_head(tap.port, CHAT + "content-length: 80000\n", b"{" * 79_999)
    try:
        wait_until(lambda: tap.tap.buffered == 79_999, what="the first upload's bytes held")
        with send_head(tap.port, CHAT + "content-length: 30000\n", b" " * 30_000) as sock:
            got = read_all(sock)
        assert got.startswith(b"HTTP/1.1 503") and b"TAP_MAX_BUFFERED_REQUEST_BYTES" in got, got[:300]
    finally:
        held.close()
    wait_until(lambda: tap.tap.buffered == 0, what="the dropped upload's bytes released")
    assert through(tap, "chat", "F0")["status"] == 200
    assert tap.tap.buffered == 0 and tap.tap.buffered_by_client == {}


def test_lengths_a_client_only_declares_hold_nothing(service, taps):
    # 8 connections that declared the largest length and sent nothing reserved every byte of
    # the shared bound, and every other client's request was a 503.
    tap = taps.start(service.url, max_request_bytes=1 << 20, max_buffered_request_bytes=4 << 20)
    liars = [send_head(tap.port, CHAT + f"content-length: {1 << 20}\n", b"{") for _ in range(8)]
    try:
        wait_until(lambda: tap.tap.buffered == 8, what="the liars' first bytes held")
        assert through(tap, "chat", "F0")["status"] == 200
    finally:
        for sock in liars:
            sock.close()


def test_one_client_address_holds_at_most_its_share(service, taps):
    tap = taps.start(service.url, max_buffered_request_bytes_per_client=100_000)
    held = send_head(tap.port, CHAT + "content-length: 90000\n", b"{" * 89_999)
    try:
        wait_until(lambda: tap.tap.buffered == 89_999, what="the first upload's bytes held")
        with send_head(tap.port, CHAT + "content-length: 30000\n", b" " * 30_000) as sock:
            got = read_all(sock)
        assert got.startswith(b"HTTP/1.1 503") and b"TAP_MAX_BUFFERED_REQUEST_BYTES_PER_CLIENT" in got, got[:300]
        # another address is served meanwhile
        other = socket.create_connection(("127.0.0.1", tap.port), timeout=LATE, source_address=("127.0.0.2", 0))
        body = json.dumps(generation("chat")).encode()
        other.sendall(
            CHAT.replace("\n", "\r\n").encode() + b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body) + body
        )
        assert read_all(other).startswith(b"HTTP/1.1 200")
        other.close()
    finally:
        held.close()
    wait_until(lambda: tap.tap.buffered_by_client == {}, what="every client's bytes released")


def test_hop_by_hop_headers_stay_on_their_hop(mock, service, taps):
    tap = taps.start(service.url)
    through(
        tap,
        "chat",
        "F0",
        agent="hops/1",
        headers={
            "connection": "close, x-secret-hop",
            "x-secret-hop": "1",
            "x-kept": "yes",
            "keep-alive": "timeout=5",
            "te": "trailers",
        },
    )
    [entry] = [e for e in mock.entries() if e.get("user_agent") == "hops/1"]
    # The mock logs the headers it was sent, without their values.
    sent = set(entry.get("headers", []))
    if not sent:
        pytest.fail("the mock's log does not list the request's header names")
    assert "x-kept" in sent and "user-agent" in sent
    assert not sent & {"x-secret-hop", "keep-alive", "te"}
    # Nothing the client did not send: an accept-encoding would get it a compressed answer.
    assert not sent & {"accept-encoding", "accept"}
    assert entry["host"] == f"127.0.0.1:{mock.port}"


def test_header_bytes_pass_through_as_they_are_both_ways(service, taps):
    seen = {}

    def upstream(request: httpx.Request) -> httpx.Response:
        seen.update(request.headers.raw)
        return httpx.Response(
            200,
            headers=[
                (b"content-type", b"application/json"),
                (b"x-name", "Zoë €".encode()),
                (b"connection", b"x-private"),
                (b"x-private", b"hop"),
            ],
            stream=httpx.ByteStream(b'{"ok": true}'),
        )

    tap = taps.start(service.url, upstream_transport=httpx.MockTransport(upstream))
    got = request(tap.port, "GET", "/v1/models", headers={"x-note": "café"})  # sent as UTF-8
    assert got["status"] == 200 and got["body"] == b'{"ok": true}'
    assert seen[b"x-note"] == "café".encode()
    assert got["headers"]["x-name"] == "Zoë €".encode().decode("latin-1").lower()  # the helper lowercases
    assert "x-private" not in got["headers"]  # named by the upstream's Connection header


@pytest.mark.parametrize("path", ["/v1/../admin", "/v1/%2e%2e/admin", "/v1/./models", "/v1/models/.."])
def test_a_path_that_climbs_out_of_the_base_path_is_a_400(service, taps, path):
    seen: list[str] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={"ok": True})

    tap = taps.start(
        service.url, upstream="http://upstream.example/base", upstream_transport=httpx.MockTransport(upstream)
    )
    got = request(tap.port, "GET", path)
    assert got["status"] == 400 and b"segments" in got["body"], got
    assert seen == []
    assert request(tap.port, "GET", "/v1/models")["status"] == 200
    assert seen == ["http://upstream.example/base/v1/models"]


def test_the_upstreams_own_query_is_kept_and_its_credentials_never_logged(service, taps, caplog):
    seen: list[str] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={"ok": True})

    caplog.set_level(logging.INFO, logger="fastsse_service.tap")
    tap = taps.start(
        service.url,
        upstream="http://user:Up5tream-Secret@upstream.example/openai?api-version=2024-10-21",
        upstream_transport=httpx.MockTransport(upstream),
    )
    assert request(tap.port, "GET", "/v1/models?limit=2")["status"] == 200
    assert seen == ["http://user:Up5tream-Secret@upstream.example/openai/v1/models?api-version=2024-10-21&limit=2"]
    assert "upstream.example" in caplog.text and "Up5tream-Secret" not in caplog.text


def test_a_user_agent_longer_than_the_services_bound_still_gets_its_streams_judged(mock, service, taps):
    tap = taps.start(service.url)
    agent = "a" * 300 + "/1.0"
    assert through(tap, "chat", "F0", agent=agent)["status"] == 200
    [stored] = wait_for(service.url, 1, tool="a" * 64)
    assert stored["category"] == "complete"


# ---------------------------------------------------------------------------------------------
# the spool: a dead service, a restart, the bound, refusals
# ---------------------------------------------------------------------------------------------
def test_a_dead_service_never_reaches_the_client_and_gets_every_verdict_when_back(mock, taps, database_url):
    port = free_port()
    tap = taps.start(f"http://127.0.0.1:{port}")
    for fault in ("F0", "F4"):
        got = through(tap, "chat", fault, agent=f"while-down-{fault}/1")
        sent = [e for e in mock.entries() if e["user_agent"] == f"while-down-{fault}/1"][-1]
        assert hashlib.sha256(got["body"]).hexdigest() == sent["sha256"]
        assert got["ending"] == "eof"
    spooled_at = time.time()
    pending = tap.tap.spool.pending_dir
    wait_until(lambda: len(spooled(pending)) >= 2, what="both captures spooled", timeout=10)
    assert len(spooled(pending)) == 2
    for path in spooled(pending):
        assert path.stat().st_mode & 0o777 == 0o600
    # both posts failed against the absent service, and the posters are backing off now
    wait_until(lambda: tap.tap.poster.retried >= 2, what="both posts tried and failed", timeout=10)
    with ThreadServer(service_app(database_url), port=port) as service:
        stored = wait_for(service.url, 1, tool="while-down-f0") + wait_for(service.url, 1, tool="while-down-f4")
        assert [v["category"] for v in stored] == ["complete", "truncated_length"]
        # Each verdict keeps the time its stream ended, not the time it was posted.
        assert all(
            time.mktime(time.strptime(v["ended_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone <= spooled_at
            for v in stored
        )
        wait_until(lambda: not spooled(pending), what="acknowledged captures leave the spool", timeout=10)


def test_what_is_spooled_at_stop_is_posted_by_the_next_start(service, taps):
    down = taps.start(f"http://127.0.0.1:{free_port()}")
    through(down, "gemini", "F5", agent="across-restart/1")
    through(down, "gemini", "F0", agent="across-restart/1")
    taps.stop(down)
    waiting = spooled(down.tap.spool.pending_dir)
    assert len(waiting) == 2
    taps.start(service.url)  # the same spool directory
    stored = wait_for(service.url, 2, tool="across-restart")
    assert sorted(v["category"] for v in stored) == ["complete", "reasoning_exhausted"]


def test_a_full_spool_drops_new_captures_and_the_client_never_notices(taps, mock):
    tap = taps.start(f"http://127.0.0.1:{free_port()}", spool_max_bytes=1)
    got = through(tap, "chat", "F0", agent="full-spool/1")
    [sent] = [e for e in mock.entries() if e["user_agent"] == "full-spool/1"]
    assert hashlib.sha256(got["body"]).hexdigest() == sent["sha256"]
    wait_until(lambda: tap.tap.spool.dropped >= 1, what="the capture dropped", timeout=10)
    assert tap.tap.spool.dropped == 1
    assert spooled(tap.tap.spool.pending_dir) == []


def on_disk(directory: Path) -> int:
    """What the files of a directory take on its disk (as du counts)."""
    return sum(path.stat().st_blocks * 512 for path in directory.iterdir())


def test_the_spool_bound_counts_the_disk_its_captures_take(tmp_path):
    """Issue 25: the bound counted file sizes, and 41 small captures took 5.8 times it on disk.
    Each capture now counts as the whole blocks it takes."""
    unit = Spool(tmp_path, max_bytes=1).unit
    spool = Spool(tmp_path, max_bytes=10 * unit)
    kept = [spool.put({"stream_id": f"s{n}"}, b"x" * 100) for n in range(41)]
    assert sum(k is not None for k in kept) == 10 and spool.dropped == 31
    assert spool.used_bytes == 10 * unit
    assert on_disk(spool.pending_dir) <= spool.max_bytes
    spool.delete(kept[0].name)
    assert spool.put({"stream_id": "again"}, b"x" * 100) is not None
    spool.reject(kept[1].name)
    assert Spool(tmp_path, max_bytes=10 * unit).used_bytes == spool.used_bytes  # recounted at start
    (spool.pending_dir / "cut-short.stream.tmp").write_bytes(b"half")
    assert not (Spool(tmp_path, 10 * unit).pending_dir / "cut-short.stream.tmp").exists()


def test_a_capture_of_more_than_a_block_counts_its_blocks(tmp_path):
    unit = Spool(tmp_path, max_bytes=1).unit
    spool = Spool(tmp_path, max_bytes=5 * unit)
    assert spool.put({"stream_id": "big"}, b"x" * (2 * unit)) is not None  # its header makes 3 blocks
    assert spool.used_bytes == 3 * unit
    assert spool.put({"stream_id": "bigger"}, b"x" * (2 * unit)) is None
    assert on_disk(spool.pending_dir) <= spool.used_bytes


def test_set_aside_captures_are_kept_within_a_tenth_of_the_bound(tmp_path):
    unit = Spool(tmp_path, max_bytes=1).unit
    spool = Spool(tmp_path, max_bytes=30 * unit)
    for n in range(8):
        spool.reject(spool.put({"stream_id": f"r{n}"}, b"x" * 300).name)
    kept = spool.rejected()
    assert len(kept) == 3 and kept[-1].endswith("-r7.stream"), kept  # the newest
    assert spool.used_bytes == 3 * unit
    (tmp_path / "pending").chmod(0o755)
    Spool(tmp_path, 30 * unit)
    assert (tmp_path / "pending").stat().st_mode & 0o777 == 0o700


def test_a_capture_the_service_refuses_for_good_is_set_aside_not_retried(service, taps):
    spool = Spool(taps.tmp_path / "spool", 1 << 20)
    spool.put({"stream_id": "refused-1", "protocol": "no-such-protocol"}, b"data: {}\n\n")
    tap = taps.start(service.url)
    # The file is moved first, then counted: wait for both.
    wait_until(lambda: tap.tap.spool.rejected() and tap.tap.poster.refused, what="the capture set aside", timeout=10)
    assert len(tap.tap.spool.rejected()) == 1 and tap.tap.poster.refused == 1
    assert spooled(tap.tap.spool.pending_dir) == []


def test_a_refused_token_keeps_the_captures_spooled(service, taps):
    tap = taps.start(service.url, ingest_token="not-a-token")
    through(tap, "chat", "F0", agent="bad-token/1")
    wait_until(lambda: tap.tap.poster.retried >= 1, what="the refused post retried", timeout=10)
    assert tap.tap.poster.retried >= 1 and tap.tap.poster.posted == 0
    assert len(spooled(tap.tap.spool.pending_dir)) == 1
    assert tap.tap.spool.rejected() == []


# ---------------------------------------------------------------------------------------------
# captures of compressed answers
# ---------------------------------------------------------------------------------------------
def test_a_compressed_answer_is_judged_by_its_decoded_bytes():
    stream = b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    for encoding, packed in (("gzip", gzip.compress(stream)), ("deflate", zlib.compress(stream))):
        capture = Capture(encoding, limit=1 << 20)
        for at in range(0, len(packed), 7):
            capture.add(packed[at : at + 7])
        assert capture.usable and capture.body == stream
    unknown = Capture("br", limit=1 << 20)
    unknown.add(b"\x8b\x02\x80")
    assert not unknown.usable and "br" in unknown.reason
    over = Capture("", limit=10)
    over.add(stream)
    assert not over.usable and over.body == b""
    # a small chunk that decodes to much is decoded no further than the limit
    bomb, packed = Capture("gzip", limit=1 << 20), gzip.compress(b"\0" * (64 << 20))
    tracemalloc.start()
    try:
        bomb.add(packed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not bomb.usable and "capture limit" in bomb.reason
    assert peak < 4 << 20, f"decoding held {peak / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------------------------
# the command, as a process
# ---------------------------------------------------------------------------------------------
# Credentials in the upstream's URL and a client's query: never in a log line, at any level.
UPSTREAM_PASSWORD, UPSTREAM_KEY, CLIENT_KEY = "Upstr3amPassw0rd", "UpstreamQueryKey", "AIzaCLIENTSECRETKEY123"


def test_the_tap_command_relays_posts_and_logs_no_payload(mock, service, tmp_path):
    port = free_port()
    spool_dir = tmp_path / "process-spool"
    env = {
        **os.environ,
        "TAP_SPOOL_DIR": str(spool_dir),
        "TAP_INGEST_TOKEN": INGEST_SECRET,
        "TAP_SHUTDOWN_GRACE_SECONDS": "2",
        "TAP_LOG_LEVEL": "debug",
    }
    log_path = tmp_path / "tap.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fastsse_service",
                "tap",
                "--listen",
                f"127.0.0.1:{port}",
                "--upstream",
                f"http://svcuser:{UPSTREAM_PASSWORD}@127.0.0.1:{mock.port}/?api-key={UPSTREAM_KEY}",
                "--ingest",
                service.url,
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(
                lambda: b"Uvicorn running" in log_path.read_bytes() or process.poll() is not None,
                what="the tap command started",
            )
            assert process.poll() is None, log_path.read_text()
            for fault in ("F0", "reset", "F3"):
                got = request(
                    port,
                    "POST",
                    stream_path("responses", f"/{fault}"),
                    generation("responses") | {"input": CANARY},
                    {"user-agent": "process-tap/1"},
                )
                assert got["status"] == 200
            keyed = stream_path("gemini") + f"&key={CLIENT_KEY}"
            assert request(port, "POST", keyed, generation("gemini"), {"user-agent": "process-tap/1"})["status"] == 200
            stored = wait_for(service.url, 4, tool="process-tap")
            expected = [EXPECTED_OVER_HTTP[f] for f in ("F0", "reset", "F3", "F0")]
            assert sorted(v["category"] for v in stored) == sorted(expected)
        finally:
            process.send_signal(signal.SIGTERM)
            # uvicorn shuts down, then re-raises the signal so the parent sees why it ended.
            assert process.wait(30) in (0, -signal.SIGTERM)
    text = log_path.read_text()
    assert "Application shutdown complete" in text
    assert CANARY not in text
    for secret in (UPSTREAM_PASSWORD, UPSTREAM_KEY, CLIENT_KEY, INGEST_SECRET):
        assert secret not in text, secret
    assert "Traceback" not in text and "Exception in ASGI" not in text, text
    assert spooled(spool_dir / "pending") == []


def test_the_tap_command_refuses_a_bad_configuration():
    run = subprocess.run(
        [sys.executable, "-m", "fastsse_service", "tap", "--ingest", "ftp://x"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TAP_UPSTREAM": "http://127.0.0.1:1"},
    )
    assert run.returncode == 2 and "http:// or https://" in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "fastsse_service", "tap", "--listen", "nowhere"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "HOST:PORT" in run.stderr

"""Admission control and upload timeouts: past MAX_INFLIGHT_POSTS a post is refused at once
with 503 and Retry-After (never queued until a client times out), and a client that dribbles
its upload gets a 408 instead of holding a slot forever.  Nothing refused is ever stored."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from fastsse_service.auth import sign_post
from loadtests.localhost import wait_until
from loadtests.wire import short_stream

from .conftest import INGEST_SECRET, READ, WEBHOOK_SECRET, metric_total


def open_upload(port: int, stream_id: str, length: int, first: bytes, *, secret: str = INGEST_SECRET) -> socket.socket:
    """A post whose headers and first bytes are sent, the rest held back."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        f"POST /v1/streams?stream_id={stream_id}&protocol=chat HTTP/1.1\r\n"
        f"host: 127.0.0.1\r\nauthorization: Bearer {secret}\r\n"
        f"content-length: {length}\r\n\r\n".encode()
        + first
    )
    return sock


def answer_of(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"}"):
        piece = sock.recv(65536)
        if not piece:
            break
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head + b"\r\n\r\n" + body


def stored_ids(server) -> set[str]:
    answer = httpx.get(f"{server.url}/v1/verdicts", params={"limit": 1000}, headers=READ)
    return {v["stream_id"] for v in answer.json()["verdicts"]}


def wait_in_progress(server, count: int) -> None:
    """Until the service says ``count`` posts are in progress (admitted, not answered)."""

    def in_progress() -> bool:
        text = httpx.get(f"{server.url}/metrics", timeout=10).text
        return metric_total(text, "fastsse_ingest_posts_in_progress") == count

    wait_until(in_progress, what=f"{count} posts in progress")


def post(server, stream_id: str, body: bytes) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/streams",
        params={"stream_id": stream_id},
        content=body,
        headers={"authorization": f"Bearer {INGEST_SECRET}"},
        timeout=30,
    )


def test_one_gateway_holds_at_most_its_share_of_the_slots(serve):
    # One gateway (any ingest credential, an application's reporter's too) dribbling posts held
    # every slot, and every other gateway's post got 503 until it let go.
    server = serve(max_inflight_posts=4)
    body = short_stream(text="the held posts")
    held = [open_upload(server.port, f"hog-{n}", len(body), body[:10]) for n in range(3)]
    try:
        wait_in_progress(server, 2)  # half of the four: the third is answered at once
        status, answer = answer_of(held[2])
        assert status == 503 and b"MAX_INFLIGHT_POSTS_PER_GATEWAY" in answer, answer
        signed_target = "/v1/streams?stream_id=beside-the-hog"
        other = httpx.post(
            server.url + signed_target, content=body, headers=sign_post(WEBHOOK_SECRET, signed_target, body)
        )
        assert other.status_code == 201, other.text
    finally:
        for sock in held:
            sock.close()


def test_past_the_inflight_limit_a_post_is_refused_at_once_and_the_rest_go_on(serve):
    server = serve(max_inflight_posts=2, max_inflight_posts_per_gateway=2)
    body = short_stream(text="the held posts")
    held = [open_upload(server.port, f"held-{n}", len(body), body[:10]) for n in range(2)]
    wait_in_progress(server, 2)
    started = time.monotonic()
    refused = post(server, "refused", body)
    assert refused.status_code == 503
    # A queued post would wait for the held ones, which this test holds to the client's 30 s
    # timeout; a refusal is answered in milliseconds (10 s: a busy machine's margin).
    assert time.monotonic() - started < 10, "a refusal must not wait for a slot"
    assert refused.headers["retry-after"] == "1"
    assert "MAX_INFLIGHT_POSTS" in refused.json()["detail"]
    for sock in held:
        sock.sendall(body[10:])
        assert answer_of(sock)[0] == 201
        sock.close()
    assert post(server, "after", body).status_code == 201  # the slots were given back
    assert stored_ids(server) == {"held-0", "held-1", "after"}


def test_an_upload_that_stops_sending_gets_a_408_and_stores_nothing(serve):
    server = serve(upload_idle_timeout_seconds=0.5)
    body = short_stream(text="a stalled upload")
    started = time.monotonic()  # before the upload: its timer cannot start any earlier
    sock = open_upload(server.port, "stalled", len(body), body[:20])
    status, raw = answer_of(sock)
    sock.close()
    assert status == 408 and b"UPLOAD_IDLE_TIMEOUT_SECONDS" in raw
    # Not before the idle timeout (uvloop's timers may run a millisecond early), and long
    # before the default (30 s): 10 s is a busy machine's margin.
    assert 0.45 < time.monotonic() - started < 10
    assert b"connection: close" in raw.lower()
    assert post(server, "fine", body).status_code == 201
    assert stored_ids(server) == {"fine"}


def test_an_upload_dribbled_past_the_total_timeout_gets_a_408_and_starves_nobody(serve):
    server = serve(upload_idle_timeout_seconds=5, upload_timeout_seconds=1.5)
    body = short_stream(text="a dribbled upload")  # at a byte each 0.2 s, minutes to send
    started = time.monotonic()  # before the upload: its timer cannot start any earlier
    sock = open_upload(server.port, "dribbled", len(body), body[:1])
    wait_in_progress(server, 1)  # it holds its slot: another post is served meanwhile
    served_meanwhile = [post(server, "other-0", body).status_code]
    at = 1
    sock.settimeout(0.2)
    while True:
        try:
            status, raw = answer_of(sock)
            break
        except TimeoutError:
            sock.sendall(body[at : at + 1])  # a byte now and then: never idle
            at += 1
            if len(served_meanwhile) < 3:  # as many as its 1.5 s leave room for
                served_meanwhile.append(post(server, f"other-{at}", body).status_code)
    sock.close()
    assert status == 408 and b"UPLOAD_TIMEOUT_SECONDS" in raw
    assert 1.45 < time.monotonic() - started < 15  # the total timeout; 15 s: a busy machine's margin
    assert set(served_meanwhile) == {201}
    assert "dribbled" not in stored_ids(server)


def test_an_upload_slower_than_the_idle_timeout_but_never_quiet_that_long_is_stored(serve):
    # One timer watches both limits; every chunk only moves the moment the idle limit counts
    # from, so a steady upload that takes three idle timeouts in all is not cut off.
    # Each gap is a sixth of the idle timeout, so that a busy machine stretching a gap cannot
    # make it one; the gaps add up to more than the idle timeout.
    server = serve(upload_idle_timeout_seconds=1.2, upload_timeout_seconds=60)
    body = short_stream(text="a slow but steady upload")
    pieces = 10
    size = len(body) // pieces + 1
    sock = open_upload(server.port, "steady", len(body), body[:size])
    started = time.monotonic()
    for at in range(size, len(body), size):
        time.sleep(0.2)  # the scenario: a slow sender
        sock.sendall(body[at : at + size])
    status, raw = answer_of(sock)
    sock.close()
    assert status == 201, raw
    assert time.monotonic() - started > 1.2  # longer in all than the idle timeout
    assert stored_ids(server) == {"steady"}


def test_upload_timeouts_fire_never_early_and_share_one_timer():
    # Each post's clock had a timer of its own, set and cancelled, which cost a worker about
    # 2.5 µs a post: the clocks of a loop are now looked at together, every SWEEP_SECONDS.
    import asyncio

    uvloop = pytest.importorskip("uvloop")
    from fastsse_service import uploads

    async def upload(idle: float, total: float) -> tuple[str | None, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        clock = uploads.UploadClock(idle, total)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return clock.expired(), loop.time() - started
        finally:
            clock.stop()
        return None, 5.0

    for idle, total, limit in [
        (0.0123, 5, "UPLOAD_IDLE_TIMEOUT_SECONDS"),
        (5, 0.0377, "UPLOAD_TIMEOUT_SECONDS"),
        (0.007, 0.0041, "UPLOAD_TIMEOUT_SECONDS"),
    ]:
        reason, waited = uvloop.run(upload(idle, total))
        assert reason is not None and limit in reason
        assert waited >= min(idle, total)  # (uvloop's clock counts whole milliseconds)

    async def many() -> int:
        clocks = [uploads.UploadClock(5, 5) for _ in range(50)]
        shared = len(uploads._sweeps[asyncio.get_running_loop()].clocks)
        for clock in clocks:
            clock.stop()
        return shared

    assert uvloop.run(many()) == 50

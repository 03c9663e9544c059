"""Failed credentials are counted and slowed per client address (issue 25: about 6,700 sign-in
and 10,300 bearer guesses a second went through, unlogged)."""

from __future__ import annotations

import os

import httpx
import pytest

from fastsse_service import failed_credentials
from fastsse_service.auth import sign_post
from fastsse_service.failed_credentials import FailedCredentials
from loadtests.wire import short_stream

from .conftest import INGEST, READ, READ_SECRET, metric_total


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_address_spends_its_burst_then_gets_one_a_second_back():
    clock = Clock()
    budgets = FailedCredentials(3, 60, clock=clock)
    for _ in range(3):
        assert budgets.retry_after("10.0.0.1") is None
        budgets.failed("10.0.0.1", "read_token")
    assert budgets.retry_after("10.0.0.1") == 1
    assert budgets.retry_after("10.0.0.2") is None  # another address
    clock.now += 1.0
    assert budgets.retry_after("10.0.0.1") is None
    budgets.failed("10.0.0.1", "read_token")
    assert budgets.retry_after("10.0.0.1") == 1
    clock.now += 3600
    assert budgets.retry_after("10.0.0.1") is None


def test_an_ipv6_client_spends_its_64s_budget():
    budgets = FailedCredentials(2, 60, clock=Clock())
    budgets.failed("2001:db8:1:2::1", "read_token")
    budgets.failed("2001:db8:1:2:ffff::77", "read_token")  # another address of the same /64
    assert budgets.retry_after("2001:db8:1:2:abcd::9") == 1
    assert budgets.retry_after("2001:db8:1:3::1") is None  # another /64
    assert budgets.retry_after("127.0.0.1") is None


def test_the_addresses_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(failed_credentials, "MAX_ADDRESSES", 100)
    budgets = FailedCredentials(1, 1, clock=Clock())
    for n in range(1000):
        budgets.failed(f"10.0.{n // 256}.{n % 256}", "signin")
    assert len(budgets._budgets) == 100
    assert budgets.retry_after("10.0.3.231") is not None  # the last one failed is kept
    assert budgets.retry_after("10.0.0.0") is None  # the first, forgotten


def client_from(server, address: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=30, transport=httpx.HTTPTransport(local_address=address))


def failures(server, kind: str) -> float:
    return metric_total(httpx.get(f"{server.url}/metrics").text, "fastsse_failed_credentials_total", kind=kind)


def test_wrong_read_tokens_are_counted_and_then_even_a_right_one_waits(serve):
    server = serve(failed_credentials_burst=3)
    before = failures(server, "read_token")
    with client_from(server, "127.0.0.1") as guesser, client_from(server, "127.0.0.2") as other:
        for n in range(3):
            assert guesser.get("/v1/rates", headers={"Authorization": f"Bearer guess-{n}"}).status_code == 401
        refused = guesser.get("/v1/rates", headers=READ)  # the right token, from the guessing address
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1", refused.text
        assert other.get("/v1/rates", headers=READ).status_code == 200  # another address is served
    assert failures(server, "read_token") - before == 3


@pytest.mark.parametrize("kind", ["ingest_token", "signature"])
def test_wrong_ingest_credentials_are_counted_and_slowed(serve, kind):
    server = serve(failed_credentials_burst=2)
    before = failures(server, kind)
    body = short_stream()

    def wrong(n: int) -> dict:
        if kind == "ingest_token":
            return {"Authorization": f"Bearer guess-{n}"}
        return sign_post("a guessed secret", f"/v1/streams?stream_id=g{n}", body)

    with client_from(server, "127.0.0.1") as guesser:
        for n in range(2):
            answer = guesser.post(f"/v1/streams?stream_id=g{n}", content=body, headers=wrong(n))
            assert answer.status_code == 401
        answer = guesser.post("/v1/streams?stream_id=g9", content=body, headers=wrong(9))
        assert answer.status_code == 429 and "retry-after" in answer.headers
        # Nothing presented is no guess: answered 401 as ever, spending nothing more.
        assert guesser.post("/v1/streams?stream_id=none", content=body).status_code == 401
    assert failures(server, kind) - before == 2
    assert metric_total(httpx.get(f"{server.url}/metrics").text, "fastsse_ingest_requests_total", status="429") >= 1


def test_a_post_without_credentials_spends_nothing(serve):
    server = serve(failed_credentials_burst=1)
    with client_from(server, "127.0.0.1") as client:
        for _ in range(5):
            assert client.post("/v1/streams?stream_id=x", content=b"").status_code == 401
        assert client.post("/v1/streams?stream_id=x", content=short_stream(), headers=INGEST).status_code == 201


def test_wrong_sign_ins_are_counted_and_slowed(serve):
    server = serve(failed_credentials_burst=2)
    before = failures(server, "signin")
    with client_from(server, "127.0.0.1") as browser:
        for n in range(2):
            assert browser.post("/signin", data={"token": f"guess-{n}"}).status_code == 401
        page = browser.post("/signin", data={"token": READ_SECRET})
        assert page.status_code == 429 and "Try again in" in page.text and page.headers["retry-after"] == "1"
    assert failures(server, "signin") - before == 2


@pytest.mark.parametrize("trusted", [None, "127.0.0.1"])
def test_x_forwarded_for_names_the_client_only_from_a_trusted_proxy(service_process, sqlite_url, trusted):
    # By default uvicorn believed 127.0.0.1's X-Forwarded-For: a guesser on the host rotated it
    # to guess without limit, or spent another address's budget to lock that one out.
    settings = {"DATABASE_URL": sqlite_url, "FAILED_CREDENTIALS_BURST": "3"}
    if trusted is not None:
        settings["FORWARDED_ALLOW_IPS"] = trusted
    assert "FORWARDED_ALLOW_IPS" not in os.environ
    service = service_process(settings)
    with httpx.Client(base_url=service.url, timeout=30) as client:
        statuses = [
            client.get(
                "/v1/rates", headers={"Authorization": f"Bearer guess-{n}", "X-Forwarded-For": f"10.9.{n}.9"}
            ).status_code
            for n in range(6)
        ]
        named = client.get("/v1/rates", headers={**READ, "X-Forwarded-For": "10.9.0.9"}).status_code
    if trusted:  # HAProxy on the host names each client: six clients, each with its own budget
        assert statuses == [401] * 6 and named == 200
    else:  # the header is nobody's word: one client, whose budget ran out
        assert statuses == [401] * 3 + [429] * 3 and named == 429

"""Signed posts (docs/gateways/signing.md): the signature covers the post's id, time, request
target and the body's SHA-256, so the signer is known before the body is read, and a signed post
seen on the wire cannot be made into any other verdict."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import hmac
import socket
import subprocess
import sys
import time

import httpx
import pytest

from fastsse_service.auth import Credentials, sign_post, signed_content
from fastsse_service.db import make_engine, migrate
from fastsse_service.stores import open_store
from fastsse_service.writer import CREATED, DUPLICATE, REUSED, Message, VerdictWriter, WriterUnavailable
from loadtests.wire import short_stream

from .conftest import INGEST, WEBHOOK_SECRET

try:
    from compression import zstd
except ImportError:
    from backports import zstd
from .test_ingest import stored_rows
from .test_storage import Faulty, complete_row

TARGET = "/v1/streams?stream_id=signed-1&tool=codex&model_requested=gpt-4.1"


def signed(client, target: str, body, headers: dict) -> httpx.Response:
    """POST ``body`` to ``target`` exactly as written (httpx sends a URL's query as given)."""
    return client.post(target, content=body, headers=headers)


def test_a_signed_post_is_stored_as_the_signing_gateways(client, database_url):
    body = short_stream()
    answer = signed(client, TARGET, body, sign_post(WEBHOOK_SECRET, TARGET, body))
    assert answer.status_code == 201, answer.text
    verdict = answer.json()
    assert (verdict["gateway"], verdict["tool"], verdict["model_requested"]) == ("signer", "codex", "gpt-4.1")
    assert [row["stream_id"] for row in stored_rows(database_url)] == ["signed-1"]


def test_a_chunked_signed_post_is_checked_as_it_streams_in(client):
    body = short_stream(text="many words " * 300)
    pieces = (body[i : i + 700] for i in range(0, len(body), 700))
    answer = signed(client, TARGET, pieces, sign_post(WEBHOOK_SECRET, TARGET, body))
    assert answer.status_code == 201, answer.text


def test_a_plain_secret_signs_too_and_one_of_several_signatures_may_match(client):
    """Any secret in INGEST_TOKENS is a signing key (whsec_ ones are base64); during a key
    rotation a gateway sends a signature under each key."""
    body = short_stream()
    headers = sign_post("ingest-secret-gw1", TARGET, body)
    old = sign_post("an old secret of gw1", TARGET, body, msg_id=headers["webhook-id"])
    headers["webhook-signature"] = f"{old['webhook-signature']} {headers['webhook-signature']}"
    answer = signed(client, TARGET, body, headers)
    assert answer.status_code == 201 and answer.json()["gateway"] == "gw1", answer.text


def _without(headers: dict, name: str) -> dict:
    return {key: value for key, value in headers.items() if key != name}


def _resigned(headers: dict, **changes) -> dict:
    return {**headers, **changes}


BODY = short_stream()


def refused_heads() -> dict[str, tuple[dict, str]]:
    """What a client that holds no secret, or holds an old post, sends: refused before the
    body; and the reason it is told.  Made when the test runs: the times are the clock's."""
    now = int(time.time())
    good = sign_post(WEBHOOK_SECRET, TARGET, BODY, msg_id="msg_fixed", timestamp=now)
    return {
        "no signature": (_without(good, "webhook-signature"), "are all required"),
        "no content-digest": (_without(good, "content-digest"), "are all required"),
        "another secret": (sign_post("whsec_" + "A" * 32, TARGET, BODY), "matches no gateway"),
        "expired": (sign_post(WEBHOOK_SECRET, TARGET, BODY, timestamp=now - 400), "window"),
        "from the future": (sign_post(WEBHOOK_SECRET, TARGET, BODY, timestamp=now + 400), "window"),
        "a Standard Webhooks v1 signature": (
            _resigned(good, **{"webhook-signature": good["webhook-signature"].replace("fastsse2,", "v1,")}),
            "holds no fastsse2 signature",
        ),
        "a fastsse1 signature, which does not cover Content-Encoding": (
            _resigned(good, **{"webhook-signature": good["webhook-signature"].replace("fastsse2,", "fastsse1,")}),
            "sign with fastsse2",
        ),
        "not base64": (_resigned(good, **{"webhook-signature": "fastsse2,@@@"}), "holds no fastsse2"),
        "a digest that is not SHA-256": (
            _resigned(good, **{"content-digest": "sha-512=:" + base64.b64encode(b"x" * 64).decode() + ":"}),
            "content-digest must be",
        ),
        "a digest of the wrong size": (
            _resigned(good, **{"content-digest": "sha-256=:" + base64.b64encode(b"x" * 31).decode() + ":"}),
            "content-digest must be",
        ),
        "an id with a space": (_resigned(good, **{"webhook-id": "msg fixed"}), "webhook-id must be"),
        "an id of 257 characters": (_resigned(good, **{"webhook-id": "m" * 257}), "webhook-id must be"),
    }


@pytest.mark.parametrize("case", sorted(refused_heads()))
def test_signing_headers_that_do_not_hold_are_a_401_with_the_reason(client, database_url, case):
    headers, reason = refused_heads()[case]
    answer = signed(client, TARGET, BODY, headers)
    assert answer.status_code == 401 and reason in answer.json()["detail"], answer.text
    assert answer.headers["www-authenticate"] == "Bearer"
    assert stored_rows(database_url) == []


def test_a_body_other_than_the_signed_one_is_a_401_and_stores_nothing(client, database_url):
    headers = sign_post(WEBHOOK_SECRET, TARGET, BODY)
    answer = signed(client, TARGET, BODY.replace(b"Hello", b"Jello"), headers)
    assert answer.status_code == 401 and "content-digest" in answer.json()["detail"], answer.text
    assert stored_rows(database_url) == []


# A signed post seen on the wire (issue 25: replayed within the window with another stream_id,
# tool, model, ended_at..., it stored forged verdicts): every part of its target is signed.
FORGED_TARGETS = [
    "/v1/streams?stream_id=forged&tool=codex&model_requested=gpt-4.1",
    "/v1/streams?stream_id=signed-1&tool=claude-code&model_requested=gpt-4.1",
    "/v1/streams?stream_id=signed-1&tool=codex&model_requested=gpt-4o",
    "/v1/streams?stream_id=signed-1&tool=codex&model_requested=gpt-4.1&ended_at=2026-12-01T00:00:00Z",
    "/v1/streams?stream_id=signed-1&tool=codex&model_requested=gpt-4.1&transport=reset",
    "/v1/streams?stream_id=signed-1&tool=codex&model_requested=gpt-4.1&upstream_status=500",
    "/v1/streams?tool=codex&model_requested=gpt-4.1&stream_id=signed-1",  # the same, reordered
    "/v1/streams?stream_id=signed-1&tool=codex&model_requested=gpt-4%2E1",  # the same, escaped
    "/v1/streams?stream_id=signed-1&tool=codex",
    "/v1/streams/?stream_id=signed-1&tool=codex&model_requested=gpt-4.1",
]


def test_a_captured_signed_post_cannot_be_made_into_another_verdict(client, database_url):
    headers = sign_post(WEBHOOK_SECRET, TARGET, BODY)
    assert signed(client, TARGET, BODY, headers).status_code == 201
    for target in FORGED_TARGETS:
        answer = signed(client, target, BODY, headers)
        assert not answer.is_success, (target, answer.status_code, answer.text)
    # The same post again is the gateway's retry: its stored verdict, nothing stored anew.
    again = signed(client, TARGET, BODY, headers)
    assert again.status_code == 200 and again.json()["stream_id"] == "signed-1", again.text
    rows = stored_rows(database_url)
    assert [(row["stream_id"], row["tool"], row["model_requested"]) for row in rows] == [
        ("signed-1", "codex", "gpt-4.1")
    ]


@pytest.mark.parametrize("encoding", ["gzip", "zstd"])
def test_a_captured_compressed_post_sent_without_its_encoding_is_refused(client, database_url, encoding):
    # Content-Encoding was outside the signature: the compressed bytes, sent first without it,
    # were judged as the stream (a forged no_end_marker), and the gateway's own post then got
    # 409, which its poster takes as final.
    compressed = gzip.compress(BODY) if encoding == "gzip" else zstd.compress(BODY)
    headers = {**sign_post(WEBHOOK_SECRET, TARGET, compressed, content_encoding=encoding), "content-encoding": encoding}
    for changed in (
        {k: v for k, v in headers.items() if k != "content-encoding"},
        {**headers, "content-encoding": "identity"},
        {**headers, "content-encoding": "deflate"},
    ):
        answer = signed(client, TARGET, compressed, changed)
        assert answer.status_code == 401 and "matches no gateway" in answer.json()["detail"], answer.text
    assert stored_rows(database_url) == []
    answer = signed(client, TARGET, compressed, {**headers, "content-encoding": encoding.upper()})
    assert answer.status_code == 201 and answer.json()["category"] == "complete", answer.text


def test_a_webhook_id_names_one_post(client, database_url):
    """The gateway's own signature, but an id it used for another post: refused (409); the same
    post re-signed at a later time (a retry) is the stored verdict again."""
    first = sign_post(WEBHOOK_SECRET, TARGET, BODY, msg_id="msg_once", timestamp=int(time.time()) - 10)
    assert signed(client, TARGET, BODY, first).status_code == 201
    other_target = "/v1/streams?stream_id=another&tool=codex"
    other = sign_post(WEBHOOK_SECRET, other_target, BODY, msg_id="msg_once")
    answer = signed(client, other_target, BODY, other)
    assert answer.status_code == 409 and "webhook-id" in answer.json()["detail"], answer.text
    other_body = short_stream(text="other bytes")
    answer = signed(client, TARGET, other_body, sign_post(WEBHOOK_SECRET, TARGET, other_body, msg_id="msg_once"))
    assert answer.status_code == 409, answer.text
    retry = signed(client, TARGET, BODY, sign_post(WEBHOOK_SECRET, TARGET, BODY, msg_id="msg_once"))
    assert retry.status_code == 200, retry.text
    # Another gateway's ids are its own.
    answer = signed(client, other_target, BODY, sign_post("ingest-secret-gw1", other_target, BODY, msg_id="msg_once"))
    assert answer.status_code == 201 and answer.json()["gateway"] == "gw1", answer.text
    assert sorted((row["gateway"], row["stream_id"]) for row in stored_rows(database_url)) == [
        ("gw1", "another"),
        ("signer", "signed-1"),
    ]


def test_webhook_ids_are_kept_across_writers_and_let_go_after_the_window(database_url):
    """Two workers (or replicas) share the ids through the database; an id whose signature
    time has left the window is let go (its post is refused by its time by then)."""
    engine = make_engine(database_url)
    stamp = int(time.time())

    async def run():
        one = VerdictWriter(open_store(engine), queue_size=10, batch_size=10, metrics_tools=frozenset())
        two = VerdictWriter(open_store(engine), queue_size=10, batch_size=10, metrics_tools=frozenset())
        await one.start()
        await two.start()
        try:
            message = Message("msg_shared", stamp)
            first = await one.write(complete_row("a"), timeout=10, message=message)
            reused = await two.write(complete_row("b"), timeout=10, message=message)
            retried = await two.write(complete_row("a"), timeout=10, message=message)
            await two.store.forget_messages(before=stamp + 1)
            after_window = await two.write(complete_row("c"), timeout=10, message=message)
            return first.outcome, reused.outcome, retried.outcome, after_window.outcome
        finally:
            await one.stop()
            await two.stop()

    assert asyncio.run(run()) == (CREATED, REUSED, DUPLICATE, CREATED)
    engine.dispose()
    assert sorted(row["stream_id"] for row in stored_rows(database_url)) == ["a", "c"]


def test_posts_of_one_webhook_id_in_one_batch_store_the_first(database_url):
    engine = make_engine(database_url)
    writer = VerdictWriter(open_store(engine), queue_size=10, batch_size=10, metrics_tools=frozenset())
    message = Message("msg_batch", int(time.time()))

    async def run():
        waiting = [
            asyncio.ensure_future(writer.write(complete_row(stream), timeout=10, message=message))
            for stream in ("first", "second", "first")
        ]
        await asyncio.sleep(0)  # all three queued before the writer's first batch
        await writer.start()
        try:
            return [result.outcome for result in await asyncio.gather(*waiting)]
        finally:
            await writer.stop()

    assert asyncio.run(run()) == [CREATED, REUSED, DUPLICATE]
    engine.dispose()
    assert [row["stream_id"] for row in stored_rows(database_url)] == ["first"]


def test_an_id_kept_for_a_verdict_that_failed_lets_the_retry_through(sqlite_url):
    """The id is committed before the verdict: if the verdict's transaction fails, the
    gateway's retry of the same post is stored."""
    migrate(sqlite_url)
    engine = make_engine(sqlite_url)
    store = Faulty(open_store(engine))
    store.insert_faults.append(RuntimeError("the verdict's transaction fails"))
    writer = VerdictWriter(store, queue_size=10, batch_size=10, metrics_tools=frozenset())
    message = Message("msg_retried", int(time.time()))

    async def twice():
        await writer.start()
        try:
            with pytest.raises(WriterUnavailable):
                await writer.write(complete_row("retried"), timeout=10, message=message)
            return (await writer.write(complete_row("retried"), timeout=10, message=message)).outcome
        finally:
            await writer.stop()

    assert asyncio.run(twice()) == CREATED
    engine.dispose()


def _head(port: int, target: str, headers: dict, length: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    sock.sendall(f"POST {target} HTTP/1.1\r\nhost: x\r\n{lines}content-length: {length}\r\n\r\n".encode())
    return sock


def _answer(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"}"):
        piece = sock.recv(65536)
        if not piece:
            break
        data += piece
    return int(data.split()[1]), data


def test_made_up_signing_headers_are_refused_before_the_body_and_take_no_slot(serve):
    """Issue 25: posts with made-up signing headers, their bodies held back, once filled every
    slot for signed posts.  Now each is refused at its head, and gateways are served.  (The
    forger has its own address: past FAILED_CREDENTIALS_BURST failures an address gets 429s.)"""
    server = serve(max_inflight_posts=2)
    forged = []
    for n in range(20):
        headers = sign_post("whsec_" + "B" * 32, f"/v1/streams?stream_id=forged-{n}", BODY)
        forged.append(_head(server.port, f"/v1/streams?stream_id=forged-{n}", headers, len(BODY), "127.0.0.2"))
    for sock in forged:  # answered without a byte of their bodies
        status, raw = _answer(sock)
        assert status == 401 and b"matches no gateway" in raw
        sock.close()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert signed(client, TARGET, BODY, sign_post(WEBHOOK_SECRET, TARGET, BODY)).status_code == 201
        bearer = client.post("/v1/streams", params={"stream_id": "bearer"}, content=BODY, headers=INGEST)
        assert bearer.status_code == 201


def test_a_signed_head_seen_on_the_wire_holds_one_slot_at_most(serve):
    """Sent again and again with a body that never comes, a genuine head takes one slot: the
    others are told at once that a post of that webhook-id is in progress."""
    server = serve(max_inflight_posts=4)
    headers = sign_post(WEBHOOK_SECRET, TARGET, BODY)
    first = _head(server.port, TARGET, headers, len(BODY))
    first.sendall(BODY[:10])
    copies = []
    for _ in range(5):
        sock = _head(server.port, TARGET, headers, len(BODY))
        status, raw = _answer(sock)
        copies.append((status, b"retry-after: 1" in raw.lower()))
        sock.close()
    assert copies == [(409, True)] * 5
    with httpx.Client(base_url=server.url, timeout=30) as client:
        other = "/v1/streams?stream_id=meanwhile"
        assert signed(client, other, BODY, sign_post(WEBHOOK_SECRET, other, BODY)).status_code == 201
    first.sendall(BODY[10:])
    assert _answer(first)[0] == 201
    first.close()


def test_the_sign_command_prints_the_headers_of_a_post(client, tmp_path, database_url):
    body_file = tmp_path / "stream.sse"
    body_file.write_bytes(BODY)
    secret_file = tmp_path / "secret"
    secret_file.write_text(WEBHOOK_SECRET + "\n")
    target = "/v1/streams?stream_id=from-the-cli&tool=curl"
    printed = subprocess.run(
        [
            sys.executable,
            "-m",
            "fastsse_service",
            "sign",
            "--secret-file",
            str(secret_file),
            "--target",
            target,
            "--id",
            "msg_cli",
            "--timestamp",
            str(int(time.time())),
            str(body_file),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    headers = dict(line.split(": ", 1) for line in printed.splitlines())
    assert list(headers) == ["webhook-id", "webhook-timestamp", "content-digest", "webhook-signature"]
    assert headers["webhook-id"] == "msg_cli"
    digest = base64.b64encode(hashlib.sha256(BODY).digest()).decode()
    assert headers["content-digest"] == f"sha-256=:{digest}:"
    answer = signed(client, target, BODY, headers)
    assert answer.status_code == 201 and answer.json()["gateway"] == "signer", answer.text
    # A compressed body: --content-encoding is signed, and printed with the rest.
    body_file.write_bytes(gzip.compress(BODY))
    target = target.replace("from-the-cli", "from-the-cli-gzip")
    printed = subprocess.run(
        [
            *(sys.executable, "-m", "fastsse_service", "sign", "--secret-file", str(secret_file)),
            *("--target", target, "--content-encoding", "gzip", str(body_file)),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    headers = dict(line.split(": ", 1) for line in printed.splitlines())
    assert headers["content-encoding"] == "gzip"
    answer = signed(client, target, body_file.read_bytes(), headers)
    assert answer.status_code == 201 and answer.json()["stream_id"] == "from-the-cli-gzip", answer.text


@pytest.mark.parametrize(
    "args, complaint",
    [
        (["--target", "/v1/streams?stream_id=s", "-"], "one of the arguments --secret --secret-file is required"),
        (["--secret", "s", "--target", "v1/streams", "-"], "starts with /"),
        (["--secret", "s", "--target", "/v1/streams?a=b c", "-"], "holds no spaces"),
        (["--secret", "s", "--target", "/v1/streams", "--id", "a b", "-"], "--id must be"),
        (["--secret-file", "/nonexistent/secret", "--target", "/v1/streams", "-"], "cannot read"),
    ],
)
def test_the_sign_command_refuses_what_it_cannot_sign(args, complaint):
    done = subprocess.run([sys.executable, "-m", "fastsse_service", "sign", *args], input=b"", capture_output=True)
    assert done.returncode == 2 and complaint in done.stderr.decode(), done.stderr


def test_a_whsec_secret_with_no_key_is_no_empty_key():
    """'whsec_' alone decodes to no bytes: anyone could sign with an empty key, so the secret
    is the key as it is written."""
    body, target = BODY, "/v1/streams?stream_id=s"
    credentials = Credentials({"gw": "whsec_"})
    forged = sign_post("whsec_", target, body)  # what sign_post does with it is the same rule
    checked = {"content_encoding": None, "tolerance_seconds": 300}
    assert credentials.signed_post(forged, target.encode(), **checked).signer == "gw"
    content = signed_content(
        forged["webhook-id"], int(forged["webhook-timestamp"]), target.encode(), "", hashlib.sha256(body).digest()
    )
    empty_key = base64.b64encode(hmac.digest(b"", content, "sha256")).decode()
    with pytest.raises(ValueError, match="matches no gateway"):
        credentials.signed_post({**forged, "webhook-signature": f"fastsse2,{empty_key}"}, target.encode(), **checked)

"""POST /v1/streams over real HTTP, on SQLite and PostgreSQL; and the route's work called as a
plain function."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
import socket
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from sqlalchemy import func, select

from fastsse_service.auth import Gateway
from fastsse_service.config import Settings
from fastsse_service.db import make_engine, migrate
from fastsse_service.ingest import IngestParams, Refusal, Refused, Stored, ingest
from fastsse_service.models import StoredVerdict, VerdictRollup
from fastsse_service.stores import open_store
from fastsse_service.writer import VerdictWriter
from loadtests.wire import short_stream

from .conftest import INGEST


def post(client, body: bytes, **params):
    params.setdefault("stream_id", "s-1")
    return client.post("/v1/streams", params=params, content=body, headers=INGEST)


def stored_rows(url: str) -> list[dict]:
    engine = make_engine(url)
    with engine.connect() as connection:
        rows = [dict(r) for r in connection.execute(select(StoredVerdict.__table__)).mappings()]
    engine.dispose()
    return rows


def test_complete_stream_is_stored_and_answered_201(client, database_url):
    response = post(client, short_stream(), tool="codex", stream_id="abc-1")
    assert response.status_code == 201, response.text
    verdict = response.json()
    assert verdict["category"] == "complete"
    assert verdict["complete"] is True and verdict["silent"] is False
    assert verdict["stream_id"] == "abc-1" and verdict["gateway"] == "gw1"
    assert verdict["tool"] == "codex" and verdict["protocol"] == "chat"
    assert verdict["finish_reason"] == "stop" and verdict["end_marker_seen"] is True
    [row] = stored_rows(database_url)
    assert row["id"] == verdict["id"] and row["category"] == "complete"
    assert row["bytes"] == len(short_stream())


@pytest.mark.parametrize(
    ("body", "params", "category", "silent"),
    [
        (short_stream("chat", "F2"), {}, "no_end_marker", True),
        (short_stream("chat", "F4"), {}, "truncated_length", True),
        (short_stream("chat", "F2"), {"transport": "reset"}, "transport_error", False),
        (short_stream(), {"upstream_status": "502"}, "complete", False),
        (short_stream("chat", "F2"), {"upstream_status": "500"}, "no_end_marker", False),
        (short_stream() + b'data: {"id": "chatc', {}, "buffer_residual", True),
        (short_stream("anthropic", "error"), {"protocol": "anthropic"}, "upstream_error", True),
        (b"", {}, "no_end_marker", True),
    ],
)
def test_category_and_silent_rule(client, body, params, category, silent):
    verdict = post(client, body, **params).json()
    assert (verdict["category"], verdict["silent"]) == (category, silent)
    assert verdict["complete"] is (category == "complete")


def test_same_bytes_again_gives_200_and_one_row(client, database_url):
    first = post(client, short_stream(), stream_id="dup")
    again = post(client, short_stream(), stream_id="dup", tool="other-params-are-ignored")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert len(stored_rows(database_url)) == 1


def test_other_bytes_under_a_stored_id_give_409(client, database_url):
    assert post(client, short_stream(), stream_id="dup").status_code == 201
    conflict = post(client, short_stream("chat", "F2"), stream_id="dup")
    assert conflict.status_code == 409
    assert "different bytes" in conflict.json()["detail"]
    [row] = stored_rows(database_url)
    assert row["category"] == "complete"


def test_stream_ids_are_per_gateway(serve, database_url):
    server = serve(ingest_tokens="gw1:one,gw2:two")
    with httpx.Client(base_url=server.url) as http:
        for secret in ("one", "two"):
            response = http.post(
                "/v1/streams",
                params={"stream_id": "same"},
                content=short_stream(),
                headers={"Authorization": f"Bearer {secret}"},
            )
            assert response.status_code == 201
    assert sorted(r["gateway"] for r in stored_rows(database_url)) == ["gw1", "gw2"]


def test_concurrent_duplicates_store_exactly_one_row(server, database_url):
    body = short_stream(text="one two three " * 50)

    def send(_):
        with httpx.Client(base_url=server.url, timeout=30) as http:
            return post(http, body, stream_id="raced").status_code

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(send, range(48)))
    assert sorted(statuses) == [200] * 47 + [201]
    assert len(stored_rows(database_url)) == 1
    engine = make_engine(database_url)
    with engine.connect() as connection:
        counted = connection.execute(select(func.sum(VerdictRollup.verdicts))).scalar_one()
    engine.dispose()
    assert counted == 1


def test_rows_and_rollups_agree_after_many_posts(server, database_url):
    bodies = [short_stream(), short_stream("chat", "F2"), short_stream("chat", "F4")]

    def send(i):
        with httpx.Client(base_url=server.url, timeout=30) as http:
            return post(http, bodies[i % 3], stream_id=f"many-{i}", tool="codex").status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert set(pool.map(send, range(90))) == {201}
    engine = make_engine(database_url)
    with engine.connect() as connection:
        per_category = dict(
            connection.execute(
                select(VerdictRollup.category, func.sum(VerdictRollup.verdicts)).group_by(VerdictRollup.category)
            ).all()
        )
        silent = connection.execute(select(func.sum(VerdictRollup.silent))).scalar_one()
    engine.dispose()
    assert per_category == {"complete": 30, "no_end_marker": 30, "truncated_length": 30}
    assert silent == 60
    assert len(stored_rows(database_url)) == 90


@pytest.mark.parametrize(
    ("requested", "served", "fallback"),
    [
        ("gpt-4o", "gpt-4o-2024-08-06", False),
        ("gpt-4o", "gpt-4o-mini-2024-07-18", True),
        ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", False),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", False),
        ("openai/gpt-4o", "gpt-4o", False),
        ("claude-opus-4-1", "claude-opus-4", True),
    ],
)
def test_silent_model_fallback(client, requested, served, fallback):
    verdict = post(client, short_stream(model=served), model_requested=requested).json()
    assert verdict["model_fallback"] is fallback
    assert verdict["model"] == served and verdict["model_requested"] == requested
    assert verdict["category"] == "complete"  # the category stays what the bytes say


def test_tool_is_sanitized_and_capped(client):
    verdict = post(client, short_stream(), tool="  Claude Code<script>" + "x" * 200).json()
    assert verdict["tool"] == ("claudecodescript" + "x" * 200)[:64]
    assert post(client, short_stream(), stream_id="s-2").json()["tool"] == "unknown"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "stream_id"),
        ({"stream_id": ""}, "stream_id"),
        ({"stream_id": "has space"}, "stream_id"),
        ({"stream_id": "x" * 129}, "stream_id"),
        ({"stream_id": "s", "protocol": "grpc"}, "protocol"),
        ({"stream_id": "s", "transport": "closed"}, "transport"),
        ({"stream_id": "s", "upstream_status": "700"}, "upstream_status"),
        ({"stream_id": "s", "upstream_status": "ok"}, "upstream_status"),
        ({"stream_id": "s", "attempt": "-1"}, "attempt"),
        ({"stream_id": "s", "model_requested": "gpt 4o"}, "model_requested"),
    ],
)
def test_bad_parameters_get_422_with_the_reason(client, database_url, params, field):
    response = client.post("/v1/streams", params=params, content=short_stream(), headers=INGEST)
    assert response.status_code == 422
    assert any(field in error["loc"] for error in response.json()["detail"])
    assert stored_rows(database_url) == []


def test_body_over_the_limit_gets_413_and_nothing_stored(serve, database_url):
    server = serve(max_body_bytes=5000)  # a short stream is about 1,300 bytes
    with httpx.Client(base_url=server.url) as http:
        response = post(http, short_stream(text="word " * 400))
        assert response.status_code == 413 and "MAX_BODY_BYTES" in response.json()["detail"]

        def chunks():
            for _ in range(100):
                yield b": keep-alive padding " * 10  # 21,000 bytes in all

        chunked = http.post("/v1/streams", params={"stream_id": "c"}, content=chunks(), headers=INGEST)
        assert chunked.status_code == 413
        assert post(http, short_stream(), stream_id="small").status_code == 201
    assert [r["stream_id"] for r in stored_rows(database_url)] == ["small"]


def raw_request(port: int, head: bytes, body_parts, *, read: bool = True) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        for part in body_parts:
            try:
                sock.sendall(part)
            except (BrokenPipeError, ConnectionResetError):
                break
        if not read:
            return b""
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
        return answer


def test_413_comes_before_the_body_is_read(serve, database_url):
    """A lying Content-Length that is too large is refused at once; the body is never sent."""
    server = serve(max_body_bytes=1000)
    head = (
        b"POST /v1/streams?stream_id=big HTTP/1.1\r\nHost: x\r\n"
        b"Authorization: Bearer ingest-secret-gw1\r\nContent-Length: 100000000\r\n"
        b"Connection: close\r\n\r\n"
    )
    answer = raw_request(server.port, head, [])
    assert answer.startswith(b"HTTP/1.1 413")
    assert stored_rows(database_url) == []


def test_chunked_body_past_the_limit_is_cut_off_while_it_streams(serve, database_url):
    server = serve(max_body_bytes=50_000)
    head = (
        b"POST /v1/streams?stream_id=endless HTTP/1.1\r\nHost: x\r\n"
        b"Authorization: Bearer ingest-secret-gw1\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    piece = b": padding\n" * 1000
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head)
        answer = b""
        sent = 0
        # The client never ends its body; the server must answer anyway, after ~50 kB.  Past
        # the limit the client waits longer for the answer before it sends on, so that a busy
        # machine's slower answer does not count as more chunks taken.
        for _ in range(200):  # bounded, whatever the server does
            try:
                sock.settimeout(1.0 if sent * len(chunk) > 50_000 else 0.2)
                sock.sendall(chunk)
                sent += 1
                answer += sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if answer.startswith(b"HTTP/1.1"):
                break
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 20
    assert stored_rows(database_url) == []


def test_upload_that_breaks_off_stores_nothing(server, database_url):
    body = short_stream()
    head = (
        b"POST /v1/streams?stream_id=cut HTTP/1.1\r\nHost: x\r\n"
        b"Authorization: Bearer ingest-secret-gw1\r\n" + f"Content-Length: {len(body) + 500}\r\n\r\n".encode()
    )
    raw_request(server.port, head, [body], read=False)  # closes after sending too few bytes
    # The next request is answered only after the server saw the broken upload (same loop).
    with httpx.Client(base_url=server.url) as http:
        assert post(http, short_stream(), stream_id="after").status_code == 201
    assert [r["stream_id"] for r in stored_rows(database_url)] == ["after"]


def test_database_down_gives_503_with_retry_after(serve):
    server = serve(database_url="postgresql+psycopg://postgres@127.0.0.1:1/none", write_timeout_seconds=20)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        response = post(http, short_stream())
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert "retry" in response.json()["detail"]
        assert http.get("/readyz").status_code == 503
        assert http.get("/healthz").status_code == 200


def test_max_event_bytes_is_handed_to_fastsse(serve):
    server = serve(max_event_bytes=1024)
    with httpx.Client(base_url=server.url) as http:
        verdict = post(http, short_stream(text="long " * 100)).json()
        # each word is an event of its own (about 300 bytes): within the limit.
        assert verdict["category"] == "complete"
        big = b'data: {"choices": [{"index": 0, "delta": {"content": "' + b"x" * 2000 + b'"}}]}\n\n'
        verdict = post(http, big + short_stream(), stream_id="big").json()
        assert verdict["category"] == "limit_exceeded" and verdict["limit"] is not None


def test_a_parameter_given_twice_is_refused_and_unknown_ones_are_ignored(client, database_url):
    twice = client.post("/v1/streams?stream_id=a&stream_id=b", content=short_stream(), headers=INGEST)
    assert twice.status_code == 422
    assert twice.json()["detail"][0]["loc"] == ["query", "stream_id"]
    assert stored_rows(database_url) == []
    newer = post(client, short_stream(), stream_id="n-1", sent_by="a newer gateway")
    assert newer.status_code == 201


@pytest.mark.parametrize(
    "query",
    [
        "",
        "&",
        "&&a=1&",
        "stream_id=a&tool=codex",
        "a",
        "a=",
        "=b",
        "a==b",
        "a=b=c",
        "a;b=c",
        "a=%41&b=c",
        "a=x+y",
        "%zz=1",
        "a=%",
        "a=%F0%9F%92%A5",
        "a=1&a=2",
        "+=+",
        "a=b&&c",
    ],
)
def test_the_query_is_read_as_parse_qsl_reads_it(query):
    from urllib.parse import parse_qsl

    from fastsse_service.ingest import query_pairs

    assert query_pairs(query) == parse_qsl(query, keep_blank_values=True)


def test_the_openapi_document_describes_every_ingest_parameter(client):
    from fastsse_service.ingest import PARAMETERS

    operation = client.get("/openapi.json").json()["paths"]["/v1/streams"]["post"]
    documented = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
    assert list(documented) == [p.name for p in PARAMETERS]
    [encoding] = [p for p in operation["parameters"] if p["in"] == "header"]
    assert encoding["name"] == "Content-Encoding"
    assert "gzip, deflate, zstd or identity" in encoding["description"]
    assert documented["stream_id"]["required"] is True
    assert documented["protocol"]["schema"]["enum"] == [
        "auto",
        "chat",
        "responses",
        "anthropic",
        "gemini",
        "bedrock-converse",
        "bedrock-invoke",
        "ollama",
    ]
    assert documented["upstream_status"]["schema"]["maximum"] == 599
    assert {"200", "201", "401", "409", "413", "422", "503"} <= set(operation["responses"])


def test_the_fast_path_answers_as_the_fastapi_route_does(make_settings, database_url):
    """Posts go past FastAPI's layers (app.Service, streams.serve_post); the FastAPI route
    they bypass answers alike."""
    from fastsse_service.app import create_app

    from .conftest import ThreadServer

    class Chunked(bytes):
        """Sent in chunks, without a content-length: the limit is found while reading."""

        def pieces(self):
            yield from (self[i : i + 4096] for i in range(0, len(self), 4096))

    too_large = short_stream(text="a long answer " * 2000)
    cases = [
        ({"stream_id": "p-1", "tool": "codex"}, short_stream(), INGEST),
        ({"stream_id": "p-1", "tool": "codex"}, short_stream(), INGEST),  # duplicate: 200
        ({"stream_id": "p-1"}, short_stream("chat", "F4"), INGEST),  # conflict: 409
        ({"stream_id": "p-2"}, short_stream(), {}),  # no credential: 401
        ({"stream_id": "p-2"}, short_stream(), {"Authorization": "Bearer nope"}),
        ({"stream_id": "has space", "attempt": "-3"}, short_stream(), INGEST),  # 422
        ({"stream_id": "p-3", "transport": "reset"}, b"", INGEST),
        ({"stream_id": "p-4"}, too_large, INGEST),  # 413 before a byte is read
        ({"stream_id": "p-5"}, Chunked(too_large), INGEST),  # 413 once past the limit
        ({"stream_id": "p-6"}, Chunked(short_stream()), INGEST),  # chunked: 201
    ]

    def answers(fast: bool, gateway: str) -> list:
        settings = make_settings(ingest_tokens=f"{gateway}:ingest-secret-gw1", max_body_bytes=len(too_large) - 100)
        with (
            ThreadServer(create_app(settings, ingest_fast_path=fast)) as server,
            httpx.Client(base_url=server.url, timeout=30) as http,
        ):
            out = []
            for params, body, headers in cases:
                content = body.pieces() if isinstance(body, Chunked) else body
                response = http.post("/v1/streams", params=params, content=content, headers=headers)
                payload = response.json()
                if isinstance(payload, dict):
                    for varying in ("id", "received_at", "ended_at", "gateway"):
                        payload.pop(varying, None)
                # every header, in order, but the server's own and the length of a verdict
                # (it carries the gateway's name and the times)
                sent = [
                    (name, value)
                    for name, value in response.headers.multi_items()
                    if name not in ("date", "server") and not (name == "content-length" and response.status_code < 300)
                ]
                out.append((response.status_code, payload, sent))
            return out

    # Two gateways, so that the stream ids do not collide in the one database.
    fast, routed = answers(True, "fast"), answers(False, "routed")
    assert [status for status, *_ in fast] == [201, 200, 409, 401, 401, 422, 201, 413, 413, 201]
    assert fast == routed


def test_a_bug_on_the_fast_path_is_a_counted_500_and_the_service_goes_on(serve):
    """An exception that escapes the ingest code is answered as FastAPI would (500, plain
    text), counted among the answers, raised on to the server (which logs it), and the next
    post is served."""
    server = serve()

    class BuggyOnce:
        """The app's writer, but its first write is a bug (not the database's trouble)."""

        def __init__(self, writer) -> None:
            self.writer, self.calls = writer, 0

        async def write(self, row, *, timeout, message=None):
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("a bug")
            return await self.writer.write(row, timeout=timeout, message=message)

    def answers_500() -> float:  # the metrics live as long as the process: compare
        scraped = httpx.get(f"{server.url}/metrics", timeout=30).text
        found = re.search(r'^fastsse_ingest_requests_total\{status="500"\} (\S+)$', scraped, re.M)
        return float(found.group(1)) if found else 0.0

    server.app.state.writer = BuggyOnce(server.app.state.writer)
    logged: list[logging.LogRecord] = []
    catcher = logging.Handler(logging.ERROR)
    catcher.emit = logged.append  # type: ignore[method-assign]
    server_log = logging.getLogger("uvicorn.error")  # it does not propagate to the root
    server_log.addHandler(catcher)
    try:
        before = answers_500()
        # One connection each: the server closes the one an exception escaped on.
        first = httpx.post(
            f"{server.url}/v1/streams",
            params={"stream_id": "bug-1"},
            content=short_stream(),
            headers=INGEST,
            timeout=30,
        )
        assert (first.status_code, first.text) == (500, "Internal Server Error")
        second = httpx.post(
            f"{server.url}/v1/streams",
            params={"stream_id": "bug-2"},
            content=short_stream(),
            headers=INGEST,
            timeout=30,
        )
        assert second.status_code == 201
        assert answers_500() == before + 1
    finally:
        server_log.removeHandler(catcher)
    assert any(r.exc_info and str(r.exc_info[1]) == "a bug" for r in logged), logged


def test_ended_at_keeps_a_late_post_at_its_own_time(client, database_url):
    from datetime import datetime, timedelta, timezone

    ended = datetime.now(timezone.utc) - timedelta(days=3)
    response = post(client, short_stream(), stream_id="late-1", ended_at=ended.isoformat().replace("+00:00", "Z"))
    assert response.status_code == 201, response.text
    verdict = response.json()
    assert verdict["ended_at"].startswith(ended.strftime("%Y-%m-%dT%H:%M"))
    assert verdict["received_at"] > verdict["ended_at"]
    hour = client.get("/v1/rates", params={"window": "1h", "by": "gateway"}).status_code
    assert hour == 401  # a read token is needed, and with it ...
    from .conftest import READ

    assert client.get("/v1/rates", params={"window": "1h", "by": "gateway"}, headers=READ).json()["groups"] == []
    week = client.get("/v1/rates", params={"window": "7d", "by": "gateway"}, headers=READ).json()["groups"]
    assert week[0]["total"] == 1
    for bad, reason in [
        ((datetime.now(timezone.utc) + timedelta(hours=1)).isoformat(), "ahead"),
        ("2026-12-01T09:30:00", "zone"),
        ("yesterday", "ISO 8601"),
        ((datetime.now(timezone.utc) - timedelta(days=500)).isoformat(), "older"),
    ]:
        refused = post(client, short_stream(), stream_id="late-2", ended_at=bad)
        assert refused.status_code == 422, bad
        assert refused.json()["detail"][0]["loc"] == ["query", "ended_at"]
        assert reason in refused.json()["detail"][0]["msg"]
    assert [r["stream_id"] for r in stored_rows(database_url)] == ["late-1"]


def test_the_ingest_function_stores_and_refuses_without_http(sqlite_url):
    """service/ingest.py's ingest is the route's whole work: bytes in, a stored verdict or the
    reason for none out.  Called here with no server, no request and no routing."""
    migrate(sqlite_url)
    settings = Settings(database_url=sqlite_url, retention_days=0)
    engine = make_engine(sqlite_url)
    writer = VerdictWriter(open_store(engine), queue_size=10, batch_size=10, metrics_tools=frozenset())

    async def chunks(data: bytes, size: int = 7):
        for start in range(0, len(data), size):
            yield data[start : start + size]

    async def post(stream_id: str, data: bytes, **params):
        return await ingest(
            chunks(data), IngestParams(stream_id=stream_id, **params), Gateway("gw1"), settings=settings, writer=writer
        )

    async def answers():
        await writer.start()
        try:
            first = await post("fn-1", short_stream(), tool="codex")
            again = await post("fn-1", short_stream(), tool="codex")
            other = await post("fn-1", short_stream(text="other bytes"), tool="codex")
            ahead = await post("fn-2", short_stream(), ended_at=datetime.now(timezone.utc) + timedelta(hours=1))
            return first, again, other, ahead
        finally:
            await writer.stop()

    try:
        first, again, other, ahead = asyncio.run(answers())
    finally:
        engine.dispose()
    assert isinstance(first, Stored) and first.created
    assert (first.row["category"], first.row["tool"]) == ("complete", "codex")
    assert isinstance(again, Stored) and not again.created and again.row["id"] == first.row["id"]
    assert isinstance(other, Refused) and other.refusal is Refusal.CONFLICT
    assert isinstance(ahead, Refused) and ahead.refusal is Refusal.INVALID
    assert "ahead of the service's clock" in ahead.errors[0]["msg"]


def test_every_refusal_has_an_answer():
    """The route answers every outcome ingest can give (a new Refusal needs its status)."""
    from fastsse_service.api.routes.streams import ANSWERS

    assert set(ANSWERS) == set(Refusal)

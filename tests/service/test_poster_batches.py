"""The tap's and the guard reporter's poster sends the captures that wait as batches
(service/tap/spool.py, Poster): each stream's own answer in the 207 says which files go, which
are set aside and which wait to be posted again; a service without batches, or one that refuses
a batch whole, gets each capture posted alone."""

from __future__ import annotations

import asyncio
import gzip

try:
    from compression import zstd
except ImportError:
    from backports import zstd
import json

import httpx

from fastsse_service.tap.spool import Poster, Spool
from loadtests.wire import PROTOCOLS, short_stream

from .conftest import INGEST_SECRET
from .test_ingest import stored_rows


def read_batch(body: bytes) -> list[tuple[dict, bytes]]:
    items = []
    while body:
        head, _, body = body.partition(b"\n")
        params = json.loads(head)
        items.append((params, body[: params["length"]]))
        body = body[params["length"] :]
    return items


def decompress(encoding: str, body: bytes) -> bytes:
    return gzip.decompress(body) if encoding == "gzip" else zstd.decompress(body)


class Service:
    """A stand-in for the ingestion API: answers each stream of a batch as ``statuses`` says
    (by stream_id, one status per time it is posted; 201 once they run out), and records every
    request."""

    def __init__(self, statuses: dict[str, list[int]] | None = None, *, batch_status: int = 207) -> None:
        self.statuses = statuses or {}
        self.batch_status = batch_status
        self.requests: list[tuple[str, list[str]]] = []  # path, stream_ids

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = request.content
        encoding = request.headers.get("content-encoding")
        if encoding is not None:
            body = decompress(encoding, body)
        if not request.url.path.endswith("/batch"):
            stream_id = request.url.params["stream_id"]
            self.requests.append(("single", [stream_id]))
            return httpx.Response(self._status(stream_id), json={"detail": "as told"})
        items = read_batch(body)
        self.requests.append(("batch", [params["stream_id"] for params, _ in items]))
        if self.batch_status != 207:
            return httpx.Response(self.batch_status, json={"detail": "the batch holds more than MAX_BATCH_STREAMS"})
        answers = [
            {"index": i, "stream_id": params["stream_id"], "status": self._status(params["stream_id"])}
            for i, (params, _body) in enumerate(items)
        ]
        return httpx.Response(207, json={"items": answers})

    def _status(self, stream_id: str) -> int:
        told = self.statuses.get(stream_id)
        return told.pop(0) if told else 201


def post_all(tmp_path, transport, captures: dict[str, bytes], **options) -> tuple[Poster, Spool]:
    spool = Spool(tmp_path / "spool", 1 << 30)
    poster = Poster(spool, options.pop("url", "http://verdicts"), INGEST_SECRET, transport=transport, **options)

    async def run():
        await poster.start()
        for stream_id, body in captures.items():
            poster.submit(spool.put({"stream_id": stream_id, "tool": "codex"}, body))
        assert await poster.drain(60)
        await poster.stop()

    asyncio.run(run())
    return poster, spool


class Counting(httpx.AsyncBaseTransport):
    """A real transport that counts the requests it sends."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.paths: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_captures_that_wait_go_as_batches_and_are_stored(serve, database_url, tmp_path):
    server = serve()
    captures = {f"{protocol}-{n}": short_stream(protocol) for n in range(5) for protocol in PROTOCOLS}
    transport = Counting()
    poster, spool = post_all(tmp_path, transport, captures, url=server.url, concurrency=2, batch=16)
    assert poster.posted == len(captures) and poster.refused == 0
    assert spool.pending() == [] and spool.rejected() == []
    assert {row["stream_id"] for row in stored_rows(database_url)} == set(captures)
    # 35 captures on 2 posters, 16 to a batch: a handful of requests, all batches
    assert set(transport.paths) == {"/v1/streams/batch"} and len(transport.paths) <= 6, transport.paths


def test_each_stream_is_deleted_set_aside_or_kept_as_its_answer_says(tmp_path):
    service = Service({"conflict": [409], "bad": [422], "busy": [503, 503]})
    captures = {name: short_stream() for name in ("a", "conflict", "busy", "bad", "b")}
    poster, spool = post_all(tmp_path, httpx.MockTransport(service.handle), captures, concurrency=1)
    assert service.requests[0] == ("batch", list(captures))
    # the one that was not stored is posted again, alone once it is the only one left
    assert service.requests[1:] == [("single", ["busy"]), ("single", ["busy"])]
    assert poster.posted == 3 and poster.refused == 2 and poster.retried == 2
    assert spool.pending() == []
    assert [name.split("-", 1)[1] for name in spool.rejected()] == ["conflict.stream", "bad.stream"]


def test_a_batch_refused_whole_is_posted_one_capture_at_a_time(tmp_path):
    service = Service(batch_status=413)
    captures = {name: short_stream() for name in ("a", "b", "c")}
    poster, spool = post_all(tmp_path, httpx.MockTransport(service.handle), captures, concurrency=1)
    assert service.requests == [("batch", ["a", "b", "c"]), ("single", ["a"]), ("single", ["b"]), ("single", ["c"])]
    assert poster.posted == 3 and poster.batch > 1  # the next captures that wait go as a batch again
    assert spool.pending() == []


def test_a_service_without_batches_gets_each_capture_alone_from_then_on(tmp_path):
    service = Service(batch_status=404)
    captures = {name: short_stream() for name in ("a", "b", "c")}
    poster, spool = post_all(tmp_path, httpx.MockTransport(service.handle), captures, concurrency=1)
    assert service.requests == [("batch", ["a", "b", "c"]), ("single", ["a"]), ("single", ["b"]), ("single", ["c"])]
    assert poster.batch == 1 and poster.posted == 3


def test_a_batch_holds_at_most_batch_max_bytes_of_captures(tmp_path, monkeypatch):
    from fastsse_service.tap import spool as spool_module

    stream = short_stream()
    monkeypatch.setattr(spool_module, "BATCH_MAX_BYTES", 2 * len(stream) + 10)
    service = Service()
    captures = {f"s{n}": stream for n in range(5)} | {"big": stream * 3, "last": stream}
    poster, spool = post_all(tmp_path, httpx.MockTransport(service.handle), captures, concurrency=1)
    # two to a batch, in order; the one larger than the bound goes alone
    assert service.requests == [
        ("batch", ["s0", "s1"]),
        ("batch", ["s2", "s3"]),
        ("batch", ["s4"]),
        ("batch", ["big"]),
        ("single", ["last"]),
    ]
    assert poster.posted == 7 and spool.pending() == []


def test_two_attempts_of_one_request_never_share_a_batch(tmp_path):
    """The service may store a batch's later attempt and not its earlier one (a commit that
    failed for one), which would then be stored after it: each attempt goes in a batch of its
    own, in order."""
    service = Service()
    spool = Spool(tmp_path / "spool", 1 << 30)
    poster = Poster(
        spool, "http://verdicts", INGEST_SECRET, transport=httpx.MockTransport(service.handle), concurrency=1
    )
    captures = [("a0", "r1"), ("b0", "r2"), ("a1", "r1"), ("c0", "r3"), ("a2", "r1")]

    async def run():
        await poster.start()
        for stream_id, request_id in captures:
            poster.submit(spool.put({"stream_id": stream_id, "request_id": request_id}, short_stream()))
        assert await poster.drain(60)
        await poster.stop()

    asyncio.run(run())
    assert service.requests == [("batch", ["a0", "b0"]), ("batch", ["a1", "c0"]), ("single", ["a2"])]
    assert poster.posted == 5

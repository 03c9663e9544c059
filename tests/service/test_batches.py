"""Batches (POST /v1/streams/batch): many streams in one body, each judged as it arrives and
answered as its own post would be, in one 207; their verdicts stored together.  A body that
cannot be read whole (not a batch, too large, too slow, a wrong signature) stores nothing."""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc

import httpx
import pytest

import fastsse
from fastsse_service.auth import Gateway, sign_post
from fastsse_service.batches import MAX_HEAD_BYTES, ingest_batch
from fastsse_service.config import Settings
from fastsse_service.ingest import Refusal, Refused
from fastsse_service.tap.spool import batch_item
from fastsse_service.writer import WriterUnavailable
from loadtests.wire import complete_stream, short_stream

from .conftest import INGEST, WEBHOOK_SECRET, metric_total
from .test_ingest import stored_rows

try:
    from compression import zstd
except ImportError:
    from backports import zstd

BATCH = "/v1/streams/batch"


def batch(*items: tuple[dict, bytes]) -> bytes:
    return b"".join(batch_item(params, body) for params, body in items)


def post(client, body, headers: dict | None = None, **kwargs):
    return client.post(BATCH, content=body, headers={**INGEST, **(headers or {})}, **kwargs)


def mixed() -> list[tuple[dict, bytes]]:
    """Streams of several protocols, whole and cut, and one that is empty."""
    return [
        ({"stream_id": "b-chat", "tool": "codex"}, short_stream()),
        ({"stream_id": "b-cut", "protocol": "chat"}, short_stream("chat", "F2")),
        ({"stream_id": "b-anthropic", "protocol": "anthropic", "attempt": 2}, short_stream("anthropic")),
        ({"stream_id": "b-invoke", "protocol": "bedrock-invoke"}, short_stream("bedrock-invoke")),
        ({"stream_id": "b-ollama", "upstream_status": "200"}, short_stream("ollama")),
        ({"stream_id": "b-empty"}, b""),
    ]


def test_each_stream_is_judged_and_answered_as_its_own_post_would_be(client, database_url):
    items = mixed()
    answer = post(client, batch(*items))
    assert answer.status_code == 207, answer.text
    results = answer.json()["items"]
    assert [r["index"] for r in results] == list(range(len(items)))
    for (params, body), result in zip(items, results, strict=True):
        assert result["stream_id"] == params["stream_id"] and result["status"] == 201, result
        expected = fastsse.scan(body, params.get("protocol", fastsse.AUTO))
        verdict = result["verdict"]
        assert (verdict["category"], verdict["protocol"], verdict["bytes"]) == (
            expected.category,
            expected.protocol,
            len(body),
        )
    assert results[0]["verdict"]["tool"] == "codex" and results[2]["verdict"]["attempt"] == 2
    rows = {row["stream_id"]: row for row in stored_rows(database_url)}
    assert set(rows) == {params["stream_id"] for params, _ in items}
    # and a stream posted alone after its batch is the same stream: the stored verdict
    alone = client.post("/v1/streams", params={"stream_id": "b-cut"}, content=items[1][1], headers=INGEST)
    assert alone.status_code == 200 and alone.json()["id"] == results[1]["verdict"]["id"]


def test_a_batch_sent_again_is_answered_200_for_each_stream_and_stored_once(client, database_url):
    body = batch(*mixed())
    first = post(client, body).json()["items"]
    again = post(client, body)
    assert again.status_code == 207
    assert [(r["status"], r["verdict"]["id"]) for r in again.json()["items"]] == [
        (200, r["verdict"]["id"]) for r in first
    ]
    assert len(stored_rows(database_url)) == len(first)


def test_streams_refused_one_by_one_leave_the_others_stored(client, database_url):
    """A wrong parameter is a 422 for its stream (ended_at too: older than the verdicts are
    kept), other bytes under a stored stream_id a 409; the same stream twice in one batch is
    stored once."""
    client.post("/v1/streams", params={"stream_id": "taken"}, content=short_stream(), headers=INGEST)
    answer = post(
        client,
        batch(
            ({"stream_id": "ok-1"}, short_stream()),
            ({"stream_id": "bad id!"}, short_stream()),
            ({"stream_id": "p", "protocol": "smoke-signals"}, short_stream()),
            ({"stream_id": "taken"}, short_stream("chat", "F2")),
            ({"protocol": "chat"}, short_stream()),
            ({"stream_id": "twice"}, short_stream()),
            ({"stream_id": "twice"}, short_stream()),
            ({"stream_id": "late", "ended_at": "2000-01-01T00:00:00Z"}, short_stream()),
            ({"stream_id": "n", "attempt": True}, short_stream()),
            ({"stream_id": "ok-2", "future": {"field": 1}}, short_stream()),  # unknown: ignored
        ),
    )
    assert answer.status_code == 207, answer.text
    results = answer.json()["items"]
    assert [r["status"] for r in results] == [201, 422, 422, 409, 422, 201, 200, 422, 422, 201]
    assert [r["stream_id"] for r in results[:4]] == ["ok-1", None, None, "taken"]
    assert results[7]["stream_id"] == "late" and results[7]["detail"][0]["loc"] == ["query", "ended_at"]
    assert results[1]["detail"][0]["loc"] == ["query", "stream_id"]
    assert results[4]["detail"][0]["type"] == "missing"
    assert "different bytes" in results[3]["detail"]
    assert results[6]["verdict"]["id"] == results[5]["verdict"]["id"]
    assert {row["stream_id"] for row in stored_rows(database_url)} == {"taken", "ok-1", "twice", "ok-2"}


@pytest.mark.parametrize("encoding", ["gzip", "zstd"])
def test_a_compressed_batch_is_read_as_what_it_decodes_to(client, database_url, encoding):
    body = batch(*mixed())
    packed = gzip.compress(body) if encoding == "gzip" else zstd.compress(body)
    answer = post(client, packed, {"content-encoding": encoding})
    assert answer.status_code == 207, answer.text
    assert [r["status"] for r in answer.json()["items"]] == [201] * 6
    assert [r["status"] for r in post(client, body).json()["items"]] == [200] * 6


def test_any_chunking_of_the_body_gives_the_same_answer(client):
    items = mixed()[:3]
    body = b"\n" + batch(*items).replace(b"\n{", b"\n\r\n{")  # blank lines between streams
    whole = post(client, body).json()["items"]
    for size in (1, 2, 7, 100):
        again = post(client, (body[i : i + size] for i in range(0, len(body), size))).json()["items"]
        assert [(r["status"], r["verdict"]["id"]) for r in again] == [(200, r["verdict"]["id"]) for r in whole]


FIRST = batch_item({"stream_id": "first"}, short_stream())


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "the batch holds no stream"),
        (b"\n\r\n", "the batch holds no stream"),
        (FIRST + b"not json\n", "stream 2 of the batch: a head that is not JSON"),
        (FIRST + b'["a"]\n', "stream 2 of the batch: a head that is not a JSON object"),
        (FIRST + b'{"stream_id": "x"}\n', 'stream 2 of the batch: a head without "length"'),
        (FIRST + b'{"stream_id": "x", "length": -1}\n', '"length" must be given once, a whole number'),
        (FIRST + b'{"stream_id": "x", "length": "5"}\n', '"length" must be'),
        (FIRST + b'{"stream_id": "x", "length": 1.5}\n', '"length" must be'),
        (FIRST + b'{"stream_id": "x", "length": 0, "length": 0}\n', '"length" must be given once'),
        (FIRST + b"[" * 100_00 + b"]" * 100_00 + b"\n", "a head longer than"),
        (FIRST + b"[" * 5000 + b"]" * 5000 + b"\n", "stream 2 of the batch: a head that is not JSON"),  # too deep
        (
            FIRST + b'{"stream_id": "x", "length": 50}\ndata: cut',
            "stream 2 of the batch: the body ends 41 bytes before",
        ),
        (
            FIRST + batch_item({"stream_id": "x"}, b"") + b'{"stream_id": "y", "len',
            "stream 3 of the batch: the body ends inside a head",
        ),
        (FIRST + b"{" + b" " * MAX_HEAD_BYTES + b"}\n", "stream 2 of the batch: a head longer than 16384 bytes"),
        (FIRST + b"{" * (MAX_HEAD_BYTES + 1), "stream 2 of the batch: a head longer than"),
    ],
)
def test_a_body_that_is_not_a_batch_is_400_and_stores_nothing(client, database_url, body, says):
    answer = post(client, body)
    assert answer.status_code == 400, answer.text
    assert says in answer.json()["detail"] and answer.json()["detail"].endswith("; nothing stored")
    assert stored_rows(database_url) == []


def test_blank_lines_between_streams_are_skipped(client, database_url):
    """However many: a megabyte of them is skipped as one (at C speed, service/batches.py)."""
    body = b"\r\n" * 500_000 + FIRST + b"\n" * 1_000_000 + batch_item({"stream_id": "last"}, b"") + b" \n" * 1000
    answer = post(client, body)
    assert answer.status_code == 207 and [r["status"] for r in answer.json()["items"]] == [201, 201]


def test_a_corrupt_compressed_batch_is_400_and_stores_nothing(client, database_url):
    packed = gzip.compress(batch(*mixed()))
    answer = post(client, packed[:-12], {"content-encoding": "gzip"})
    assert answer.status_code == 400, answer.text
    assert stored_rows(database_url) == []


def test_too_many_streams_or_bytes_is_413_and_stores_nothing(serve, database_url):
    server = serve(max_batch_streams=3, max_body_bytes=20_000)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        three = [({"stream_id": f"s{n}"}, short_stream()) for n in range(3)]
        assert post(client, batch(*three)).status_code == 207
        four = post(client, batch(*three, ({"stream_id": "s4"}, short_stream())))
        assert four.status_code == 413 and "MAX_BATCH_STREAMS (3)" in four.json()["detail"], four.text
        # a length past what is left of MAX_BODY_BYTES: refused on its head, before its bytes
        announced = post(client, batch(three[0]) + b'{"stream_id":"big","length":19990}\n')
        assert announced.status_code == 413 and "MAX_BODY_BYTES (20000)" in announced.json()["detail"]
        large = post(client, batch(three[0], ({"stream_id": "big"}, b": x\n\n" * 4000)))
        assert large.status_code == 413, large.text
        declared = post(client, b"x" * 20_001)
        assert declared.status_code == 413
    assert {row["stream_id"] for row in stored_rows(database_url)} == {"s0", "s1", "s2"}


def test_a_full_write_queue_refuses_the_streams_past_it(serve, database_url):
    """Streams the writer's queue has no room for are 503, each; the others are stored."""
    server = serve(write_queue_size=2)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = post(client, batch(*[({"stream_id": f"q{n}"}, short_stream()) for n in range(4)]))
    assert answer.status_code == 207, answer.text
    statuses = [r["status"] for r in answer.json()["items"]]
    assert statuses == [201, 201, 503, 503]
    assert "the write queue is full" in answer.json()["items"][2]["detail"]
    assert len(stored_rows(database_url)) == 2


def test_each_stream_is_counted_as_an_answer_of_its_own(client):
    before = client.get("/metrics").text
    post(client, batch(({"stream_id": "m1"}, short_stream()), ({"stream_id": "m1"}, short_stream()), ({}, b"")))
    post(client, b"not a batch\n")
    after = client.get("/metrics").text

    def counted(status):
        name = "fastsse_ingest_requests_total"
        return metric_total(after, name, status=status) - metric_total(before, name, status=status)

    assert [counted(s) for s in ("201", "200", "422", "400", "207")] == [1, 1, 1, 1, 0]


def test_a_signed_batch_is_stored_when_its_body_is_the_one_signed(client, database_url):
    items = mixed()
    body = batch(*items)
    headers = sign_post(WEBHOOK_SECRET, BATCH, body)
    answer = client.post(BATCH, content=body, headers=headers)
    assert answer.status_code == 207, answer.text
    assert {r["verdict"]["gateway"] for r in answer.json()["items"]} == {"signer"}
    # sent again with the same id: the gateway's retry, answered with what was stored
    again = client.post(BATCH, content=body, headers=headers)
    assert [r["status"] for r in again.json()["items"]] == [200] * 6
    # in part, and compressed: a retry still, stream by stream (a sender resends its 503s)
    part = gzip.compress(batch(*items[2:4]), 1)
    retried = client.post(
        BATCH,
        content=part,
        headers={
            **sign_post(WEBHOOK_SECRET, BATCH, part, content_encoding="gzip", msg_id=headers["webhook-id"]),
            "content-encoding": "gzip",
        },
    )
    assert [r["status"] for r in retried.json()["items"]] == [200, 200], retried.text
    # a stream of it with other bytes under the same id: not its retry, so not stored
    other = batch(({"stream_id": "b-chat"}, short_stream("chat", "F2")), ({"stream_id": "new"}, short_stream()))
    reused = client.post(
        BATCH, content=other, headers=sign_post(WEBHOOK_SECRET, BATCH, other, msg_id=headers["webhook-id"])
    )
    assert [r["status"] for r in reused.json()["items"]] == [409, 201], reused.text
    assert "webhook-id" in reused.json()["items"][0]["detail"]
    # a body that is not the one signed: refused whole
    tampered = client.post(
        BATCH, content=body.replace(b"b-chat", b"b-chaT"), headers=sign_post(WEBHOOK_SECRET, BATCH, body)
    )
    assert tampered.status_code == 401
    assert len(stored_rows(database_url)) == 7


def test_a_value_a_query_could_not_carry_is_a_422(client, database_url):
    """A name given twice, or a value that is neither a string nor an integer, as a query's
    parameter would be refused (a 422 for its stream), never stored as its text."""
    answer = post(
        client,
        b'{"stream_id": "a", "stream_id": "b", "length": 0}\n'
        b'{"stream_id": true, "length": 0}\n'
        b'{"stream_id": 1.5, "length": 0}\n'
        b'{"stream_id": "c", "attempt": 2.0, "length": 0}\n'
        b'{"stream_id": "d", "tool": {"name": "x"}, "length": 0}\n'
        b'{"stream_id": "e", "attempt": 3, "length": 0}\n',
    )
    assert answer.status_code == 207, answer.text
    items = answer.json()["items"]
    assert [r["status"] for r in items] == [422, 422, 422, 422, 422, 201]
    assert items[0]["detail"][0]["msg"] == "is given more than once"
    assert {row["stream_id"] for row in stored_rows(database_url)} == {"e"}


def test_memory_is_bounded_by_one_stream_not_by_the_batch(make_settings):
    """200 streams of 100 kB each: what reading the batch holds is a row per stream."""
    settings: Settings = make_settings()
    stream = complete_stream("chat", 100_000)

    class Writer:
        def submit(self, row, *, message=None):
            done = asyncio.get_running_loop().create_future()
            done.set_exception(WriterUnavailable("discarded"))
            return done

    async def chunks():
        for n in range(200):
            body = batch_item({"stream_id": f"x{n}"}, stream)
            for start in range(0, len(body), 16384):
                yield body[start : start + 16384]

    async def run():
        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            outcome = await ingest_batch(chunks(), Gateway("gw1"), settings=settings, writer=Writer())
            return outcome, tracemalloc.get_traced_memory()[1] - baseline
        finally:
            tracemalloc.stop()

    outcome, peak = asyncio.run(run())
    assert not isinstance(outcome, Refused), outcome
    assert len(outcome.outcomes) == 200
    assert all(o.refusal is Refusal.UNAVAILABLE for _p, o in outcome.outcomes)
    assert peak < 4 << 20, f"reading 20 MB of batch held {peak / 2**20:.1f} MiB"


def _bomb(prefix: bytes, filler: bytes, decoded: int) -> bytes:
    compressor = zstd.ZstdCompressor()
    block = filler * ((16 << 20) // len(filler))
    return (
        compressor.compress(prefix)
        + b"".join(compressor.compress(block) for _ in range(decoded // len(block)))
        + compressor.flush()
    )


@pytest.mark.parametrize(
    "prefix, filler",
    [
        (b'{"stream_id": "bomb", "length": 60000000}\n', b"\0"),  # a stream of zeros
        (b"", b"\n"),  # blank lines without end
        (FIRST, b" "),
    ],
)
def test_a_compressed_batch_bomb_is_413_and_memory_stays_flat(make_settings, prefix, filler):
    """2 GiB in a couple of MB: refused by the ratio bound (as a single post is) without the
    worker's memory moving by more than a few MiB, and before the end of the body."""
    from fastsse_service.content_encoding import content_decoder

    bomb = _bomb(prefix, filler, 2 << 30)
    assert len(bomb) < 3 << 20
    settings: Settings = make_settings()

    async def run():
        read = 0

        async def chunks():
            nonlocal read
            for start in range(0, len(bomb), 4096):  # (a chunk of 64 KiB may decode to 64 MB)
                read += 4096
                yield bomb[start : start + 4096]

        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            outcome = await ingest_batch(
                chunks(),
                Gateway("gw1"),
                settings=settings,
                writer=None,  # never reached
                decoder=content_decoder(
                    "zstd", max_ratio=settings.max_decoded_ratio, max_bytes=settings.max_body_bytes
                ),
            )
            return outcome, tracemalloc.get_traced_memory()[1] - baseline, read
        finally:
            tracemalloc.stop()

    outcome, peak, read = asyncio.run(run())
    assert isinstance(outcome, Refused) and outcome.refusal is Refusal.TOO_LARGE, outcome
    assert "MAX_DECODED_RATIO" in outcome.detail and outcome.detail.endswith("nothing stored")
    assert peak < 4 << 20, f"decoding held {peak / 2**20:.1f} MiB"
    assert read < len(bomb)


def test_the_routed_path_answers_a_batch_as_the_fast_path_does(make_settings):
    """POST /v1/streams/batch through FastAPI's routing (the documented route) and through the
    service's own ASGI path give the same answer."""
    from fastsse_service.app import create_app

    from .conftest import ThreadServer

    body = batch(*mixed(), ({"stream_id": "bad id!"}, b""))

    def answer(fast: bool, gateway: str) -> tuple[int, list]:
        settings = make_settings(ingest_tokens=f"{gateway}:ingest-secret-gw1")
        with (
            ThreadServer(create_app(settings, ingest_fast_path=fast)) as server,
            httpx.Client(base_url=server.url, timeout=30) as http,
        ):
            response = post(http, body)
            items = response.json()["items"]
            for item in items:
                for varying in ("id", "received_at", "ended_at", "gateway"):
                    item.get("verdict", {}).pop(varying, None)
            return response.status_code, items

    fast = answer(True, "fast")
    assert fast[0] == 207 and [r["status"] for r in fast[1]] == [201] * 6 + [422]
    assert answer(False, "routed") == fast

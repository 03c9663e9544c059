"""Posts whose body is compressed (Content-Encoding gzip, deflate, zstd): judged, bounded and
hashed as what they decode to, decoded as they arrive; a decompression bomb is a 413 with the
worker's memory flat, an encoding the service does not decode a 415, a body that is not its
encoding a 400, and none of them stores anything."""

from __future__ import annotations

import asyncio
import gzip
import struct
import threading
import time
import tracemalloc
import zlib

import httpx
import pytest

from fastsse_service.auth import Gateway, sign_post
from fastsse_service.config import Settings
from fastsse_service.content_encoding import (
    MAX_FRAMES,
    PIECE_BYTES,
    RATIO_FLOOR_BYTES,
    TURN_BYTES,
    UndecodableBody,
    content_decoder,
)
from fastsse_service.ingest import IngestParams, Refusal, Refused, ingest
from loadtests.wire import short_stream

from .conftest import INGEST, WEBHOOK_SECRET
from .test_ingest import stored_rows

try:
    from compression import zstd
except ImportError:
    from backports import zstd

TEXT = "compressed " * 400
ENCODINGS = {
    "gzip": gzip.compress,
    "GZIP": gzip.compress,
    "deflate": zlib.compress,  # zlib's format, as RFC 9110 names it
    "deflate (raw)": lambda b: zlib.compress(b)[2:-4],  # what some clients send under that name
    "zstd": zstd.compress,
    "gzip (two members)": lambda b: gzip.compress(b[:100]) + gzip.compress(b[100:]),
    "zstd (two frames)": lambda b: zstd.compress(b[:100]) + zstd.compress(b[100:]),
}


def post(client, body, encoding: str, stream_id: str = "z-1", headers: dict | None = None):
    header = encoding.split(" ")[0]
    return client.post(
        "/v1/streams",
        params={"stream_id": stream_id},
        content=body,
        headers={**(headers or INGEST), "content-encoding": header},
    )


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_compressed_post_is_judged_as_what_it_decodes_to(client, database_url, encoding):
    for fault, stream_id in ((None, "z-ok"), ("F2", "z-cut")):
        stream = short_stream("chat", fault, text=TEXT) if fault else short_stream(text=TEXT)
        body = ENCODINGS[encoding](stream)
        assert len(body) < len(stream) // 5
        answer = post(client, body, encoding, stream_id)
        assert answer.status_code == 201, answer.text
        verdict = answer.json()
        assert verdict["category"] == ("no_end_marker" if fault else "complete")
        assert verdict["bytes"] == len(stream)  # what it decodes to
        # the same stream posted as it is: the same bytes, so the stored verdict, counted once
        again = client.post("/v1/streams", params={"stream_id": stream_id}, content=stream, headers=INGEST)
        assert again.status_code == 200 and again.json()["id"] == verdict["id"], again.text
    assert len(stored_rows(database_url)) == 2


def test_chunked_uploads_decode_across_their_chunks(client):
    stream = short_stream(text=TEXT)
    body = zstd.compress(stream)
    answer = post(client, (body[i : i + 7] for i in range(0, len(body), 7)), "zstd")
    assert answer.status_code == 201 and answer.json()["category"] == "complete", answer.text


@pytest.mark.parametrize("encoding", ["br", "compress", "x-gzip", "gzip, zstd", "deflate, gzip", "zstd;q=1"])
def test_an_encoding_the_service_does_not_decode_is_415(client, database_url, encoding):
    answer = post(client, gzip.compress(short_stream()), encoding)
    assert answer.status_code == 415, answer.text
    assert "gzip, deflate, zstd" in answer.json()["detail"]
    assert stored_rows(database_url) == []


@pytest.mark.parametrize(
    ("encoding", "body", "says"),
    [
        ("gzip", gzip.compress(short_stream())[:-9], "ends before"),  # cut in its trailer
        ("gzip", gzip.compress(short_stream())[:40], "ends before"),
        ("gzip", short_stream(), "not gzip"),  # not compressed at all
        ("gzip", gzip.compress(short_stream()) + b"\x00\x00", "what follows its last member"),
        ("deflate", zlib.compress(short_stream())[:-3] + b"xyz", "could not be decoded"),  # its checksum
        ("deflate", zlib.compress(short_stream()) + b"more", "after its compressed data"),
        ("zstd", zstd.compress(short_stream())[:-5], "ends before"),
        ("zstd", b"\x28\xb5\x2f\xfd" + b"\xff" * 40, "could not be decoded"),
    ],
)
def test_a_body_that_is_not_its_encoding_is_400(client, database_url, encoding, body, says):
    answer = post(client, body, encoding)
    assert answer.status_code == 400, answer.text
    assert says in answer.json()["detail"] and "nothing stored" in answer.json()["detail"]
    assert stored_rows(database_url) == []


def test_a_zstd_frame_with_a_window_past_8_mib_is_400(client, database_url):
    """RFC 9659 bounds zstd windows in HTTP at 8 MiB: a larger one would hold that much memory
    a post, so it is refused (a stream compressed without a known size keeps its window)."""
    compressor = zstd.ZstdCompressor(options={zstd.CompressionParameter.window_log: 27})
    body = compressor.compress(short_stream()) + compressor.flush()
    answer = post(client, body, "zstd")
    assert answer.status_code == 400 and "could not be decoded" in answer.json()["detail"], answer.text
    assert stored_rows(database_url) == []
    compressor = zstd.ZstdCompressor(options={zstd.CompressionParameter.window_log: 23})
    body = compressor.compress(short_stream()) + compressor.flush()
    assert post(client, body, "zstd").status_code == 201


def test_two_content_encoding_lines_are_two_encodings(client, database_url):
    """Two header lines mean what one line with both values means: stacked, a 415, never the
    first line alone (which would judge gzip bytes as the stream)."""
    for lines in (("identity", "gzip"), ("gzip", "gzip")):
        answer = client.post(
            "/v1/streams",
            params={"stream_id": "two-lines"},
            content=gzip.compress(short_stream()),
            headers=[*INGEST.items(), *(("content-encoding", line) for line in lines)],
        )
        assert answer.status_code == 415, answer.text
    assert stored_rows(database_url) == []


@pytest.mark.parametrize("first", [0, 1, 2])
def test_deflate_tells_its_format_from_two_bytes_whatever_the_chunks(first):
    """zlib's format and raw deflate are told apart by the first two bytes, even when the first
    chunk holds one of them, or none."""
    stream = short_stream(text=TEXT)
    for body in (zlib.compress(stream), zlib.compress(stream)[2:-4]):
        decoder = content_decoder("deflate", max_ratio=1000, max_bytes=1 << 20)
        pieces = [body[:first], body[first : first + 1], body[first + 1 :]]
        decoded = b"".join(piece for chunk in pieces for piece in decoder.feed(chunk))
        decoder.finish()
        assert decoded == stream
    decoder = content_decoder("deflate", max_ratio=1000, max_bytes=1 << 20)
    assert list(decoder.feed(b"x")) == []
    with pytest.raises(UndecodableBody, match="ends before"):
        decoder.finish()  # one byte, and the body ended


def test_an_empty_compressed_body_is_an_empty_stream(client):
    """No bytes at all, whatever the encoding: the provider closed before its first byte."""
    answer = post(client, b"", "gzip")
    plain = client.post("/v1/streams", params={"stream_id": "z-plain"}, content=b"", headers=INGEST)
    assert answer.status_code == 201 and answer.json()["bytes"] == 0, answer.text
    assert answer.json()["category"] == plain.json()["category"] == "no_end_marker"


def test_a_signature_covers_the_body_as_sent(client):
    """Content-Digest is over the content as it travels (RFC 9530): the compressed bytes."""
    target = "/v1/streams?stream_id=signed-z"
    stream = short_stream(text=TEXT)
    body = gzip.compress(stream)
    headers = {**sign_post(WEBHOOK_SECRET, target, body, content_encoding="gzip"), "content-encoding": "gzip"}
    answer = client.post(target, content=body, headers=headers)
    assert answer.status_code == 201, answer.text
    # the digest of the decoded bytes
    wrong = {**sign_post(WEBHOOK_SECRET, target, stream, content_encoding="gzip"), "content-encoding": "gzip"}
    answer = client.post(target, content=body, headers=wrong)
    assert answer.status_code == 401 and "content-digest" in answer.json()["detail"], answer.text


def gzip_bomb(decoded: int) -> bytes:
    """decoded bytes of zeros as gzip, in about decoded / 1000 bytes: members of 64 MiB each."""
    member = gzip.compress(b"\0" * (64 << 20), 9)
    return member * (decoded // (64 << 20))


def zstd_bomb(decoded: int) -> bytes:
    compressor = zstd.ZstdCompressor()
    block = b"\0" * (16 << 20)
    return b"".join(compressor.compress(block) for _ in range(decoded // len(block))) + compressor.flush()


async def _chunks(body: bytes, size: int = 64 * 1024):
    for i in range(0, len(body), size):
        yield body[i : i + size]
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("encoding", "make", "settings", "says"),
    [
        ("gzip", gzip_bomb, {}, "MAX_DECODED_RATIO"),  # deflate's best, about 1,030:1
        ("zstd", zstd_bomb, {}, "MAX_DECODED_RATIO"),
        ("gzip", gzip_bomb, {"max_decoded_ratio": 5000}, "MAX_BODY_BYTES"),  # the size stops what the ratio lets by
        ("zstd", zstd_bomb, {"max_decoded_ratio": 10**9}, "MAX_BODY_BYTES"),
    ],
)
def test_a_bomb_of_2_gib_is_413_and_memory_stays_flat(sqlite_url, encoding, make, settings, says):
    """2 GiB of zeros in a couple of MB at most: refused without the worker's memory moving by
    more than a few MiB, and without reading the body to its end."""
    bomb = make(2 << 30)
    assert len(bomb) < 3 << 20
    settings = Settings(database_url=sqlite_url, **settings)

    async def run():
        read = 0

        async def chunks():
            nonlocal read
            async for chunk in _chunks(bomb):
                read += len(chunk)
                yield chunk

        decoder = content_decoder(encoding, max_ratio=settings.max_decoded_ratio, max_bytes=settings.max_body_bytes)
        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            outcome = await ingest(
                chunks(),
                IngestParams(stream_id="bomb"),
                Gateway("gw1"),
                settings=settings,
                writer=None,  # never reached
                decoder=decoder,
            )
            peak = tracemalloc.get_traced_memory()[1] - baseline
        finally:
            tracemalloc.stop()
        return outcome, peak, read, decoder

    outcome, peak, read, decoder = asyncio.run(run())
    assert isinstance(outcome, Refused) and outcome.refusal is Refusal.TOO_LARGE, outcome
    assert says in outcome.detail
    assert peak < 4 << 20, f"decoding held {peak / 2**20:.1f} MiB"
    assert read < len(bomb)  # refused before the end of the body
    assert decoder.decoded <= settings.max_body_bytes + PIECE_BYTES


def test_a_highly_compressible_stream_under_the_floor_is_judged(client):
    """Identical keep-alives compress without bound: a stream of them is still a stream, under
    the ratio's floor (RATIO_FLOOR_BYTES) whatever its ratio."""
    stream = b": ping\n\n" * 300_000 + short_stream()
    body = zstd.compress(stream, 19)
    assert len(stream) / len(body) > 1000 and len(stream) < RATIO_FLOOR_BYTES
    answer = post(client, body, "zstd")
    assert answer.status_code == 201 and answer.json()["category"] == "complete", answer.text


# Members and frames that decode to nothing, as an attacker packs them: each cost the service a
# decoder made in Python, and none reached a bound on what the body decodes to.
EMPTY_FRAMES = {
    "gzip": gzip.compress(b"", mtime=0),  # 20 bytes
    "zstd": zstd.compress(b""),  # 9 bytes
    "zstd (skippable)": struct.pack("<II", 0x184D2A50, 0),  # 8 bytes, no data
}


@pytest.mark.parametrize("route", ["/v1/streams?stream_id=frames", "/v1/streams/batch"])
@pytest.mark.parametrize("frames", EMPTY_FRAMES)
def test_a_body_of_empty_frames_is_refused_at_its_first_frame_past_the_bound(client, database_url, frames, route):
    # 8 MiB of them held a worker's loop for 10 s (2.5 to 3.3 CPU s a MiB); /healthz meanwhile
    # waited as long.
    body = EMPTY_FRAMES[frames] * ((8 << 20) // len(EMPTY_FRAMES[frames]))
    slowest = []
    done = threading.Event()

    def probe():
        while not done.is_set():
            started = time.monotonic()
            assert client.get("/healthz").status_code == 200
            slowest.append(time.monotonic() - started)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        answer = client.post(route, content=body, headers={**INGEST, "content-encoding": frames.split(" ")[0]})
    finally:
        done.set()
        prober.join()
    assert answer.status_code == 413, answer.text
    assert f"more than {MAX_FRAMES}" in answer.json()["detail"]
    assert max(slowest) < 1.0
    assert stored_rows(database_url) == []


def test_a_body_of_as_many_frames_as_the_bound_is_judged(client):
    stream = short_stream(text=TEXT)
    cut = len(stream) // MAX_FRAMES
    parts = [stream[i * cut : (i + 1) * cut] for i in range(MAX_FRAMES - 1)] + [stream[(MAX_FRAMES - 1) * cut :]]
    for encoding, compress in (("gzip", gzip.compress), ("zstd", zstd.compress)):
        answer = post(client, b"".join(compress(part) for part in parts), encoding, f"frames-{encoding}")
        assert answer.status_code == 201 and answer.json()["category"] == "complete", answer.text


def test_the_compressed_bytes_count_against_max_body_bytes(serve):
    """A body sent chunked (no Content-Length to refuse it by) of empty deflate blocks decodes to
    nothing: what was sent is bounded as well as what it decodes to."""
    server = serve(max_body_bytes=1 << 20)
    empty_blocks = b"\x00\x00\x00\xff\xff" * ((2 << 20) // 5)  # stored, empty, not the last

    def body():
        yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # a gzip member's head
        for at in range(0, len(empty_blocks), 64 << 10):
            yield empty_blocks[at : at + (64 << 10)]

    with httpx.Client(base_url=server.url, timeout=30) as http:
        answer = http.post(
            "/v1/streams",
            params={"stream_id": "blocks"},
            content=body(),
            headers={**INGEST, "content-encoding": "gzip"},
        )
    assert answer.status_code == 413 and "MAX_BODY_BYTES (1048576) as sent" in answer.json()["detail"], answer.text


def test_a_chunk_that_decodes_to_much_gives_the_loop_a_turn_every_mib():
    decoded = 12 * TURN_BYTES
    chunk = zstd.compress(b"data: {}\n\n" * (decoded // 10))  # one chunk, 12 MiB decoded

    async def run() -> tuple[int, int]:
        turns = 0

        async def count_turns():
            nonlocal turns
            while True:
                await asyncio.sleep(0)
                turns += 1

        counting = asyncio.ensure_future(count_turns())
        await asyncio.sleep(0)
        turns = 0
        decoder = content_decoder("zstd", max_ratio=10**9, max_bytes=64 << 20)
        total = 0
        async for piece in decoder.pieces(chunk):
            total += len(piece)
        counting.cancel()
        return turns, total

    turns, total = asyncio.run(run())
    assert total == decoded // 10 * 10
    assert turns >= total // TURN_BYTES

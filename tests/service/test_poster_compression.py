"""The tap's and the guard reporter's posts go compressed (service/tap/spool.py, Poster: zstd
where Python has it, else gzip), and still reach a service that does not decode them: an older
one answers 415, and gets every later post as it is; a body the service finds too compressible (413 naming MAX_DECODED_RATIO)
is posted again as it is.  (The stand-in service here is older than batches too: its 404 makes
the poster post each capture alone.)"""

from __future__ import annotations

import asyncio
import gzip

try:
    from compression import zstd
except ImportError:
    from backports import zstd

import httpx

from fastsse_service.tap.spool import COMPRESS_MIN_BYTES, COMPRESSION, Poster, Spool
from loadtests.wire import short_stream

from .conftest import INGEST, INGEST_SECRET
from .test_ingest import stored_rows


def decompress(encoding: str, body: bytes) -> bytes:
    return gzip.decompress(body) if encoding == "gzip" else zstd.decompress(body)


class Service:
    """A stand-in for the ingestion API that records what each post carried, decoded."""

    def __init__(self, *, decodes: bool = True, ratio_refused: set[str] | None = None) -> None:
        self.decodes = decodes
        self.ratio_refused = ratio_refused or set()
        self.posts: list[tuple[str, str | None, bytes]] = []  # stream_id, encoding, decoded body

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/batch"):
            return httpx.Response(404, json={"detail": "Not Found"})  # older than batches
        stream_id = request.url.params["stream_id"]
        encoding = request.headers.get("content-encoding")
        body = request.content
        if encoding is not None:
            if not self.decodes:
                return httpx.Response(415, json={"detail": f"Content-Encoding {encoding!r} is not decoded"})
            if stream_id in self.ratio_refused:
                return httpx.Response(413, json={"detail": "decodes to more than 1000 times (MAX_DECODED_RATIO)"})
            body = decompress(encoding, body)
        self.posts.append((stream_id, encoding, body))
        return httpx.Response(201, json={"stream_id": stream_id})


def post_all(tmp_path, service: Service, bodies: dict[str, bytes]) -> Poster:
    spool = Spool(tmp_path / "spool", 1 << 30)
    poster = Poster(spool, "http://verdicts", "token", concurrency=1, transport=httpx.MockTransport(service.handle))

    async def run():
        await poster.start()
        for stream_id, body in bodies.items():
            spooled = spool.put({"stream_id": stream_id}, body)
            assert spooled is not None
            poster.submit(spooled)
        assert await poster.drain(30)
        await poster.stop()

    asyncio.run(run())
    assert spool.pending() == [] and spool.rejected() == []
    return poster


def test_posts_go_compressed_and_arrive_whole(tmp_path):
    big = short_stream(text="words " * 500)
    small = b"data: [DONE]\n\n"
    assert len(big) >= COMPRESS_MIN_BYTES > len(small)
    service = Service()
    post_all(tmp_path, service, {"big": big, "small": small})
    assert service.posts == [("big", COMPRESSION, big), ("small", None, small)]


def test_a_service_that_does_not_decode_gets_every_post_as_it_is(tmp_path):
    bodies = {f"s{i}": short_stream(text=f"words {i} " * 300) for i in range(3)}
    service = Service(decodes=False)
    poster = post_all(tmp_path, service, bodies)
    assert service.posts == [(name, None, body) for name, body in bodies.items()]
    assert poster.compress is False and poster.refused == 0 and poster.posted == 3


def test_a_body_refused_for_its_ratio_is_posted_as_it_is(tmp_path):
    bodies = {"pings": b": ping\n\n" * 5000 + short_stream(), "words": short_stream(text="words " * 300)}
    service = Service(ratio_refused={"pings"})
    poster = post_all(tmp_path, service, bodies)
    assert service.posts == [("pings", None, bodies["pings"]), ("words", COMPRESSION, bodies["words"])]
    assert poster.compress is True and poster.posted == 2


def test_the_service_stores_a_compressed_post_as_the_stream(serve, database_url, tmp_path):
    """Against the service itself, over HTTP: stored with the stream's own length, and a plain
    post of the same stream is the same post (200)."""
    server = serve()
    stream = short_stream(text="words " * 500)
    spool = Spool(tmp_path / "spool", 1 << 30)
    poster = Poster(spool, server.url, INGEST_SECRET, concurrency=1)

    async def run():
        await poster.start()
        poster.submit(spool.put({"stream_id": "big", "tool": "codex"}, stream))
        assert await poster.drain(30)
        await poster.stop()

    asyncio.run(run())
    assert poster.posted == 1 and poster.compress is True
    [row] = stored_rows(database_url)
    assert row["bytes"] == len(stream) and row["category"] == "complete"
    again = httpx.post(f"{server.url}/v1/streams", params={"stream_id": "big"}, content=stream, headers=INGEST)
    assert again.status_code == 200, again.text


def test_without_zstd_the_posts_go_gzip_compressed():
    """An application's Python without zstd (before 3.14, without backports.zstd): the
    standard library's gzip, nothing more to install."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['compression.zstd'] = sys.modules['backports.zstd'] = None\n"
        "from fastsse_service.tap import spool; import gzip\n"
        "assert gzip.decompress(spool._compress(b'x' * 5000)) == b'x' * 5000\n"
        "print(spool.COMPRESSION)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "gzip"
    assert COMPRESSION == "zstd"  # here: the service's own dependency

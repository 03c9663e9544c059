"""Bodies posted compressed (``Content-Encoding: gzip``, ``deflate`` or ``zstd``), decoded as they
arrive, in bounded pieces.

A stream compresses about ten to one (the same JSON keys in every event), so gateways that post
across a network that costs money compress.  The decoded bytes are what is judged, hashed and
bounded: ``MAX_BODY_BYTES`` counts them, not the compressed ones.  A decompression bomb (2 GiB of
one byte in 2 MB) is stopped by two bounds, and memory stays flat while they are reached: each
step decodes at most ``PIECE_BYTES``, which the scanner takes before the next step; the decoded
bytes count against ``MAX_BODY_BYTES``; and once more than ``RATIO_FLOOR_BYTES`` have been
decoded, a body that decodes to more than ``MAX_DECODED_RATIO`` times what was received so far is
refused there, before it costs the work of MAX_BODY_BYTES.  A decoder holds its window: 32 KiB
for gzip and deflate, at most 8 MiB for zstd (``ZSTD_WINDOW_LOG_MAX``).  Varied streams compress 7 to 34:1;
only byte-identical repetition goes past 1000:1 (zstd packs it without bound), and a stream of
that, more than RATIO_FLOOR_BYTES long, is refused too: its sender may post it uncompressed.

A body that decodes to little costs work too.  Each member or frame costs a decoder made in
Python (about 21 µs for zstd), so a body of empty ones (9 bytes each) cost 2.5 CPU seconds a
MiB: a body holds at most ``MAX_FRAMES`` of them, and the compressed bytes count against
MAX_BODY_BYTES as well.  Inside one member or frame the decoders skip empty blocks in C (60 MiB
of them: 0.07 CPU s for gzip, 0.2 for zstd), so no bound on what a compressed byte must decode to
is needed.  And however a body decodes, ``pieces`` gives the event loop a turn every
``TURN_BYTES`` decoded: no post holds a worker's loop for longer than that takes to decode and
judge.

Outcomes are exceptions, never HTTP answers: ``UnknownEncoding`` (the route answers 415),
``UndecodableBody`` (400), ``BodyTooCostly`` (413).  Their messages name the encoding and the
bound, never a byte of the body.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

try:  # the standard library's from Python 3.14, its backport before
    from compression import zstd
except ImportError:  # pragma: no cover - depends on the Python version
    from backports import zstd

ENCODINGS = ("gzip", "deflate", "zstd")
PIECE_BYTES = 64 * 1024  # the most one decoding step yields
# The largest zstd window decoded: 8 MiB, the bound RFC 9659 sets for zstd in HTTP.  A frame
# that asks for more is a 400; a post's zstd decoder holds at most this much.
ZSTD_WINDOW_LOG_MAX = 23
RATIO_FLOOR_BYTES = 8 * 1024 * 1024  # below this much decoded, any ratio passes
# The gzip members or zstd frames one body may hold: the tools write one (the tap's poster
# does), and some a few; each costs a decoder made in Python.
MAX_FRAMES = 64
TURN_BYTES = 1024 * 1024  # decoded between two turns of the event loop (see pieces)

_GZIP_MAGIC = b"\x1f\x8b"


class UnknownEncoding(ValueError):
    """The Content-Encoding is not one the service decodes."""


class UndecodableBody(ValueError):
    """The body is not what its Content-Encoding says (corrupt, or cut before its end)."""


class BodyTooCostly(Exception):
    """Decoding the body would cost more than its bounds allow (it decodes to more than the
    ratio allows, a decompression bomb; it holds more than MAX_FRAMES members or frames; its
    compressed bytes pass MAX_BODY_BYTES): read no further."""


def content_encoding_of(headers) -> str | None:
    """A request's Content-Encoding; given on several lines, the lines joined with commas, which
    is what they mean (two lines are two encodings, never the first one alone)."""
    getlist = getattr(headers, "getlist", None)
    if getlist is None:
        return headers.get("content-encoding")
    values = getlist("content-encoding")
    return ", ".join(values) if values else None


def content_decoder(header: str | None, *, max_ratio: float, max_bytes: int) -> BodyDecoder | None:
    """The decoder a Content-Encoding header asks for; None for none (or ``identity``).
    Raises ``UnknownEncoding`` for anything else, stacked encodings included."""
    encoding = (header or "").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding not in ENCODINGS:
        shown = encoding[:40]
        raise UnknownEncoding(
            f"Content-Encoding {shown!r} is not decoded: post the stream's bytes as they are, "
            f"or compressed with one of {', '.join(ENCODINGS)}"
        )
    return BodyDecoder(encoding, max_ratio=max_ratio, max_bytes=max_bytes)


class BodyDecoder:
    """One body's decoding: ``feed`` each chunk as it comes and judge the pieces it yields, then
    ``finish``.  A gzip body may hold several members and a zstd body several frames, one after
    the other, as their tools write them; a deflate body is zlib's format (RFC 9110), or raw
    deflate, which some clients send under that name."""

    def __init__(self, encoding: str, *, max_ratio: float, max_bytes: int) -> None:
        self.encoding = encoding
        self.received = 0  # compressed bytes fed
        self.decoded = 0
        self.frames = 0  # members or frames begun
        self._max_ratio = max_ratio
        self._max_bytes = max_bytes
        self._next_turn = TURN_BYTES
        self._decoder: Any = None  # the member's or frame's, made from its first bytes
        self._ended = False  # the last member or frame ended, and nothing came after it yet
        self._head = b""  # deflate: its first byte, until the second tells zlib's format from raw

    async def pieces(self, data: bytes) -> AsyncIterator[bytes]:
        """``feed``'s pieces, with a turn of the event loop after each TURN_BYTES of them: one
        chunk may decode to MAX_BODY_BYTES, which the loop must not wait for."""
        for piece in self.feed(data):
            yield piece
            if self.decoded >= self._next_turn:
                self._next_turn = self.decoded + TURN_BYTES
                await asyncio.sleep(0)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of data, each at most PIECE_BYTES."""
        self.received += len(data)
        if self.received > self._max_bytes:
            raise BodyTooCostly(
                f"the {self.encoding} body is larger than MAX_BODY_BYTES ({self._max_bytes}) as sent, "
                "compressed: read no further, nothing stored"
            )
        if self._head or (self.encoding == "deflate" and self._decoder is None and not self._ended):
            data = self._head + data
            if len(data) < 2:  # (a deflate body is one stream: only its start is told apart)
                self._head = data
                return
            self._head = b""
        while data:
            if self._decoder is None:
                self.frames += 1
                if self.frames > MAX_FRAMES:
                    unit = "members" if self.encoding == "gzip" else "frames"
                    raise BodyTooCostly(
                        f"the {self.encoding} body holds more than {MAX_FRAMES} {unit}, each a decoder "
                        "to make: compress the stream as one, read no further, nothing stored"
                    )
                self._decoder = self._new_decoder(data, following=self._ended)
                self._ended = False
            yield from self._decode(data)
            data = self._rest()

    def finish(self) -> None:
        """The body is whole: raises ``UndecodableBody`` if its encoding is cut short."""
        if self.received == 0:
            return  # an empty body is an empty stream, in any encoding
        if self._head or not self._ended:
            raise UndecodableBody(f"the {self.encoding} body ends before its compressed data does; nothing stored")

    def _new_decoder(self, data: bytes, *, following: bool) -> Any:
        if self.encoding == "gzip":
            if not _GZIP_MAGIC.startswith(data[:2]):
                where = "what follows its last member does not" if following else "it does not"
                raise UndecodableBody(f"the gzip body is not gzip data ({where} start as gzip does); nothing stored")
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self.encoding == "deflate":
            # zlib's two header bytes say so: a multiple of 31, method 8
            zlib_format = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            return zlib.decompressobj(zlib.MAX_WBITS if zlib_format else -zlib.MAX_WBITS)
        return zstd.ZstdDecompressor(options={zstd.DecompressionParameter.window_log_max: ZSTD_WINDOW_LOG_MAX})

    def _decode(self, data: bytes) -> Iterator[bytes]:
        decoder = self._decoder
        try:
            piece = decoder.decompress(data, PIECE_BYTES)
            yield from self._count(piece)
            if self.encoding == "zstd":
                while not decoder.eof and not decoder.needs_input:
                    yield from self._count(decoder.decompress(b"", PIECE_BYTES))
            else:
                # a full piece may leave output behind even when no input is left
                while not decoder.eof and (decoder.unconsumed_tail or len(piece) == PIECE_BYTES):
                    piece = decoder.decompress(decoder.unconsumed_tail, PIECE_BYTES)
                    yield from self._count(piece)
        except (zlib.error, zstd.ZstdError) as exc:
            raise UndecodableBody(f"the {self.encoding} body could not be decoded ({exc}); nothing stored") from None

    def _count(self, piece: bytes) -> Iterator[bytes]:
        if not piece:
            return
        self.decoded += len(piece)
        if self.decoded > RATIO_FLOOR_BYTES and self.decoded > self._max_ratio * self.received:
            raise BodyTooCostly(
                f"the {self.encoding} body decodes to more than {self._max_ratio:g} times its size "
                "(MAX_DECODED_RATIO): read no further, nothing stored"
            )
        yield piece

    def _rest(self) -> bytes:
        """What follows the member or frame that just ended (the next one), or b""."""
        decoder = self._decoder
        if not decoder.eof:
            return b""
        self._ended = True
        self._decoder = None
        rest = decoder.unused_data
        if rest and self.encoding == "deflate":
            raise UndecodableBody("the deflate body holds bytes after its compressed data; nothing stored")
        return rest

"""Batches without HTTP: many captured streams in one body, each judged as it arrives, and
their verdicts stored together.

A batch's body is its streams one after another, each a head line and then its bytes::

    {"stream_id": "a1", "protocol": "chat", "tool": "codex", "length": 1834}
    <the 1834 bytes of the stream, as the gateway captured them>
    {"stream_id": "a2", "length": 0}
    ...

A head is one line of JSON (at most ``MAX_HEAD_BYTES``): an object holding the parameters of
``POST /v1/streams`` (``ingest.PARAMETERS``; a number may be sent as a number or a string) and
``length``, how many bytes of the stream follow it.  Blank lines between streams are skipped.
The tap's spool keeps each capture in this shape, one to a file, without the length.

Each stream is judged while its bytes arrive, so memory is bounded by one stream's scanner and
by a row per stream (``MAX_BATCH_STREAMS``), never by the bytes of the batch.  When the body is
whole (and its signature, if it is signed, holds), the rows go to the writer together and share
its commits; each stream's outcome is the one its own post would have had.  A body that cannot
be read whole stores nothing: ``ingest_batch`` says why (``Refused``), as for a single post.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
from collections.abc import AsyncIterable
from dataclasses import dataclass

from .auth import Gateway, SignedPost
from .config import Settings
from .content_encoding import BodyDecoder, BodyTooCostly, UndecodableBody
from .db import utcnow
from .ingest import (
    PARAMETERS,
    IngestParams,
    InvalidParameters,
    Outcome,
    Refusal,
    Refused,
    ended_at_refusal,
    parse_query,
    stream_row,
    unavailable,
    upload_refusal,
    written,
)
from .judging import JUDGE_IN_THREAD, JudgingTooCostly, StreamJudge
from .uploads import UploadBrokeOff, UploadClock
from .writer import Message, WriterUnavailable, expire

MAX_HEAD_BYTES = 16 * 1024  # a head holds a few identifiers: far less than this
_BLANK = re.compile(rb"[ \t\r\n]*")
LENGTH = "length"
_NAMES = frozenset(parameter.name for parameter in PARAMETERS)


class BrokenBatch(Exception):
    """The body is not a batch (a head that is not one, a stream cut short): nothing stored."""


class LargeBatch(Exception):
    """The batch passed MAX_BODY_BYTES or MAX_BATCH_STREAMS: nothing stored."""


@dataclass(slots=True)
class Item:
    """One stream of the batch: its parameters (None if its head's were wrong), then its row
    once judged, then its outcome."""

    params: IngestParams | None
    outcome: Outcome | None = None
    row: dict | None = None


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """A batch read whole: each stream's outcome, in the order they came."""

    outcomes: list[tuple[IngestParams | None, Outcome]]


class BatchReader:
    """Reads a batch's body piece by piece (as decoded), judging each stream as its bytes come.
    Raises BrokenBatch or LargeBatch as soon as the body cannot be a batch within the bounds."""

    def __init__(self, settings: Settings, gateway: Gateway, now) -> None:
        self._settings = settings
        self._gateway = gateway.name
        self._tool = gateway.name if gateway.reporter else None  # (a reporter's answers are its own)
        self._now = now
        self.items: list[Item] = []
        self.received = 0
        self._head = bytearray()
        self._left = 0  # bytes of the current stream still to come
        self._judge: StreamJudge | None = None  # None: a stream whose head was refused

    def feed(self, piece: bytes) -> None:
        self.received += len(piece)
        if self.received > self._settings.max_body_bytes:
            raise LargeBatch(f"the batch is larger than MAX_BODY_BYTES ({self._settings.max_body_bytes})")
        position, end = 0, len(piece)
        while position < end:
            if self._left:
                taken = min(self._left, end - position)
                if self._judge is not None:
                    self._judge.feed(piece[position : position + taken])
                self._left -= taken
                position += taken
                if not self._left:
                    self._judged()
                continue
            if not self._head:
                # blank lines between streams, skipped at C speed (so that a body of nothing
                # else costs no loop in Python)
                blank = _BLANK.match(piece, position)
                position = blank.end() if blank else position
                if position == end:
                    return
            newline = piece.find(b"\n", position)
            if newline < 0:
                self._head += piece[position:]
                if len(self._head) > MAX_HEAD_BYTES:
                    raise BrokenBatch(self._where(f"a head longer than {MAX_HEAD_BYTES} bytes"))
                return
            if self._head:
                self._head += piece[position:newline]
                line = bytes(self._head)
                self._head.clear()
            else:
                line = piece[position:newline]
            position = newline + 1
            if len(line) > MAX_HEAD_BYTES:
                raise BrokenBatch(self._where(f"a head longer than {MAX_HEAD_BYTES} bytes"))
            if line.strip():
                self._begin(line, self.received - (end - position))

    def finish(self) -> None:
        """The body ended: it must end between streams."""
        if self._left:
            raise BrokenBatch(self._where(f"the body ends {self._left} bytes before the end of its stream", last=True))
        if self._head.strip():
            raise BrokenBatch(self._where("the body ends inside a head (every head ends with a line break)"))
        if not self.items:
            raise BrokenBatch("the batch holds no stream; nothing stored")

    def _begin(self, line: bytes, read: int) -> None:
        """A head, ``read`` bytes into the body."""
        if len(self.items) >= self._settings.max_batch_streams:
            raise LargeBatch(
                f"the batch holds more than MAX_BATCH_STREAMS ({self._settings.max_batch_streams}) streams"
            )
        try:
            # (its members as pairs, in order: a name given twice is seen, not the last one kept)
            head = json.loads(line, object_pairs_hook=_Members)
        except (ValueError, RecursionError):  # (RecursionError: JSON nested past the parser's depth)
            raise BrokenBatch(self._where("a head that is not JSON")) from None
        if not isinstance(head, _Members):
            raise BrokenBatch(self._where("a head that is not a JSON object"))
        lengths = [value for name, value in head if name == LENGTH]
        if not lengths:
            raise BrokenBatch(self._where(f'a head without "{LENGTH}", the number of bytes of its stream'))
        length = lengths[0]
        if len(lengths) > 1 or type(length) is not int or length < 0:
            raise BrokenBatch(self._where(f'"{LENGTH}" must be given once, a whole number of bytes (0 or more)'))
        if length > self._settings.max_body_bytes - read:
            raise LargeBatch(f"the batch is larger than MAX_BODY_BYTES ({self._settings.max_body_bytes})")
        item = Item(None)
        pairs, wrong = _pairs(head)
        try:
            item.params = parse_query(pairs)
            if wrong:
                raise InvalidParameters([])
            if self._tool is not None:
                item.params = dataclasses.replace(item.params, tool=self._tool)
        except InvalidParameters as exc:
            # (the errors do not repeat the values: a misframed batch may have its streams'
            # bytes read as a head, and payload never goes into an answer)
            named = {error["loc"][-1] for error in wrong}
            errors = wrong + [{**e, "input": None} for e in exc.errors if e["loc"][-1] not in named]
            item.params = None
            item.outcome = Refused(Refusal.INVALID, str(InvalidParameters(errors)), errors)
        else:
            item.outcome = ended_at_refusal(item.params, self._settings, self._now)
        self.items.append(item)
        self._judge = None
        if item.outcome is None:
            assert item.params is not None
            self._judge = StreamJudge(
                item.params.protocol,
                max_body_bytes=self._settings.max_body_bytes,
                max_event_bytes=self._settings.max_event_bytes,
                max_scan_seconds=self._settings.max_scan_seconds,
            )
        self._left = length
        if not length:
            self._judged()

    def _judged(self) -> None:
        """The current stream's bytes are all in."""
        item, judge = self.items[-1], self._judge
        if judge is None:
            return
        assert item.params is not None
        verdict, body_sha256 = judge.close(item.params.transport)
        item.row = stream_row(judge, verdict, body_sha256, self._gateway, item.params, self._now)
        self._judge = None

    def _where(self, what: str, *, last: bool = False) -> str:
        number = len(self.items) if last else len(self.items) + 1
        return f"stream {number} of the batch: {what}; nothing stored"


class _Members(list):
    """A JSON object's members, as (name, value) pairs in order."""


def _pairs(head: _Members) -> tuple[list[tuple[str, str]], list[dict]]:
    """A head's parameters as a query's (name, value) pairs, which parse_query checks (a name
    given twice, too); and the errors of the values a query could not carry: a parameter's
    value must be a string or an integer (not true, 1.5 or an object)."""
    pairs, wrong = [], []
    for name, value in head:
        if name not in _NAMES or value is None:
            continue  # a newer gateway may send more; null is "not given"
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            wrong.append({"type": "value_error", "loc": ["query", name], "msg": "must be a string or an integer"})
        else:
            pairs.append((name, str(value)))
    return pairs, wrong


async def ingest_batch(
    chunks: AsyncIterable[bytes],
    gateway: Gateway,
    *,
    settings: Settings,
    writer,
    declared_length: str | None = None,
    decoder: BodyDecoder | None = None,
) -> BatchOutcome | Refused:
    """Read a batch as it arrives, judging each stream, then store the verdicts together and
    say what became of each; or, if the body cannot be read whole, why nothing was stored."""
    if declared_length is not None and declared_length.isdigit() and int(declared_length) > settings.max_body_bytes:
        return Refused(Refusal.TOO_LARGE, f"the batch is larger than MAX_BODY_BYTES ({settings.max_body_bytes})")
    reader = BatchReader(settings, gateway, utcnow())
    clock = UploadClock(settings.upload_idle_timeout_seconds, settings.upload_timeout_seconds)
    signed = gateway.signed
    sent = hashlib.sha256() if signed is not None else None
    try:
        async for chunk in chunks:
            clock.tick()
            if sent is not None:
                sent.update(chunk)
            if decoder is None:
                if JUDGE_IN_THREAD:
                    await asyncio.to_thread(reader.feed, chunk)
                else:
                    reader.feed(chunk)
            else:
                async for piece in decoder.pieces(chunk):
                    if JUDGE_IN_THREAD:
                        await asyncio.to_thread(reader.feed, piece)
                    else:
                        reader.feed(piece)
        if decoder is not None:
            decoder.finish()
        reader.finish()
    except BrokenBatch as exc:
        return Refused(Refusal.UNDECODABLE, str(exc))
    except LargeBatch as exc:
        return Refused(Refusal.TOO_LARGE, f"{exc}; nothing stored")
    except JudgingTooCostly as exc:
        return Refused(Refusal.TOO_LARGE, f"stream {len(reader.items)} of the batch: {exc}")
    except (BodyTooCostly, UndecodableBody, UploadBrokeOff, asyncio.CancelledError) as exc:
        refusal = upload_refusal(exc, clock, "a batch", reader.received)
        if refusal is None:
            raise
        return refusal
    finally:
        clock.stop()

    if signed is not None:
        assert sent is not None
        if sent.hexdigest() != signed.body_sha256:
            return Refused(
                Refusal.BAD_SIGNATURE, "the body's SHA-256 is not the one its content-digest names; nothing stored"
            )
    await _store(reader.items, writer, settings.write_timeout_seconds, signed)
    outcomes = []
    for item in reader.items:
        assert item.outcome is not None  # every stream was judged or refused, and then stored
        outcomes.append((item.params, item.outcome))
    return BatchOutcome(outcomes)


def stream_message(signed: SignedPost, stream_id: str) -> Message:
    """What a signed batch's webhook-id is kept as for one of its streams: the id and the
    stream_id together (hashed, to fit where ids are kept).  So the batch sent again, whole or
    in part (its 503s alone), compressed alike or not, is the retry of each of its streams, and
    a stream_id of it posted with other bytes under that id is refused (REUSED), as a single
    post's would be."""
    key = hashlib.sha256(f"{signed.message_id}\n{stream_id}".encode()).hexdigest()
    return Message(f"batch:{key}", signed.timestamp)


async def _store(items: list[Item], writer, timeout: float, signed: SignedPost | None) -> None:
    """Hand every judged row to the writer at once (they share its commits), and wait for
    their commits together, at most ``timeout``."""
    waiting: list[tuple[Item, asyncio.Future]] = []
    for item in items:
        if item.row is None:
            continue
        assert item.params is not None
        message = None if signed is None else stream_message(signed, item.params.stream_id)
        try:
            waiting.append((item, writer.submit(item.row, message=message)))
        except WriterUnavailable as exc:
            item.outcome = unavailable(exc)
    if waiting:
        await asyncio.wait([done for _item, done in waiting], timeout=timeout)
    for item, done in waiting:
        expire(done)  # a commit not made in time: its outcome is unknown
        failure = done.exception()
        if failure is None:
            assert item.params is not None
            item.outcome = written(done.result(), item.params.stream_id)
        elif isinstance(failure, WriterUnavailable):
            item.outcome = unavailable(failure)
        else:
            raise failure

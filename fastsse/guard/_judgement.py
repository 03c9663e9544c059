"""One guarded answer, whatever the HTTP library: the scanner it is fed to, the verdict at its
end, and what happens then (``on_verdict``, the span, the reporter, ``StreamFailed``).

The transports (``_transport.py``) call ``feed`` with each chunk the application reads and
``finish`` when the body ends, breaks, or is closed; everything else is here.
"""

from __future__ import annotations

import gc
import importlib
import logging
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .. import (
    CATEGORIES,
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    MESSAGES,
    RETRYABLE,
    UNKNOWN_PROTOCOL,
    Scanner,
    Verdict,
)
from .._verdict import (
    BUFFER_RESIDUAL,
    LIMIT_EXCEEDED,
    MALFORMED_EVENT,
    NO_END_MARKER,
    SEQUENCE_GAP,
    TRANSPORT_ERROR,
    UPSTREAM_ERROR,
    _verdict,
)
from . import _span
from ._errors import failure
from ._failure import StreamFailed

log = logging.getLogger("fastsse.guard")

FAILURES = frozenset(CATEGORIES) - {"complete"}
# What raises by default: the failures an application cannot see for itself.  A cut
# connection, a dropped end event, half an event, a gap, an unreadable frame, a provider's error
# (which the SDK usually raises too: the failure is then its cause) and the guard's own bound.
# The rest (a token limit, a refusal or filter, reasoning only, no finish reason, an empty
# answer, tool arguments that do not parse) the SDK hands to the application in the answer's
# own words (finish_reason, stop_reason, the text it got): raise_on=FAILURES raises those too.
UNSEEN = frozenset(
    {LIMIT_EXCEEDED, TRANSPORT_ERROR, UPSTREAM_ERROR, NO_END_MARKER, BUFFER_RESIDUAL, MALFORMED_EVENT, SEQUENCE_GAP}
)
# Encodings the guard can read to judge (the answer still reaches the client as it came):
# gzip and deflate always (47: gzip or zlib, told by the header, as httpx reads them); br and
# zstd with the packages httpx itself decodes them with, when they are installed (an SDK
# asks for br when brotli is there).
_ZLIB = {"gzip": 47, "x-gzip": 47, "deflate": 47}
_DECODED_PIECE = 64 * 1024


def _optional(*names: str) -> Any:
    """The first of these packages that is installed, or None."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


brotli = _optional("brotli", "brotlicffi")
zstandard = _optional("zstandard")


def readable(encoding: str) -> bool:
    """Whether the guard can read an answer in this Content-Encoding to judge it."""
    return (
        encoding in ("", "identity")
        or encoding in _ZLIB
        or (encoding == "br" and brotli is not None)
        or (encoding == "zstd" and zstandard is not None)
    )


class _OtherDecoder:
    """br or zstd, through the package httpx uses; one piece per chunk (these packages give no
    bound on one call's output)."""

    def __init__(self, encoding: str) -> None:
        if encoding == "br":
            self._decompress = brotli.Decompressor().process
        else:
            self._decompress = zstandard.ZstdDecompressor().decompressobj().decompress

    def pieces(self, chunk: bytes) -> list[bytes]:
        return [self._decompress(chunk)]


# A stream that a reader leaves before its end is not judged: that cut is the reader's own
# (as the tap does for a client that hangs up).  These are the verdicts of such a cut.
_LEFT_EARLY = frozenset({"no_end_marker", "buffer_residual"})


def judge_abandoned() -> None:
    """Judge the answers of this process that nothing refers to any more, as their readers left
    them (judged only if they had ended, or stopped at a frame that could not be read: see
    ``Judgement.finish``).  An SDK that raises at a corrupt frame may leave its answer in a
    reference cycle (its exception's traceback) that only the garbage collector ends, after the
    reporter is gone: the reporter calls this when it closes, so that such an answer still has
    its verdict.  An answer still being read is not touched."""
    gc.collect()  # finalizes such answers' generators: each judges its answer as it goes


# How an SSE body begins (after blank lines): a field or a comment.
_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":")


def _not_an_answer(verdict: Verdict) -> bool:
    """Events were read, none of them of an LLM dialect, and none an error: an SSE feed of
    another kind (only ``auto`` can judge so; a protocol given or told by the path is held)."""
    return verdict.protocol == UNKNOWN_PROTOCOL and verdict.events > 0 and verdict.category != UPSTREAM_ERROR


def _where(request: Any) -> str:
    """The request's host and path, for a log line (never its query: it may hold a key)."""
    try:
        return f"{request.url.host}{request.url.path}"
    except Exception:  # noqa: BLE001 - a request of another shape
        return "an unknown request"


def _broken(verdict: Verdict, transport: str) -> Verdict:
    """The verdict of an answer the transport broke, from the one it would have had at a clean
    end: as the scanner judges it (a transport error comes second in the order)."""
    return _recategorized(verdict, TRANSPORT_ERROR, transport=transport)


def _recategorized(verdict: Verdict, category: str, **changes: object) -> Verdict:
    """The verdict with another (failing) category, its retryability and its message."""
    values: dict[str, object] = dict(verdict.to_dict())
    values.update(
        category=category, complete=False, retryable=RETRYABLE[category], message=MESSAGES[category], **changes
    )
    return _verdict(values)


@dataclass(frozen=True, slots=True)
class Finished:
    """A judged answer as a reporter gets it: the request it answered, how it ended, and its
    bytes (decoded, as judged)."""

    method: str
    path: str
    query: bytes
    headers: Any  # the request's headers (httpx's Headers: case-insensitive)
    request_body: bytes | None  # None when the request streamed its body
    status: int
    protocol: str
    transport: str  # how the body ended: one of fastsse.TRANSPORTS
    body: bytes
    verdict: Verdict


class Reporter(Protocol):
    """What the guard hands finished answers to (``fastsse_service.reporter.Reporter`` sends
    them to the verdict service).  ``report`` must return at once and never raise."""

    capture_limit: int  # the largest answer kept for it, in bytes; past it, none is reported

    def report(self, finished: Finished) -> None: ...


@dataclass(frozen=True, slots=True)
class Options:
    protocol: str | None
    raise_on: frozenset[str]
    on_verdict: Callable[[Verdict, Any], None] | None
    reporter: Reporter | None
    mark_span: bool
    limits: dict[str, int]  # the scanner's max_event_bytes and max_line_bytes, when given


class Judgement:
    """One answer as the guard judges it.  The verdict comes once, at the first of: the
    answer's end marker (or an error) read, its body's end, a transport error, or the reader
    closing or dropping it (then judged only if it had ended: see ``finish``)."""

    def __init__(
        self, options: Options, request: Any, response: Any, protocol: str, encoding: str, *, sniff: bool = False
    ) -> None:
        self._options = options
        # An answer not labelled as a stream, judged only if its first bytes are SSE's
        # (``_transport._unlabelled_stream``): until then, nothing is judged.
        self._sniff = sniff
        self._request = request
        self._status = response.status_code
        self._protocol = protocol
        self._scanner = Scanner(
            protocol,
            max_event_bytes=options.limits.get("max_event_bytes", DEFAULT_MAX_EVENT_BYTES),
            max_line_bytes=options.limits.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES),
        )
        self._encoding = encoding
        self._zlib = zlib.decompressobj(_ZLIB[encoding]) if encoding in _ZLIB else None
        self._decoded_any = False
        self._other = _OtherDecoder(encoding) if encoding in ("br", "zstd") else None
        reporter = options.reporter
        self._capture: list[bytes] | None = [] if reporter is not None and reporter.capture_limit > 0 else None
        self._captured = 0
        self._done = False
        # A provider's error, judged: the SDK reads the error and raises its own, with this as
        # its cause; delivered at the reader's next read or close if it does not.
        self._pending: StreamFailed | None = None
        # A failure judged when the reader dropped the answer unclosed (its generators finalized
        # as an exception left them): delivered if the answer is then closed.
        self._dropped: StreamFailed | None = None
        # The exception being handled where the reader is (a retry inside an except block):
        # when the answer is closed, that one is not on its way out.  Updated at every chunk.
        self.handled = sys.exc_info()[1]

    def feed(self, chunk: bytes) -> None:
        if self._done:
            return
        if self._zlib is None and self._other is None:
            self._judge(chunk)
            return
        try:
            if self._other is not None:
                for piece in self._other.pieces(chunk):
                    self._judge(piece)
                return
            self._inflate(chunk)
        except Exception as exc:  # noqa: BLE001 - zlib.error, brotli.error, zstandard.ZstdError
            # Not what its Content-Encoding says: the guard cannot read it, and judges nothing
            # rather than call a whole answer cut; it says so.
            self._done = True
            log.warning(
                "fastsse.guard: an answer from %s was not judged: it does not decode as %s (%s)",
                _where(self._request),
                self._encoding,
                type(exc).__name__,
            )

    def _inflate(self, chunk: bytes) -> None:
        # Decoded a piece at a time: a small chunk that inflates to gigabytes (a bomb) is
        # judged in bounded memory (the scanner bounds what it keeps).
        decoder = self._zlib
        assert decoder is not None
        try:
            piece = decoder.decompress(chunk, _DECODED_PIECE)
        except zlib.error:
            if self._encoding != "deflate" or self._decoded_any:
                raise
            # "deflate" sent raw, without its zlib header (as some servers do; httpx reads it so)
            decoder = self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            piece = decoder.decompress(chunk, _DECODED_PIECE)
        self._decoded_any = True
        while piece:
            self._judge(piece)
            tail = decoder.unconsumed_tail
            piece = decoder.decompress(tail, _DECODED_PIECE) if tail else b""

    def _judge(self, chunk: bytes) -> None:
        if self._sniff:
            start = chunk.lstrip()
            if not start:
                return
            if not start.startswith(_SSE_STARTS):
                self._done = True  # not a stream: nothing to judge, nothing to say
                return
            self._sniff = False
        self._scanner.feed(chunk)
        if self._capture is not None:
            self._captured += len(chunk)
            limit = self._options.reporter.capture_limit  # type: ignore[union-attr]
            if self._captured > limit:
                self._capture = None
                log.warning(
                    "fastsse.guard: an answer from %s is over the reporter's capture limit (%d bytes): "
                    "judged, but not reported",
                    _where(self._request),
                    limit,
                )
            else:
                self._capture.append(chunk)

    def awaiting_end(self) -> bool:
        """Whether the answer has said how it ends (a finish reason for every choice) and only
        its closing events are still to come: a reader may stop here (LiteLLM stops at
        Anthropic's message_delta), so the guard reads them before it hands the chunk on."""
        scanner = self._scanner
        return not self._done and scanner.settled and not scanner.ended

    def at_end(self) -> None:
        """After a chunk: if the answer's end (or an error) is in, judge it now, and raise the
        failure in the place of the chunk that ended it (see ``completed``)."""
        if not self._done and self._scanner.ended:
            self.completed()

    def at_eof(self) -> None:
        """The body ended: judge the answer if it was not yet, and raise what is to raise."""
        if self._sniff:  # nothing but blanks came: not a stream
            self._done = True
        if not self._done:
            self.completed()
        pending, self._pending = self._pending, None
        if pending is not None:
            raise pending

    def completed(self) -> None:
        """The answer ended cleanly (its end marker, or its body): judge it, and raise its
        failure where the reader reads, before the reader has the chunk that ended it, so that
        a reader that stops at its last event meets it too.  A provider's error is the
        exception: the SDK reads it and raises its own (with the failure as its cause)."""
        failure = self.finish("eof")
        if failure is None:
            return
        if failure.category == UPSTREAM_ERROR:
            self._pending = failure
            return
        raise failure

    def finish(self, transport: str, *, early: bool = False, cause: BaseException | None = None) -> StreamFailed | None:
        """Judge the answer once: at its end (``transport``: how it ended; ``cause``: the
        transport's exception), or ``early`` when the reader closed it before its end (then
        judged only if it had ended as far as the reader cares: an error, or a frame it could
        not read).  The failure to raise, if any."""
        if self._done:
            return None
        self._done = True
        verdict = self._scanner.close("eof")
        if early and verdict.category in _LEFT_EARLY:
            if not verdict.malformed_events:
                return None
            # The reader stopped at an event that could not be read (an SDK raises at a frame
            # whose CRC does not match): the answer failed, whatever would have followed.
            verdict = _recategorized(verdict, MALFORMED_EVENT)
        if transport != "eof" and not verdict.complete and verdict.category != "limit_exceeded":
            # A break before the answer's end: the category is the break's.  (A break after
            # a complete answer, say while an SDK drains the connection after [DONE], is no
            # failure of the answer: it stays complete, and the break reaches the reader as
            # it was.)
            verdict = _broken(verdict, transport)
        options = self._options
        if _not_an_answer(verdict):
            # SSE, but no LLM dialect in it (a feed of the application's own, through a
            # client that also reads answers): not judged as an answer.
            self._tell(verdict)
            return None
        failed = verdict.category in options.raise_on
        if options.mark_span:
            try:
                _span.mark(verdict)
            except Exception:  # noqa: BLE001, S110 - telemetry never fails the application
                pass
        if options.reporter is not None and self._capture is not None:
            self._report(options.reporter, transport, verdict)
        self._tell(verdict)
        return failure(verdict, self._request, cause) if failed else None

    def _tell(self, verdict: Verdict) -> None:
        """on_verdict, whose failure is logged, never raised: it runs before the reader has the
        answer's last chunk, and a bug in it must not cut a finished answer short."""
        on_verdict = self._options.on_verdict
        if on_verdict is None:
            return
        try:
            on_verdict(verdict, self._request)
        except Exception:  # noqa: BLE001 - the application's callback never fails its answer
            log.exception("fastsse.guard: on_verdict raised (the answer goes on)")

    def _report(self, reporter: Reporter, transport: str, verdict: Verdict) -> None:
        request = self._request
        try:
            body: bytes | None = request.content
        except Exception:  # noqa: BLE001 - a streamed request body (RequestNotRead): none to give
            body = None
        finished = Finished(
            method=request.method,
            path=request.url.path,
            query=request.url.query,
            headers=request.headers,
            request_body=body,
            status=self._status,
            protocol=self._protocol,
            transport=transport,
            body=b"".join(self._capture or ()),
            verdict=verdict,
        )
        self._capture = None
        try:
            reporter.report(finished)
        except Exception:  # noqa: BLE001, S110 - a reporter never fails the application
            pass

    def dropped(self) -> None:
        """The reader dropped the answer unclosed (its generators are finalized): judge it, and
        keep the failure for a close that may follow."""
        failure = self.finish("eof", early=True)
        self._dropped = failure or self._pending
        self._pending = None

    def closed(self) -> None:
        """The reader closed the answer: judge it, and deliver the failure (or the one judged
        when it was dropped)."""
        failure = self.finish("eof", early=True) or self._pending
        self._pending = None
        if failure is None:
            failure, self._dropped = self._dropped, None
        self.deliver(failure)

    def deliver(self, failure: StreamFailed | None) -> None:
        """Raise ``failure`` where the reader closed the answer; but if another exception is on
        its way out (the SDK's own error, or the reader leaving its loop), make the failure its
        cause instead of replacing it: the application keeps the exception it expects."""
        if failure is None:
            return
        current = sys.exc_info()[1]
        if current is None or current is self.handled:
            raise failure
        if not isinstance(current, GeneratorExit) and current.__cause__ is None:
            current.__cause__ = failure

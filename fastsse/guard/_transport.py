"""``Transport`` and ``AsyncTransport``: an httpx or httpx2 transport that judges every streamed
answer as the application reads it.

Neither library is imported: the transport wraps whichever it is given, and the stream it puts
in an answer's place subclasses that answer's own library's byte stream (each library checks
that its streams are its own).  The answer's bytes pass unchanged, chunk for chunk; each is fed
to the scanner before it is handed on.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from .. import (
    CATEGORIES,
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    Scanner,
    Verdict,
    protocol_for_path,
    stream_protocol,
)
from .._protocols import FRAMING_SSE, FRAMINGS
from ._failure import StreamFailed
from ._judgement import UNSEEN, Judgement, Options, Reporter, _where, log, readable

# How a transport error ended the answer, by the exception's class (or a base of it), in the
# names both libraries share: a timeout, a body cut short of its length or last chunk, any
# other break.  Any other exception is the reader's own and passes unjudged.
_TRANSPORTS = (("TimeoutException", "timeout"), ("RemoteProtocolError", "error"), ("TransportError", "reset"))
# Past the answer's last meaningful event, how much more the guard reads before it hands the
# chunk on, waiting for the closing events (Anthropic's message_stop, chat's [DONE]): they
# follow at once, and are a few hundred bytes.
READ_AHEAD_BYTES = 64 * 1024


def _options(
    protocol: str | None,
    raise_on: Iterable[str] | None,
    on_verdict: Callable[[Verdict, Any], None] | None,
    reporter: Reporter | None,
    mark_span: bool,
    limits: dict[str, int],
) -> Options:
    chosen = UNSEEN if raise_on is None else frozenset(raise_on)
    unknown = chosen - set(CATEGORIES)
    if unknown:
        raise ValueError(f"raise_on names no category: {sorted(unknown)} (fastsse.CATEGORIES lists them)")
    # A bad protocol or bound is refused now, not at the first answer.
    Scanner(
        protocol or "auto",
        max_event_bytes=limits.get("max_event_bytes", DEFAULT_MAX_EVENT_BYTES),
        max_line_bytes=limits.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES),
    )
    return Options(protocol, chosen, on_verdict, reporter, mark_span, limits)


class _Guard:
    def __init__(
        self,
        inner: Any,
        *,
        protocol: str | None = None,
        raise_on: Iterable[str] | None = None,
        on_verdict: Callable[[Verdict, Any], None] | None = None,
        reporter: Reporter | None = None,
        mark_span: bool = True,
        max_event_bytes: int | None = None,
        max_line_bytes: int | None = None,
    ) -> None:
        self.inner = inner
        limits = {"max_event_bytes": max_event_bytes, "max_line_bytes": max_line_bytes}
        given = {name: value for name, value in limits.items() if value is not None}
        self.options = _options(protocol, raise_on, on_verdict, reporter, mark_span, given)

    def _judgement(self, request: Any, response: Any) -> Judgement | None:
        """The judgement of this answer, or None when it passes untouched: not a success, not
        a stream (a whole JSON answer, an error), or compressed in a way the guard cannot read."""
        if not 200 <= response.status_code < 300:
            return None
        headers = response.headers
        path = request.url.path
        asked = self.options.protocol or protocol_for_path(path)
        content_type = headers.get("content-type", "")
        protocol = stream_protocol(content_type, asked)
        sniff = False
        if protocol is None:
            protocol = _unlabelled_stream(path, content_type)
            if protocol is None:
                return None
            sniff = protocol != "gemini"
        encoding = headers.get("content-encoding", "").strip().lower()
        if not readable(encoding):
            if _first_time((request.url.host, path, encoding)):
                log.warning(
                    "fastsse.guard: answers from %s are not judged: the guard cannot read Content-Encoding %r",
                    _where(request),
                    encoding,
                )
            return None
        return Judgement(self.options, request, response, protocol, encoding, sniff=sniff)


def _unlabelled_stream(path: str, content_type: str) -> str | None:
    """The protocol to judge an answer with that is not labelled as a stream: Gemini's JSON
    array (streamGenerateContent without alt=sse), or what may be SSE sent from a generation
    endpoint with another or no Content-Type (text/plain, application/octet-stream: some
    gateways), judged only if its first bytes are SSE's (``Judgement``'s sniff).  A JSON
    answer, HTML or an image is not a stream: None.  Told by the path alone (``protocol=``
    names the dialect of streams, not which answers are streams)."""
    asked = protocol_for_path(path)
    if asked is None:
        return None
    if asked == "gemini" and path.endswith(":streamGenerateContent"):
        return asked
    media = content_type.split(";")[0].strip().lower()
    if media in ("", "text/plain", "application/octet-stream") and FRAMINGS[asked] == FRAMING_SSE:
        return asked
    return None


_SAID: set[tuple[str, str, str]] = set()


def _first_time(what: tuple[str, str, str]) -> bool:
    """Whether this is news for the log (once per host, path and encoding; a bounded memory)."""
    if what in _SAID:
        return False
    if len(_SAID) >= 256:
        _SAID.clear()
    _SAID.add(what)
    return True


def _transport_of(exc: BaseException) -> str | None:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return next((transport for name, transport in _TRANSPORTS if name in names), None)


_STREAM_CLASSES: dict[str, tuple[type, type]] = {}


def _stream_classes(response: Any) -> tuple[type, type]:
    """The guarded stream classes for the library ``response`` comes from (httpx, httpx2)."""
    library = type(response).__module__.partition(".")[0]
    classes = _STREAM_CLASSES.get(library)
    if classes is None:
        module = sys.modules[library]
        classes = (
            type("GuardedStream", (_GuardedStream, module.SyncByteStream), {}),
            type("AsyncGuardedStream", (_AsyncGuardedStream, module.AsyncByteStream), {}),
        )
        _STREAM_CLASSES[library] = classes
    return classes


class Transport(_Guard):
    """Wraps a synchronous httpx or httpx2 transport::

        httpx2.Client(transport=fastsse.guard.Transport(httpx2.HTTPTransport()))

    Every answer that streams (``text/event-stream``, or Gemini's JSON-array stream) is judged
    as it is read; one that is not complete raises ``StreamFailed`` where the reader is, once
    the reader is done with it (its end, or the reader closing it after the end event).  Other
    answers pass untouched.  See ``fastsse.guard`` for the options.
    """

    def handle_request(self, request: Any) -> Any:
        response = self.inner.handle_request(request)
        judgement = self._judgement(request, response)
        if judgement is not None:
            response.stream = _stream_classes(response)[0](response.stream, judgement)
        return response

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> Transport:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.inner.__exit__(*exc_info)


class AsyncTransport(_Guard):
    """Wraps an asynchronous httpx or httpx2 transport (``httpx2.AsyncHTTPTransport()``); as
    ``Transport``."""

    async def handle_async_request(self, request: Any) -> Any:
        response = await self.inner.handle_async_request(request)
        judgement = self._judgement(request, response)
        if judgement is not None:
            response.stream = _stream_classes(response)[1](response.stream, judgement)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> AsyncTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.inner.__aexit__(*exc_info)


class _GuardedStream:
    def __init__(self, inner: Any, judgement: Judgement) -> None:
        self._inner = inner
        self.judgement = judgement

    def __iter__(self) -> Iterator[bytes]:
        judgement = self.judgement
        chunks = iter(self._inner)
        try:
            for chunk in chunks:
                judgement.feed(chunk)
                broke = None
                if judgement.awaiting_end():
                    chunk, broke = _read_ahead(chunk, chunks, judgement)
                if broke is None:
                    judgement.at_end()
                judgement.handled = sys.exc_info()[1]  # what the reader is handling, if anything
                yield chunk
                if broke is not None:  # what was held is the reader's; now the break
                    raise broke
        except GeneratorExit:  # the reader dropped the answer unclosed (a reader that raised)
            judgement.dropped()
            raise
        except StreamFailed:
            raise
        except Exception as exc:
            transport = _transport_of(exc)
            failure = judgement.finish(transport, cause=exc) if transport is not None else None
            if failure is not None:
                raise failure from exc
            raise
        judgement.at_eof()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self.judgement.closed()


def _read_ahead(first: bytes, chunks: Iterator[bytes], judgement: Judgement) -> tuple[bytes, Exception | None]:
    """``first`` and what follows it until the answer's end, its body's end, or
    READ_AHEAD_BYTES: one chunk for the reader; and the exception that broke the body meanwhile,
    if one did (raised after the reader has what came before it)."""
    held = [first]
    size = 0
    while judgement.awaiting_end() and size < READ_AHEAD_BYTES:
        try:
            more = next(chunks, None)
        except Exception as exc:  # noqa: BLE001 - handed back, raised where the reader reads
            return b"".join(held), exc
        if more is None:  # the body ended: the answer is judged here
            judgement.at_eof()
            break
        judgement.feed(more)
        held.append(more)
        size += len(more)
    return b"".join(held), None


async def _aread_ahead(
    first: bytes, chunks: AsyncIterator[bytes], judgement: Judgement
) -> tuple[bytes, Exception | None]:
    """As ``_read_ahead``, for an asynchronous body."""
    held = [first]
    size = 0
    while judgement.awaiting_end() and size < READ_AHEAD_BYTES:
        try:
            more = await chunks.__anext__()
        except StopAsyncIteration:
            judgement.at_eof()
            break
        except Exception as exc:  # noqa: BLE001 - handed back, raised where the reader reads
            return b"".join(held), exc
        judgement.feed(more)
        held.append(more)
        size += len(more)
    return b"".join(held), None


class _AsyncGuardedStream:
    def __init__(self, inner: Any, judgement: Judgement) -> None:
        self._inner = inner
        self.judgement = judgement

    async def __aiter__(self) -> AsyncIterator[bytes]:
        judgement = self.judgement
        chunks = self._inner.__aiter__()
        try:
            async for chunk in chunks:
                judgement.feed(chunk)
                broke = None
                if judgement.awaiting_end():
                    chunk, broke = await _aread_ahead(chunk, chunks, judgement)
                if broke is None:
                    judgement.at_end()
                judgement.handled = sys.exc_info()[1]  # what the reader is handling, if anything
                yield chunk
                if broke is not None:  # what was held is the reader's; now the break
                    raise broke
        except GeneratorExit:  # the reader dropped the answer unclosed (a reader that raised)
            judgement.dropped()
            raise
        except StreamFailed:
            raise
        except Exception as exc:
            transport = _transport_of(exc)
            failure = judgement.finish(transport, cause=exc) if transport is not None else None
            if failure is not None:
                raise failure from exc
            raise
        judgement.at_eof()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self.judgement.closed()

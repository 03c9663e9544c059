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
from ._judgement import FAILURES, Judgement, Options, Reporter, readable

# How a transport error ended the answer, by the exception's class (or a base of it), in the
# names both libraries share: a timeout, a body cut short of its length or last chunk, any
# other break.  Any other exception is the reader's own and passes unjudged.
_TRANSPORTS = (("TimeoutException", "timeout"), ("RemoteProtocolError", "error"), ("TransportError", "reset"))


def _options(
    protocol: str | None,
    raise_on: Iterable[str] | None,
    on_verdict: Callable[[Verdict, Any], None] | None,
    reporter: Reporter | None,
    mark_span: bool,
    limits: dict[str, int],
) -> Options:
    chosen = FAILURES if raise_on is None else frozenset(raise_on)
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
        protocol = stream_protocol(headers.get("content-type", ""), asked)
        if protocol is None:  # not a stream; but Gemini's without alt=sse is one JSON array
            if not (asked == "gemini" and path.endswith(":streamGenerateContent")):
                return None
            protocol = asked
        encoding = headers.get("content-encoding", "").strip().lower()
        if not readable(encoding):
            return None
        return Judgement(self.options, request, response, protocol, encoding)


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
        try:
            for chunk in self._inner:
                judgement.feed(chunk)
                judgement.handled = sys.exc_info()[1]  # what the reader is handling, if anything
                yield chunk
        except GeneratorExit:  # the reader dropped the answer unclosed (a reader that raised)
            judgement.dropped()
            raise
        except Exception as exc:
            transport = _transport_of(exc)
            failure = judgement.finish(transport) if transport is not None else None
            if failure is not None:
                raise failure from exc
            raise
        failure = judgement.finish("eof")
        if failure is not None:
            raise failure

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self.judgement.closed()


class _AsyncGuardedStream:
    def __init__(self, inner: Any, judgement: Judgement) -> None:
        self._inner = inner
        self.judgement = judgement

    async def __aiter__(self) -> AsyncIterator[bytes]:
        judgement = self.judgement
        try:
            async for chunk in self._inner:
                judgement.feed(chunk)
                judgement.handled = sys.exc_info()[1]  # what the reader is handling, if anything
                yield chunk
        except GeneratorExit:  # the reader dropped the answer unclosed (a reader that raised)
            judgement.dropped()
            raise
        except Exception as exc:
            transport = _transport_of(exc)
            failure = judgement.finish(transport) if transport is not None else None
            if failure is not None:
                raise failure from exc
            raise
        failure = judgement.finish("eof")
        if failure is not None:
            raise failure

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self.judgement.closed()

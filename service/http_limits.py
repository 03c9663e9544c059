"""The connection-level bounds of the service and the tap, which uvicorn's httptools protocol
does not have:

- a request head (request line and headers) is at most MAX_HEAD_BYTES and MAX_HEADERS headers;
  past either the connection gets 431 and is closed while the head is still being read, so a
  client cannot make a worker hold megabytes of headers (uvicorn's h11 protocol has a bound of
  its own, h11_max_incomplete_event_size; httptools has none);
- a connection must have a whole request head HEAD_TIMEOUT_SECONDS after it was accepted, and
  again after each answer: a client that sends nothing, only part of a head, or only the CRLFs
  that may come between requests, is closed then (with 408 if it sent anything).  Bytes do not
  reset the deadline; uvicorn's keep-alive timeout, which any byte cancels, is no bound;
- a worker holds at most MAX_CONNECTIONS connections: one past it is answered 503 and closed at
  once, so idle sockets cannot use up the worker's file descriptors.

``serve`` runs uvicorn with ``http="fastsse_service.http_limits:BoundedHttpToolsProtocol"``,
which reads the service's settings; the tap runs ``bounded_protocol(...)`` with its own.
"""

from __future__ import annotations

import asyncio
import json

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from . import metrics
from .config import get_settings

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
TOO_LARGE = b"431 Request Header Fields Too Large"
TIMEOUT = b"408 Request Timeout"
UNAVAILABLE = b"503 Service Unavailable"


class _HeadTooLarge(Exception):
    pass


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    # Set on a subclass (bounded_protocol); None: the service's settings.
    head_timeout_seconds: float | None = None
    max_connections: int | None = None
    # What the answers name: the settings as their readers set them.
    head_timeout_setting = "HEAD_TIMEOUT_SECONDS"
    max_connections_setting = "MAX_CONNECTIONS"

    # While a head is awaited (the deadline runs) the bytes that arrive are counted too:
    # httptools keeps a header it has not finished in a buffer of its own, which on_header
    # never sees.
    _head_bytes = 0
    _head_arrived = 0
    _refusal: tuple[bytes, str, str] | None = None
    _head_timer: asyncio.TimerHandle | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.head_timeout_seconds is None or self.max_connections is None:
            settings = get_settings()
            self._head_timeout = settings.head_timeout_seconds
            self._max_connections = settings.max_connections
        else:
            self._head_timeout = self.head_timeout_seconds
            self._max_connections = self.max_connections

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self._max_connections:
            self._refuse(
                UNAVAILABLE,
                f"this worker holds {self._max_connections} connections ({self.max_connections_setting}); retry later",
                "too_many_connections",
            )
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_timer is not None and self._refusal is None and not self.transport.is_closing():
            self._head_arrived += len(data)
            if self._head_arrived > MAX_HEAD_BYTES:
                self._refuse(TOO_LARGE, f"the request head is larger than {MAX_HEAD_BYTES} bytes", "head_too_large")

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        """The deadline for the next whole request head starts now; the bytes that come
        meanwhile are counted, and never move it."""
        self._stop_head_timer()
        self._head_arrived = 0
        self._head_timer = self.loop.call_later(self._head_timeout, self._head_too_slow)

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._refusal is not None or self.transport.is_closing():
            return
        if self._head_arrived == 0:
            # Nothing at all since the connection was made or the last answer went out: an
            # idle connection, closed without a word (RFC 9112, section 9.5).
            metrics.CONNECTIONS_CLOSED.labels("idle").inc()
            self.transport.close()
            return
        self._refuse(
            TIMEOUT,
            f"the request head was not whole within {self.head_timeout_setting} ({self._head_timeout:g} s)",
            "head_timeout",
        )

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._refusal = None
        if self._head_timer is None:  # a request sent before the last answer was out
            self._await_head()

    def on_headers_complete(self) -> None:
        self._stop_head_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        idle = not self.pipeline  # else the next request, whole already, starts now
        super().on_response_complete()
        if idle and not self.transport.is_closing():
            self._await_head()

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refusal = (TOO_LARGE, f"the request head is larger than {MAX_HEAD_BYTES} bytes", "head_too_large")
            raise _HeadTooLarge  # httptools stops parsing and data_received sends the answer

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        if len(self.headers) >= MAX_HEADERS:
            self._refusal = (TOO_LARGE, f"the request has more than {MAX_HEADERS} headers", "head_too_large")
            raise _HeadTooLarge
        super().on_header(name, value)

    def _refuse(self, status: bytes, detail: str, reason: str) -> None:
        self._refusal = (status, detail, reason)
        self.send_400_response("")

    def send_400_response(self, msg: str) -> None:
        refusal = getattr(self, "_refusal", None)
        if refusal is None:
            super().send_400_response(msg)
            return
        self._stop_head_timer()
        status, detail, reason = refusal
        metrics.CONNECTIONS_CLOSED.labels(reason).inc()
        body = json.dumps({"detail": detail}).encode()
        retry = b"retry-after: 1\r\n" if status == UNAVAILABLE else b""
        self.transport.write(
            b"HTTP/1.1 %s\r\ncontent-type: application/json\r\n%s"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (status, retry, len(body), body)
        )
        self.transport.close()


def bounded_protocol(
    head_timeout_seconds: float, max_connections: int, *, settings_prefix: str = ""
) -> type[BoundedHttpToolsProtocol]:
    """The protocol with these bounds, for a server whose settings are not the service's
    (the tap: ``settings_prefix="TAP_"``)."""
    return type(
        "BoundedHttpToolsProtocol",
        (BoundedHttpToolsProtocol,),
        {
            "head_timeout_seconds": head_timeout_seconds,
            "max_connections": max_connections,
            "head_timeout_setting": f"{settings_prefix}HEAD_TIMEOUT_SECONDS",
            "max_connections_setting": f"{settings_prefix}MAX_CONNECTIONS",
        },
    )

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
- an answer the client takes none of for ANSWER_IDLE_TIMEOUT_SECONDS, while the bytes already
  written wait in the worker (past the transport's high-water mark), ends the connection
  (aborted: closing would wait for those bytes).  A client that pipelines requests and never
  reads the answers, or asks the tap for a stream and never reads it, holds its connection,
  its memory and the tap's upstream connection that long, not for good;
- a request with a Transfer-Encoding other than chunked gets 501 (RFC 9112, section 6.1):
  httptools would pass on the body still coded, to be judged as if it were the stream's bytes;
- a worker holds at most MAX_CONNECTIONS connections: one past it is answered 503 and closed at
  once, so idle sockets cannot use up the worker's file descriptors.

``serve`` runs uvicorn with ``http="fastsse_service.http_limits:BoundedHttpToolsProtocol"``,
which reads the service's settings; the tap runs ``bounded_protocol(settings, "TAP_")``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from . import metrics
from .config import get_settings

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
TOO_LARGE = b"431 Request Header Fields Too Large"
TIMEOUT = b"408 Request Timeout"
NOT_IMPLEMENTED = b"501 Not Implemented"
UNAVAILABLE = b"503 Service Unavailable"
_RESET_ON_CLOSE = struct.pack("ii", 1, 0)  # SO_LINGER on, for 0 s
HEAD_CLOCK_SLACK_SECONDS = 0.001  # how early the head deadline may be taken as come


class _Refused(Exception):
    """Raised in a parser callback: httptools stops parsing, and data_received sends the
    refusal the protocol noted."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    # Set on a subclass (bounded_protocol): the settings whose bounds it keeps (they have the
    # fields head_timeout_seconds, answer_idle_timeout_seconds and max_connections), and the
    # prefix of their names in answers and logs.  None: the service's settings.
    bounds: Any = None
    settings_prefix = ""

    # While a head is awaited (the deadline runs) the bytes that arrive are counted too:
    # httptools keeps a header it has not finished in a buffer of its own, which on_header
    # never sees.
    _head_bytes = 0
    _head_arrived = 0
    _refusal: tuple[bytes, str, str] | None = None
    # The deadline of the head awaited, or None while none is (a request is being served).
    # One timer a connection, never cancelled while the connection lasts: when it fires it
    # looks whether the head it was set for is still awaited, and otherwise sets itself for the
    # deadline of the head awaited now, if one is (setting and cancelling a timer for every
    # request cost a worker about 1.5 µs a request).
    _head_due: float | None = None
    _head_timer: asyncio.TimerHandle | None = None
    _answer_timer: asyncio.TimerHandle | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        bounds = self.bounds or get_settings()
        self._head_timeout = bounds.head_timeout_seconds
        self._answer_idle_timeout = bounds.answer_idle_timeout_seconds
        self._max_connections = bounds.max_connections

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self._max_connections:
            self._refuse(
                UNAVAILABLE,
                f"this worker holds {self._max_connections} connections "
                f"({self.settings_prefix}MAX_CONNECTIONS); retry later",
                "too_many_connections",
            )
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_due is not None and self._refusal is None and not self.transport.is_closing():
            self._head_arrived += len(data)
            if self._head_arrived > MAX_HEAD_BYTES:
                self._refuse(TOO_LARGE, f"the request head is larger than {MAX_HEAD_BYTES} bytes", "head_too_large")

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        if self._answer_timer is not None:
            self._answer_timer.cancel()
            self._answer_timer = None
        super().connection_lost(exc)

    # The transport calls these when the bytes written and not yet sent pass its high-water
    # mark, and when they are below its low-water mark again.
    def pause_writing(self) -> None:
        super().pause_writing()
        if self._answer_timer is None:
            self._answer_timer = self.loop.call_later(self._answer_idle_timeout, self._answer_not_taken)

    def resume_writing(self) -> None:
        if self._answer_timer is not None:
            self._answer_timer.cancel()
            self._answer_timer = None
        super().resume_writing()

    def _answer_not_taken(self) -> None:
        self._answer_timer = None
        if self.transport.is_closing():
            return
        metrics.CONNECTIONS_CLOSED.labels("answer_not_taken").inc()
        # Reset, not closed: a closed socket's unsent bytes would stay in the kernel, which
        # would go on offering them to the client for minutes.
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_ON_CLOSE)
        self.transport.abort()

    def _await_head(self) -> None:
        """The deadline for the next whole request head starts now; the bytes that come
        meanwhile are counted, and never move it."""
        self._head_arrived = 0
        self._head_due = due = self.loop.time() + self._head_timeout
        if self._head_timer is None:
            self._head_timer = self.loop.call_at(due, self._head_check)

    def _head_check(self) -> None:
        """The timer fired: the head awaited is too slow if its deadline has come; else the
        timer is set for the deadline of the head awaited now (none: it is not set again)."""
        self._head_timer = None
        due = self._head_due
        if due is None:
            return
        # uvloop's clock counts whole milliseconds: a timer may fire a moment before its time
        if self.loop.time() + HEAD_CLOCK_SLACK_SECONDS < due:
            self._head_timer = self.loop.call_at(due, self._head_check)
            return
        self._head_too_slow()

    def _head_too_slow(self) -> None:
        self._head_due = None
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
            f"the request head was not whole within {self.settings_prefix}HEAD_TIMEOUT_SECONDS "
            f"({self._head_timeout:g} s)",
            "head_timeout",
        )

    def _stop_head_timer(self) -> None:
        self._head_due = None
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._refusal = None
        if self._head_due is None:  # a request sent before the last answer was out
            self._await_head()

    def on_headers_complete(self) -> None:
        self._head_due = None  # (the timer stays: see _head_due)
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
            raise _Refused

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        if len(self.headers) >= MAX_HEADERS:
            self._refusal = (TOO_LARGE, f"the request has more than {MAX_HEADERS} headers", "head_too_large")
            raise _Refused
        super().on_header(name, value)
        if self.headers[-1][0] == b"transfer-encoding" and any(
            coding.strip().lower() != b"chunked" for coding in value.split(b",")
        ):
            self._refusal = (
                NOT_IMPLEMENTED,
                "a Transfer-Encoding other than chunked is not decoded: send the body chunked, "
                "compressed with a Content-Encoding if it must be",
                "transfer_coding",
            )
            raise _Refused

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


def bounded_protocol(bounds: Any, settings_prefix: str = "") -> type[BoundedHttpToolsProtocol]:
    """The protocol with the bounds of ``bounds``, settings that are not the service's (the
    tap's: ``settings_prefix="TAP_"``)."""
    return type(
        "BoundedHttpToolsProtocol",
        (BoundedHttpToolsProtocol,),
        {"bounds": bounds, "settings_prefix": settings_prefix},
    )

"""Bounds on a request's head, which uvicorn's httptools protocol does not have: the request
line and headers of one request are at most MAX_HEAD_BYTES, and at most MAX_HEADERS headers;
past either the connection gets 431 and is closed while the head is still being read, so a
client cannot make a worker hold megabytes of headers.  (uvicorn's h11 protocol has a bound of
its own, h11_max_incomplete_event_size; with httptools there is none.)  A head not whole
HEAD_TIMEOUT_SECONDS after its first byte gets 408 and the connection is closed (uvicorn's
keep-alive timeout covers only the silence between requests).

``serve`` runs uvicorn with ``http="service.http_limits:BoundedHttpToolsProtocol"``.
"""

from __future__ import annotations

import asyncio
import json

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .config import get_settings

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
TOO_LARGE = b"431 Request Header Fields Too Large"
TIMEOUT = b"408 Request Timeout"


class _HeadTooLarge(Exception):
    pass


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    # Between a message's first byte and the end of its headers.  httptools keeps a header it
    # has not finished in a buffer of its own, which on_header never sees: so the bytes that
    # arrive while the head is incomplete are counted as they come, too.
    _in_head = True
    _head_bytes = 0
    _head_arrived = 0
    _refusal: tuple[bytes, str] | None = None
    _head_timer: asyncio.TimerHandle | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._head_timeout = get_settings().head_timeout_seconds

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_head and self._refusal is None and not self.transport.is_closing():
            self._head_arrived += len(data)
            if self._head_arrived > MAX_HEAD_BYTES:
                self._refuse(TOO_LARGE, f"the request head is larger than {MAX_HEAD_BYTES} bytes")
            elif self._head_timer is None:  # the first bytes of a head that is not whole yet
                self._head_timer = self.loop.call_later(self._head_timeout, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._in_head and self._refusal is None and not self.transport.is_closing():
            self._refuse(
                TIMEOUT, f"the request head was not whole within HEAD_TIMEOUT_SECONDS ({self._head_timeout:g} s)"
            )

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0
        self._refusal = None

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_arrived = 0
        self._stop_head_timer()
        super().on_headers_complete()

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refusal = (TOO_LARGE, f"the request head is larger than {MAX_HEAD_BYTES} bytes")
            raise _HeadTooLarge  # httptools stops parsing and data_received sends the answer

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        if len(self.headers) >= MAX_HEADERS:
            self._refusal = (TOO_LARGE, f"the request has more than {MAX_HEADERS} headers")
            raise _HeadTooLarge
        super().on_header(name, value)

    def _refuse(self, status: bytes, detail: str) -> None:
        self._refusal = (status, detail)
        self.send_400_response("")

    def send_400_response(self, msg: str) -> None:
        refusal = getattr(self, "_refusal", None)
        if refusal is None:
            super().send_400_response(msg)
            return
        self._stop_head_timer()
        status, detail = refusal
        body = json.dumps({"detail": detail}).encode()
        self.transport.write(
            b"HTTP/1.1 %s\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (status, len(body), body)
        )
        self.transport.close()

"""The tap: a reverse proxy between a client and its LLM API that hands each stream's bytes to
the verdict service once the stream is over.

It forwards a request unchanged (but for the hop-by-hop headers and Host) and streams the
answer back unchanged, each piece written to the client as it arrives from the upstream (a slow
client slows the upstream read, not the other way round: no buffer grows).  How the upstream
connection ended is passed on too: a clean end ends the client's answer cleanly; a reset, a
cut body or an idle timeout ends the client's connection mid-body, so the client sees its
stream break as it did.  When the answer is over, the capture and the transport outcome go to
the spool (``spool.py``), off the client's path.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
import zlib
from datetime import datetime, timezone

import httpx

import fastsse

from ..config import TapSettings
from ..uploads import UploadTooLarge, UploadTooSlow, read_body
from .identify import RequestTracker, credential, generation, tool_from_user_agent
from .spool import Poster, Spool

log = logging.getLogger(__name__)

# RFC 9110 §7.6.1: these describe one connection, never forwarded.  Host is the upstream's.
HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"te", b"trailer", b"upgrade", b"host"}
)
_DECODABLE = {"gzip", "x-gzip", "deflate"}


class UpstreamBroke(Exception):
    """The upstream's answer ended abnormally: the client's connection is ended mid-body."""


class ClientGone(Exception):
    """The client hung up before its request was whole."""


class Capture:
    """The bytes of one answer as the service must judge them: decoded if the upstream
    compressed them (gzip, deflate), bounded by ``limit`` (past it nothing is judged)."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        encoding = content_encoding.strip().lower()
        self.usable = encoding in ("", "identity") or encoding in _DECODABLE
        self.reason = None if self.usable else f"content-encoding {encoding!r} is not decoded"
        self._decoder = zlib.decompressobj(47) if encoding in _DECODABLE else None
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def add(self, raw: bytes) -> None:
        if not self.usable:
            return
        try:
            # (at most one byte past the limit decoded, however far the chunk would expand)
            data = self._decoder.decompress(raw, self._limit - self._size + 1) if self._decoder else raw
        except zlib.error:
            self.usable, self.reason = False, "the compressed body does not decode"
            self._parts = []
            return
        self._size += len(data)
        if self._size > self._limit:
            self.usable, self.reason = False, f"larger than the capture limit ({self._limit})"
            self._parts = []
            return
        self._parts.append(data)

    @property
    def body(self) -> bytes:
        return b"".join(self._parts)


class Tap:
    """The ASGI application of ``fastsse-service tap``."""

    def __init__(
        self,
        settings: TapSettings,
        *,
        upstream_transport: httpx.AsyncBaseTransport | None = None,
        ingest_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.upstream = httpx.URL(settings.upstream)
        self.spool = Spool(settings.spool_dir, settings.spool_max_bytes)
        self.poster = Poster(
            self.spool,
            settings.ingest,
            settings.ingest_token,
            concurrency=settings.post_concurrency,
            transport=ingest_transport,
        )
        self.tracker = RequestTracker(settings.retry_window_seconds)
        self._upstream_transport = upstream_transport
        self._client: httpx.AsyncClient | None = None
        self._spooling: set[asyncio.Task] = set()
        # Captures reach the spool, and so the poster, in the order their streams ended: a
        # retry is posted after the attempt before it. asyncio.Lock serves waiters first come,
        # first served, and the tasks are created in that order.
        self._spool_order = asyncio.Lock()
        self.hung_up = 0
        # The request bodies held now, all requests together (TAP_MAX_BUFFERED_REQUEST_BYTES) and
        # by client address (TAP_MAX_BUFFERED_REQUEST_BYTES_PER_CLIENT).
        self.buffered = 0
        self.buffered_by_client: dict[str, int] = {}

    # -- lifespan -------------------------------------------------------------------------
    async def startup(self) -> None:
        limits = httpx.Limits(max_connections=self.settings.max_upstream_connections, max_keepalive_connections=100)
        timeout = httpx.Timeout(
            connect=self.settings.connect_timeout_seconds,
            read=self.settings.idle_timeout_seconds,
            write=60.0,
            pool=self.settings.connect_timeout_seconds,
        )
        self._client = httpx.AsyncClient(
            limits=limits, timeout=timeout, follow_redirects=False, transport=self._upstream_transport, trust_env=False
        )
        for name in ("accept", "accept-encoding", "user-agent"):  # httpx's own: only the
            del self._client.headers[name]  # client's are forwarded
        await self.poster.start()
        waiting = self.poster.waiting()
        log.info(
            "tap forwarding to %s, verdicts to %s%s",
            _for_log(self.upstream),
            self.settings.ingest,
            f" ({waiting} spooled streams to post)" if waiting else "",
        )

    async def shutdown(self) -> None:
        if self._spooling:
            await asyncio.gather(*self._spooling, return_exceptions=True)
        await self.poster.stop(self.settings.shutdown_grace_seconds)
        left = self.poster.waiting()
        if left:
            log.warning("%d streams stay spooled in %s for the next start", left, self.spool.pending_dir)
        if self._client is not None:
            await self._client.aclose()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            await self.proxy(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:  # noqa: BLE001 - reported to the server, which exits
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- one request ----------------------------------------------------------------------
    async def proxy(self, scope, receive, send) -> None:
        if _climbs(scope["path"]):
            await _plain(send, 400, "a path with . or .. segments is refused: it could leave the upstream's base path")
            return
        held = _Held(self, scope["client"][0] if scope.get("client") else "")
        try:
            try:
                body = await self._read_body(scope, receive, held)
            except ClientGone:
                return  # hung up before its request was whole: nothing to forward
            except _Refusal as refusal:
                await _plain(send, refusal.status, refusal.detail, close=True)
                return
            await self._forward(scope, receive, send, body)
        finally:
            held.release()  # the body is no longer needed once the answer is over

    async def _forward(self, scope, receive, send, body: bytes) -> None:
        # Headers travel as the bytes they are (names lowercased by the server): a value
        # outside ASCII passes through unchanged, never re-encoded.
        raw_headers = scope["headers"]
        named = {k.decode("latin-1"): v.decode("latin-1") for k, v in raw_headers}
        path, query = scope["path"], scope.get("query_string") or b""
        asked = generation(scope["method"], path, body, query)
        assert self._client is not None, "startup() first"
        request = self._client.build_request(
            scope["method"], self._upstream_url(scope), headers=_forwarded(raw_headers, request=True), content=body
        )
        response = await self._send_unless_hung_up(request, receive, send)
        if response is None:
            return
        try:
            await self._answer(scope, receive, send, body, named, asked, response)
        finally:
            await response.aclose()  # the connection goes back to the pool, whatever happened

    async def _send_unless_hung_up(self, request, receive, send) -> httpx.Response | None:
        """The upstream's response (its head); None when it could not be had or the client
        hung up first (a non-streamed answer's head comes when it is all generated: the
        upstream request is cancelled rather than left to finish for nobody)."""
        assert self._client is not None
        sending = asyncio.ensure_future(self._client.send(request, stream=True))
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait((sending, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not sending.done():
                sending.cancel()
        if not sending.done() or sending.cancelled():
            await asyncio.gather(sending, return_exceptions=True)
            return None
        try:
            return sending.result()
        except httpx.PoolTimeout:
            log.warning("all %d upstream connections busy", self.settings.max_upstream_connections)
            await _plain(
                send, 503, "the tap's upstream connections are all busy (TAP_MAX_UPSTREAM_CONNECTIONS); retry later"
            )
        except httpx.HTTPError as exc:
            log.warning("upstream %s unreachable: %s", _for_log(self.upstream), type(exc).__name__)
            await _plain(send, 502, f"the tap could not reach its upstream ({type(exc).__name__})")
        return None

    async def _answer(self, scope, receive, send, body: bytes, named: dict, asked, response: httpx.Response) -> None:
        path, query = scope["path"], scope.get("query_string") or b""
        # judged as the path's protocol when the answer is framed as it frames (an SSE answer on
        # an app's own /api/chat is "auto", not Ollama's NDJSON)
        framed = (
            None if asked is None else fastsse.stream_protocol(response.headers.get("content-type", ""), asked.protocol)
        )
        if asked is None or not (asked.streamed or framed):
            outcome = await self._relay(response, receive, send)
            if outcome not in ("eof", None):
                raise UpstreamBroke(outcome)
            return
        attempt = self.tracker.attempt(scope["method"], path, body, credential(named, query))
        capture = Capture(response.headers.get("content-encoding", ""), self.settings.max_capture_bytes)
        protocol = framed or asked.protocol
        outcome = await self._relay(response, receive, send, capture, protocol)
        if outcome is None:
            self.hung_up += 1
            log.info("client hung up before the answer's end: not judged (%d so far)", self.hung_up)
            return
        params = {
            "stream_id": uuid.uuid4().hex,
            "protocol": protocol,
            "transport": outcome,
            "upstream_status": str(response.status_code),
            "request_id": attempt.request_id,
            "attempt": str(attempt.attempt),
            "ended_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        }
        tool = self.settings.tool or tool_from_user_agent(named.get("user-agent"))
        if tool:
            params["tool"] = tool
        if asked.model:
            params["model_requested"] = asked.model
        if not capture.usable:
            log.warning("stream %s not judged: %s", params["stream_id"], capture.reason)
        else:
            task = asyncio.create_task(self._spool(params, capture.body))
            self._spooling.add(task)
            task.add_done_callback(self._spooling.discard)
        if outcome != "eof":
            raise UpstreamBroke(outcome)  # uvicorn closes the client's connection mid-body

    async def _read_body(self, scope, receive, held: _Held) -> bytes:
        """The request's body, read whole within the tap's bounds: its own size, the bytes
        all requests hold together and those of its client's address, the upload timeouts
        (else ``_Refusal``)."""
        settings = self.settings
        too_large = f"the request body is larger than the tap's TAP_MAX_REQUEST_BYTES ({settings.max_request_bytes})"
        declared = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"content-length"), None)

        async def chunks():
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone
                chunk = message.get("body", b"")
                # What has arrived is held, not what a Content-Length promises: connections that
                # declare 64 MiB and send nothing reserve nothing.
                refused = held.take(len(chunk))
                if refused is not None:
                    raise _Refusal(503, refused)
                yield chunk
                if not message.get("more_body"):
                    return

        try:
            return await read_body(
                chunks(),
                limit=settings.max_request_bytes,
                idle=settings.upload_idle_timeout_seconds,
                total=settings.upload_timeout_seconds,
                declared_length=declared,
                idle_setting="TAP_UPLOAD_IDLE_TIMEOUT_SECONDS",
                total_setting="TAP_UPLOAD_TIMEOUT_SECONDS",
            )
        except UploadTooLarge:
            raise _Refusal(413, too_large) from None
        except UploadTooSlow as slow:
            raise _Refusal(408, f"the request body was too slow: {slow}") from None

    def _upstream_url(self, scope) -> httpx.URL:
        """The client's path under the upstream's base path, the upstream's own query (an
        api-version, say) before the client's."""
        raw_path = scope.get("raw_path") or scope["path"].encode()
        base, _, own_query = self.upstream.raw_path.partition(b"?")
        query = b"&".join(q for q in (own_query, scope.get("query_string") or b"") if q)
        target = base.rstrip(b"/") + raw_path + (b"?" + query if query else b"")
        return self.upstream.copy_with(raw_path=target)

    async def _relay(
        self, response: httpx.Response, receive, send, capture: Capture | None = None, protocol: str = "auto"
    ) -> str | None:
        """Stream the upstream's answer to the client as it comes.  How the upstream ended it
        (a transport of fastsse.TRANSPORTS), or None when the client hung up first (unless
        what it had been sent was already a complete stream: then "eof")."""
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": _forwarded(response.headers.raw)}
        )
        # A client that hangs up is noticed at once (not at the upstream's next byte, which
        # may be minutes away): the watcher cancels this task, which then tells it from any
        # other cancellation by `hung_up`.  One watcher per answer, nothing per chunk.
        relay, relaying, hung_up = asyncio.current_task(), True, False
        assert relay is not None

        async def watch() -> None:
            nonlocal hung_up
            await _disconnected(receive)
            if relaying:
                hung_up = True
                relay.cancel()

        watcher = asyncio.ensure_future(watch())
        outcome: str | None = "eof"
        try:
            async for chunk in response.aiter_raw():
                if capture is not None:
                    capture.add(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            relaying = False
        except asyncio.CancelledError:
            if not hung_up:
                raise
            relaying = False
            if hasattr(relay, "uncancel"):  # Python 3.11+: the cancellation is handled
                relay.uncancel()
            outcome = None
        except httpx.TimeoutException:
            outcome = "timeout"
        except httpx.RemoteProtocolError:
            outcome = "error"  # the body ended before its length or its last chunk
        except httpx.TransportError:
            outcome = "reset"
        finally:
            relaying = False
            watcher.cancel()
            await response.aclose()
        if outcome is None:
            return _hung_up_outcome(capture, protocol)
        if outcome == "eof":
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        return outcome

    async def _spool(self, params: dict, body: bytes) -> None:
        async with self._spool_order:
            try:
                spooled = await asyncio.to_thread(self.spool.put, params, body)
            except OSError as exc:
                log.error("stream %s not spooled: %s", params["stream_id"], exc)
                return
            if spooled is None:
                log.warning(
                    "spool full (SPOOL_MAX_BYTES %d): stream %s dropped, %d so far",
                    self.spool.max_bytes,
                    params["stream_id"],
                    self.spool.dropped,
                )
                return
            self.poster.submit(spooled)


class _Refusal(Exception):
    """A request the tap answers itself, without forwarding it."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


class _Held:
    """The bytes of one request's body counted, while the tap holds them, against
    TAP_MAX_BUFFERED_REQUEST_BYTES (all requests) and TAP_MAX_BUFFERED_REQUEST_BYTES_PER_CLIENT
    (the requests of its client's address)."""

    def __init__(self, tap: Tap, client: str) -> None:
        self._tap, self._client, self._bytes = tap, client, 0

    def take(self, size: int) -> str | None:
        """None once the bytes are counted; else why they may not be held (nothing counted)."""
        tap, settings = self._tap, self._tap.settings
        if tap.buffered + size > settings.max_buffered_request_bytes:
            return (
                "the tap holds as many request bytes as it may "
                f"(TAP_MAX_BUFFERED_REQUEST_BYTES, {settings.max_buffered_request_bytes}); retry later"
            )
        client_holds = tap.buffered_by_client.get(self._client, 0)
        if client_holds + size > settings.max_buffered_request_bytes_per_client:
            return (
                "the tap holds as many request bytes of this client address as it may "
                f"(TAP_MAX_BUFFERED_REQUEST_BYTES_PER_CLIENT, {settings.max_buffered_request_bytes_per_client}); "
                "retry later"
            )
        tap.buffered += size
        tap.buffered_by_client[self._client] = client_holds + size
        self._bytes += size
        return None

    def release(self) -> None:
        if not self._bytes:
            return
        tap = self._tap
        tap.buffered -= self._bytes
        left = tap.buffered_by_client[self._client] - self._bytes
        if left:
            tap.buffered_by_client[self._client] = left
        else:
            del tap.buffered_by_client[self._client]
        self._bytes = 0


async def _plain(send, status: int, detail: str, *, close: bool = False) -> None:
    """An answer of the tap's own (never the upstream's): JSON, as the service's errors; with
    ``close``, the connection is closed after it (the body may not have been read)."""
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _forwarded(headers: list[tuple[bytes, bytes]], *, request: bool = False) -> list[tuple[bytes, bytes]]:
    """Headers as the next hop gets them, as bytes: all but the hop-by-hop ones (and those the
    Connection header names).  A request's length is left to httpx, which sends the body it
    was given; an answer's is kept (its body is relayed byte for byte, so it still holds, and
    a body cut short of it shows the client the cut)."""
    named = {
        token.strip().lower() for name, value in headers if name.lower() == b"connection" for token in value.split(b",")
    }
    return [
        (name, value)
        for name, value in headers
        if (low := name.lower()) not in HOP_BY_HOP and low not in named and not (request and low == b"content-length")
    ]


def _climbs(path: str) -> bool:
    """Whether a (percent-decoded) path has a . or .. segment, which the upstream would
    resolve, maybe out of the base path the tap forwards under."""
    return any(segment in (".", "..") for segment in path.replace("\\", "/").split("/"))


def _for_log(url: httpx.URL) -> str:
    """The URL as logs may show it: scheme, host and path, without the credentials it may hold
    in its user part (https://user:secret@host) or its query (?api-key=..., Gemini's ?key=...)."""
    return str(url.copy_with(password=None, username=None, query=None))


async def _disconnected(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _hung_up_outcome(capture: Capture | None, protocol: str) -> str | None:
    """A client that hangs up mid-answer cut it itself (Ctrl-C, a closed tab): that is no
    failure of the provider's, and how the upstream would have ended is unknown, so it is not
    judged.  One that hangs up after a complete stream (before the upstream closed) is."""
    if capture is None or not capture.usable:
        return None
    return "eof" if fastsse.scan(capture.body, protocol, "eof").complete else None


class QuietBreaks(logging.Filter):
    """uvicorn logs an exception escaping the app as an error with its traceback; an
    UpstreamBroke is the tap doing its job (the upstream's break passed on), not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], UpstreamBroke))


def run(settings: TapSettings, host: str, port: int, log_config: dict | None = None, http: str = "auto") -> None:
    """Serve the tap with uvicorn until SIGINT or SIGTERM (then: let the open answers finish
    for a while, post what the grace period allows, keep the rest spooled)."""
    import uvicorn

    config = uvicorn.Config(
        Tap(settings),
        host=host,
        port=port,
        lifespan="on",
        log_level=settings.log_level,
        log_config=log_config,
        http=http,
        access_log=False,
        proxy_headers=False,  # the tap is the front: no client names its own address
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds) + 30,
    )
    logging.getLogger("uvicorn.error").addFilter(QuietBreaks())  # after uvicorn's dictConfig
    # httpx logs every request's whole URL at INFO (the upstream's password and key, a client's
    # ?key=), and httpcore its steps at DEBUG: neither is ever written, at any TAP_LOG_LEVEL.
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    uvicorn.Server(config).run()

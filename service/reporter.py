"""The guard's reporter: every answer ``fastsse.guard`` judged in an application goes to the
verdict service, as the tap sends what it relays, without a network hop in front of the client.

    from fastsse_service.reporter import Reporter

    reporter = Reporter("http://verdicts:8000", token="...", spool_dir="/var/lib/myapp/fastsse-spool")
    transport = fastsse.guard.Transport(httpx2.HTTPTransport(), reporter=reporter)

``report`` only hands the answer to a thread of the reporter's own and returns: that thread
writes it to the tap's bounded spool and the tap's poster posts it with the parameters the tap
sends (the tool from the User-Agent, the model asked for, request id and attempt).  A slow or
dead service, a full spool or a full hand-over queue never blocks, slows or fails the
application: what cannot be kept is dropped and counted (``dropped``).  What waits in the spool
when the process ends is posted by the next reporter started on the same directory.

It needs httpx or httpx2 (the application's SDK brings one), nothing else of the service.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .tap.identify import RequestTracker, credential, generation, tool_from_user_agent
from .tap.spool import Poster, Spool

log = logging.getLogger(__name__)

# The tap's bounds, for the same reasons (config.py's TapSettings).
DEFAULT_CAPTURE_LIMIT = 64 * 1024 * 1024
DEFAULT_SPOOL_MAX_BYTES = 1024**3
# Answers handed over and not yet spooled, all together: past it they are dropped (the spool
# writer is behind, which only a stuck disk makes it).
DEFAULT_MAX_WAITING_BYTES = 64 * 1024 * 1024


class Reporter:
    """Sends what ``fastsse.guard`` judged to the service at ``ingest`` (its base URL).

    ``spool_dir`` is this process's own (two processes never share one); ``tool`` names the
    application in the verdicts (else the User-Agent does, as in the tap).  ``close`` posts
    what it can within ``grace_seconds``; it runs at exit too.
    """

    def __init__(
        self,
        ingest: str,
        token: str = "",
        *,
        spool_dir: str | Path,
        tool: str | None = None,
        capture_limit: int = DEFAULT_CAPTURE_LIMIT,
        spool_max_bytes: int = DEFAULT_SPOOL_MAX_BYTES,
        max_waiting_bytes: int = DEFAULT_MAX_WAITING_BYTES,
        post_concurrency: int = 2,
        grace_seconds: float = 5.0,
        transport: Any = None,
    ) -> None:
        self.capture_limit = capture_limit
        self.tool = tool
        self.spool = Spool(Path(spool_dir), spool_max_bytes)
        self.poster = Poster(self.spool, ingest, token, concurrency=post_concurrency, transport=transport)
        self.grace_seconds = grace_seconds
        self.max_waiting_bytes = max_waiting_bytes
        self.dropped = 0  # answers not kept: the hand-over queue or the spool was full
        self._tracker = RequestTracker()
        self._lock = threading.Lock()
        self._waiting_bytes = 0
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._queue: asyncio.Queue = asyncio.Queue()
        self._handed = 0  # handed over, not yet given to the poster
        self._pid = os.getpid()  # a forked child has no reporter thread: it drops, counted
        self._failed: BaseException | None = None
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(started,), name="fastsse-reporter", daemon=True)
        self._thread.start()
        started.wait()
        if self._failed is not None:
            self._thread.join(5)
            raise RuntimeError(f"the reporter could not start: {self._failed}") from self._failed
        atexit.register(self.close)

    # -- the application's side -----------------------------------------------------------
    def report(self, finished: Any) -> None:
        """Hand one judged answer over (``fastsse.guard.Finished``); returns at once."""
        size = len(finished.body) + len(finished.request_body or b"")
        with self._lock:
            gone = self._closed or os.getpid() != self._pid
            if gone or self._waiting_bytes + size > self.max_waiting_bytes:
                self.dropped += 1
                return
            self._waiting_bytes += size
            self._handed += 1
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (finished, size))
        except RuntimeError:  # the loop is gone (the interpreter is exiting)
            with self._lock:
                self.dropped += 1
                self._waiting_bytes -= size
                self._handed -= 1

    def waiting(self) -> int:
        """Answers handed over and not yet posted (or set aside, or dropped)."""
        with self._lock:
            return self._handed + self.poster.waiting()

    def close(self, grace_seconds: float | None = None) -> None:
        """Post what can be posted within the grace period, then stop; the rest stays spooled.
        Answers the application let go of unclosed are judged first (fastsse.guard.judge_abandoned)."""
        try:
            from fastsse.guard import judge_abandoned

            judge_abandoned()
        except Exception:  # noqa: BLE001 - closing never fails the application
            log.debug("judging abandoned answers failed", exc_info=True)
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if os.getpid() != self._pid:  # a forked child: the thread is the parent's
            return
        grace = self.grace_seconds if grace_seconds is None else grace_seconds
        future = asyncio.run_coroutine_threadsafe(self._stop(grace), self._loop)
        try:
            future.result(grace + 5)
        except Exception as exc:  # noqa: BLE001 - closing never fails the application
            log.warning("the reporter did not stop cleanly: %s", exc)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        atexit.unregister(self.close)

    # -- the reporter's thread ------------------------------------------------------------
    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.poster.start())
            self._spooling = self._loop.create_task(self._spool_each())
        except BaseException as exc:  # noqa: BLE001 - told to the constructor, which raises it
            self._failed = exc
            started.set()
            self._loop.close()
            return
        started.set()
        self._loop.run_forever()
        self._loop.close()

    async def _spool_each(self) -> None:
        """Spool the answers in the order they were handed over (a retry after the attempt it
        repeats), and give each to the poster."""
        while True:
            finished, size = await self._queue.get()
            try:
                params = self._params(finished)
                spooled = await asyncio.to_thread(self.spool.put, params, finished.body)
            except Exception as exc:  # noqa: BLE001 - one answer lost, never the thread
                log.error("a judged answer was not spooled: %s", exc)
                spooled = None
                with self._lock:
                    self.dropped += 1
            else:
                if spooled is None:
                    log.warning("spool full (%d bytes): an answer was dropped", self.spool.max_bytes)
                    with self._lock:
                        self.dropped += 1
                else:
                    self.poster.submit(spooled)
            finally:
                with self._lock:
                    self._waiting_bytes -= size
                    self._handed -= 1
                self._queue.task_done()

    def _params(self, finished: Any) -> dict[str, str]:
        """The ingest parameters of one answer, as the tap sends them."""
        body = finished.request_body or b""
        asked = generation(finished.method, finished.path, body, finished.query)
        attempt = self._tracker.attempt(
            finished.method, finished.path, body, credential(finished.headers, finished.query)
        )
        params = {
            "stream_id": uuid.uuid4().hex,
            "protocol": finished.protocol,
            "transport": finished.transport,
            "upstream_status": str(finished.status),
            "request_id": attempt.request_id,
            "attempt": str(attempt.attempt),
            "ended_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        }
        tool = self.tool or tool_from_user_agent(finished.headers.get("user-agent"))
        if tool:
            params["tool"] = tool
        if asked is not None and asked.model:
            params["model_requested"] = asked.model
        return params

    async def _stop(self, grace: float) -> None:
        """Spool what was handed over and post it, both within ``grace`` seconds in all."""
        deadline = self._loop.time() + grace
        try:
            await asyncio.wait_for(self._queue.join(), grace)
        except asyncio.TimeoutError:
            pass
        self._spooling.cancel()
        await self.poster.stop(max(0.0, deadline - self._loop.time()))

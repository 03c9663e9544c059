"""Reading a request body within bounds: a size, checked against the declared Content-Length
before a byte is read and again as the bytes come; and two timeouts, no byte for a while and
the whole body not in after a total (``UploadClock``).  A client that sends too much, dribbles
its bytes or stops sending holds no memory and no connection for long.

Ingest judges its bytes as they come with the clock and its own size bound; the other bodies
the service and the tap read (a sign-in form, a request the tap forwards) are read whole with
``read_body``.  Outcomes are exceptions, never HTTP answers: the caller answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable

CLOCK_SLACK_SECONDS = 0.001  # how early an upload timeout may fire (see UploadClock._check)


class UploadTooLarge(Exception):
    """The body is (or says it is) larger than the limit; the rest of it is never read."""


class UploadTooSlow(Exception):
    """The upload passed one of its timeouts; the message says which."""


class UploadBrokeOff(Exception):
    """What the body's chunks raise when the client goes away before the body is whole."""


class UploadClock:
    """The upload timeouts of one post: no byte for ``idle`` seconds, or the whole body not in
    after ``total`` seconds, and the task reading it is cancelled (a client that dribbles its
    bytes must not hold a connection and a slot forever).  One timer per post: a chunk only
    notes the time, and the timer, when it fires, looks whether the upload was quiet for
    ``idle`` seconds or took too long, and otherwise sets itself again for the earlier one."""

    def __init__(
        self,
        idle: float,
        total: float,
        *,
        idle_setting: str = "UPLOAD_IDLE_TIMEOUT_SECONDS",
        total_setting: str = "UPLOAD_TIMEOUT_SECONDS",
    ) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None  # made in the task that reads the upload
        self._task = task
        self._cancelling = getattr(self._task, "cancelling", lambda: 0)
        self._idle = idle
        self._total = total
        self._names = (idle_setting, total_setting)
        self._reason: str | None = None
        self._last = started = self._loop.time()
        self._deadline = started + total
        self._timer = self._loop.call_at(min(started + idle, self._deadline), self._check)

    def _check(self) -> None:
        due = min(self._last + self._idle, self._deadline)
        # uvloop's clock counts whole milliseconds: a timer may fire a moment before the time
        # it was set for, which must not make it set itself again and again until then.
        if self._loop.time() + CLOCK_SLACK_SECONDS < due:
            self._timer = self._loop.call_at(due, self._check)  # a chunk came meanwhile
        elif due == self._deadline:
            self._expire(f"not whole after {self._total:g} s ({self._names[1]})")
        else:
            self._expire(f"no byte for {self._idle:g} s ({self._names[0]})")

    def _expire(self, reason: str) -> None:
        self._reason = reason
        self._task.cancel()

    def tick(self) -> None:
        self._last = self._loop.time()

    def expired(self) -> str | None:
        """Why the upload timed out (its cancellation is then handled), or None, also when
        the task was cancelled from outside as well (a shutdown): that one goes on."""
        if self._reason is None or self._cancelling() > 1:
            return None
        if hasattr(self._task, "uncancel"):
            self._task.uncancel()  # Python 3.11+
        return self._reason

    def stop(self) -> None:
        self._timer.cancel()


async def read_body(
    chunks: AsyncIterable[bytes],
    *,
    limit: int,
    idle: float,
    total: float,
    declared_length: str | None = None,
    idle_setting: str = "UPLOAD_IDLE_TIMEOUT_SECONDS",
    total_setting: str = "UPLOAD_TIMEOUT_SECONDS",
) -> bytes:
    """The whole body, at most ``limit`` bytes, each byte no later than ``idle`` seconds
    after the last and all of them within ``total`` (the settings named so).  Raises
    ``UploadTooLarge``, ``UploadTooSlow``, or what ``chunks`` raises when the client goes away."""
    if declared_length is not None and declared_length.isdigit() and int(declared_length) > limit:
        raise UploadTooLarge
    clock = UploadClock(idle, total, idle_setting=idle_setting, total_setting=total_setting)
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in chunks:
            clock.tick()
            size += len(chunk)
            if size > limit:
                raise UploadTooLarge
            parts.append(chunk)
    except asyncio.CancelledError:
        expired = clock.expired()
        if expired is None:
            raise
        raise UploadTooSlow(expired) from None
    finally:
        clock.stop()
    return b"".join(parts)

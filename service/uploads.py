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
import weakref
from collections.abc import AsyncIterable


class UploadTooLarge(Exception):
    """The body is (or says it is) larger than the limit; the rest of it is never read."""


class UploadTooSlow(Exception):
    """The upload passed one of its timeouts; the message says which."""


class UploadBrokeOff(Exception):
    """What the body's chunks raise when the client goes away before the body is whole."""


class UploadClock:
    """The upload timeouts of one post: no byte for ``idle`` seconds, or the whole body not in
    after ``total`` seconds, and the task reading it is cancelled (a client that dribbles its
    bytes must not hold a connection and a slot forever).  A chunk only notes the time.  The
    clocks of one event loop are looked at together, every SWEEP_SECONDS while there are any,
    by one timer (``_Sweep``; a timer of each post's own, set and cancelled, cost a worker
    about 2.5 µs a post): a timeout is noticed up to SWEEP_SECONDS late, never early."""

    __slots__ = ("_task", "_idle", "_total", "_names", "_reason", "_last", "_deadline", "_sweep")

    def __init__(
        self,
        idle: float,
        total: float,
        *,
        idle_setting: str = "UPLOAD_IDLE_TIMEOUT_SECONDS",
        total_setting: str = "UPLOAD_TIMEOUT_SECONDS",
    ) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None  # made in the task that reads the upload
        self._task = task
        self._idle = idle
        self._total = total
        self._names = (idle_setting, total_setting)
        self._reason: str | None = None
        self._last = started = loop.time()
        self._deadline = started + total
        self._sweep = _sweep_of(loop)
        self._sweep.add(self)

    def _check(self, now: float) -> None:
        due = min(self._last + self._idle, self._deadline)
        if now < due:
            return
        if due == self._deadline:
            self._expire(f"not whole after {self._total:g} s ({self._names[1]})")
        else:
            self._expire(f"no byte for {self._idle:g} s ({self._names[0]})")

    def _expire(self, reason: str) -> None:
        self._reason = reason
        self.stop()
        self._task.cancel()

    def tick(self) -> None:
        self._last = self._sweep.loop.time()

    def expired(self) -> str | None:
        """Why the upload timed out (its cancellation is then handled), or None, also when
        the task was cancelled from outside as well (a shutdown): that one goes on."""
        if self._reason is None or getattr(self._task, "cancelling", lambda: 0)() > 1:
            return None
        if hasattr(self._task, "uncancel"):
            self._task.uncancel()  # Python 3.11+
        return self._reason

    def stop(self) -> None:
        self._sweep.clocks.discard(self)


SWEEP_SECONDS = 0.1


class _Sweep:
    """The upload clocks of one event loop, and the one timer that looks at each of them every
    SWEEP_SECONDS while there are any."""

    __slots__ = ("loop", "clocks", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.clocks: set[UploadClock] = set()
        self._timer: asyncio.TimerHandle | None = None

    def add(self, clock: UploadClock) -> None:
        self.clocks.add(clock)
        if self._timer is None:
            self._timer = self.loop.call_later(SWEEP_SECONDS, self._look)

    def _look(self) -> None:
        now = self.loop.time()
        for clock in list(self.clocks):  # (a clock that expires leaves the set)
            clock._check(now)
        self._timer = self.loop.call_later(SWEEP_SECONDS, self._look) if self.clocks else None


# One sweep per event loop: a worker runs one, the tests many (some at once, in threads).
_sweeps: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Sweep] = weakref.WeakKeyDictionary()


def _sweep_of(loop: asyncio.AbstractEventLoop) -> _Sweep:
    sweep = _sweeps.get(loop)
    if sweep is None:
        sweep = _sweeps[loop] = _Sweep(loop)
    return sweep


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

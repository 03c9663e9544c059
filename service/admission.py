"""Admission: which posts a worker takes on, decided from their head, before a byte of the body
is read (a post is known to be a gateway's by then: a signature covers the head).

- At most MAX_INFLIGHT_POSTS posts in progress (503 past it: overload gets quick refusals, not
  growing latency).
- One gateway at most its share of them, MAX_INFLIGHT_POSTS_PER_GATEWAY (half when several
  gateways are configured, all when one is): one credential cannot starve the others.
- An application's reporter (a REPORT_TOKENS credential) at most REPORT_MAX_INFLIGHT_POSTS,
  and REPORT_STREAMS_PER_MINUTE streams a minute (429 past it): it leaks more easily than a
  gateway's credential, so what it posts is bounded.
- One post of a signed webhook-id at a time (409): a signed head seen on the wire, sent again
  with a body that never ends, holds one slot at most.

Per worker, in memory; ``api/routes/streams.py`` asks ``admit`` and answers what it says.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from . import metrics
from .auth import Gateway
from .config import Settings

RETRY_AFTER_SECONDS = "1"


@dataclass(frozen=True, slots=True)
class NotAdmitted:
    """Why a post is not taken on: answered with this status, detail and Retry-After."""

    status: int
    detail: str
    retry_after: str = RETRY_AFTER_SECONDS


class Admission:
    """One worker's posts in progress, by gateway, and its reporters' budgets of streams."""

    def __init__(self, settings: Settings, *, gateways: int) -> None:
        self._limit = settings.max_inflight_posts
        self._share = settings.max_inflight_posts_per_gateway or (
            self._limit if gateways <= 1 else max(1, self._limit // 2)
        )
        self._reporter_share = min(self._share, settings.report_max_inflight_posts)
        self._report_streams = settings.report_streams_per_minute
        self.reporters = StreamBudgets(settings.report_streams_per_minute)
        self.in_progress = 0
        self._by_gateway: dict[str, int] = {}
        self._signed: set[tuple[str, str]] = set()  # (gateway, webhook-id) of signed posts in progress

    def admit(self, gateway: Gateway) -> NotAdmitted | None:
        """Take the post on (None; ``release`` it when answered), or say why not."""
        if gateway.reporter:
            retry_after = self.reporters.retry_after(gateway.name)
            if retry_after is not None:
                return NotAdmitted(
                    429,
                    f"this reporter posted its REPORT_STREAMS_PER_MINUTE ({self._report_streams:g}); "
                    "nothing stored, retry after Retry-After seconds",
                    str(retry_after),
                )
        if self.in_progress >= self._limit:
            return NotAdmitted(
                503,
                f"overloaded: {self._limit} posts in progress (MAX_INFLIGHT_POSTS); "
                f"nothing stored, retry after {RETRY_AFTER_SECONDS} s",
            )
        held = self._by_gateway.get(gateway.name, 0)
        if held >= (self._reporter_share if gateway.reporter else self._share):
            bound = "REPORT_MAX_INFLIGHT_POSTS" if gateway.reporter else "MAX_INFLIGHT_POSTS_PER_GATEWAY"
            return NotAdmitted(
                503,
                f"overloaded: this gateway has {held} posts in progress, its share of MAX_INFLIGHT_POSTS "
                f"({bound}); nothing stored, retry after {RETRY_AFTER_SECONDS} s",
            )
        if gateway.signed is not None:
            message = (gateway.name, gateway.signed.message_id)
            if message in self._signed:
                return NotAdmitted(409, "a post with this webhook-id is in progress; nothing stored, retry after it")
            self._signed.add(message)
        self.in_progress += 1
        self._by_gateway[gateway.name] = held + 1
        metrics.INGEST_IN_PROGRESS.inc()
        return None

    def release(self, gateway: Gateway, streams: int) -> None:
        """An admitted post was answered; it held ``streams`` streams (a batch: many)."""
        if gateway.reporter:
            self.reporters.spend(gateway.name, streams)
        self.in_progress -= 1
        held = self._by_gateway[gateway.name]
        if held == 1:
            del self._by_gateway[gateway.name]
        else:
            self._by_gateway[gateway.name] = held - 1
        metrics.INGEST_IN_PROGRESS.dec()
        if gateway.signed is not None:
            self._signed.discard((gateway.name, gateway.signed.message_id))


class StreamBudgets:
    """A budget of streams a minute by name: a minute's worth at once, coming back at the
    minute's pace.  A post is admitted while its name has a stream left, and costs the streams
    it held once read (a batch may hold many, so a budget can go below nothing and then takes
    longer to come back).  The names are the configured ones: memory is bounded by the
    settings."""

    def __init__(self, per_minute: float, *, clock=time.monotonic) -> None:
        self._per_minute = per_minute
        self._per_second = per_minute / 60.0
        self._clock = clock
        self._budgets: dict[str, tuple[float, float]] = {}  # name -> (streams left, when counted)

    def _left(self, name: str) -> float:
        found = self._budgets.get(name)
        if found is None:
            return self._per_minute
        left, at = found
        return min(self._per_minute, left + (self._clock() - at) * self._per_second)

    def retry_after(self, name: str) -> int | None:
        """Seconds until this name may post again, or None if it may now."""
        left = self._left(name)
        if left >= 1.0:
            return None
        return max(1, math.ceil((1.0 - left) / self._per_second))

    def spend(self, name: str, streams: int) -> None:
        self._budgets[name] = (self._left(name) - streams, self._clock())

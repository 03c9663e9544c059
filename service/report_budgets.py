"""What an application's reporter may post: a budget of streams a minute per report credential.

A report credential (REPORT_TOKENS) lives in every process of an application, so it leaks more
easily than a gateway's: what it posts is bounded.  Each name may post REPORT_STREAMS_PER_MINUTE
streams a minute, a minute's worth at once; a post is admitted while its name has a stream
left, and costs the streams it held once read (a batch may hold many, so a budget can go below
nothing and then takes longer to come back).  A name with none left gets 429 with Retry-After,
which the reporter's poster waits out, its answers kept in its spool.  Per worker, as the
admission slots are; the names are the configured ones, so memory is bounded by the settings.
"""

from __future__ import annotations

import math
import time


class ReportBudgets:
    """One worker's budgets of streams, by report name."""

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
        """The streams a post of this name held, read."""
        self._budgets[name] = (self._left(name) - streams, self._clock())

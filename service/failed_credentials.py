"""Failed credentials: counted, and slowed per client address.

Every credential that matches nothing (a bearer token, a signature, a sign-in) is counted in
``fastsse_failed_credentials_total{kind}`` and costs its client address one of a budget of
FAILED_CREDENTIALS_BURST, which comes back at FAILED_CREDENTIALS_PER_MINUTE.  An address whose
budget is spent gets 429 with Retry-After for every credential it presents, before the credential
is checked, until the budget comes back: guessing runs at that pace, not at the thousands a
second a worker can check.  A client whose credentials hold never spends any.

The budgets are per worker (a worker's memory, for at most MAX_ADDRESSES addresses, the least
recently failed forgotten first): N workers let N times the pace through, which is still a
pace.  Behind a proxy the address is the one the proxy names (uvicorn's proxy headers, from the
addresses FORWARDED_ALLOW_IPS trusts), so HAProxy's X-Forwarded-For, which it sets itself, is
what counts.  An IPv6 client has a /64 to itself (a host's interface, as RFC 4291 hands them
out), so its budget is its /64's: else each of its 2^64 addresses would be a new budget.
"""

from __future__ import annotations

import collections
import ipaddress
import math
import time

from . import metrics

MAX_ADDRESSES = 10_000


class FailedCredentials:
    """One worker's budgets of failed credentials, by client address."""

    def __init__(self, burst: int, per_minute: float, *, clock=time.monotonic) -> None:
        self._burst = burst
        self._per_second = per_minute / 60.0
        self._clock = clock
        # address -> (tokens left, when they were counted); the least recently failed first
        self._budgets: collections.OrderedDict[str, tuple[float, float]] = collections.OrderedDict()

    def _tokens(self, address: str) -> float:
        found = self._budgets.get(address)
        if found is None:
            return float(self._burst)
        tokens, at = found
        return min(float(self._burst), tokens + (self._clock() - at) * self._per_second)

    def retry_after(self, address: str | None) -> int | None:
        """Seconds until this address may present a credential again, or None if it may now."""
        address = budget_key(address)
        if address is None or address not in self._budgets:
            return None
        tokens = self._tokens(address)
        if tokens >= 1.0:
            return None
        return max(1, math.ceil((1.0 - tokens) / self._per_second)) if self._per_second else 3600

    def failed(self, address: str | None, kind: str) -> None:
        """A credential of this kind from this address matched nothing."""
        metrics.FAILED_CREDENTIALS.labels(kind).inc()
        address = budget_key(address)
        if address is None:
            return
        tokens = self._tokens(address) - 1.0
        self._budgets[address] = (max(tokens, 0.0), self._clock())
        self._budgets.move_to_end(address)
        while len(self._budgets) > MAX_ADDRESSES:
            self._budgets.popitem(last=False)


def budget_key(address: str | None) -> str | None:
    """The budget an address spends: its own, or for IPv6 its /64's."""
    if address is None or ":" not in address:
        return address
    try:
        network = ipaddress.IPv6Network((address.partition("%")[0], 64), strict=False)
    except ValueError:
        return address
    return str(network)

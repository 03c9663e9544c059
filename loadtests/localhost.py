"""What every run on 127.0.0.1 needs: a free port to listen on, and waiting for a state."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def free_port() -> int:
    """A port nobody listens on now (the kernel's pick; there is a small window before the
    caller binds it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_answering(url: str, process, timeout: float = 60.0, interval: float = 0.1) -> bool:
    """Poll ``url`` until it answers 200 (True), or until ``process`` (a Popen) has exited or
    ``timeout`` seconds have passed (False): the start-up wait of every server a run starts."""
    import httpx

    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(interval)
    return False


def wait_until(state: Callable[[], T], *, what: str, timeout: float = 30.0, interval: float = 0.02) -> T:
    """Poll ``state()`` until it returns something true, and return that; fail with ``what``
    after ``timeout`` seconds.  A test waits for the state it needs this way, never with a
    sleep that guesses how long the state takes (on a busy machine it takes longer)."""
    deadline = time.monotonic() + timeout
    while True:
        value = state()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"after {timeout:g} s, still not: {what}")
        time.sleep(interval)

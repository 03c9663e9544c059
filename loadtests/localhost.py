"""What every run on 127.0.0.1 needs: a free port to listen on."""

from __future__ import annotations

import socket
import time


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

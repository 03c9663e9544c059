"""What every run on 127.0.0.1 needs: a free port to listen on."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nobody listens on now (the kernel's pick; there is a small window before the
    caller binds it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

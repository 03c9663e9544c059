"""Requests written and read on a raw socket, for what a well-behaved HTTP client cannot do: a
head sent with its body held back, a connection left idle, bytes no client library would send."""

from __future__ import annotations

import socket

# A bound the server must keep long before its default (30 s): 10 s is a busy machine's margin.
LATE = 10.0


def send_head(port: int, head: str, first: bytes = b"") -> socket.socket:
    """A connection on which ``head`` (lines separated by "\\n") and ``first`` are sent."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=LATE + 5)
    sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + first)
    return sock


def read_all(sock: socket.socket, timeout: float | None = None) -> bytes:
    """What the server sends until it closes the connection, resets it, or is silent for the
    socket's timeout (``timeout`` if given)."""
    if timeout is not None:
        sock.settimeout(timeout)
    got = b""
    try:
        while piece := sock.recv(65536):
            got += piece
    except (ConnectionResetError, TimeoutError):
        pass
    return got


def small_window_connection(port: int) -> socket.socket:
    """A connection whose receive buffer is 4 KiB: what the server writes and this side never
    reads piles up in the server, not in this socket."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(LATE + 5)
    sock.connect(("127.0.0.1", port))
    return sock


TCP_CLOSE = 7  # Linux's tcp_states.h: what a connection is once the peer reset it


def reset_by_peer(sock: socket.socket) -> bool:
    """Whether the server aborted this connection (a reset), read without reading its bytes."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] == TCP_CLOSE

"""Connections held by a hostile client, against the service (a real process) and the tap (under
uvicorn, as its command line runs it): one that sends nothing, only CRLFs, or nothing more after
an answer is closed at the head deadline (service/http_limits.py); past MAX_CONNECTIONS a worker
answers 503 at once; a flood of idle connections cannot use up a worker's file descriptors."""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from loadtests.localhost import free_port, wait_until
from tests.loadtests.mock_helpers import Mock

from .conftest import INGEST_SECRET, ThreadServer, metric_total
from .raw_http import LATE, read_all, reset_by_peer, small_window_connection

HEAD_TIMEOUT = 1.0
CLOSED = "fastsse_connections_closed_total"


class Served:
    """Where a server listens, and the names its answers give its settings."""

    def __init__(self, port: int, prefix: str, stop) -> None:
        self.port, self.prefix, self.stop = port, prefix, stop


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    running = Mock(tmp_path_factory.mktemp("mock"))
    yield running
    running.stop()


@pytest.fixture(params=["service", "tap"])
def start(request, service_process, database_url, upstream, tmp_path):
    """start(head_timeout, max_connections) -> the service or the tap, with those bounds."""
    running: list = []

    def service(head_timeout: float, max_connections: int) -> Served:
        process = service_process(
            {
                "DATABASE_URL": database_url,
                "HEAD_TIMEOUT_SECONDS": str(head_timeout),
                "MAX_CONNECTIONS": str(max_connections),
            }
        )
        return Served(process.port, "", process.stop)

    def tap(head_timeout: float, max_connections: int) -> Served:
        from fastsse_service.cli import http_protocol
        from fastsse_service.config import TapSettings
        from fastsse_service.tap import Tap

        settings = TapSettings(
            upstream=f"http://127.0.0.1:{upstream.port}",
            ingest=f"http://127.0.0.1:{free_port()}",  # nothing is posted: no stream is asked for
            spool_dir=tmp_path / "spool",
            shutdown_grace_seconds=0,
            head_timeout_seconds=head_timeout,
            max_connections=max_connections,
        )
        server = ThreadServer(Tap(settings), http=http_protocol(settings)).__enter__()
        running.append(server)
        return Served(server.port, "TAP_", lambda: None)

    yield service if request.param == "service" else tap
    for server in running:
        server.__exit__(None, None, None)


def models_request(host: str = "x") -> bytes:
    # The tap forwards it to the mock, which answers; the service answers 404: both whole.
    return f"GET /v1/models HTTP/1.1\r\nhost: {host}\r\n\r\n".encode()


def one_answer(sock: socket.socket) -> bytes:
    """Read exactly one answer with a content-length off a keep-alive connection."""
    sock.settimeout(LATE)
    got = b""
    while b"\r\n\r\n" not in got:
        piece = sock.recv(65536)
        assert piece, got
        got += piece
    head, _, body = got.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head


def crlfs_until_answered(sock: socket.socket, seconds: float) -> bytes:
    """CRLFs (which may come between requests) every 0.1 s, until the server answers or
    closes, or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    answer = b""
    sock.settimeout(0.1)
    while time.monotonic() < deadline:
        try:
            sock.sendall(b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            break
        try:
            piece = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            break
        if not piece:
            break
        answer += piece
        answer += read_all(sock, 1.0)
        break
    return answer


def test_a_connection_that_sends_nothing_is_closed_at_the_head_deadline(start):
    server = start(HEAD_TIMEOUT, 100)
    started = time.monotonic()  # before the connection: its deadline cannot start earlier
    with socket.create_connection(("127.0.0.1", server.port), timeout=LATE) as sock:
        answer = read_all(sock, LATE + 5)
    assert answer == b"", "an idle connection is closed without a word"
    assert HEAD_TIMEOUT * 0.95 < time.monotonic() - started < LATE


def test_crlfs_never_move_the_head_deadline(start):
    server = start(HEAD_TIMEOUT, 100)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=LATE) as sock:
        answer = crlfs_until_answered(sock, LATE + 5)
    waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert f"{server.prefix}HEAD_TIMEOUT_SECONDS".encode() in answer
    assert HEAD_TIMEOUT * 0.95 < waited < LATE


def test_after_an_answer_the_head_deadline_starts_again(start):
    server = start(HEAD_TIMEOUT, 100)
    with socket.create_connection(("127.0.0.1", server.port), timeout=LATE) as sock:
        started = time.monotonic()  # before the request: its answer's end is later
        sock.sendall(models_request())
        head = one_answer(sock)
        assert head.startswith((b"HTTP/1.1 200", b"HTTP/1.1 404")), head
        answer = crlfs_until_answered(sock, LATE + 5)
    waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert HEAD_TIMEOUT * 0.95 < waited < LATE


def test_past_max_connections_a_connection_is_refused_at_once_and_served_once_others_go(start):
    server = start(30.0, 20)
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=LATE) for _ in range(20)]
    try:
        # Accepted in the order they were made: the 21st finds the worker full.
        with socket.create_connection(("127.0.0.1", server.port), timeout=LATE) as sock:
            sock.sendall(models_request())
            answer = read_all(sock, LATE)
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
        assert f"{server.prefix}MAX_CONNECTIONS".encode() in answer and b"retry-after: 1" in answer
    finally:
        for sock in idle:
            sock.close()

    def served() -> bool:
        with socket.create_connection(("127.0.0.1", server.port), timeout=LATE) as sock:
            sock.sendall(models_request())
            return not one_answer(sock).startswith(b"HTTP/1.1 503")

    wait_until(served, what="a request served once the idle connections are gone", timeout=LATE)


def test_a_transfer_coding_other_than_chunked_is_a_501(start):
    # httptools takes the last coding, chunked, off and would pass on a body still gzip'd:
    # judged as the stream's bytes, a silent failure.
    server = start(30.0, 100)
    coded = gzip.compress(b'data: {"choices":[]}\n\ndata: [DONE]\n\n')
    # (chunked not last is the parser's own 400, RFC 9112 section 6.3)
    for codings, status in (("gzip, chunked", b"501"), ("identity, chunked", b"501"), ("chunked, gzip", b"400")):
        with socket.create_connection(("127.0.0.1", server.port), timeout=LATE) as sock:
            sock.sendall(
                f"POST /v1/streams?stream_id=te-1 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {INGEST_SECRET}\r\n"
                f"transfer-encoding: {codings}\r\n\r\n".encode()
                + b"%x\r\n%s\r\n0\r\n\r\n" % (len(coded), coded)
            )
            answer = read_all(sock, LATE)
        assert answer.startswith(b"HTTP/1.1 " + status), (codings, answer[:200])
        assert status == b"400" or b"Transfer-Encoding other than chunked" in answer


def test_a_client_that_never_reads_its_answers_is_cut_off(service_process, sqlite_url):
    # Requests pipelined and answers never read: without a deadline on the answers, each such
    # connection held its descriptor and about 0.8 MiB for good.
    service = service_process({"DATABASE_URL": sqlite_url, "ANSWER_IDLE_TIMEOUT_SECONDS": "1"})
    pid = service.process.pid
    baseline = open_fds(pid)
    silent = [small_window_connection(service.port) for _ in range(4)]
    try:
        for sock in silent:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n" * 200)
        wait_until(
            lambda: all(reset_by_peer(sock) for sock in silent),
            what="every connection that never reads aborted by the service",
            timeout=LATE + 5,
        )
        wait_until(lambda: open_fds(pid) <= baseline, what="their descriptors let go", timeout=LATE)
        assert metric_total(httpx.get(f"{service.url}/metrics").text, CLOSED, reason="answer_not_taken") == 4
    finally:
        for sock in silent:
            sock.close()


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def soft_open_files(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as limits:
        line = next(line for line in limits if line.startswith("Max open files"))
    return int(line.split()[3])


def test_a_flood_of_idle_connections_cannot_use_up_the_workers_descriptors(service_process, database_url):
    # systemd's default open-file limit, which the process cannot raise: 1,100 idle sockets
    # took every descriptor before MAX_CONNECTIONS and the head deadline existed.
    service = service_process(
        {"DATABASE_URL": database_url, "HEAD_TIMEOUT_SECONDS": "5", "MAX_CONNECTIONS": "300"},
        command=["prlimit", "--nofile=1024:1024", sys.executable, "-m", "fastsse_service"],
    )
    pid = service.process.pid
    baseline = open_fds(pid)
    flood = []
    try:
        for _ in range(1100):
            flood.append(socket.create_connection(("127.0.0.1", service.port), timeout=LATE))
        wait_until(lambda: open_fds(pid) >= baseline + 290, what="the worker holding its 300 connections")
        # The rest are answered 503 and closed as they come (a few may be closing meanwhile).
        held = max(open_fds(pid) for _ in range(50))
        assert held <= baseline + 300 + 20, f"{held - baseline} connections held past MAX_CONNECTIONS (300)"
        # The idle ones are closed at the head deadline: the worker serves again, by itself.
        wait_until(
            lambda: httpx.get(f"{service.url}/healthz", timeout=LATE).status_code == 200,
            what="the service answering once the idle connections are closed",
            timeout=LATE + 5,
        )
    finally:
        for sock in flood:
            sock.close()
    assert "Traceback" not in service.log() and "Too many open files" not in service.log()


def test_the_service_raises_its_open_file_limit_to_fit_max_connections(service_process, database_url):
    hard = 20_000
    service = service_process(
        {"DATABASE_URL": database_url, "MAX_CONNECTIONS": "5000"},
        command=["prlimit", f"--nofile=1024:{hard}", sys.executable, "-m", "fastsse_service"],
    )
    assert soft_open_files(service.process.pid) == 5000 + 256
    short = service_process(
        {"DATABASE_URL": database_url, "MAX_CONNECTIONS": "5000"},
        command=["prlimit", "--nofile=1024:2048", sys.executable, "-m", "fastsse_service"],
    )
    assert soft_open_files(short.process.pid) == 2048
    assert "the open-file limit (2048) is below MAX_CONNECTIONS (5000)" in short.log()


def test_the_tap_warns_when_its_open_file_limit_is_short(tmp_path):
    with socket.socket() as taken:  # the tap cannot listen there: it warns, then exits
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        run = subprocess.run(
            ["prlimit", "--nofile=512:512", sys.executable, "-m", "fastsse_service", "tap", "--listen", address],
            env={**os.environ, "TAP_UPSTREAM": "http://127.0.0.1:1", "TAP_SPOOL_DIR": str(tmp_path / "spool")},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert "the open-file limit (512) is below TAP_MAX_CONNECTIONS (4096)" in run.stderr, run.stderr

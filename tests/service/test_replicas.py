"""Two stateless replicas on one PostgreSQL behind HAProxy (Debian's), on loopback, configured
by the shipped ``deploy/haproxy.cfg`` with its ports changed: duplicates racing to both
replicas are stored once, the replicas' metrics add up to the rows, either replica answers
the same rates, and a replica killed mid-load loses no acknowledged verdict.  The shipped
Prometheus configuration is checked with promtool."""

from __future__ import annotations

import concurrent.futures
import re
import resource
import signal
import socket
import subprocess
import threading
import time

import httpx
import pytest

from loadtests.localhost import free_port, wait_until, wait_until_answering
from loadtests.wire import short_stream
from tests import dependencies

from .conftest import INGEST, READ, REPO, metric_total


@pytest.fixture
def replicas(service_process, postgres_url, tmp_path):
    """Two replicas and HAProxy in front of them: (balancer_url, [replica, replica])."""
    yield from _balanced(service_process, postgres_url, tmp_path)


@pytest.fixture
def small_replicas(service_process, postgres_url, tmp_path):
    """The same, each replica taking 4 connections from HAProxy instead of 512: what fills
    them fills the shipped ones, with fewer connections."""
    yield from _balanced(service_process, postgres_url, tmp_path, replica_maxconn=4)


def _balanced(service_process, postgres_url, tmp_path, *, replica_maxconn: int | None = None):
    haproxy = dependencies.haproxy()
    from fastsse_service.db import migrate

    migrate(postgres_url)
    # The access log says which client address a replica saw (test_forwarded_for...); the
    # replicas believe HAProxy's X-Forwarded-For, as the shipped systemd unit has them.
    env = {"DATABASE_URL": postgres_url, "ACCESS_LOG": "true", "FORWARDED_ALLOW_IPS": "127.0.0.1"}
    started = [service_process(env) for _ in range(2)]
    port = free_port()
    config = (REPO / "deploy" / "haproxy.cfg").read_text()
    config = config.replace("bind 127.0.0.1:8000", f"bind 127.0.0.1:{port}")
    if replica_maxconn is not None:
        config, changed = re.subn(r"maxconn 512$", f"maxconn {replica_maxconn}", config, flags=re.M)
        assert changed == 1
    config = re.sub(r"^\s*server replica\d .*\n", "", config, flags=re.M)
    config += "".join(f"    server replica{n} 127.0.0.1:{r.port}\n" for n, r in enumerate(started, 1))
    (tmp_path / "haproxy.cfg").write_text(config)
    balancer = subprocess.Popen(
        [haproxy, "-db", "-f", str(tmp_path / "haproxy.cfg")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    if not wait_until_answering(f"{url}/readyz", balancer, timeout=20):
        balancer.kill()
        pytest.fail(f"HAProxy did not answer: {balancer.communicate()[1].decode()}")
    yield url, started
    balancer.terminate()
    balancer.communicate(timeout=10)  # waits, and closes its stderr pipe


def rows(url: str) -> list[dict]:
    found, cursor = [], None
    while True:
        params = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{url}/v1/verdicts", params=params, headers=READ, timeout=30).json()
        found += page["verdicts"]
        cursor = page["next_cursor"]
        if not cursor:
            return found


def test_the_same_stream_posted_to_both_replicas_at_once_is_stored_once(replicas):
    _, (first, second) = replicas
    body = short_stream(text="raced " * 50)
    for n in range(20):
        barrier = threading.Barrier(2)

        def send(replica, barrier=barrier, stream_id=f"race-{n}"):
            barrier.wait()
            return httpx.post(
                f"{replica.url}/v1/streams", params={"stream_id": stream_id}, content=body, headers=INGEST, timeout=30
            )

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(send, (first, second)))
        assert sorted(a.status_code for a in answers) == [200, 201]
        assert answers[0].json()["id"] == answers[1].json()["id"]
    assert len(rows(first.url)) == 20


def test_the_replicas_metrics_add_up_to_the_rows_and_rates_agree(replicas):
    url, replicas_ = replicas
    bodies = [short_stream(), short_stream("chat", "F2")]

    def send(n: int) -> int:
        with httpx.Client(timeout=30) as http:  # a new connection each: both replicas serve
            return http.post(
                f"{url}/v1/streams",
                params={"stream_id": f"lb-{n}", "tool": "codex"},
                content=bodies[n % 2],
                headers=INGEST,
            ).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert set(pool.map(send, range(100))) == {201}
    scrapes = [httpx.get(f"{r.url}/metrics").text for r in replicas_]
    per_replica = [metric_total(text, "fastsse_stream_verdicts_total") for text in scrapes]
    assert sum(per_replica) == len(rows(url)) == 100
    assert all(n > 0 for n in per_replica), f"one replica served nothing: {per_replica}"
    rates = [
        httpx.get(f"{r.url}/v1/rates", params={"window": "1h", "by": "tool"}, headers=READ).json()["groups"]
        for r in replicas_
    ]
    assert rates[0] == rates[1]
    assert rates[0][0]["total"] == 100 and rates[0][0]["silent"] == 50


def test_a_replica_killed_mid_load_loses_no_acknowledged_verdict(replicas):
    url, (victim, _) = replicas
    body = short_stream(text="through the balancer " * 20)
    acknowledged, refused = [], []
    stop = threading.Event()
    lock = threading.Lock()

    def traffic(worker: int) -> None:
        n = 0
        with httpx.Client(timeout=30) as http:
            while not stop.is_set():
                stream_id = f"k{worker}-{n}"
                n += 1
                try:
                    status = http.post(
                        f"{url}/v1/streams", params={"stream_id": stream_id}, content=body, headers=INGEST
                    ).status_code
                except httpx.HTTPError:
                    status = 0
                with lock:
                    (acknowledged if status in (200, 201) else refused).append(stream_id)

    threads = [threading.Thread(target=traffic, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(acknowledged) >= 20, what="traffic acknowledged through the balancer")
        victim.process.send_signal(signal.SIGKILL)  # no graceful shutdown
        killed_at = len(acknowledged)
        wait_until(lambda: len(acknowledged) >= killed_at + 50, what="the survivor serving on", timeout=30)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    stored = {v["stream_id"] for v in rows(url)}
    assert killed_at > 0 and len(acknowledged) > killed_at, "the survivor stopped serving"
    assert set(acknowledged) <= stored, "an acknowledged verdict was lost"
    # What was refused while the balancer noticed (a 502/503, a broken connection) may or may
    # not have been stored: the gateway posts it again, and the stream_id makes that safe.
    assert len(refused) < len(acknowledged)


def test_one_client_holding_idle_connections_cannot_lock_the_others_out(replicas):
    url, _ = replicas
    port = int(url.rsplit(":", 1)[1])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096 <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))
    # 1,000 idle connections from one address (127.0.0.2): past 256 the balancer refuses them.
    flood, refused_at_once = [], 0
    for _ in range(1000):
        try:
            flood.append(socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0)))
        except ConnectionResetError:
            refused_at_once += 1
    try:

        def closed(sock: socket.socket) -> bool:
            sock.setblocking(False)
            try:
                return sock.recv(1, socket.MSG_PEEK) == b""
            except BlockingIOError:
                return False
            except ConnectionResetError:
                return True

        refused = wait_until(
            lambda: (lambda n: n if n >= 1000 - 256 else None)(refused_at_once + sum(closed(s) for s in flood)),
            what="the connections past the per-client cap refused",
        )
        assert refused <= 1000 - 256 + 5, "connections within the per-client cap were refused"
        # Another client is served at once, however many idle connections the first holds.
        started = time.monotonic()
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        assert time.monotonic() - started < 5
    finally:
        for sock in flood:
            sock.close()


def test_slow_sign_in_forms_take_no_replica_from_the_gateways(small_replicas):
    # Sign-in forms sent a byte at a time, no credential needed: HAProxy passed each to a
    # replica as soon as its head was in, so a few addresses took every connection the
    # replicas take and every client, gateways included, got 503.
    url, _ = small_replicas
    port = int(url.rsplit(":", 1)[1])
    head = b"POST /signin HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-www-form-urlencoded\r\n"
    slow = []
    for n in range(16):  # twice what the two replicas take, from two addresses
        sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(f"127.0.0.{2 + n % 2}", 0))
        sock.sendall(head + b"content-length: 4000\r\n\r\ntoken=")
        slow.append(sock)
    try:
        with httpx.Client(timeout=30) as gateway:
            for n in range(4):
                started = time.monotonic()
                answer = gateway.post(
                    f"{url}/v1/streams",
                    params={"stream_id": f"beside-slow-forms-{n}"},
                    content=short_stream(),
                    headers=INGEST,
                )
                assert answer.status_code == 201, answer.text
                assert time.monotonic() - started < 5
    finally:
        for sock in slow:
            sock.close()


def test_a_forwarded_for_header_made_up_by_a_client_never_reaches_the_service(replicas):
    url, started = replicas
    for _ in range(4):  # least connections: both replicas get some
        assert httpx.get(f"{url}/healthz", headers={"X-Forwarded-For": "203.0.113.66"}, timeout=10).status_code == 200
    logs = "".join(replica.log() for replica in started)
    assert "/healthz" in logs  # the access log has the requests
    assert "203.0.113.66" not in logs


def test_the_shipped_prometheus_configuration_loads_the_rules():
    done = subprocess.run(
        [dependencies.promtool(), "check", "config", str(REPO / "deploy" / "prometheus" / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 rule files found" in done.stdout and "SUCCESS" in done.stdout


def test_the_shipped_haproxy_configuration_is_valid():
    done = subprocess.run(
        [dependencies.haproxy(), "-c", "-f", str(REPO / "deploy" / "haproxy.cfg")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr

"""Hostile input against the service as it runs (``python -m fastsse_service serve``: uvicorn with
httptools): garbage and noise are verdicts, odd bytes in headers and query strings are 4xx
with a reason, huge headers are refused, thousands of connections opened and dropped leak
nothing.  Never a 500, and never a row from a refused request."""

from __future__ import annotations

import base64
import functools
import os
import random
import re
import socket
import threading
import time
from base64 import urlsafe_b64encode
from urllib.parse import quote_from_bytes

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadtests.localhost import free_port, wait_until
from loadtests.wire import short_stream

from .conftest import INGEST, READ
from .raw_http import LATE, read_all, send_head


@pytest.fixture
def service(service_process, database_url):
    return service_process({"DATABASE_URL": database_url})


def raw(port: int, data: bytes, timeout: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return read_all(sock)  # every request says connection: close


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def rows(service) -> list[dict]:
    answer = httpx.get(f"{service.url}/v1/verdicts", params={"limit": 1000}, headers=READ)
    return answer.json()["verdicts"]


def test_garbage_and_noise_are_verdicts_never_errors(service):
    noise = random.Random(7)
    bodies = {
        "noise": noise.randbytes(300_000),
        "nul": b"\0" * 10_000,
        "half-utf8": 'data: {"x": "é'.encode()[:-1] + b"\n\n",
        "json-garbage": b"data: {{{{[[[[\n\n" * 1000,
        "no-newlines": b"x" * 100_000,
        "crlf-storm": b"\r" * 50_000,
    }
    with httpx.Client(base_url=service.url, headers=INGEST, timeout=30) as http:
        for name, body in bodies.items():
            answer = http.post("/v1/streams", params={"stream_id": name}, content=body)
            assert answer.status_code == 201, (name, answer.text)
            assert answer.json()["complete"] is False, name
    assert len(rows(service)) == len(bodies)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (b"stream_id=%FF%FE", 422),  # not UTF-8 once decoded
        (b"stream_id=ok&protocol=%00", 422),
        (b"stream_id=" + b"a" * 5000, 422),
        (b"stream_id=\xff\xfe", 400),  # raw bytes outside ASCII: the HTTP parser refuses them
        (b"stream_id=s%20p", 422),
        (b"stream_id=ok&attempt=1e999", 422),
        (b"stream_id=ok&ended_at=%F0%9F%92%A5", 422),
    ],
)
def test_odd_bytes_in_the_query_string_are_a_4xx_with_a_reason(service, query, expected):
    answer = raw(
        service.port,
        b"POST /v1/streams?" + query + b" HTTP/1.1\r\nhost: x\r\n"
        b"authorization: " + INGEST["Authorization"].encode() + b"\r\n"
        b"content-length: 0\r\nconnection: close\r\n\r\n",
    )
    assert status_of(answer) == expected, answer[:300]
    assert b'"detail"' in answer or expected == 400
    assert rows(service) == []


def test_odd_headers_are_refused_or_ignored_never_a_500(service):
    token = INGEST["Authorization"].encode()
    cases = {
        "latin-1 value": b"x-note: caf\xe9\r\n",
        "control bytes": b"x-note: a\x01b\r\n",
        "huge header": b"x-huge: " + b"a" * 200_000 + b"\r\n",
        "many headers": b"".join(b"x-h%d: v\r\n" % n for n in range(5000)),
        "bad auth encoding": b"authorization: Bearer \xff\xfe\r\n",
    }
    statuses = {}
    for name, extra in cases.items():
        auth = b"" if name == "bad auth encoding" else b"authorization: " + token + b"\r\n"
        answer = raw(
            service.port,
            b"POST /v1/streams?stream_id=h-"
            + name.replace(" ", "-").encode()
            + b" HTTP/1.1\r\nhost: x\r\n"
            + auth
            + extra
            + b"content-length: 2\r\nconnection: close\r\n\r\nhi",
        )
        statuses[name] = status_of(answer)
    assert statuses == {
        "latin-1 value": 201,
        "control bytes": 400,
        "huge header": 431,
        "many headers": 431,
        "bad auth encoding": 401,
    }
    assert len(rows(service)) == sum(1 for s in statuses.values() if s in (200, 201))


def test_a_header_that_never_ends_is_refused_before_it_grows(service):
    # httptools buffers an unfinished header itself: the bound counts bytes as they arrive.
    pid = service.process.pid
    before_kb = rss_kb(pid)
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/streams?stream_id=endless HTTP/1.1\r\nhost: x\r\nx-endless: ")
        answer = b""
        try:
            for _ in range(200):  # up to 12.8 MB, if nobody stops it
                sock.sendall(b"a" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            while piece := sock.recv(65536):
                answer += piece
        except (ConnectionResetError, TimeoutError):
            pass
    assert status_of(answer) == 431, answer[:200]
    assert rss_kb(pid) - before_kb < 20_000, "the unfinished header was kept"


def test_a_head_that_dribbles_in_is_cut_off_and_others_are_served_meanwhile(service_process, database_url):
    impatient = service_process({"DATABASE_URL": database_url, "HEAD_TIMEOUT_SECONDS": "1"})
    started = time.monotonic()  # before the connection: its timer cannot start any earlier
    with socket.create_connection(("127.0.0.1", impatient.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/streams?stream_id=dribbled HTTP/1.1\r\nhost: x\r\nx-slow: ")
        with httpx.Client(base_url=impatient.url, headers=INGEST, timeout=10) as http:
            assert (
                http.post("/v1/streams", params={"stream_id": "meanwhile"}, content=b"data: [DONE]\n\n").status_code
                == 201
            )
        answer = b""
        try:
            while time.monotonic() - started < 20 and not answer:
                sock.sendall(b"a")  # a byte now and then: never silent, never whole
                sock.settimeout(0.2)
                try:
                    answer = sock.recv(65536)
                except TimeoutError:
                    pass
        except (BrokenPipeError, ConnectionResetError):
            pass
        waited = time.monotonic() - started
    assert status_of(answer) == 408, answer[:200]
    assert b"HEAD_TIMEOUT_SECONDS" in answer
    # Not before the head timeout, and long before the default (30 s): 10 s is a busy
    # machine's margin.
    assert 0.95 < waited < 10
    assert [v["stream_id"] for v in rows(impatient)] == ["meanwhile"]


# ---------------------------------------------------------------------------------------------
# values that once made a 500 (and a traceback in the log each): a 4xx with a reason now
# ---------------------------------------------------------------------------------------------
# b"\xb2" is "²" in latin-1, as the server reads a header: str.isdigit() says it is a digit.
@pytest.mark.parametrize("stamp", [b"\xb2", b"9" * 5000, b"-5", b"1e9", b"0x10"])
def test_an_odd_webhook_timestamp_is_a_401(service, stamp):
    headers = {
        "webhook-id": b"msg_1",
        "webhook-timestamp": stamp,
        "content-digest": b"sha-256=:" + b"A" * 43 + b"=:",
        "webhook-signature": b"fastsse2,AAAA",
    }
    answer = httpx.post(
        f"{service.url}/v1/streams", params={"stream_id": "s"}, content=b"data: [DONE]\n\n", headers=headers
    )
    assert answer.status_code == 401 and "webhook-timestamp" in answer.json()["detail"], answer.text
    assert "Traceback" not in service.log()


def test_an_ended_at_with_no_utc_equivalent_is_a_422(service):
    answer = httpx.post(
        f"{service.url}/v1/streams",
        params={"stream_id": "s", "ended_at": "0001-01-01T00:00:00+01:00"},
        content=b"data: [DONE]\n\n",
        headers=INGEST,
    )
    assert answer.status_code == 422 and "out of range" in answer.text, answer.text
    assert "Traceback" not in service.log()


@pytest.mark.parametrize("expiry", ["\u00b2", "9" * 5000, "-1"])  # sent as latin-1 bytes
def test_a_session_cookie_with_an_odd_expiry_is_a_401(service, expiry):
    cookie = f"team.{expiry}.bm90LWEtbWFj".encode("latin-1")
    answer = raw(
        service.port,
        b"GET /v1/verdicts HTTP/1.1\r\nhost: x\r\ncookie: fastsse_session=" + cookie + b"\r\nconnection: close\r\n\r\n",
    )
    assert status_of(answer) == 401, answer[:300]
    assert "Traceback" not in service.log()


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/verdicts", {"cursor": base64.urlsafe_b64encode(b"v1:99999999999999999999").decode().rstrip("=")}),
        ("/v1/verdicts", {"cursor": base64.urlsafe_b64encode(f"v1:{2**63}".encode()).decode().rstrip("=")}),
        ("/v1/verdicts", {"tool": "a\x00b"}),
        ("/v1/verdicts", {"gateway": "\x00"}),
        ("/v1/rates", {"tool": "a\x00b"}),
        ("/v1/series", {"gateway": "\x00"}),
        ("/v1/requests/r-1", {"gateway": "\x00"}),
    ],
)
def test_a_cursor_past_the_ids_or_a_nul_in_a_filter_is_a_422(service, path, params):
    # PostgreSQL refused both with an error of its own, answered 500 (database_url: both stores).
    answer = httpx.get(f"{service.url}{path}", params=params, headers=READ, timeout=10)
    assert answer.status_code == 422, answer.text
    assert "Traceback" not in service.log()


def test_a_read_that_finds_the_database_unreachable_is_a_503(serve):
    from fastsse_service.db import make_engine, make_sessionmaker

    server = serve()
    # The database goes away after start-up: reads are made on an engine that reaches nothing.
    gone = make_engine(f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/gone?connect_timeout=2")
    server.app.state.sessionmaker = make_sessionmaker(gone)
    try:
        for path in ("/v1/verdicts", "/v1/verdicts/1", "/v1/rates", "/v1/series", "/v1/retries", "/v1/requests/r-1"):
            answer = httpx.get(f"{server.url}{path}", headers=READ, timeout=30)
            assert answer.status_code == 503, (path, answer.text)
            assert answer.headers["retry-after"] == "5" and "unavailable" in answer.json()["detail"]
    finally:
        gone.dispose()


# Every header a route reads, and some it does not; every route, with and without credentials.
HEADER_NAMES = [
    "authorization",
    "cookie",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "content-digest",
    "content-type",
    "content-encoding",
    "x-forwarded-for",
    "accept",
    "accept-encoding",
    "range",
    "if-none-match",
    "origin",
]
CREDENTIALS = [INGEST["Authorization"], READ["Authorization"]]
# A header value or query string as a client may send them: any bytes but CR, LF and NUL
# (which the HTTP parser refuses before any route sees them: a 400, tried above).
ODD_BYTES = st.binary(max_size=60).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"").replace(b"\x00", b""))
# Numbers as a client may write them: digits of other scripts ("²"), signs, too many digits.
NUMBERS = st.one_of(
    st.text(alphabet="0123456789\u00b2\u00b3\u00b9-+. e", min_size=1, max_size=25).map(lambda t: t.encode("latin-1")),
    st.integers(min_value=-(2**70), max_value=2**70).map(lambda n: str(n).encode()),
    st.just(b"9" * 5000),
)
TIMES = st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "2026-12-01T09:30:00Z", "x"])
# URLs as a client may write them (an Origin), bracketed hosts that are no address included.
URLS = st.tuples(
    st.sampled_from([b"http://", b"https://", b"", b"null"]),
    st.sampled_from([b"[", b"]", b"[::1", b"[vX]", b"]x[", b"x", b"[::1]:80"]),
    ODD_BYTES,
).map(b"".join)
VALUES = st.one_of(ODD_BYTES, NUMBERS, TIMES.map(str.encode), URLS)
COOKIES = st.tuples(st.sampled_from([b"team", b"x", b""]), VALUES, ODD_BYTES).map(
    lambda parts: b"fastsse_session=" + b".".join(parts)
)
QUERY_NAMES = [
    "stream_id", "tool", "protocol", "gateway", "transport", "upstream_status", "model_requested",
    "request_id", "attempt", "ended_at", "since", "until", "window", "by", "limit", "cursor",
    "category", "complete", "silent", "retry", "top", "next",
]  # fmt: skip
QUERY_VALUES = st.one_of(
    VALUES.map(quote_from_bytes),
    st.integers(min_value=0, max_value=2**70).map(lambda n: urlsafe_b64encode(f"v1:{n}".encode()).decode()),
)
QUERIES = st.lists(st.tuples(st.sampled_from(QUERY_NAMES), QUERY_VALUES), max_size=4).map(
    lambda pairs: "&".join(f"{name}={value}" for name, value in pairs).encode()
)


@functools.lru_cache(maxsize=1)
def routes() -> list[tuple[str, str]]:
    from fastsse_service.app import create_app
    from fastsse_service.config import Settings

    app = create_app(Settings(database_url="sqlite://", ingest_tokens="gw1:x", read_tokens="team:y"))
    found = []
    for route in app.routes:
        for method in sorted(getattr(route, "methods", None) or ()):
            if method != "HEAD":
                found.append((method, route.path))
    return sorted(set(found))


@pytest.fixture(scope="module")
def one_service(tmp_path_factory):
    """One service process on SQLite for the property test (its examples share it)."""
    from .conftest import ServiceProcess

    process = ServiceProcess(
        tmp_path_factory.mktemp("property"),
        {"DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('db') / 'v.sqlite3'}"},
    )
    yield process
    process.stop()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_input_makes_any_route_answer_5xx(one_service, data):
    method, path = data.draw(st.sampled_from(routes()), label="route")
    path = re.sub(
        r"\{[^}]*\}",
        lambda _: data.draw(st.from_regex(r"[A-Za-z0-9._%-]{1,20}", fullmatch=True), label="path parameter"),
        path,
    )
    query = data.draw(QUERIES, label="query")
    names = data.draw(st.lists(st.sampled_from(HEADER_NAMES), unique=True, max_size=5), label="headers")
    headers = b"".join(
        name.encode() + b": " + data.draw(COOKIES if name == "cookie" else VALUES, label=name) + b"\r\n"
        for name in names
    )
    if "authorization" not in names and data.draw(st.booleans(), label="credential"):
        headers += b"authorization: " + data.draw(st.sampled_from(CREDENTIALS)).encode() + b"\r\n"
    body = data.draw(st.binary(max_size=200), label="body") if method == "POST" else b""
    answer = raw(
        one_service.port,
        f"{method} {path}".encode()
        + (b"?" + query if query else b"")
        + b" HTTP/1.1\r\nhost: x\r\n"
        + headers
        + b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
        + body,
    )
    assert 0 < status_of(answer) < 500, answer[:400]
    assert "Traceback" not in one_service.log()


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("VmRSS:")))


def test_random_tool_names_are_stored_tamed(service):
    names = ["Ω-tool", "a" * 1000, "../../etc/passwd", "<script>", "tool\x00nul", "  "]
    with httpx.Client(base_url=service.url, headers=INGEST, timeout=30) as http:
        for n, name in enumerate(names):
            answer = http.post("/v1/streams", params={"stream_id": f"t{n}", "tool": name}, content=b"data: [DONE]\n\n")
            assert answer.status_code in (201, 422), answer.text
    for verdict in rows(service):
        assert len(verdict["tool"]) <= 64 and "<" not in verdict["tool"]
        assert all(c.isascii() and (c.isalnum() or c in "._-") for c in verdict["tool"])


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_thousands_of_connections_opened_and_dropped_leak_nothing(service):
    pid = service.process.pid
    baseline = open_fds(pid)
    for _round in range(4):
        sockets = []
        for n in range(500):
            sock = socket.create_connection(("127.0.0.1", service.port), timeout=10)
            if n % 2:
                sock.sendall(
                    b"POST /v1/streams?stream_id=dropped HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\ndata: "
                )
            sockets.append(sock)
        for sock in sockets:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
            sock.close()  # a reset, half of them mid-upload
    answer = httpx.post(
        f"{service.url}/v1/streams",
        params={"stream_id": "after"},
        content=b"data: [DONE]\n\n",
        headers=INGEST,
        timeout=30,
    )
    assert answer.status_code == 201
    wait_until(lambda: open_fds(pid) <= baseline + 5, what="the dropped connections' descriptors closed", timeout=20)
    assert [v["stream_id"] for v in rows(service)] == ["after"]
    assert "Traceback" not in service.log()


# ---------------------------------------------------------------------------------------------
# the sign-in form: bounded in size before and while it is read, and in time
# ---------------------------------------------------------------------------------------------
SIGNIN = "POST /signin HTTP/1.1\nhost: x\ncontent-type: application/x-www-form-urlencoded\n"


def test_a_sign_in_form_that_says_it_is_huge_is_refused_before_it_is_read(serve):
    server = serve()
    with send_head(server.port, SIGNIN + "content-length: 419430400\n") as sock:  # 400 MiB
        got = read_all(sock)
    assert got.startswith(b"HTTP/1.1 413") and b"at most 4096 bytes" in got, got[:300]


def test_a_sign_in_form_that_never_ends_is_cut_off_while_it_streams(serve):
    server = serve()
    sent = 0
    with send_head(server.port, SIGNIN + "transfer-encoding: chunked\n") as sock:
        sock.settimeout(0.2)
        got = b""
        for _ in range(2000):  # 2 MB if nobody stops it
            try:
                sock.sendall(b"400\r\n" + b"a" * 1024 + b"\r\n")
                sent += 1
                got += sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if got:
                break
        got += read_all(sock)
    assert got.startswith(b"HTTP/1.1 413"), got[:300]
    assert sent < 200, f"{sent} KiB taken before the refusal"


def test_a_sign_in_form_that_stops_sending_gets_a_408(serve):
    server = serve(upload_idle_timeout_seconds=1)
    started = time.monotonic()  # before the upload: its timer cannot start any earlier
    with send_head(server.port, SIGNIN + "content-length: 100\n", b"token=") as sock:
        got = read_all(sock)
    assert got.startswith(b"HTTP/1.1 408") and b"UPLOAD_IDLE_TIMEOUT_SECONDS" in got, got[:300]
    assert 0.95 < time.monotonic() - started < LATE


def test_a_sign_in_form_dribbled_is_cut_off_at_its_own_deadline(serve):
    # It had a post's 300 s: slow forms from 4 addresses held every connection both replicas
    # take behind the shipped HAProxy.
    server = serve(signin_timeout_seconds=1)
    started = time.monotonic()
    got = b""
    with send_head(server.port, SIGNIN + "content-length: 100\n", b"token=") as sock:
        sock.settimeout(0.2)
        while time.monotonic() - started < LATE and not got:
            try:
                sock.sendall(b"x")  # a byte now and then: never idle
                got = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        got += read_all(sock)
    assert got.startswith(b"HTTP/1.1 408") and b"SIGNIN_TIMEOUT_SECONDS" in got, got[:300]
    assert 0.95 < time.monotonic() - started < LATE


def test_without_the_compiled_scanner_the_service_warns_and_bounds_the_judging(service_process, sqlite_url):
    # The Python twin costs 200 to 5,000 times more on hostile bodies: 16 MiB of "{}" lines held
    # a worker's loop for 48 s, and nothing said the compiled scanner was missing.
    service = service_process({"DATABASE_URL": sqlite_url, "FASTSSE_NO_EXTENSIONS": "1", "MAX_SCAN_SECONDS": "1"})
    wait_until(lambda: "compiled scanner is not loaded" in service.log(), what="the start-up warning")
    hostile = b"{}\n" * ((4 << 20) // 3)  # about 12 s for the twin
    slowest = []
    done = threading.Event()

    def probe():
        while not done.is_set():
            started = time.monotonic()
            assert httpx.get(f"{service.url}/healthz", timeout=LATE).status_code == 200
            slowest.append(time.monotonic() - started)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        answer = httpx.post(
            f"{service.url}/v1/streams?stream_id=hostile&protocol=ollama", content=hostile, headers=INGEST, timeout=LATE
        )
    finally:
        done.set()
        prober.join()
    assert answer.status_code == 413 and "MAX_SCAN_SECONDS (1 s) with fastsse's Python scanner" in answer.text
    assert max(slowest) < 1.0
    assert (
        httpx.post(f"{service.url}/v1/streams?stream_id=fine", content=short_stream(), headers=INGEST).status_code
        == 201
    )


def test_a_short_secret_is_warned_of_at_start_up_by_name_never_by_value(service_process, database_url):
    service = service_process(
        {
            "DATABASE_URL": database_url,
            "INGEST_TOKENS": "gw1:Zq9shortZ,gw2:a-long-enough-secret-of-gw2",
            "READ_TOKENS": "team:Yx7tinyY",
        }
    )
    wait_until(lambda: "READ_TOKENS: the secret of 'team'" in service.log(), what="the warning logged")
    log = service.log()
    assert "INGEST_TOKENS: the secret of 'gw1' is shorter than 16 characters" in log
    assert "'gw2'" not in log
    assert "Zq9shortZ" not in log and "Yx7tinyY" not in log

"""Fixtures for the service: real databases (SQLite file, PostgreSQL), real HTTP servers.

PostgreSQL tests use a fresh database per test on the server at POSTGRES_ADMIN_DSN's host
(default 127.0.0.1:5432, trust auth).  If it is unreachable they skip, unless
FASTSSE_REQUIRE_POSTGRES=1 (set by .ci/run), where they fail (tests/dependencies.py).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx
import pytest

from loadtests.localhost import free_port, wait_until, wait_until_answering
from tests import dependencies
from tests.dependencies import POSTGRES_ADMIN

REPO = Path(__file__).resolve().parents[2]

INGEST_SECRET = "ingest-secret-gw1"
# A Standard Webhooks secret (whsec_ + base64 of the key), for the signing gateway.
WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
READ_SECRET = "read-secret-team"
TOKENS = {
    "INGEST_TOKENS": f"gw1:{INGEST_SECRET},signer:{WEBHOOK_SECRET}",
    "READ_TOKENS": f"team:{READ_SECRET}",
}
INGEST = {"Authorization": f"Bearer {INGEST_SECRET}"}
READ = {"Authorization": f"Bearer {READ_SECRET}"}


def metric_total(text: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples in a /metrics text whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith((name + "{", name + " ")):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0])) if "{" in line else {}
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def dsn_to_url(dsn: str, dbname: str) -> str:
    parts = dict(item.split("=", 1) for item in dsn.split())
    return (
        f"postgresql+psycopg://{parts.get('user', 'postgres')}@{parts.get('host', '127.0.0.1')}"
        f":{parts.get('port', '5432')}/{dbname}"
    )


@pytest.fixture
def postgres_url():
    """A fresh, empty PostgreSQL database, dropped afterwards."""
    admin = dependencies.postgres()
    name = f"fastsse_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield dsn_to_url(POSTGRES_ADMIN, name)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'verdicts.sqlite3'}"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request):
    """Each test that asks for it runs on both backends; the schema comes from Alembic."""
    from fastsse_service.db import migrate

    url = request.getfixturevalue(f"{request.param}_url")
    migrate(url)
    return url


@pytest.fixture
def make_settings(database_url):
    from fastsse_service.config import Settings

    def make(**overrides):
        values = {
            "database_url": database_url,
            "ingest_tokens": TOKENS["INGEST_TOKENS"],
            "read_tokens": TOKENS["READ_TOKENS"],
            "retention_days": 0,
        }
        values.update(overrides)
        return Settings(**values)

    return make


class ThreadServer:
    """The app under uvicorn on a real 127.0.0.1 socket, in a thread of the test process."""

    def __init__(self, app, port: int = 0, http="auto") -> None:
        import uvicorn

        self.app = app
        self.socket = socket.socket()
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", port))
        self.port = self.socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", http=http))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        wait_until(
            lambda: self.server.started or not self.thread.is_alive(), what="the test server started", timeout=20
        )
        if not self.server.started:
            raise RuntimeError("the test server did not start")
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(20)
        self.socket.close()


@pytest.fixture
def serve(make_settings):
    """serve(**settings) -> a running ThreadServer (stopped at teardown)."""
    from fastsse_service.app import create_app

    servers = []

    def start(**overrides):
        server = ThreadServer(create_app(make_settings(**overrides))).__enter__()
        servers.append(server)
        return server

    yield start
    for server in reversed(servers):
        server.__exit__(None, None, None)


@pytest.fixture
def server(serve):
    return serve()


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=30) as http:
        yield http


class ServiceProcess:
    """``python -m fastsse_service serve`` as a real process, its output kept in a file.

    ``command`` replaces ``python -m fastsse_service`` (an installed ``fastsse-service``, say), and
    ``cwd`` the checkout it runs in.
    """

    def __init__(
        self, tmp_path: Path, env: dict, *, workers: int = 1, command: list[str] | None = None, cwd: Path = REPO
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / f"service-{self.port}.log"
        self._log = open(self.log_path, "wb")
        full_env = {**os.environ, **TOKENS, "RETENTION_DAYS": "0", **env}
        full_env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        command = command or [sys.executable, "-m", "fastsse_service"]
        self.process = subprocess.Popen(
            [*command, "serve", "--port", str(self.port), "--workers", str(workers)],
            cwd=cwd,
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        if not wait_until_answering(f"{self.url}/healthz", self.process):
            self.stop()
            raise RuntimeError(f"the service did not start:\n{self.log()}")

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self._log.closed:
            self._log.close()


@pytest.fixture
def service_process(tmp_path):
    started = []

    def start(env: dict, **options) -> ServiceProcess:
        process = ServiceProcess(tmp_path, env, **options)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()

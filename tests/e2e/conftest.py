"""One mock provider, one verdict service (SQLite) and one tap in front of the mock for the
whole matrix; the matrix's rows are written to test-artifacts/ when the session ends."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from loadtests.wire import FAULTS, applies
from tests.loadtests.mock_helpers import Mock
from tests.service.conftest import INGEST_SECRET, TOKENS, ThreadServer

from .clients import SENTENCES

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ROWS: list[dict] = []


@pytest.fixture(scope="session")
def mock(tmp_path_factory):
    running = Mock(tmp_path_factory.mktemp("e2e-mock"), "--sentences", str(SENTENCES))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def service(tmp_path_factory):
    from fastsse_service.app import create_app
    from fastsse_service.config import Settings
    from fastsse_service.db import migrate

    url = f"sqlite:///{tmp_path_factory.mktemp('e2e-db') / 'verdicts.sqlite3'}"
    migrate(url)
    settings = Settings(
        database_url=url, ingest_tokens=TOKENS["INGEST_TOKENS"], read_tokens=TOKENS["READ_TOKENS"], retention_days=0
    )
    with ThreadServer(create_app(settings)) as running:
        yield running


@pytest.fixture(scope="session")
def tap(mock, service, tmp_path_factory):
    from fastsse_service.config import TapSettings
    from fastsse_service.tap import Tap

    app = Tap(
        TapSettings(
            upstream=f"http://127.0.0.1:{mock.port}",
            ingest=service.url,
            ingest_token=INGEST_SECRET,
            spool_dir=tmp_path_factory.mktemp("e2e-spool"),
        )
    )
    with ThreadServer(app) as running:
        running.tap = app
        yield running


@pytest.fixture(scope="session")
def guard_path(tmp_path_factory):
    """A directory for PYTHONPATH that holds this checkout's fastsse and fastsse_service (the
    guard and its reporter), for a client run by its own interpreter."""
    path = tmp_path_factory.mktemp("guard-path")
    repo = Path(__file__).resolve().parents[2]
    (path / "fastsse").symlink_to(repo / "fastsse")
    (path / "fastsse_service").symlink_to(repo / "service")
    return path


@pytest.fixture(scope="session")
def litellm_proxy(mock, service, guard_path, tmp_path_factory):
    """LiteLLM's proxy, with fastsse_service.litellm_guard installed by its worker start-up
    hook, reporting to the service; a model per case of the proxied clients (proxy_model: its client and fault, on
    the mock under that prefix).  A throwaway home, a random master key, 127.0.0.1 only."""
    from loadtests.localhost import free_port, wait_until_answering

    from .clients import CLIENTS, fault_prefix, proxy_model
    from .install import BY_NAME, installed

    pin = BY_NAME["litellm"]
    if not installed(pin):
        pytest.fail(f"litellm {pin.version} is not installed (python -m tests.e2e.install)")
    home = tmp_path_factory.mktemp("litellm-proxy")
    from .litellm_client import KEY, litellm_params

    models = [
        f"  - model_name: {proxy_model(client, fault)}\n"
        f"    litellm_params: {json.dumps({**litellm_params(f'http://127.0.0.1:{mock.port}/{prefix}', client.provider), 'api_key': KEY})}"
        for client in CLIENTS
        if client.proxied
        for fault in FAULTS
        if applies(client.protocol, fault)
        for prefix in [fault_prefix(client, fault)]
    ]
    config = home / "config.yaml"
    config.write_text(
        "model_list:\n" + "\n".join(models) + "\ngeneral_settings:\n  master_key: os.environ/LITELLM_MASTER_KEY\n"
    )
    key = "sk-" + secrets.token_hex(24)
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LITELLM_MASTER_KEY": key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY_DISABLED": "true",
        "LITELLM_WORKER_STARTUP_HOOKS": "fastsse_service.litellm_guard:install_from_environment",
        "PYTHONPATH": str(guard_path),
        "FASTSSE_INGEST": service.url,
        "FASTSSE_INGEST_TOKEN": INGEST_SECRET,
        "FASTSSE_SPOOL_DIR": str(home / "spool"),
    }
    log = open(home / "proxy.log", "w")  # noqa: SIM115 - open while the proxy runs
    process = subprocess.Popen(
        [str(pin.directory / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=home,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_answering(url + "/health/liveliness", process, timeout=120):
            pytest.fail(f"the LiteLLM proxy did not start: {(home / 'proxy.log').read_text()[-3000:]}")
        yield SimpleNamespace(url=url, key=key, log=home / "proxy.log")
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture(scope="session")
def matrix_rows():
    yield ROWS
    if ROWS:
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "e2e-matrix.json").write_text(json.dumps(ROWS, indent=1))
        (ARTIFACTS / "e2e-matrix.md").write_text(markdown(ROWS))


def markdown(rows: list[dict]) -> str:
    """The grid the README shows (each client's grade per fault, with its request count when
    it made more than one, and the verdict stored for the faulted attempt), then every case."""
    seen = {row["fault"] for row in rows}
    faults = [fault for fault in FAULTS if fault in seen]
    cell = {(row["client"], row["fault"]): row for row in rows}
    lines = ["| client | " + " | ".join(faults) + " |", "|---|" + "---|" * len(faults)]
    for client in dict.fromkeys(row["client"] for row in rows):
        version = next(row["version"] for row in rows if row["client"] == client)
        cells = []
        for fault in faults:
            row = cell.get((client, fault))
            cells.append(
                "—" if row is None else row["grade"] + (f" ({row['requests']})" if row["requests"] > 1 else "")
            )
        lines.append(f"| {client} {version} | " + " | ".join(cells) + " |")
    stored = {fault: sorted({row["stored"].split(",")[0] for row in rows if row["fault"] == fault}) for fault in faults}
    lines.append("| **stored** | " + " | ".join("/".join(stored[f]) for f in faults) + " |")
    lines += ["", "| client | fault | exit | printed | requests | said | stored |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['client']} | {row['fault']} | {row['exit']} | {row['printed']} | "
            f"{row['requests']} | {row['said'].replace('|', '/')} | {row['stored']} |"
        )
    return "\n".join(lines) + "\n"

"""One mock provider, one verdict service (SQLite) and one tap in front of the mock for the
whole matrix; the matrix's rows are written to test-artifacts/ when the session ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtests.wire import FAULTS
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

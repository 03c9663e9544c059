"""One mock provider for the guard's tests that talk to a real server."""

from __future__ import annotations

import pytest

from tests.loadtests.mock_helpers import Mock

# An application's reporter's credential (REPORT_TOKENS): its verdicts are myapp's.
REPORT_SECRET = "report-secret-of-myapp"


@pytest.fixture(scope="session")
def mock(tmp_path_factory):
    running = Mock(tmp_path_factory.mktemp("guard-mock"))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def service(tmp_path_factory):
    """The verdict service on SQLite, on a real socket."""
    from fastsse_service.app import create_app
    from fastsse_service.config import Settings
    from fastsse_service.db import migrate
    from tests.service.conftest import TOKENS, ThreadServer

    url = f"sqlite:///{tmp_path_factory.mktemp('guard-db') / 'verdicts.sqlite3'}"
    migrate(url)
    settings = Settings(
        database_url=url,
        ingest_tokens=TOKENS["INGEST_TOKENS"],
        report_tokens=f"myapp:{REPORT_SECRET}",
        read_tokens=TOKENS["READ_TOKENS"],
        retention_days=0,
    )
    with ThreadServer(create_app(settings)) as running:
        yield running

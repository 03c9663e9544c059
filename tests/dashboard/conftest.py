"""The dashboard in a real headless Chromium (Debian's, driven by Playwright for Python; never a
browser Playwright downloads), against the service as a real process.

Where Chromium or Playwright is missing these tests skip with the reason, unless
FASTSSE_REQUIRE_BROWSER=1 (set by .ci/run), where they fail (tests/dependencies.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import dependencies
from tests.service.conftest import (  # noqa: F401  (fixtures)
    INGEST,
    READ,
    REPO,
    TOKENS,
    database_url,
    postgres_url,
    service_process,
    sqlite_url,
)

ARTIFACTS = REPO / "test-artifacts"


# Module-wide, not session-wide: Playwright's sync API keeps an event loop running in this
# thread while it is open, and later tests call asyncio.run().
@pytest.fixture(scope="module")
def browser():
    chromium = dependencies.browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS

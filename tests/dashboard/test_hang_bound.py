"""A test that hangs fails at its bound instead of spending the suite's time limit.

Every test is bounded (``timeout`` in pyproject.toml, pytest-timeout).  The dashboard's tests
once hung for minutes in a browser call that never returned; these hold the bound to that case:
a Playwright call that never returns is interrupted, the test fails with where it waited, and
the next test of the module drives the same browser."""

from __future__ import annotations

import subprocess
import sys

from tests import dependencies

HANGS = """
import pytest
from playwright.sync_api import sync_playwright


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path={chromium!r},
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


def test_a_call_that_never_returns(browser):
    page = browser.new_page()
    page.evaluate("new Promise(() => {{}})")  # no timeout of Playwright's own bounds this


def test_the_next_one(browser):
    page = browser.new_page()
    page.set_content("<p>still here</p>")
    assert page.inner_text("p") == "still here"
"""


def test_the_suite_bounds_every_test(request):
    assert request.config.pluginmanager.hasplugin("timeout")
    assert float(request.config.getini("timeout")) == 300
    assert request.config.getini("timeout_method") == "signal"


def test_a_browser_call_that_hangs_fails_at_the_bound_and_the_browser_goes_on(tmp_path):
    chromium = dependencies.browser()
    (tmp_path / "test_hangs.py").write_text(HANGS.format(chromium=chromium))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "timeout=5", "-o", "timeout_method=signal",
         "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "1 failed, 1 passed" in output, output
    assert "Timeout (>5.0s) from pytest-timeout" in output, output
    assert "page.evaluate" in output, output  # where it waited

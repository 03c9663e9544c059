"""What some tests need from the machine, checked in one place: one function per dependency,
which returns what the test uses (a connection, a path).

Where something is missing, the test skips, saying what to install; with the dependency's
FASTSSE_REQUIRE_* variable set to 1 (``.ci/run`` sets them all), it fails instead, so that CI
never passes by skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

POSTGRES_ADMIN = os.environ.get("POSTGRES_ADMIN_DSN", "host=127.0.0.1 port=5432 dbname=postgres user=postgres")
CHROMIUM = os.environ.get("FASTSSE_CHROMIUM", "/usr/bin/chromium")


def _missing(variable: str, what: str) -> NoReturn:
    """Skip, or fail where ``FASTSSE_REQUIRE_<variable>=1``; ``what``: what is missing and how
    to get it."""
    if os.environ.get(f"FASTSSE_REQUIRE_{variable}") == "1":
        pytest.fail(f"{what} (required here: FASTSSE_REQUIRE_{variable}=1)")
    pytest.skip(what)


def _program(variable: str, name: str, install: str) -> str:
    found = shutil.which(name)
    if found is None:
        _missing(variable, f"{name} is not installed ({install})")
    return found


def postgres():
    """FASTSSE_REQUIRE_POSTGRES: an autocommit connection to the shared PostgreSQL server's
    admin database (POSTGRES_ADMIN_DSN, default 127.0.0.1:5432 with trust auth)."""
    import psycopg

    try:
        return psycopg.connect(POSTGRES_ADMIN, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        _missing(
            "POSTGRES",
            f"PostgreSQL is not reachable at {POSTGRES_ADMIN} (apt-get install postgresql, and start it): {exc}",
        )


def postgres_server_programs() -> Path:
    """FASTSSE_REQUIRE_POSTGRES: the directory of PostgreSQL's initdb and pg_ctl, for a
    throwaway server of a test's own (loadtests/throwaway_postgres.py)."""
    from loadtests.throwaway_postgres import PostgresToolsMissing, postgres_bin

    try:
        return postgres_bin()
    except PostgresToolsMissing as exc:
        _missing("POSTGRES", f"{exc} (apt-get install postgresql)")


def browser() -> str:
    """FASTSSE_REQUIRE_BROWSER: Debian's Chromium (FASTSSE_CHROMIUM, default
    /usr/bin/chromium), and Playwright for Python to drive it (never a browser of its own)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("BROWSER", "Playwright for Python is not installed (pip install playwright)")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        _missing("BROWSER", f"no Chromium at {CHROMIUM} (apt-get install chromium, or set FASTSSE_CHROMIUM)")
    return CHROMIUM


def promtool() -> str:
    """FASTSSE_REQUIRE_PROMTOOL: Prometheus' promtool, for the alert rules and the Grafana
    dashboard's queries."""
    return _program("PROMTOOL", "promtool", "apt-get install prometheus")


def wrk() -> str:
    """FASTSSE_REQUIRE_WRK: the wrk load generator, for the overload run."""
    return _program("WRK", "wrk", "apt-get install wrk")


def haproxy() -> str:
    """FASTSSE_REQUIRE_HAPROXY: HAProxy, in front of two replicas (deploy/haproxy.cfg)."""
    return _program("HAPROXY", "haproxy", "apt-get install haproxy")

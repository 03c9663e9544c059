"""What some tests need from the machine, checked in one place.

Where something is missing, a test skips with what to install; with its FASTSSE_REQUIRE_*
variable set to 1 (``.ci/run`` sets them all), it fails instead, so that CI never passes by
skipping.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

POSTGRES_ADMIN = os.environ.get("POSTGRES_ADMIN_DSN", "host=127.0.0.1 port=5432 dbname=postgres user=postgres")
CHROMIUM = os.environ.get("FASTSSE_CHROMIUM", "/usr/bin/chromium")


def missing(variable: str, what: str) -> NoReturn:
    """Skip, or fail where ``FASTSSE_REQUIRE_<variable>=1``; ``what``: what is missing and how
    to get it."""
    if os.environ.get(f"FASTSSE_REQUIRE_{variable}") == "1":
        pytest.fail(f"{what} (required here: FASTSSE_REQUIRE_{variable}=1)")
    pytest.skip(what)


def program(variable: str, name: str, install: str) -> str:
    """The path of a command-line program."""
    found = shutil.which(name)
    if found is None:
        missing(variable, f"{name} is not installed ({install})")
    return found


def postgres_admin():
    """A connection to the shared PostgreSQL server's admin database (POSTGRES_ADMIN_DSN)."""
    import psycopg

    try:
        return psycopg.connect(POSTGRES_ADMIN, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        missing("POSTGRES", f"PostgreSQL is not reachable at {POSTGRES_ADMIN}: {exc}")


def postgres_tools_missing(reason: str) -> NoReturn:
    """initdb and pg_ctl, for a throwaway PostgreSQL server of a test's own."""
    missing("POSTGRES", reason)


def browser_missing(reason: str) -> NoReturn:
    """Debian's Chromium (FASTSSE_CHROMIUM), driven by Playwright."""
    missing("BROWSER", f"{reason} (apt-get install chromium; pip install playwright)")


def promtool() -> str:
    return program("PROMTOOL", "promtool", "apt-get install prometheus")


def wrk() -> str:
    return program("WRK", "wrk", "apt-get install wrk")


def haproxy() -> str:
    return program("HAPROXY", "haproxy", "apt-get install haproxy")

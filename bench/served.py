"""Serves a benchmark's app exactly as ``fastsse-service serve`` serves the service (event loop,
HTTP parser, logging), on the ``--port`` and ``--workers`` of its command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def serve(app: str, *, factory: bool = False, migrate: bool = False) -> None:
    """``app`` as uvicorn names it (``bench.bare_app:app``); ``migrate``: bring the database of
    DATABASE_URL to the newest schema first, as ``serve`` does."""
    sys.path.insert(0, str(REPO))
    from fastsse_service.cli import run_server
    from fastsse_service.config import get_settings
    from fastsse_service.db import migrate as migrate_database

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    settings = get_settings()
    if migrate:
        migrate_database(settings.database_url)
    run_server(app, factory=factory, host="127.0.0.1", port=args.port, workers=args.workers, settings=settings)

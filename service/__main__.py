"""fastsse-service (or python -m service) serve | migrate | prune"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import sys
import tempfile
from datetime import timedelta

import fastsse

from .auth import ConfigError, parse_tokens
from .config import get_settings
from .db import make_engine, migrate, utcnow


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="fastsse-service",
        description="The fastsse ingestion service: gateways post captured streams, it stores "
                    "their verdicts.  Settings come from the environment (see the README).")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {fastsse.__version__} "
                                f"({fastsse.IMPLEMENTATION} scanner)")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="apply migrations, then run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    commands.add_parser("migrate", help="apply migrations only")
    prune = commands.add_parser("prune", help="delete verdict rows past RETENTION_DAYS now")
    prune.add_argument("--days", type=float, help="override RETENTION_DAYS")
    args = parser.parse_args(argv)

    try:
        settings = get_settings()
        parse_tokens(settings.ingest_tokens, settings.ingest_tokens_file, setting="INGEST_TOKENS")
        parse_tokens(settings.read_tokens, settings.read_tokens_file, setting="READ_TOKENS")
    except (ConfigError, ValueError) as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s: %(message)s")

    migrate(settings.database_url)
    if args.command == "migrate":
        return 0
    if args.command == "prune":
        from .writer import prune as prune_rows

        days = settings.retention_days if args.days is None else args.days
        engine = make_engine(settings.database_url)
        deleted = prune_rows(engine, utcnow() - timedelta(days=days))
        print(f"deleted {deleted} verdict rows older than {days} days")
        return 0
    return _serve(args, settings)


def server_options(settings) -> dict:
    """How ``serve`` runs uvicorn (its event loop and HTTP parser are uvicorn's "auto": uvloop
    and httptools, which the service depends on); the benchmark serves its bare endpoint with
    the same options."""
    import uvicorn

    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["loggers"]["service"] = {"handlers": ["default"], "level": settings.log_level.upper(),
                                        "propagate": False}
    return {"log_level": settings.log_level, "log_config": log_config,
            "access_log": settings.access_log}


def server_stack() -> str:
    """The event loop and HTTP parser uvicorn picks here."""
    import importlib.util

    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return f"uvicorn, {loop}, {http}"


def run_server(app: str, *, host: str, port: int, workers: int, settings,
               factory: bool = False) -> None:
    import uvicorn

    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Every worker writes its metrics here and /metrics merges them.  Set before any worker
        # imports prometheus_client: it picks its storage at import time.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="fastsse-metrics-")
    uvicorn.run(app, factory=factory, host=host, port=port, workers=workers,
                **server_options(settings))


def _serve(args, settings) -> int:
    run_server("service.app:served_app", factory=True, host=args.host, port=args.port,
               workers=args.workers, settings=settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())

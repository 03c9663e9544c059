"""fastsse-service (or python -m fastsse_service) serve | migrate | prune | tap | sign"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import fastsse

from .auth import ConfigError, all_credentials
from .config import TapSettings, get_settings
from .db import make_engine, migrate, utcnow


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="fastsse-service",
        description="The fastsse ingestion service: gateways post captured streams, it stores "
        "their verdicts.  Settings come from the environment (see the docs: operators/install.md).",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {fastsse.__version__} ({fastsse.IMPLEMENTATION} scanner)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="apply migrations, then run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    commands.add_parser("migrate", help="apply migrations only")
    prune = commands.add_parser("prune", help="delete verdict rows past RETENTION_DAYS now")
    prune.add_argument("--days", type=float, help="override RETENTION_DAYS")
    tap = commands.add_parser(
        "tap",
        help="a reverse proxy in front of an LLM API that posts each streamed answer "
        "to this service (settings: TAP_* variables, see the docs: gateways/tap.md)",
    )
    tap.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        type=_listen_address,
        help="HOST:PORT to listen on (':8080' is every interface; default 127.0.0.1:8080)",
    )
    tap.add_argument("--upstream", help="the LLM API, such as https://api.openai.com (TAP_UPSTREAM)")
    tap.add_argument("--ingest", help="the verdict service, such as http://verdicts:8000 (TAP_INGEST)")
    tap.add_argument(
        "--token", help="an ingest token of the service (TAP_INGEST_TOKEN; better kept out of the command line)"
    )
    tap.add_argument("--token-file", type=Path, help="a file holding the ingest token (TAP_INGEST_TOKEN_FILE)")
    tap.add_argument(
        "--tool", help="label every stream with this tool instead of telling it from the User-Agent (TAP_TOOL)"
    )
    sign = commands.add_parser(
        "sign",
        help="print the headers a gateway sends to post FILE to TARGET, signed with its secret "
        "(see the docs: gateways/signing.md)",
    )
    secret = sign.add_mutually_exclusive_group(required=True)
    secret.add_argument("--secret", help="the gateway's secret (better kept out of the command line)")
    secret.add_argument("--secret-file", type=Path, help="a file holding the gateway's secret")
    sign.add_argument(
        "--target", required=True, help="the path and query the post goes to, as sent: '/v1/streams?stream_id=...'"
    )
    sign.add_argument(
        "--content-encoding",
        default="",
        help="the Content-Encoding the post is sent with, if FILE is compressed (gzip, deflate, zstd)",
    )
    sign.add_argument("--id", help="the webhook-id, unique per post (default: a new random one)")
    sign.add_argument("--timestamp", type=int, help="the webhook-timestamp, Unix seconds (default: now)")
    sign.add_argument("file", type=Path, help="the body to post ('-': standard input)")
    args = parser.parse_args(argv)
    if args.command == "tap":
        return _tap(args)
    if args.command == "sign":
        return _sign(args)

    try:
        settings = get_settings()
        all_credentials(settings)
    except (ConfigError, ValueError) as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s: %(message)s")

    migrate(settings.database_url)
    if args.command == "migrate":
        return 0
    if args.command == "prune":
        from .retention import prune as prune_rows

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
    log_config["loggers"][__package__] = {
        "handlers": ["default"],
        "level": settings.log_level.upper(),
        "propagate": False,
    }
    # X-Forwarded-For names the client only when a proxy the settings trust sent it (uvicorn
    # believes 127.0.0.1's by default: anything on the host could name any address, to dodge
    # the budget of failed credentials or to spend another's).  The tap trusts none.
    trusted = getattr(settings, "forwarded_allow_ips", "")
    return {
        "log_level": settings.log_level,
        "log_config": log_config,
        "access_log": getattr(settings, "access_log", False),
        "http": http_protocol(settings),
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted or None,
    }


def http_protocol(settings):
    """uvicorn's httptools protocol with the bounds of service/http_limits.py: by its import
    path for the service (each worker reads the settings), as a class for the tap."""
    if isinstance(settings, TapSettings):
        from .http_limits import bounded_protocol

        return bounded_protocol(settings, settings_prefix="TAP_")
    return f"{__package__}.http_limits:BoundedHttpToolsProtocol"


# Descriptors a worker needs besides its connections: the database's, the log's, the
# metrics' files, the spool's.
FILE_RESERVE = 256


def raise_open_file_limit(max_connections: int, setting: str) -> None:
    """Each connection is a file descriptor: raise the process's soft limit (its workers
    inherit it) to fit ``max_connections`` and a reserve, as far as the hard limit allows, and
    warn if that is not enough (a worker out of descriptors refuses everything)."""
    import resource

    wanted = max_connections + FILE_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    if soft != resource.RLIM_INFINITY and soft < wanted:
        logging.getLogger(__name__).warning(
            "the open-file limit (%d) is below %s (%d) and a reserve of %d: lower %s or raise the "
            "limit (systemd: LimitNOFILE)",
            soft,
            setting,
            max_connections,
            FILE_RESERVE,
            setting,
        )


def run_server(app: str, *, host: str, port: int, workers: int, settings, factory: bool = False) -> None:
    import uvicorn

    raise_open_file_limit(settings.max_connections, "MAX_CONNECTIONS")
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Every worker writes its metrics here and /metrics merges them.  Set before any worker
        # imports prometheus_client: it picks its storage at import time.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="fastsse-metrics-")
    uvicorn.run(app, factory=factory, host=host, port=port, workers=workers, **server_options(settings))


def _serve(args, settings) -> int:
    run_server(
        f"{__package__}.app:served_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        settings=settings,
    )
    return 0


def _sign(args) -> int:
    from .auth import MESSAGE_ID, sign_post

    if args.id is not None and not MESSAGE_ID.fullmatch(args.id):
        print("--id must be 1 to 256 visible ASCII characters", file=sys.stderr)
        return 2
    try:
        secret = args.secret if args.secret is not None else args.secret_file.read_text().strip()
        body = sys.stdin.buffer.read() if str(args.file) == "-" else args.file.read_bytes()
    except OSError as exc:
        print(f"cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    if not secret:
        print("the secret is empty", file=sys.stderr)
        return 2
    if not args.target.startswith("/") or any(c.isspace() for c in args.target):
        print("--target is the path and query as sent: it starts with / and holds no spaces", file=sys.stderr)
        return 2
    headers = sign_post(
        secret, args.target, body, content_encoding=args.content_encoding, msg_id=args.id, timestamp=args.timestamp
    )
    if args.content_encoding:
        headers["content-encoding"] = args.content_encoding
    for name, value in headers.items():
        print(f"{name}: {value}")
    return 0


def _listen_address(text: str) -> tuple[str, int]:
    host, separator, port = text.rpartition(":")
    if not separator or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (or :PORT)")
    return (host.strip("[]") or "0.0.0.0"), int(port)


def _tap(args) -> int:
    from pydantic import ValidationError

    overrides = {
        name: value
        for name, value in (
            ("upstream", args.upstream),
            ("ingest", args.ingest),
            ("ingest_token", args.token),
            ("ingest_token_file", args.token_file),
            ("tool", args.tool),
        )
        if value is not None
    }
    try:
        settings = TapSettings(**overrides)
        if settings.ingest_token_file is not None:
            token = settings.ingest_token_file.read_text().strip()
            settings = settings.model_copy(update={"ingest_token": token})
        if not settings.upstream:
            raise ConfigError("no upstream: give --upstream or TAP_UPSTREAM")
    except (ConfigError, ValidationError, OSError) as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    if not settings.ingest_token:
        print(
            "warning: no ingest token (--token-file or TAP_INGEST_TOKEN): the service will "
            "refuse the posts unless it runs without INGEST_TOKENS",
            file=sys.stderr,
        )
    from .tap import run

    host, port = args.listen
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s: %(message)s")
    raise_open_file_limit(settings.max_connections, "TAP_MAX_CONNECTIONS")
    options = server_options(settings)
    run(settings, host, port, options["log_config"], options["http"])  # (proxy headers: off)
    return 0

"""The FastAPI application: built by create_app(), which owns the engine and the writer."""

from __future__ import annotations

import gc
import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy import exc as sqlalchemy_errors
from starlette.datastructures import State

import fastsse

from . import metrics
from .admission import Admission
from .api.routes import categories, dashboard, health, rates, retries, series, streams, verdicts
from .auth import MIN_SECRET_LENGTH, all_credentials
from .config import Settings, get_settings
from .db import make_engine, make_sessionmaker
from .failed_credentials import FailedCredentials
from .judging import sanitize_tool
from .stores import Store, open_store
from .writer import VerdictWriter

log = logging.getLogger(__name__)

DESCRIPTION = """Gateways post the raw bytes of each LLM stream they proxied; the service judges
it with fastsse, stores the verdict (never the payload) and answers with it."""


# The garbage collector of a worker process (see served_app): every request leaves a few hundred
# short-lived objects, so that with the default threshold (700) the collector ran every few
# requests and, now and then, walked every object of the process; that cost a fifth of the
# worker's time.  Objects that exist at start-up are frozen out of its walks, and it runs once
# per GEN0_THRESHOLD new objects.  It still collects every cycle, only less often.
GEN0_THRESHOLD = 10_000


class AppState(State):
    """Starlette's State, whose attributes are also the instance's own, so that they are read
    as plain attributes: Starlette's finds one only after the ordinary lookup has failed,
    raising an AttributeError and calling its __getattr__ (about 0.45 µs a read; a post reads
    the app's state some ten times).  Every way of setting or deleting one keeps both in step."""

    def __setattr__(self, key, value) -> None:
        self._state[key] = value
        object.__setattr__(self, key, value)

    def __delattr__(self, key) -> None:
        del self._state[key]
        object.__delattr__(self, key)

    __setitem__ = __setattr__
    __delitem__ = __delattr__


class Service(FastAPI):
    """The service's app: FastAPI's, except that POST /v1/streams and /v1/streams/batch, the hot
    path, go straight to ``streams.serve_post`` (plain ASGI), before FastAPI's middleware and
    routing.  So a middleware added to the app (``add_middleware``), and FastAPI's own
    OpenTelemetry instrumentation where a provider is configured, never see those posts: what
    they must do for them goes into ``serve_post``."""

    ingest_fast_path = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.state = AppState()

    async def __call__(self, scope, receive, send) -> None:
        if not (self.ingest_fast_path and scope["type"] == "http" and scope["method"] == "POST"):
            await super().__call__(scope, receive, send)
        elif scope["path"] == streams.router.prefix:
            await streams.serve_post(self.state, scope, receive, send)
        elif scope["path"] == streams.BATCH_PATH:
            await streams.serve_post(self.state, scope, receive, send, batch=True)
        else:
            await super().__call__(scope, receive, send)


def served_app(store: Store | None = None) -> Service:
    """The app as ``fastsse-service serve`` runs it: one per worker process, which it owns, so
    it also tunes that process's garbage collector once the app has started."""
    return create_app(store=store, tune_gc=True)


def create_app(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    tune_gc: bool = False,
    ingest_fast_path: bool = True,
) -> Service:
    """The service's app.  ``store``: where verdicts go (by default the store of
    ``settings.database_url``'s database; stores.DiscardingStore() keeps nothing)."""
    settings = settings or get_settings()
    ingest, report, read = all_credentials(settings)
    # The reporters' names are their verdicts' tools: each gets its own metric label.
    metrics_tools = settings.metrics_tool_names() | frozenset(sanitize_tool(name) for name in report.names())

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engine = make_engine(settings.database_url)
        writer = VerdictWriter(
            store or open_store(engine),
            queue_size=settings.write_queue_size,
            batch_size=settings.write_batch_size,
            batch_wait_seconds=settings.write_batch_wait_seconds,
            metrics_tools=metrics_tools,
            retention_days=settings.retention_days,
            retention_interval_seconds=settings.retention_interval_seconds,
            webhook_tolerance_seconds=settings.webhook_tolerance_seconds,
        )
        app.state.engine = engine
        app.state.sessionmaker = make_sessionmaker(engine)
        app.state.writer = writer
        metrics.prepare_series(metrics_tools, settings.write_queue_size)
        if not ingest:
            log.warning("INGEST_TOKENS is empty: every POST /v1/streams will get 401")
        if fastsse.IMPLEMENTATION != "cython":
            log.warning(
                "fastsse's compiled scanner is not loaded (FASTSSE_NO_EXTENSIONS, or fastsse installed "
                "without a C compiler): its Python twin gives the same verdicts but costs 200 to 5,000 "
                "times more on hostile bodies. Each post is judged in a thread and for at most "
                "MAX_SCAN_SECONDS (%g s); install fastsse with its compiled scanner to serve at speed",
                settings.max_scan_seconds,
            )
        for setting, credentials in (("INGEST_TOKENS", ingest), ("REPORT_TOKENS", report), ("READ_TOKENS", read)):
            for name in credentials.short():  # the name only: never a secret in the log
                log.warning(
                    "%s: the secret of %r is shorter than %d characters and can be guessed; "
                    "use a longer one (python -c 'import secrets; print(secrets.token_urlsafe(32))')",
                    setting,
                    name,
                    MIN_SECRET_LENGTH,
                )
        await writer.start()
        if tune_gc:
            gc.collect()
            gc.freeze()
            gc.set_threshold(GEN0_THRESHOLD, *gc.get_threshold()[1:])
        try:
            yield
        finally:
            await writer.stop()
            engine.dispose()
            metrics.forget_this_process()

    app = Service(
        title="fastsse ingestion service",
        description=DESCRIPTION,
        version=fastsse.__version__,
        lifespan=lifespan,
        # FastAPI's API pages load their scripts from a CDN, on the origin of the dashboard's
        # session cookie: the service serves /openapi.json, and the docs site renders it.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.admission = Admission(settings, gateways=len(ingest))
    app.state.failed_credentials = FailedCredentials(
        settings.failed_credentials_burst, settings.failed_credentials_per_minute
    )
    app.state.ingest_credentials = ingest
    app.state.report_credentials = report
    app.state.read_credentials = read
    app.ingest_fast_path = ingest_fast_path
    for module in (streams, verdicts, rates, series, retries, categories, health, dashboard):
        # The routers' routes go onto the app itself: include_router() would keep each router
        # as a level of its own that FastAPI resolves on every request (about 8 µs of each
        # post), and these routers carry nothing but their routes (prefix and tags are in them).
        app.router.routes.extend(module.router.routes)
    app.mount("/static", StaticFiles(directory=dashboard.DASHBOARD / "static"), name="static")
    for unavailable in (
        sqlalchemy_errors.OperationalError,
        sqlalchemy_errors.InterfaceError,
        sqlalchemy_errors.TimeoutError,
    ):
        app.add_exception_handler(unavailable, _database_unavailable)
    return app


# Posts answer 503 through the writer; a read that finds the database down, unreachable or out
# of connections answers the same, without a traceback per request.
READ_RETRY_AFTER_SECONDS = "5"


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    log.warning("%s %s: the database is unavailable (%s)", request.method, request.url.path, type(exc).__name__)
    return JSONResponse(
        {"detail": "the database is unavailable; retry later"},
        status_code=503,
        headers={"Retry-After": READ_RETRY_AFTER_SECONDS},
    )

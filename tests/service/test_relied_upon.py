"""What the service relies on in its dependencies beyond their documented API.

pyproject.toml gives these packages upper bounds (and constraints.txt pins the versions the suite
runs with).  When an upgrade is tried, these tests say at once which reliance broke and which
code of ours leans on it, instead of a hostile-input test failing obscurely.
"""

from __future__ import annotations

import asyncio
import inspect

import httpx
import pytest
import sqlalchemy
from fastapi import APIRouter, FastAPI

from fastsse_service import http_limits


def where(code: str) -> str:
    return f"relied upon by {code}: read it before raising the upper bound in pyproject.toml"


def test_uvicorn_httptools_protocol_has_the_hooks_bounded_heads_override():
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    hooks = (
        "connection_made",
        "data_received",
        "connection_lost",
        "on_message_begin",
        "on_url",
        "on_header",
        "on_headers_complete",
        "send_400_response",
        "on_response_complete",
    )
    for hook in hooks:
        assert callable(getattr(HttpToolsProtocol, hook, None)), (hook, where("service/http_limits.py"))
    # the state the subclass reads: the transport, the event loop, the headers parsed so far,
    # the server's connections (a set the protocol joins in connection_made), the pipeline of
    # requests waiting for the one in progress
    source = inspect.getsource(HttpToolsProtocol)
    for attribute in ("self.transport", "self.loop", "self.headers", "self.connections.add(self)", "self.pipeline"):
        assert attribute in source, (attribute, where("service/http_limits.py"))
    assert issubclass(http_limits.BoundedHttpToolsProtocol, HttpToolsProtocol)


def test_httptools_stops_parsing_when_a_callback_raises():
    """BoundedHttpToolsProtocol._count raises inside on_url/on_header to stop a head that is too
    large; httptools must surface it as a parser error, not swallow it."""
    import httptools

    class Callbacks:
        def on_url(self, url: bytes) -> None:
            raise RuntimeError("too large")

    parser = httptools.HttpRequestParser(Callbacks())
    with pytest.raises(httptools.HttpParserCallbackError):
        parser.feed_data(b"GET /x HTTP/1.1\r\n")


def test_fastapi_resolves_routes_appended_to_its_router_and_lets_call_be_overridden():
    """service/app.py extends ``app.router.routes`` with each router's routes (no
    include_router level) and overrides ``FastAPI.__call__`` for the ingest fast path."""
    router = APIRouter(prefix="/r")

    @router.get("/x")
    def x() -> dict:
        return {"ok": True}

    seen: list[str] = []

    class App(FastAPI):
        async def __call__(self, scope, receive, send) -> None:
            seen.append(scope["type"])
            await super().__call__(scope, receive, send)

    app = App()
    app.router.routes.extend(router.routes)

    async def get() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            return await client.get("/r/x")

    answer = asyncio.run(get())
    assert answer.status_code == 200 and answer.json() == {"ok": True}, where("service/app.py create_app")
    assert "http" in seen, where("service/app.py Service.__call__")
    assert "/r/x" in app.openapi()["paths"], where("service/app.py (the OpenAPI document lists the routes)")


def test_starlette_names_the_ingest_route_imports():
    from starlette.datastructures import Headers
    from starlette.requests import ClientDisconnect

    assert issubclass(ClientDisconnect, Exception), where("service/ingest.py, service/api/routes/streams.py")
    assert Headers(raw=[(b"a", b"1")])["a"] == "1", where("service/api/routes/streams.py")


def test_prometheus_client_multiprocess_modes_and_collector():
    from prometheus_client import CollectorRegistry, Gauge, multiprocess

    for mode in ("livemax", "livesum"):
        Gauge(f"relied_upon_{mode}", "x", multiprocess_mode=mode, registry=CollectorRegistry())
    assert callable(multiprocess.mark_process_dead), where("service/metrics.py forget_this_process")
    assert callable(multiprocess.MultiProcessCollector), where("service/metrics.py")


def test_psycopg_takes_prepare_threshold_and_prepare():
    import psycopg

    # the connection's threshold (None: prepare only what asks for it)
    assert isinstance(getattr(psycopg.AsyncConnection, "prepare_threshold", None), property), where(
        "service/writer.py (the PostgreSQL store's connection), service/db.py"
    )
    assert "prepare" in inspect.signature(psycopg.AsyncCursor.execute).parameters, where("service/writer.py")


def test_sqlalchemy_pool_connection_exposes_the_driver_connection(tmp_path):
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        connection = engine.raw_connection()
        try:
            driver = connection.driver_connection
            assert driver is not None and callable(driver.execute), where("service/writer.py (the SQLite store)")
        finally:
            connection.close()
    finally:
        engine.dispose()

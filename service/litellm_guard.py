"""fastsse.guard inside LiteLLM: every upstream stream LiteLLM reads, as a library or as its
proxy, judged where it is read, without a network hop; each verdict sent to the service.

As a library, before the first request::

    from fastsse_service.litellm_guard import install
    from fastsse_service.reporter import Reporter

    install(reporter=Reporter("http://verdicts:8000", token, spool_dir="/var/lib/app/spool", tool="litellm"))

As the proxy, by its worker start-up hook (each worker installs it for itself)::

    LITELLM_WORKER_STARTUP_HOOKS=fastsse_service.litellm_guard:install_from_environment \\
    FASTSSE_INGEST=http://verdicts:8000 FASTSSE_INGEST_TOKEN_FILE=/etc/fastsse/token \\
    FASTSSE_SPOOL_DIR=/var/lib/litellm/fastsse-spool litellm --config config.yaml

LiteLLM builds its HTTP clients in several places, and has no public hook for their transport
(checked with litellm 1.110.2): the OpenAI SDK's paths take ``litellm.client_session`` and
``litellm.aclient_session``; litellm's own handlers (Anthropic, Gemini, the Responses API) take
their synchronous transport from ``litellm.sync_transport`` and build their asynchronous one in
``AsyncHTTPHandler.create_async_transport``, which this module wraps.  These are litellm's
internals: the end-to-end matrix (``tests/e2e/``) runs the pinned version, library and proxy,
so an upgrade that moves them fails there first.  Like any client given its own transport,
these no longer read ``HTTPS_PROXY`` from the environment (see the docs' guard page).

What the guard raises reaches LiteLLM in the middle of its stream: LiteLLM turns it into its
own error (``MidStreamFallbackError`` in chat completions), and the proxy sends its client an
error event, so that a cut answer is no longer passed on as a finished one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastsse.guard import UNSEEN, AsyncTransport, Transport

from .reporter import Reporter

# What raises inside LiteLLM by default: what its callers cannot see.  The guard's default
# (UNSEEN); a missing finish reason, which LiteLLM fills in as "stop"; and a tool call the
# model could not form, which LiteLLM reports as "stop" too (Gemini's MALFORMED_FUNCTION_CALL:
# litellm_core_utils/core_helpers.py, _FINISH_REASON_MAP, 1.110.2).  A token limit, reasoning
# only or a filter reach them as LiteLLM's finish_reason (length, content_filter).
RAISE_ON = UNSEEN | {"missing_finish_reason", "tool_call_malformed"}


class _SharedTransport(Transport):
    """litellm.sync_transport: one transport that every handler litellm builds shares, and
    that a handler may close when litellm evicts it from its cache.  Closing it would break
    the others: it is closed with the process."""

    def close(self) -> None:
        pass

    def __exit__(self, *exc_info: Any) -> None:
        pass


def install(*, reporter: Any = None, raise_on: Any = None, on_verdict: Any = None) -> None:
    """Put every upstream stream of litellm in this process through the guard (the options are
    fastsse.guard's; ``raise_on`` is RAISE_ON unless given).  Call it before the first request;
    calling it again replaces the guard."""
    import httpx  # litellm's own client library (it builds and catches httpx's types)
    import litellm
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    options = {"reporter": reporter, "raise_on": RAISE_ON if raise_on is None else raise_on, "on_verdict": on_verdict}
    # The OpenAI SDK's paths (openai/, azure/, text completion), with litellm's own timeouts.
    litellm.client_session = httpx.Client(
        # The guard's transports are httpx's in shape, not by subclassing (it imports no
        # HTTP library).
        transport=Transport(httpx.HTTPTransport(), **options),  # type: ignore[arg-type]
        follow_redirects=True,
        timeout=httpx.Timeout(600.0, connect=10.0),
    )
    # litellm's own synchronous handlers.
    litellm.sync_transport = _SharedTransport(httpx.HTTPTransport(), **options)
    # litellm's own asynchronous handlers, and the OpenAI SDK's async client it builds: the
    # transport litellm would use (its aiohttp one, by default), wrapped.
    original = getattr(AsyncHTTPHandler.create_async_transport, "unguarded", AsyncHTTPHandler.create_async_transport)

    def create_async_transport(*args: Any, **kwargs: Any) -> AsyncTransport:
        inner = original(*args, **kwargs)
        if inner is None:  # litellm's way to ask for httpx's default transport
            context = kwargs.get("ssl_context")
            verify = context if context is not None else kwargs.get("ssl_verify", True)
            inner = httpx.AsyncHTTPTransport(verify=verify, limits=kwargs.get("limits") or httpx.Limits())
        return AsyncTransport(inner, **options)

    create_async_transport.unguarded = original  # type: ignore[attr-defined]
    AsyncHTTPHandler.create_async_transport = staticmethod(create_async_transport)
    AsyncHTTPHandler._create_async_transport = staticmethod(create_async_transport)
    # Clients litellm built before: forgotten, so that the next request builds guarded ones.
    litellm.in_memory_llm_clients_cache.flush_cache()
    for name in ("module_level_client", "module_level_aclient"):
        litellm.__dict__.pop(name, None)


def install_from_environment() -> None:
    """The proxy's start-up hook: ``install`` with a reporter configured by the environment:
    ``FASTSSE_INGEST`` (the service; without it, the guard only raises),
    ``FASTSSE_INGEST_TOKEN`` or ``FASTSSE_INGEST_TOKEN_FILE``, ``FASTSSE_SPOOL_DIR`` (a
    directory of this worker's own is made in it), ``FASTSSE_TOOL`` (default ``litellm``)."""
    reporter = None
    ingest = os.environ.get("FASTSSE_INGEST")
    if ingest:
        token = os.environ.get("FASTSSE_INGEST_TOKEN", "")
        token_file = os.environ.get("FASTSSE_INGEST_TOKEN_FILE")
        if token_file:
            token = Path(token_file).read_text().strip()
        spool = Path(os.environ.get("FASTSSE_SPOOL_DIR", "fastsse-spool")) / f"worker-{os.getpid()}"
        reporter = Reporter(ingest, token, spool_dir=spool, tool=os.environ.get("FASTSSE_TOOL", "litellm"))
    install(reporter=reporter)

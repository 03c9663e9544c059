"""All Prometheus metrics of the service, in base units, with bounded labels only.

With more than one worker process, ``python -m service serve`` sets PROMETHEUS_MULTIPROC_DIR
before any worker starts, and ``render()`` merges every worker's numbers.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)

disable_created_metrics()  # the *_created series only double what a scrape has to carry

STREAM_VERDICTS = Counter(
    "stream_verdicts_total",
    "Verdicts stored, by client tool (allow-listed), protocol, category and silent.",
    ["tool", "protocol", "category", "silent"],
)
MODEL_FALLBACKS = Counter(
    "stream_model_fallbacks_total",
    "Stored streams served by another model than the one requested.",
    ["tool", "protocol"],
)
STREAM_BYTES = Histogram(
    "stream_bytes",
    "Size of the posted streams.",
    buckets=tuple(float(4**k * 1024) for k in range(10)),  # 1 KiB .. 256 MiB
)
SCAN_SECONDS = Histogram(
    "stream_scan_seconds",
    "Time fastsse spent judging one stream (CPU, excluding the upload).",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
INGEST_REQUESTS = Counter(
    "ingest_requests_total",
    "POST /v1/streams answers, by HTTP status (client_disconnected when the upload broke off).",
    ["status"],
)
DB_WRITE_SECONDS = Histogram(
    "db_write_seconds",
    "Time one group-commit transaction took, commit included.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
)
DB_WRITE_BATCH = Histogram(
    "db_write_batch_verdicts",
    "Verdicts written per group-commit transaction.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
)
DB_WRITE_ERRORS = Counter(
    "db_write_errors_total", "Group-commit transactions that failed (the requests got 503)."
)
DB_WRITE_QUEUE_DEPTH = Gauge(
    "db_write_queue_depth",
    "Verdicts waiting for the writer.",
    multiprocess_mode="livesum",
)


def tool_label(tool: str, allowed: frozenset[str]) -> str:
    return tool if tool in allowed else "other"


def forget_this_process() -> None:
    """A worker that stops takes its live gauges with it (counters and histograms stay)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(os.getpid())


def render() -> tuple[bytes, str]:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST


class IngestStatusMiddleware:
    """Counts every answer to the ingest route by status, 401 and 422 included."""

    def __init__(self, app, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return

        async def counting_send(message):
            if message["type"] == "http.response.start":
                INGEST_REQUESTS.labels(str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, counting_send)

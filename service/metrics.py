"""All Prometheus metrics of the service, in base units, with bounded labels only.

Every name starts with ``fastsse_`` and ends in its unit (``_seconds``, ``_bytes``) or, for a
counter, ``_total``.  The series that alert rules divide by (streams and silent streams per
tool and protocol, ingest answers per status) exist from the start at 0, so a rate over them
is 0 rather than absent.

With more than one worker process, ``fastsse-service serve`` sets PROMETHEUS_MULTIPROC_DIR
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

import fastsse

disable_created_metrics()  # the *_created series only double what a scrape has to carry

# The tool label of a tool outside METRICS_TOOLS, so that made-up tool names cannot multiply
# the series a Prometheus server keeps.
OTHER_TOOL = "other"
# The protocol of a verdict is one of fastsse's protocols, or "unknown" when no event named one.
PROTOCOL_LABELS = fastsse.PROTOCOLS + (fastsse.UNKNOWN_PROTOCOL,)
# Answers of POST /v1/streams that exist from the start (others appear when first sent).
INGEST_STATUSES = ("200", "201", "401", "408", "409", "413", "415", "422", "429", "499", "503")

BUILD_INFO = Gauge(
    "fastsse_build_info",
    "Always 1; the labels say which fastsse runs and which scanner twin.",
    ["version", "implementation"],
    multiprocess_mode="livemax",
)
STREAMS = Counter(
    "fastsse_streams_total",
    "Verdicts stored, by client tool (allow-listed, else 'other') and protocol.",
    ["tool", "protocol"],
)
SILENT_STREAMS = Counter(
    "fastsse_silent_streams_total",
    "Stored verdicts that failed while the transport looked clean (silent=true).",
    ["tool", "protocol"],
)
STREAM_VERDICTS = Counter(
    "fastsse_stream_verdicts_total",
    "Verdicts stored, by tool, protocol, category and whether the failure was silent.",
    ["tool", "protocol", "category", "silent"],
)
MODEL_FALLBACKS = Counter(
    "fastsse_stream_model_fallbacks_total",
    "Stored streams served by another model than the one requested.",
    ["tool", "protocol"],
)
# Retry chains (verdicts posted with a request_id), as the rollups count them (and GET
# /v1/retries reads them): what each counts is rollups.rollup_counts.
REQUESTS = Counter(
    "fastsse_requests_total",
    "First attempts of requests posted with a request_id.",
    ["tool", "protocol"],
)
FIRST_ATTEMPT_FAILURES = Counter(
    "fastsse_first_attempt_failures_total",
    "First attempts posted with a request_id that failed.",
    ["tool", "protocol"],
)
RETRIES = Counter(
    "fastsse_retries_total",
    "Attempts that followed an earlier attempt of their request.",
    ["tool", "protocol"],
)
RETRY_RECOVERIES = Counter(
    "fastsse_retry_recoveries_total",
    "Retries that completed after a failed attempt.",
    ["tool", "protocol"],
)
RETRIES_OF_FINAL = Counter(
    "fastsse_retries_of_final_total",
    "Retries of a failure that was not retryable (a token limit, a filter).",
    ["tool", "protocol"],
)
# the retry counters in the order rollups.rollup_counts gives their counts, after the first four
RETRY_COUNTERS = (REQUESTS, FIRST_ATTEMPT_FAILURES, RETRIES, RETRY_RECOVERIES, RETRIES_OF_FINAL)
STREAM_BYTES = Histogram(
    "fastsse_stream_size_bytes",
    "Size of the posted streams, stored or not.",
    buckets=tuple(float(4**k * 1024) for k in range(10)),  # 1 KiB .. 256 MiB
)
SCAN_SECONDS = Histogram(
    "fastsse_stream_scan_duration_seconds",
    "Time fastsse spent judging one stream (CPU, excluding the upload).",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
INGEST_REQUESTS = Counter(
    "fastsse_ingest_requests_total",
    "POST /v1/streams answers, by HTTP status (499 when the upload broke off: nobody heard it); "
    "a batch's 207 counts each of its streams by its own status instead.",
    ["status"],
)
FAILED_CREDENTIAL_KINDS = ("ingest_token", "signature", "read_token", "signin")
FAILED_CREDENTIALS = Counter(
    "fastsse_failed_credentials_total",
    "Credentials that matched nothing, by kind: ingest_token and read_token (a bearer token), "
    "signature (a signed post's head), signin (the dashboard's form). Each costs its client "
    "address a share of FAILED_CREDENTIALS_BURST (past it: 429).",
    ["kind"],
)
CONNECTION_CLOSE_REASONS = (
    "idle",
    "head_timeout",
    "head_too_large",
    "transfer_coding",
    "too_many_connections",
    "answer_not_taken",
)
CONNECTIONS_CLOSED = Counter(
    "fastsse_connections_closed_total",
    "Connections the server closed, by reason: before a request was whole, idle (nothing sent by "
    "HEAD_TIMEOUT_SECONDS), head_timeout (408), head_too_large (431), transfer_coding (501, a "
    "Transfer-Encoding other than chunked), too_many_connections (503, past MAX_CONNECTIONS); or "
    "answer_not_taken (aborted: the client took no byte of its answer for "
    "ANSWER_IDLE_TIMEOUT_SECONDS).",
    ["reason"],
)
DB_WRITE_SECONDS = Histogram(
    "fastsse_db_write_duration_seconds",
    "Time one group-commit transaction took, commit included.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
)
DB_WRITE_BATCH = Histogram(
    "fastsse_db_write_batch_verdicts",
    "Verdicts written per group-commit transaction.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
)
INGEST_IN_PROGRESS = Gauge(
    "fastsse_ingest_posts_in_progress",
    "Posts admitted and not answered yet; a worker refuses past MAX_INFLIGHT_POSTS.",
    multiprocess_mode="livesum",
)
INGEST_OUTCOME_UNKNOWN = Counter(
    "fastsse_ingest_outcome_unknown_total",
    "Posts answered 503 whose verdict may still be committed, by reason: commit_timeout "
    "(WRITE_TIMEOUT_SECONDS passed) or database_error (the database failed while committing). "
    "A retry is safe: the same stream_id and bytes get the stored verdict (200) if it was.",
    ["reason"],
)
DB_WRITE_ERRORS = Counter(
    "fastsse_db_write_errors_total",
    "Group-commit transactions that failed (their requests got 503).",
)
DB_WRITE_QUEUE_DEPTH = Gauge(
    "fastsse_db_write_queue_depth",
    "Verdicts waiting for the writer.",
    multiprocess_mode="livesum",
)
DB_WRITE_QUEUE_CAPACITY = Gauge(
    "fastsse_db_write_queue_capacity",
    "How many verdicts may wait for the writer (WRITE_QUEUE_SIZE, summed over workers).",
    multiprocess_mode="livesum",
)


def tool_label(tool: str, allowed: frozenset[str]) -> str:
    return tool if tool in allowed else OTHER_TOOL


def prepare_series(allowed_tools: frozenset[str], queue_size: int) -> None:
    """At a process's start: create the series alert rules divide by, at 0, and say which build
    runs."""
    BUILD_INFO.labels(fastsse.__version__, fastsse.IMPLEMENTATION).set(1)
    DB_WRITE_QUEUE_CAPACITY.set(queue_size)
    for tool in sorted(allowed_tools | {OTHER_TOOL}):
        for protocol in PROTOCOL_LABELS:
            for counter in (STREAMS, SILENT_STREAMS, MODEL_FALLBACKS, *RETRY_COUNTERS):
                counter.labels(tool, protocol)
    for status in INGEST_STATUSES:
        INGEST_REQUESTS.labels(status)
    for reason in CONNECTION_CLOSE_REASONS:
        CONNECTIONS_CLOSED.labels(reason)
    for kind in FAILED_CREDENTIAL_KINDS:
        FAILED_CREDENTIALS.labels(kind)


# The series one kind of verdict adds to, by (tool, protocol, category, silent): looking a
# labelled series up costs more than adding to it.  Bounded: tools are allow-listed, and the
# other three are fastsse's own small sets.
_STORED_SERIES: dict[tuple, tuple] = {}


def count_stored(tool: str, row: dict, counts: tuple[int, ...]) -> None:
    """Count one committed verdict (the writer calls this after COMMIT, so counts equal rows);
    ``counts`` is what it adds to its rollup (rollups.rollup_counts)."""
    protocol, silent = row["protocol"], row["silent"]
    key = (tool, protocol, row["category"], silent)
    series = _STORED_SERIES.get(key)
    if series is None:
        series = _STORED_SERIES[key] = (
            STREAMS.labels(tool, protocol),
            SILENT_STREAMS.labels(tool, protocol) if silent else None,
            STREAM_VERDICTS.labels(tool, protocol, row["category"], "true" if silent else "false"),
            MODEL_FALLBACKS.labels(tool, protocol),
            tuple(counter.labels(tool, protocol) for counter in RETRY_COUNTERS),
        )
    streams, silent_streams, verdicts, fallbacks, retry_series = series
    streams.inc()
    if silent_streams is not None:
        silent_streams.inc()
    verdicts.inc()
    if row["model_fallback"]:
        fallbacks.inc()
    if row["request_id"] is not None:
        for child, count in zip(retry_series, counts[4:], strict=True):
            if count:
                child.inc(count)


_INGEST_ANSWERS: dict[int, Counter] = {}


def count_ingest_answer(status: int) -> None:
    """One answer of POST /v1/streams, whatever it was, or of one stream of a batch (the route
    counts every one)."""
    child = _INGEST_ANSWERS.get(status)
    if child is None:
        child = _INGEST_ANSWERS[status] = INGEST_REQUESTS.labels(str(status))
    child.inc()


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

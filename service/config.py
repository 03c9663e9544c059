"""Settings: everything the service reads from its environment, in one pydantic-settings class."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

import fastsse

from .judging import UNKNOWN_TOOL

# Client tools the metrics label by name; every other tool is counted as "other", so a flood of
# made-up tool names cannot multiply the series a Prometheus server has to keep.
DEFAULT_METRICS_TOOLS = (
    "aider,amp,claude-code,cline,codex,continue,copilot,crush,cursor,gemini-cli,goose,"
    "kilo-code,kimi-cli,opencode,openhands,qwen-code,roo-code,windsurf,zed,"
    # the official SDKs, as the tap tells them from their User-Agent
    "anthropic-node,anthropic-python,google-genai,openai-node,openai-python,boto3,ollama-python"
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", populate_by_name=True)

    # The embedded default: an SQLite file in the working directory, so the service runs on a
    # fresh machine with nothing else.  PostgreSQL: postgresql+psycopg://user@host:5432/db
    database_url: str = "sqlite:///fastsse.sqlite3"

    # A body over this is refused with 413 as soon as it is seen, read no further; a compressed
    # body counts what it decodes to.
    max_body_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    # A compressed body that decodes to more than this many times the bytes received (past its
    # first 8 MiB) is a decompression bomb: 413, read no further (service/content_encoding.py).
    # MAX_BODY_BYTES bounds what any body decodes to; this stops sooner a body that only
    # byte-identical repetition makes (varied streams compress 7 to 34:1).
    max_decoded_ratio: float = Field(default=1000.0, ge=1)
    # A batch (POST /v1/streams/batch) carries at most this many streams, and MAX_BODY_BYTES
    # bounds all of them together: a row per stream is what a batch holds until it is stored.
    max_batch_streams: int = Field(default=1000, ge=1)
    # Handed to fastsse: no SSE event (or line) may grow past this while it is scanned.
    max_event_bytes: int = Field(default=fastsse.DEFAULT_MAX_EVENT_BYTES, ge=1)
    # Judging one post (a batch: one of its streams) may take at most this long, else 413: the
    # compiled scanner judges the worst bodies found at 100 MB/s or more (64 MiB well under a
    # second), fastsse's Python twin some hostile ones at 0.3 MB/s.
    max_scan_seconds: float = Field(default=30.0, gt=0)

    # "gateway:secret,gateway2:secret2", or a file with one "gateway:secret" per line.
    ingest_tokens: str = ""
    ingest_tokens_file: Path | None = None
    read_tokens: str = ""
    read_tokens_file: Path | None = None
    # The same for applications' reporters (fastsse_service.reporter): such a credential posts
    # its application's answers only, under its name as gateway and as tool, at most this many
    # streams a minute (per worker), at most this many posts in progress (service/report_budgets.py).
    report_tokens: str = ""
    report_tokens_file: Path | None = None
    report_streams_per_minute: float = Field(default=600.0, gt=0)
    report_max_inflight_posts: int = Field(default=4, ge=1)
    # Signed posts: a signature whose time is further than this from the service's clock is
    # refused, and the id of each signed post is kept this long (docs/gateways/signing.md).
    webhook_tolerance_seconds: int = Field(default=300, ge=1)
    # Failed credentials (a bearer token, a signature, a sign-in that matches nothing) cost
    # their client address one of this many, which come back at the pace below; an address
    # with none left gets 429 for any credential it presents (service/failed_credentials.py).
    failed_credentials_burst: int = Field(default=20, ge=1)
    failed_credentials_per_minute: float = Field(default=60.0, gt=0)
    # The proxies in front of the service (addresses or networks, comma-separated) whose
    # X-Forwarded-For names the client; empty: none, the connection's own peer is the client.
    # Behind the shipped HAProxy on the same host: 127.0.0.1.
    forwarded_allow_ips: str = ""

    # Admission control: past this many posts in progress in one worker, a post is refused at
    # once with 503 and Retry-After: 1 (overload gets quick refusals, not growing latency).
    max_inflight_posts: int = Field(default=64, ge=1)
    # What one gateway may hold of them: past it its post gets the same 503 while the others'
    # go on (one credential, an application's reporter included, cannot starve the rest).
    # Unset: half of MAX_INFLIGHT_POSTS when several gateways are configured, all of them when
    # there is one.
    max_inflight_posts_per_gateway: int | None = Field(default=None, ge=1)
    # A connection must have a whole request head (request line and headers) this long after
    # it was made and after each answer, else it is closed (408 if it sent anything): a client
    # that sends nothing, or dribbles its head a byte at a time, holds its connection no longer.
    head_timeout_seconds: float = Field(default=30.0, gt=0)
    # An answer the client takes no byte of for this long, while what was written of it waits
    # in the worker, ends the connection: a client that never reads holds it no longer.
    answer_idle_timeout_seconds: float = Field(default=30.0, gt=0)
    # A worker holds at most this many connections (each is a file descriptor); one more is
    # answered 503 and closed at once.  The worker raises its open-file limit to fit it.
    max_connections: int = Field(default=4096, ge=1)
    # An upload that sends no byte for this long, or is not whole after the total, gets 408.
    upload_idle_timeout_seconds: float = Field(default=30.0, gt=0)
    upload_timeout_seconds: float = Field(default=300.0, gt=0)

    # Group commit: verdicts wait in this queue for the writer; when it is full, 503.
    write_queue_size: int = Field(default=10_000, ge=1)
    write_batch_size: int = Field(default=500, ge=1)
    # Under load a commit waits this long for more verdicts to share it (see writer.py).  0:
    # it takes what queued up while the last commit ran, which keeps the worker busiest.
    write_batch_wait_seconds: float = Field(default=0.0, ge=0, le=1)
    # How long a request waits for its verdict to be committed before answering 503.
    write_timeout_seconds: float = Field(default=30.0, gt=0)
    # Raw verdict rows older than this are deleted (per-minute rollups are kept).  0 keeps all.
    retention_days: float = Field(default=30.0, ge=0)
    retention_interval_seconds: float = Field(default=3600.0, gt=0)

    # How long a dashboard sign-in lasts, and how long its form (at most 4 KiB) may take to come.
    dashboard_session_hours: float = Field(default=168.0, gt=0)
    signin_timeout_seconds: float = Field(default=10.0, gt=0)

    metrics_tools: str = DEFAULT_METRICS_TOOLS
    log_level: str = "info"
    # One log line per HTTP request (uvicorn's access log): off by default, it costs a tenth of
    # a worker's time at full load.
    access_log: bool = False

    @field_validator("database_url")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if not value.startswith(("sqlite", "postgresql")):
            raise ValueError("DATABASE_URL must be sqlite:///... or postgresql+psycopg://...")
        return value

    def metrics_tool_names(self) -> frozenset[str]:
        """The tools metrics label by name; a post without a tool is labelled "unknown"."""
        names = {name.strip() for name in self.metrics_tools.split(",") if name.strip()}
        return frozenset(names | {UNKNOWN_TOOL})


class TapSettings(BaseSettings):
    """The settings of ``fastsse-service tap``, from TAP_* variables (the command line's
    --upstream, --ingest and --token win over them)."""

    model_config = SettingsConfigDict(env_prefix="TAP_", env_file=None, extra="ignore")

    # Where requests go (https://api.openai.com) and where verdicts go (http://verdicts:8000).
    upstream: str = ""
    ingest: str = "http://127.0.0.1:8000"
    # One of the service's INGEST_TOKENS secrets (the gateway name is the service's side).
    ingest_token: str = ""
    ingest_token_file: Path | None = None
    # The tool every stream is labelled with; empty: told from each request's User-Agent.
    tool: str = ""

    # Captures wait here until the service has acknowledged them (they hold payload: 0700).
    spool_dir: Path = Path("fastsse-tap-spool")
    # Past this, a new capture is dropped (counted and logged), the client is never slowed.
    spool_max_bytes: int = Field(default=1024**3, ge=1)
    post_concurrency: int = Field(default=4, ge=1, le=64)
    # The same body to the same path with the same credentials within this: a retry.
    retry_window_seconds: float = Field(default=600.0, gt=0)

    max_upstream_connections: int = Field(default=1000, ge=1)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    # No byte from the upstream for this long: the stream is cut, its transport "timeout".
    idle_timeout_seconds: float = Field(default=300.0, gt=0)
    max_request_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    # The request bodies the tap holds at once, all requests together and those of one client
    # address: past either a request is answered 503 (each body is read whole before it is
    # forwarded).  Bytes count as they arrive, not as a Content-Length promises them.
    max_buffered_request_bytes: int = Field(default=512 * 1024 * 1024, ge=1)
    max_buffered_request_bytes_per_client: int = Field(default=128 * 1024 * 1024, ge=1)
    # As the service's settings of the same names (without TAP_): a request head whole this
    # long after the connection was made or its last answer went out, an answer the client
    # takes a byte of at least this often (else the upstream's answer is dropped, unjudged, as
    # for a client that hangs up), a request body that sends a byte at least this often and is
    # whole within the total, at most this many connections.
    head_timeout_seconds: float = Field(default=30.0, gt=0)
    answer_idle_timeout_seconds: float = Field(default=30.0, gt=0)
    upload_idle_timeout_seconds: float = Field(default=30.0, gt=0)
    upload_timeout_seconds: float = Field(default=300.0, gt=0)
    max_connections: int = Field(default=4096, ge=1)
    # An answer larger than this (decoded) is relayed but not judged.
    max_capture_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    # On stop: how long spooled captures may still be posted; the rest waits for the next start.
    shutdown_grace_seconds: float = Field(default=5.0, ge=0)
    log_level: str = "info"

    @field_validator("upstream", "ingest")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")


@lru_cache
def get_settings() -> Settings:
    return Settings()

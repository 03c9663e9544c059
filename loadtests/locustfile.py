"""Gateways posting realistic traffic to the ingestion service, for locust.

    python -m loadtests.load --duration 60 --users 24          # starts a service, writes a report
    locust -f loadtests/locustfile.py --host http://127.0.0.1:8000 --ingest-token SECRET

Each simulated gateway posts captured streams: the four protocols mixed, sizes from a few KB to
a few hundred KB (most small, a long tail, as coding agents' answers are), a configurable fault
mix, many tools, retry chains (a retryable failure is followed by the next attempt of the same
request_id), and some duplicate posts (a gateway retrying a post whose answer it lost).  The
bytes are the mock provider's generator's (``loadtests/wire.py``): the providers' real protocols.

Every answer is checked: a new stream must come back 201 with the category its fault must
give, a duplicate 200 with the same verdict.  A 503 or 429 is retried after its Retry-After
(the same stream_id: it must land exactly once), at most ``--max-post-retries`` times; each
such retry is reported as its own request name ("retry after 503"), so the report shows how
many there were.
"""

from __future__ import annotations

import itertools
import json
import random
import time
import uuid
from functools import cache

from locust import FastHttpUser, between, events, task

from loadtests.wire import EXPECTED_CATEGORY, PROTOCOLS, answer_text, fault_for, wire

# (size in bytes, share): most answers are small, a few are long.
SIZES = ((2_000, 0.30), (8_000, 0.30), (30_000, 0.22), (100_000, 0.13), (300_000, 0.05))
DEFAULT_FAULT_MIX = "F0=0.90,F1=0.02,F2=0.005,F3=0.01,F4=0.03,F5=0.01,error=0.015,reset=0.01"
TOOLS = (
    "codex",
    "claude-code",
    "gemini-cli",
    "kimi-cli",
    "aider",
    "cursor",
    "cline",
    "opencode",
    "goose",
    "continue",
    "zed",
    "windsurf",
)
RETRIED = {"F1", "F2", "F3", "error", "reset"}  # what a gateway's client retries
VARIANTS = 4  # bodies per (protocol, fault, size): different seeds, so posts differ


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    parser.add_argument("--ingest-token", default="", help="a secret of INGEST_TOKENS")
    parser.add_argument(
        "--fault-mix", default=DEFAULT_FAULT_MIX, help="fault=share,... over the first attempts (the rest: F0)"
    )
    parser.add_argument(
        "--duplicate-share", type=float, default=0.02, help="share of posts sent twice with the same stream_id"
    )
    parser.add_argument("--max-post-retries", type=int, default=5, help="retries of a post refused with 503/429")
    parser.add_argument(
        "--ack-log",
        default="",
        help="append the stream_id of every acknowledged post to this file "
        "(for the reliability runs to check against the database)",
    )


_ACK_LOG = None


def _acknowledged(path: str, stream_id: str) -> None:
    global _ACK_LOG
    if not path:
        return
    if _ACK_LOG is None:
        _ACK_LOG = open(path, "a", buffering=1)  # a line each, flushed as written
    _ACK_LOG.write(stream_id + "\n")


def parse_mix(text: str) -> tuple[list[str], list[float]]:
    shares = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        fault, _, share = item.partition("=")
        if fault not in EXPECTED_CATEGORY:
            raise ValueError(f"unknown fault {fault!r} in --fault-mix")
        shares[fault] = float(share)
    shares.setdefault("F0", max(0.0, 1.0 - sum(v for k, v in shares.items() if k != "F0")))
    return list(shares), list(shares.values())


@cache
def body(protocol: str, fault: str, size: int, variant: int) -> bytes:
    """A stream of about ``size`` bytes with this fault (built once per process)."""
    per_sentence = len(wire(protocol, text=answer_text(4)).body) / 4
    sentences = max(1, round(size / per_sentence))
    return wire(protocol, fault, text=answer_text(sentences), seed=variant).body


class Gateway(FastHttpUser):
    """One gateway: posts one captured stream after another, as its clients finish them."""

    wait_time = between(0.0, 0.02)
    connection_timeout = 10.0
    network_timeout = 60.0

    def on_start(self) -> None:
        options = self.environment.parsed_options
        self.faults, self.fault_weights = parse_mix(options.fault_mix)
        self.duplicate_share = options.duplicate_share
        self.max_retries = options.max_post_retries
        self.ack_log = options.ack_log
        self.headers = {"authorization": f"Bearer {options.ingest_token}"}
        self.gateway = f"lg-{uuid.uuid4().hex[:6]}"
        self.counter = itertools.count()
        self.random = random.Random()

    @task
    def post_one_request(self) -> None:
        """A request as a client made it: its first attempt, then its retries if it failed."""
        protocol = self.random.choice(PROTOCOLS)
        tool = self.random.choice(TOOLS)
        size = self.random.choices([s for s, _ in SIZES], [w for _, w in SIZES])[0]
        fault = self.random.choices(self.faults, self.fault_weights)[0]
        fault = fault_for(protocol, fault)
        request_id = f"{self.gateway}-{next(self.counter)}"
        for attempt in (1, 2, 3):
            self.post(protocol, fault, size, tool, request_id, attempt)
            if fault not in RETRIED:
                break
            fault = "F0" if self.random.random() < 0.8 else fault  # most retries succeed

    def post(self, protocol: str, fault: str, size: int, tool: str, request_id: str, attempt: int) -> None:
        data = body(protocol, fault, size, self.random.randrange(VARIANTS))
        params = {
            "stream_id": f"{request_id}-{attempt}",
            "protocol": protocol,
            "tool": tool,
            "request_id": request_id,
            "attempt": str(attempt),
            "transport": "reset" if fault == "reset" else "eof",
            "upstream_status": "200",
        }
        expected = "transport_error" if fault == "reset" else EXPECTED_CATEGORY[fault]
        query = "&".join(f"{k}={v}" for k, v in params.items())
        first = self.send(query, data, expected, (201,), f"POST /v1/streams [{protocol}]")
        if first is not None:
            _acknowledged(self.ack_log, params["stream_id"])
        if first is not None and self.random.random() < self.duplicate_share:
            again = self.send(query, data, expected, (200,), "POST /v1/streams [duplicate]")
            if again is not None and again != first:
                events.request.fire(
                    request_type="CHECK",
                    name="duplicate gives the same verdict",
                    response_time=0,
                    response_length=0,
                    exception=AssertionError(f"{again} != {first}"),
                )

    def send(self, query: str, data: bytes, expected: str, statuses: tuple[int, ...], name: str) -> int | None:
        """Post until it is stored or refused for good; the stored verdict's id, or None."""
        for retry in range(self.max_retries + 1):
            label = name if retry == 0 else "POST /v1/streams [retry after 503]"
            with self.client.post(
                f"/v1/streams?{query}", data=data, headers=self.headers, name=label, catch_response=True
            ) as answer:
                status = answer.status_code
                if status in (503, 429):
                    wait = _retry_after(answer.headers.get("retry-after"))
                    answer.failure(f"{status}, Retry-After {wait}")
                    time.sleep(wait * self.random.uniform(0.5, 1.5))
                    statuses = (201, 200)  # it may have been stored before the refusal came
                    continue
                if status not in statuses:
                    answer.failure(f"status {status}: {answer.text[:200]}")
                    return None
                verdict = json.loads(answer.content)
                if verdict["category"] != expected:
                    answer.failure(f"category {verdict['category']}, expected {expected}")
                    return None
                answer.success()
                return verdict["id"]
        return None


def _retry_after(raw: str | None) -> float:
    try:
        return min(max(float(raw), 0.1), 30.0)
    except (TypeError, ValueError):
        return 1.0

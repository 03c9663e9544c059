"""What the tap learns about a request without keeping it: the protocol (from the path), whether
it streams, the model asked for, the client tool, and which earlier request it repeats.

Plain functions and one small class, no I/O.  The request body is read here and forgotten:
what stays is a hash of it (to tell a retry) and the model's name.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import unquote

import fastsse

# Gemini and Bedrock name the model in the path (the generation endpoints are
# fastsse.protocol_for_path's); Bedrock's id may be percent-encoded (":" as %3A).
_GEMINI_MODEL = re.compile(r"/models/(?P<model>[^/:]+):[A-Za-z]+$")
_BEDROCK_MODEL = re.compile(r"/model/(?P<model>[^/]+)/[a-z-]+$")

# Tools by their User-Agent, first match wins: the coding CLIs, then the official SDKs (which
# the CLIs built on them would otherwise be taken for).  Anything else: its first product token.
_USER_AGENTS = (
    (re.compile(r"^codex[_-]", re.I), "codex"),
    (re.compile(r"^claude-cli/", re.I), "claude-code"),
    (re.compile(r"^claude-code/", re.I), "claude-code"),
    (re.compile(r"^kimi[-_ ]?cli", re.I), "kimi-cli"),
    (re.compile(r"^gemini-cli/", re.I), "gemini-cli"),
    (re.compile(r"^(Async)?OpenAI/Python\b"), "openai-python"),
    (re.compile(r"^OpenAI/JS\b"), "openai-node"),
    (re.compile(r"^(Async)?Anthropic(Bedrock|Vertex)?/Python\b"), "anthropic-python"),
    (re.compile(r"^Anthropic/JS\b"), "anthropic-node"),
    (re.compile(r"google-genai-sdk/"), "google-genai"),
)
_PRODUCT = re.compile(r"^([A-Za-z0-9._-]+)")
MAX_TOOL_CHARS = 64
# The complement of the service's identifier alphabet (service.ingest.IDENTIFIER_PATTERN).
_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9._:/@+=-]")
_IDENTIFIER_LIMIT = 128


@dataclass(frozen=True, slots=True)
class Generation:
    """A request the tap judges: a call of a generation endpoint."""

    protocol: str
    streamed: bool  # the client asked for a stream
    model: str | None


def generation(method: str, path: str, body: bytes, query: bytes = b"") -> Generation | None:
    """The generation a request asks for, or None for anything else (model lists, token
    counts, probes), which the tap passes through without a verdict.  Gemini streams SSE only
    with ``alt=sse``; without it, ``streamGenerateContent`` answers one JSON array, which is
    not a stream fastsse judges.  Bedrock's streaming operations always stream.  (Ollama streams
    unless the body says ``"stream": false``, but ``/api/chat`` is a common path of apps of
    every kind: the tap judges what answers in Ollama's framing, see fastsse.stream_protocol.)"""
    if method != "POST":
        return None
    path = path.rstrip("/")
    protocol = fastsse.protocol_for_path(path)
    if protocol == "gemini":
        named = _GEMINI_MODEL.search(path)
        sse = b"alt=sse" in query.split(b"&")
        streamed = path.endswith(":streamGenerateContent") and sse
        return Generation("gemini", streamed, model_name(named["model"]) if named else None)
    if protocol is None:
        return None
    if protocol.startswith("bedrock-"):
        named = _BEDROCK_MODEL.search(path)
        return Generation(protocol, True, model_name(unquote(named["model"])) if named else None)
    fields = _json_object(body)
    return Generation(protocol, fields.get("stream") is True, model_name(fields.get("model")))


def _json_object(body: bytes) -> dict:
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # (nested past the parser's depth)
        return {}
    return value if isinstance(value, dict) else {}


def model_name(raw) -> str | None:
    """A model name as the service stores identifiers: other characters become "-"."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    return _NOT_IDENTIFIER.sub("-", raw.strip())[:_IDENTIFIER_LIMIT]


def tool_from_user_agent(user_agent: str | None) -> str | None:
    if not user_agent:
        return None
    for pattern, tool in _USER_AGENTS:
        if pattern.search(user_agent):
            return tool
    product = _PRODUCT.match(user_agent.strip())
    # Cut to the service's bound on a tool (64 characters once stored; a longer parameter than
    # MAX_TOOL_CHARS is refused, and every stream of that client with it).
    return product[1].lower()[:MAX_TOOL_CHARS] if product else None


@dataclass(frozen=True, slots=True)
class Attempt:
    request_id: str
    attempt: int  # 1 for the first


class RequestTracker:
    """Tells a retry from a new request: a retry sends the same body to the same path with the
    same credentials again.  The first time a request is seen it gets a new request_id and
    attempt 1; the same request again within ``window_seconds`` of its last attempt is attempt
    2, 3, ...  Only a digest of each request is kept, at most ``capacity`` of them (the least
    recently seen are forgotten first)."""

    def __init__(self, window_seconds: float = 600.0, capacity: int = 20_000, clock=time.monotonic) -> None:
        self.window_seconds = window_seconds
        self.capacity = capacity
        self._clock = clock
        self._seen: OrderedDict[bytes, list] = OrderedDict()  # digest -> [request_id, n, at]

    def attempt(self, method: str, path: str, body: bytes, credential: str = "") -> Attempt:
        digest = hashlib.sha256(b"\0".join((method.encode(), path.encode(), credential.encode(), body))).digest()
        now = self._clock()
        entry = self._seen.get(digest)
        if entry is not None and now - entry[2] <= self.window_seconds:
            entry[1] += 1
            entry[2] = now
            self._seen.move_to_end(digest)
            return Attempt(entry[0], entry[1])
        request_id = "tap-" + uuid.uuid4().hex[:24]
        self._seen[digest] = [request_id, 1, now]
        self._seen.move_to_end(digest)
        while len(self._seen) > self.capacity:
            self._seen.popitem(last=False)
        return Attempt(request_id, 1)


def credential(headers: dict[str, str], query: bytes = b"") -> str:
    """What tells one caller from another (two users asking the same thing are not retries):
    the API key, wherever the client put it (Gemini's may be the ``key`` query parameter)."""
    keys = [part for part in query.split(b"&") if part.startswith(b"key=")]
    return "\0".join(
        [
            *(headers.get(name, "") for name in ("authorization", "x-api-key", "x-goog-api-key")),
            *(key.decode("latin-1") for key in keys),
        ]
    )

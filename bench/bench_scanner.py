"""How fast fastsse judges streams, next to the SSE decoders people already run.

One run generates a seeded corpus of realistic streams per dialect (OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages), then times on the same bytes:

* the openai SDK's ``SSEDecoder`` + ``json.loads`` per event (what ``Stream.__stream__`` does,
  minus building the pydantic models, so the real SDK is slower than this baseline);
* httpx-sse's line and event decoders + ``json.loads`` per event;
* msgspec decoding each ``data:`` line into a Struct that declares only the fields a verdict needs;
* fastsse: ``Scanner.feed`` over 64 KiB chunks + ``close()``, and ``scan(stream)``;
* a bare newline scan: ``bytes.count(b"\\n")`` and a ``for line in splitlines()`` loop.

Every stream is judged on its own, as the product does.  A last section measures the memory a
Scanner holds while a 200 MB line that never ends is fed to it.

    python bench/bench_scanner.py            # 32 MB per dialect, best of 3
    python bench/bench_scanner.py --quick    # a small corpus, for a smoke run
"""

from __future__ import annotations

import argparse
import codecs
import datetime
import gc
import json
import math
import os
import platform
import random
import string
import subprocess
import sys
import time
from pathlib import Path

# Benchmark the checkout this file lives in (with its in-place build, if any), not whatever
# fastsse an environment may have installed.
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import fastsse  # noqa: E402
import msgspec  # noqa: E402
from httpx_sse._decoders import SSEDecoder as HttpxSseDecoder  # noqa: E402
from httpx_sse._decoders import SSELineDecoder as HttpxSseLineDecoder  # noqa: E402
from openai._streaming import SSEDecoder as OpenAISSEDecoder  # noqa: E402

DIALECTS = ("chat", "responses", "anthropic")
CHUNK_BYTES = 64 * 1024  # what an HTTP client typically hands over per read
MB = 1_000_000

# Targets for the compiled scanner (the pure-Python twin is expected to miss them).
TARGET_SDK_SPEEDUP_CHAT = 100.0  # fastsse at least 100x the openai SDK decoder on chat
TARGET_BARE_SLOWDOWN = 4.0  # fastsse at most 4x the time of a bare Python line loop

# Stream sizes are drawn log-uniformly between these: a one-line answer to a long essay.
STREAM_MIN_BYTES = 2_000
STREAM_MAX_BYTES = 100_000


# =============================================================================================
# Corpus: realistic streams, generated from a seed.  Nothing is read from disk.

WORDS = (
    "the stream of tokens arrives one chunk at a time and the client must decide whether the "
    "answer it holds is whole or was silently cut off by a proxy a timeout or a crash in the "
    "middle of a sentence so we count events check the end marker and read the finish reason "
    "before we trust it model gateway latency budget retry request response server client "
    "function weather report summary table value index result error limit token output input"
).split()
# Text that JSON must escape, or that is not ASCII: providers send all of it.
SPECIAL_TOKENS = ('"quoted"', "\n", "\n\n", "café", "naïve", "résumé", "C:\\temp", "\t", "🙂", "{x}")
CITIES = ("Paris, France", "Boston, MA", "São Paulo", "Zürich", "Tokyo", "Lagos", "Lima")
TOOL_NAMES = ("get_weather", "search_docs", "create_ticket", "run_sql")
ALNUM = string.ascii_letters + string.digits


def random_id(rng: random.Random, prefix: str, length: int, alphabet: str = ALNUM) -> str:
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


def text_piece(rng: random.Random) -> str:
    """What one streamed delta carries: a few words, now and then something JSON escapes."""
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.08:
        words.insert(rng.randrange(len(words) + 1), rng.choice(SPECIAL_TOKENS))
    return " " + " ".join(words)


def obfuscation(rng: random.Random) -> str:
    """OpenAI pads deltas with random characters so sizes do not leak the tokens."""
    return random_id(rng, "", rng.randint(1, 12))


def tool_arguments(rng: random.Random) -> str:
    """A tool call's arguments: one JSON object, as the model writes it."""
    arguments = {
        "location": rng.choice(CITIES),
        "days": rng.randint(1, 14),
        "unit": rng.choice(("celsius", "fahrenheit")),
        "note": "".join(text_piece(rng) for _ in range(rng.randint(1, 12))).strip(),
    }
    return json.dumps(arguments, ensure_ascii=rng.random() < 0.5)


def fragments(rng: random.Random, text: str, longest: int = 8) -> list[str]:
    """Split text at arbitrary points, as tokens split tool-call arguments."""
    pieces, start = [], 0
    while start < len(text):
        end = start + rng.randint(1, longest)
        pieces.append(text[start:end])
        start = end
    return pieces


def sse(payload: dict, event: str | None = None, ascii_only: bool = True, pad: int = 0) -> str:
    """One SSE event.  ``pad`` spaces before the closing brace, as Anthropic sends them."""
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=ascii_only)
    if pad:
        data = data[:-1] + " " * pad + "}"
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n"


# --- OpenAI Chat Completions (stream: true) ---------------------------------------------------


def chat_stream(rng: random.Random, target_bytes: int) -> bytes:
    kind = rng.choices(("text", "tools", "reasoning"), weights=(70, 15, 15))[0]
    reasoning = kind == "reasoning"
    envelope = {
        "id": random_id(rng, "chatcmpl-", 29),
        "object": "chat.completion.chunk",
        "created": rng.randint(1_720_000_000, 1_780_000_000),
        "model": "deepseek-reasoner" if reasoning else "gpt-4o-2024-08-06",
        "system_fingerprint": random_id(rng, "fp_", 10, "0123456789abcdef"),
    }
    events: list[str] = []
    size = 0

    def chunk(delta: dict, finish_reason: str | None = None) -> None:
        nonlocal size
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        payload = {**envelope, "choices": [choice]}
        if not reasoning:  # DeepSeek sends no obfuscation
            payload["obfuscation"] = obfuscation(rng)
        events.append(sse(payload))
        size += len(events[-1])

    if reasoning:
        chunk({"role": "assistant", "content": None, "reasoning_content": ""})
        while size < target_bytes * 0.4:
            chunk({"content": None, "reasoning_content": text_piece(rng)})
    else:
        chunk({"role": "assistant", "content": "", "refusal": None})
    text_share = 0.3 if kind == "tools" else 1.0  # tool streams: a short preamble, then calls
    while size < target_bytes * text_share:
        delta = {"content": text_piece(rng)}
        if reasoning:
            delta["reasoning_content"] = None
        chunk(delta)
    if kind == "tools":
        for index in range(rng.randint(1, 3)):
            call = {"name": rng.choice(TOOL_NAMES), "arguments": ""}
            first = {"index": index, "id": random_id(rng, "call_", 24), "type": "function", "function": call}
            chunk({"tool_calls": [first]})
            for piece in fragments(rng, tool_arguments(rng)):
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    chunk({}, "tool_calls" if kind == "tools" else "stop")

    completion_tokens = len(events) - 1
    usage = {
        "prompt_tokens": rng.randint(10, 4000),
        "completion_tokens": completion_tokens,
        "total_tokens": completion_tokens + 4000,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    final = {**envelope, "choices": [], "usage": usage}
    if not reasoning:
        final["obfuscation"] = obfuscation(rng)
    events.append(sse(final))
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


# --- OpenAI Responses -------------------------------------------------------------------------


def response_object(response_id: str, model: str, created: int, status: str, output: list, usage) -> dict:
    """The response object that response.created/in_progress/completed carry."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "completed_at": created + 3 if status == "completed" else None,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "service_tier": "default",
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


class ResponsesWriter:
    """Numbers the events of one Responses stream (sequence_number counts every event)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.events: list[str] = []
        self.size = 0

    def emit(self, event_type: str, fields: dict) -> None:
        payload = {"type": event_type, **fields, "sequence_number": len(self.events)}
        self.events.append(sse(payload, event=event_type, ascii_only=False))
        self.size += len(self.events[-1])

    def hex_id(self, prefix: str) -> str:
        return random_id(self.rng, prefix, 48, "0123456789abcdef")


def responses_reasoning_item(w: ResponsesWriter, output_index: int, target_bytes: int) -> dict:
    item_id = w.hex_id("rs_")
    where = {"item_id": item_id, "output_index": output_index, "summary_index": 0}
    w.emit("response.output_item.added", {"output_index": output_index, "item": {"id": item_id, "type": "reasoning", "summary": []}})
    w.emit("response.reasoning_summary_part.added", {**where, "part": {"type": "summary_text", "text": ""}})
    pieces = []
    while w.size < target_bytes:
        pieces.append(text_piece(w.rng))
        w.emit("response.reasoning_summary_text.delta", {**where, "delta": pieces[-1], "obfuscation": obfuscation(w.rng)})
    summary = {"type": "summary_text", "text": "".join(pieces)}
    w.emit("response.reasoning_summary_text.done", {**where, "text": summary["text"]})
    w.emit("response.reasoning_summary_part.done", {**where, "part": summary})
    item = {"id": item_id, "type": "reasoning", "summary": [summary]}
    w.emit("response.output_item.done", {"output_index": output_index, "item": item})
    return item


def responses_message_item(w: ResponsesWriter, output_index: int, target_bytes: int) -> dict:
    item_id = w.hex_id("msg_")
    item = {"id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
    where = {"content_index": 0, "item_id": item_id, "output_index": output_index}
    w.emit("response.output_item.added", {"output_index": output_index, "item": item})
    w.emit("response.content_part.added", {**where, "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}})
    pieces = []
    while w.size < target_bytes:
        pieces.append(text_piece(w.rng))
        w.emit("response.output_text.delta", {**where, "delta": pieces[-1], "logprobs": [], "obfuscation": obfuscation(w.rng)})
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": "".join(pieces)}
    w.emit("response.output_text.done", {**where, "logprobs": [], "text": part["text"]})
    w.emit("response.content_part.done", {**where, "part": part})
    item = {**item, "status": "completed", "content": [part]}
    w.emit("response.output_item.done", {"output_index": output_index, "item": item})
    return item


def responses_function_call_item(w: ResponsesWriter, output_index: int) -> dict:
    item_id = w.hex_id("fc_")
    arguments = tool_arguments(w.rng)
    item = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": random_id(w.rng, "call_", 24),
        "name": w.rng.choice(TOOL_NAMES),
    }
    where = {"item_id": item_id, "output_index": output_index}
    w.emit("response.output_item.added", {"output_index": output_index, "item": item})
    for piece in fragments(w.rng, arguments):
        w.emit("response.function_call_arguments.delta", {**where, "delta": piece, "obfuscation": obfuscation(w.rng)})
    w.emit("response.function_call_arguments.done", {**where, "arguments": arguments})
    item = {**item, "status": "completed", "arguments": arguments}
    w.emit("response.output_item.done", {"output_index": output_index, "item": item})
    return item


def responses_stream(rng: random.Random, target_bytes: int) -> bytes:
    kind = rng.choices(("text", "reasoning", "function_call"), weights=(70, 15, 15))[0]
    w = ResponsesWriter(rng)
    response_id = w.hex_id("resp_")
    model = rng.choice(("gpt-5-2025-08-07", "gpt-4.1-2025-04-14"))
    created = rng.randint(1_720_000_000, 1_780_000_000)
    in_progress = response_object(response_id, model, created, "in_progress", [], None)
    w.emit("response.created", {"response": in_progress})
    w.emit("response.in_progress", {"response": in_progress})

    output = []
    if kind == "reasoning":
        output.append(responses_reasoning_item(w, len(output), target_bytes * 0.4))
    if kind == "function_call":
        output.append(responses_message_item(w, len(output), target_bytes * 0.3))
        for _ in range(rng.randint(1, 2)):
            output.append(responses_function_call_item(w, len(output)))
    else:
        output.append(responses_message_item(w, len(output), target_bytes))

    output_tokens = len(w.events)
    usage = {
        "input_tokens": rng.randint(10, 4000),
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": output_tokens + 4000,
    }
    completed = response_object(response_id, model, created, "completed", output, usage)
    w.emit("response.completed", {"response": completed})
    return "".join(w.events).encode()


# --- Anthropic Messages -----------------------------------------------------------------------


def anthropic_stream(rng: random.Random, target_bytes: int) -> bytes:
    kind = rng.choices(("text", "thinking", "tool_use"), weights=(70, 15, 15))[0]
    # Some deployments pad every event's JSON with spaces before the closing brace.
    padded = rng.random() < 0.5
    events: list[str] = []
    size = 0

    def emit(event: str, payload: dict) -> None:
        nonlocal size
        events.append(sse(payload, event=event, ascii_only=False, pad=rng.randint(1, 16) if padded else 0))
        size += len(events[-1])

    def block(index: int, content_block: dict, deltas) -> None:
        emit("content_block_start", {"type": "content_block_start", "index": index, "content_block": content_block})
        if index == 0:
            events.append('event: ping\ndata: {"type": "ping"}\n\n')
        for delta in deltas:
            emit("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        emit("content_block_stop", {"type": "content_block_stop", "index": index})

    def text_deltas(field: str, delta_type: str, until_bytes: float):
        while size < until_bytes:
            yield {"type": delta_type, field: text_piece(rng)}

    message = {
        "model": "claude-sonnet-4-5-20250929",
        "id": random_id(rng, "msg_01", 22),
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": rng.randint(10, 4000),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
            "service_tier": "standard",
        },
    }
    emit("message_start", {"type": "message_start", "message": message})
    index = 0
    if kind == "thinking":
        thinking = list(text_deltas("thinking", "thinking_delta", target_bytes * 0.4))
        signature = {"type": "signature_delta", "signature": random_id(rng, "", 200, ALNUM + "+/")}
        block(index, {"type": "thinking", "thinking": "", "signature": ""}, thinking + [signature])
        index += 1
    text_share = 0.3 if kind == "tool_use" else 1.0
    block(index, {"type": "text", "text": ""}, text_deltas("text", "text_delta", target_bytes * text_share))
    if kind == "tool_use":
        index += 1
        tool = {"type": "tool_use", "id": random_id(rng, "toolu_01", 22), "name": rng.choice(TOOL_NAMES), "input": {}}
        partial = ["", *fragments(rng, tool_arguments(rng), longest=16)]  # the first one is empty
        block(index, tool, ({"type": "input_json_delta", "partial_json": p} for p in partial))
    stop_reason = "tool_use" if kind == "tool_use" else "end_turn"
    emit("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": len(events)},
    })  # fmt: skip
    emit("message_stop", {"type": "message_stop"})
    return "".join(events).encode()


STREAM_GENERATORS = {"chat": chat_stream, "responses": responses_stream, "anthropic": anthropic_stream}


def build_corpus(dialect: str, total_bytes: int, seed: int) -> list[bytes]:
    """Streams of one dialect until they add up to total_bytes; the same seed, the same bytes."""
    rng = random.Random(f"{seed}:{dialect}")
    generate = STREAM_GENERATORS[dialect]
    streams, size = [], 0
    log_min, log_max = math.log(STREAM_MIN_BYTES), math.log(STREAM_MAX_BYTES)
    while size < total_bytes:
        stream = generate(rng, math.exp(rng.uniform(log_min, log_max)))
        streams.append(stream)
        size += len(stream)
    return streams


def split_chunks(stream: bytes) -> list[bytes]:
    return [stream[i : i + CHUNK_BYTES] for i in range(0, len(stream), CHUNK_BYTES)]


# =============================================================================================
# Contenders.  Each judges or decodes every stream separately and returns the events it saw
# (so we can see that they all did the same work).  ``corpus`` is a list of (stream, chunks).


def openai_sdk(corpus, dialect: str) -> int:
    """openai.Stream.__stream__: SSEDecoder.iter_bytes over the body, [DONE] ends, json per event.

    The SDK then raises on an "error" key and builds a pydantic model per event; we keep the
    error check and skip the model, so this is faster than the SDK really is.
    """
    events = 0
    for _stream, chunks in corpus:
        for sse_event in OpenAISSEDecoder().iter_bytes(iter(chunks)):
            events += 1
            if sse_event.data.startswith("[DONE]"):
                break
            data = sse_event.json()
            if isinstance(data, dict) and data.get("error"):
                raise RuntimeError("error event in a generated stream")
    return events


def httpx_sse_events(chunks):
    """httpx_sse.EventSource.iter_sse without the HTTP response around it: the body decoded to
    text as httpx's Response.iter_text does (an incremental UTF-8 codec), lines split by
    SSELineDecoder, events built by SSEDecoder."""
    text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = HttpxSseLineDecoder()
    decoder = HttpxSseDecoder()
    for chunk in chunks:
        text = text_decoder.decode(chunk)
        for line in lines.decode(text) if text else ():
            sse_event = decoder.decode(line.rstrip("\n"))
            if sse_event is not None:
                yield sse_event
    for line in lines.decode(text_decoder.decode(b"", True)) + lines.flush():
        sse_event = decoder.decode(line.rstrip("\n"))
        if sse_event is not None:
            yield sse_event


def httpx_sse(corpus, dialect: str) -> int:
    """httpx-sse leaves [DONE] to its caller: stop there, json per event, as the SDK does."""
    events = 0
    for _stream, chunks in corpus:
        for sse_event in httpx_sse_events(chunks):
            events += 1
            if sse_event.data.startswith("[DONE]"):
                break
            sse_event.json()
    return events


# --- msgspec: Structs that declare only what a verdict needs; msgspec skips every other field.


class ChatFunction(msgspec.Struct):
    arguments: str | None = None


class ChatToolCall(msgspec.Struct):
    index: int = 0
    id: str | None = None
    function: ChatFunction | None = None


class ChatDelta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    refusal: str | None = None
    tool_calls: list[ChatToolCall] | None = None


class ChatChoice(msgspec.Struct):
    index: int = 0
    delta: ChatDelta | None = None
    finish_reason: str | None = None


class ApiError(msgspec.Struct):
    code: str | int | None = None
    type: str | None = None


class ChatChunk(msgspec.Struct):
    choices: list[ChatChoice] = []
    error: ApiError | None = None


class ResponsesItem(msgspec.Struct):
    type: str | None = None


class IncompleteDetails(msgspec.Struct):
    reason: str | None = None


class ResponsesResponse(msgspec.Struct):
    status: str | None = None
    error: ApiError | None = None
    incomplete_details: IncompleteDetails | None = None


class ResponsesEvent(msgspec.Struct):
    type: str = ""
    sequence_number: int | None = None
    delta: str | None = None
    item: ResponsesItem | None = None
    arguments: str | None = None
    response: ResponsesResponse | None = None
    error: ApiError | None = None


class AnthropicDelta(msgspec.Struct):
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class AnthropicBlock(msgspec.Struct):
    type: str | None = None


class AnthropicEvent(msgspec.Struct):
    type: str = ""
    index: int | None = None
    delta: AnthropicDelta | None = None
    content_block: AnthropicBlock | None = None
    error: ApiError | None = None


MSGSPEC_DECODERS = {
    "chat": msgspec.json.Decoder(ChatChunk),
    "responses": msgspec.json.Decoder(ResponsesEvent),
    "anthropic": msgspec.json.Decoder(AnthropicEvent),
}


def msgspec_partial(corpus, dialect: str) -> int:
    """A hand-rolled splitter: LF-terminated, one data line per event (true of this corpus,
    not of SSE in general), then one typed msgspec decode per data line."""
    decode = MSGSPEC_DECODERS[dialect].decode
    events = 0
    for _stream, chunks in corpus:
        tail = b""
        for chunk in chunks:
            lines = (tail + chunk if tail else chunk).split(b"\n")
            tail = lines.pop()
            for line in lines:
                if not line.startswith(b"data:"):
                    continue
                events += 1
                if line.startswith(b"data: [DONE]"):
                    break
                decode(line[5:])  # JSON allows the leading space
    return events


def fastsse_feed(corpus, dialect: str, verdicts: list | None = None) -> int:
    """The product's path: a Scanner per stream, fed as the body arrives, closed at the end."""
    events = 0
    for _stream, chunks in corpus:
        scanner = fastsse.Scanner(dialect)
        for chunk in chunks:
            scanner.feed(chunk)
        verdict = scanner.close()
        events += verdict.events
        if verdicts is not None:
            verdicts.append(verdict)
    return events


def fastsse_scan(corpus, dialect: str, verdicts: list | None = None) -> int:
    events = 0
    for stream, _chunks in corpus:
        verdict = fastsse.scan(stream, dialect)
        events += verdict.events
        if verdicts is not None:
            verdicts.append(verdict)
    return events


def bare_count(corpus, dialect: str) -> int:
    """The floor: C counts newlines and creates nothing."""
    return sum(stream.count(b"\n") for stream, _chunks in corpus)


def bare_line_loop(corpus, dialect: str) -> int:
    """The simplest Python line iteration: one bytes object per line, one loop turn each."""
    lines = 0
    for stream, _chunks in corpus:
        for _line in stream.splitlines():
            lines += 1
    return lines


CONTENDERS = (
    ("openai SDK SSEDecoder + json.loads", openai_sdk),
    ("httpx-sse SSEDecoder + json.loads", httpx_sse),
    ("msgspec Struct decode (data lines)", msgspec_partial),
    ("fastsse Scanner.feed 64 KiB + close", fastsse_feed),
    ("fastsse scan(stream)", fastsse_scan),
    ("bare: bytes.count(b'\\n')", bare_count),
    ("bare: for line in splitlines()", bare_line_loop),
)
SDK, FEED, SCAN, COUNT, LINE_LOOP = (
    openai_sdk, fastsse_feed, fastsse_scan, bare_count, bare_line_loop,
)  # fmt: skip


# =============================================================================================
# Timing and reports


def best_time(contender, corpus, dialect: str, repeat: int) -> tuple[float, int]:
    """Best wall time of ``repeat`` runs; the collector is off while timing, as timeit does."""
    best, result = math.inf, 0
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            result = contender(corpus, dialect)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best, result


def corpus_summary(dialect: str, streams: list[bytes]) -> str:
    sizes = [len(s) for s in streams]
    total = sum(sizes)
    return (
        f"{dialect}: {total / MB:.1f} MB in {len(streams)} streams "
        f"({min(sizes) / 1000:.1f}-{max(sizes) / 1000:.1f} KB, median {sorted(sizes)[len(sizes) // 2] / 1000:.1f} KB)"
    )


def check_verdicts(dialect: str, corpus, feed_verdicts: list, scan_verdicts: list) -> int:
    """Every generated stream is complete; print what fastsse said about the ones it doubts."""
    doubted = [(i, v) for i, v in enumerate(feed_verdicts) if not v.complete]
    disagree = [i for i, (a, b) in enumerate(zip(feed_verdicts, scan_verdicts)) if a.category != b.category]
    print(f"  verdicts: {len(feed_verdicts) - len(doubted)}/{len(feed_verdicts)} complete, {len(doubted)} not complete")
    for i, verdict in doubted[:5]:
        stream = corpus[i][0]
        print(f"    stream #{i} ({len(stream)} bytes): {verdict.category} - {verdict.message}")
        print(f"      finish_reason={verdict.finish_reason_raw} events={verdict.events} residual={verdict.residual_bytes} "
              f"malformed={verdict.malformed_events} limit={verdict.limit}")  # fmt: skip
    if disagree:
        print(f"  !! scan() and Scanner.feed() disagree on {len(disagree)} streams (first: #{disagree[0]})")
    return len(doubted)


def bench_dialect(dialect: str, streams: list[bytes], repeat: int) -> dict:
    corpus = [(stream, split_chunks(stream)) for stream in streams]
    total = sum(len(s) for s in streams)
    print()
    print(corpus_summary(dialect, streams))
    print(f"  {'contender':<38} {'MB/s':>10} {'x SDK':>9} {'events/lines':>13}")
    seconds = {}
    for name, contender in CONTENDERS:
        seconds[contender], seen = best_time(contender, corpus, dialect, repeat)
        speedup = seconds[SDK] / seconds[contender]
        print(f"  {name:<38} {total / MB / seconds[contender]:>10.1f} {speedup:>8.1f}x {seen:>13,}")

    feed_verdicts, scan_verdicts = [], []
    fastsse_feed(corpus, dialect, feed_verdicts)
    fastsse_scan(corpus, dialect, scan_verdicts)
    not_complete = check_verdicts(dialect, corpus, feed_verdicts, scan_verdicts)
    print(
        f"  fastsse feed takes {seconds[FEED] / seconds[LINE_LOOP]:.1f}x the time of the splitlines loop "
        f"and {seconds[FEED] / seconds[COUNT]:.0f}x that of bytes.count"
    )
    return {"seconds": seconds, "not_complete": not_complete}


def report_targets(results: dict) -> None:
    compiled = fastsse.IMPLEMENTATION == "cython"
    note = "" if compiled else "  (targets are for the cython build; this run used the python twin)"
    print()
    print(f"Targets{note}")
    chat = results.get("chat")
    if chat:
        s = chat["seconds"]
        speedup = s[SDK] / s[FEED]
        verdict = "met" if speedup >= TARGET_SDK_SPEEDUP_CHAT else "NOT met"
        print(f"  chat: fastsse feed >= {TARGET_SDK_SPEEDUP_CHAT:.0f}x the openai SDK decoder: {speedup:.1f}x -> {verdict}")
    for dialect, result in results.items():
        s = result["seconds"]
        slowdown = s[FEED] / s[LINE_LOOP]
        verdict = "met" if slowdown <= TARGET_BARE_SLOWDOWN else "NOT met"
        print(
            f"  {dialect}: fastsse feed time <= {TARGET_BARE_SLOWDOWN:.0f}x the bare splitlines loop: "
            f"{slowdown:.2f}x -> {verdict}"
        )
    doubted = {d: r["not_complete"] for d, r in results.items()}
    print(f"  every generated stream judged complete: {'yes' if not any(doubted.values()) else f'NO {doubted}'}")


# =============================================================================================
# Memory: a 200 MB line that never ends, fed to a Scanner with the default limits.  Measured in
# a fresh interpreter so nothing the timing runs allocated hides or inflates the peak.


def status_kib(field: str) -> int | None:
    """A VmRSS/VmHWM value from /proc/self/status, in KiB (None off Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the peak we read is this test's."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def endless_line_chunks(total_bytes: int):
    """The line, 64 KiB at a time, without ever holding more than one chunk."""
    first = b"data: " + b"x" * (CHUNK_BYTES - 6)
    rest = b"x" * CHUNK_BYTES
    yield first
    for _ in range(total_bytes // CHUNK_BYTES - 1):
        yield rest


def feed_endless_line(total_bytes: int):
    scanner = fastsse.Scanner()
    for chunk in endless_line_chunks(total_bytes):
        scanner.feed(chunk)
    return scanner.close()


def memory_child(total_mb: int) -> None:
    """Runs in the subprocess: prints one JSON line with the measurements."""
    import resource
    import tracemalloc

    total_bytes = total_mb * 1024 * 1024
    list(endless_line_chunks(CHUNK_BYTES * 2))  # warm the generator's code path
    gc.collect()
    peak_was_reset = reset_peak_rss()
    rss_before = status_kib("VmRSS")
    hwm_before = status_kib("VmHWM")
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    verdict = feed_endless_line(total_bytes)
    seconds = time.perf_counter() - start
    hwm_after = status_kib("VmHWM")
    maxrss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    tracemalloc.start()
    feed_endless_line(total_bytes)
    _current, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(json.dumps({
        "implementation": fastsse.IMPLEMENTATION,
        "category": verdict.category,
        "limit": verdict.limit,
        "bytes": verdict.bytes,
        "seconds": seconds,
        "peak_was_reset": peak_was_reset,
        "rss_before_kib": rss_before,
        "hwm_before_kib": hwm_before,
        "hwm_after_kib": hwm_after,
        "maxrss_growth_kib": maxrss_after - maxrss_before,
        "tracemalloc_peak_bytes": traced_peak,
    }))  # fmt: skip


def bench_memory(total_mb: int) -> None:
    print()
    print(f"Memory: one {total_mb} MiB line without a newline, fed in 64 KiB chunks to Scanner() "
          f"(default limits: max_line_bytes={fastsse.DEFAULT_MAX_LINE_BYTES // 2**20} MiB)")  # fmt: skip
    child = subprocess.run(
        [sys.executable, __file__, "--memory-child", str(total_mb)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=False,
    )
    if child.returncode != 0:
        print(f"  the measuring subprocess failed:\n{child.stderr}")
        return
    m = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"  implementation {m['implementation']}; verdict {m['category']} (limit: {m['limit']}), "
          f"{m['bytes'] / 2**20:.0f} MiB counted in {m['seconds']:.2f} s")  # fmt: skip
    if m["hwm_after_kib"] is not None:
        baseline = m["rss_before_kib"] if m["peak_was_reset"] else m["hwm_before_kib"]
        how = "peak reset before the run" if m["peak_was_reset"] else "peak could not be reset: growth over the earlier peak"
        print(f"  peak RSS growth (VmHWM after - RSS before): {(m['hwm_after_kib'] - baseline) / 1024:.1f} MiB ({how})")
    print(f"  ru_maxrss growth: {m['maxrss_growth_kib'] / 1024:.1f} MiB")
    print(f"  tracemalloc peak: {m['tracemalloc_peak_bytes'] / 2**20:.1f} MiB")


# =============================================================================================


def print_environment() -> None:
    import httpx_sse as httpx_sse_package
    import openai

    try:
        usable_cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        usable_cpus = os.cpu_count()
    print(f"date        {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"python      {platform.python_version()} ({platform.python_implementation()}) on {platform.platform()}")
    print(f"cpus        {os.cpu_count()} ({usable_cpus} usable); {platform.processor() or platform.machine()}")
    print(f"fastsse     IMPLEMENTATION={fastsse.IMPLEMENTATION} ({fastsse.Scanner.__module__}) "
          f"from {Path(fastsse.__file__).parent}")  # fmt: skip
    print(f"baselines   openai {openai.__version__}, httpx-sse {httpx_sse_package.__version__}, msgspec {msgspec.__version__}")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small corpus and 2 repeats: a smoke run")
    parser.add_argument("--size-mb", type=float, default=None, help="corpus size per dialect in MB (default 32, quick 0.5)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per contender, best counts (default 3, quick 2)")
    parser.add_argument("--seed", type=int, default=1, help="corpus seed")
    parser.add_argument("--dialect", choices=DIALECTS, action="append", help="only these dialects (repeatable)")
    parser.add_argument("--memory-mb", type=int, default=200, help="length of the endless line in MiB (0 skips it)")
    parser.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.size_mb is None:
        args.size_mb = 0.5 if args.quick else 32.0
    if args.repeat is None:
        args.repeat = 2 if args.quick else 3
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.memory_child is not None:
        memory_child(args.memory_child)
        return
    print_environment()
    print(f"corpus      seed {args.seed}, {args.size_mb:g} MB per dialect, best of {args.repeat}, "
          f"MB = 10^6 bytes, x SDK = openai SDK time / contender time")  # fmt: skip
    results = {}
    for dialect in args.dialect or DIALECTS:
        streams = build_corpus(dialect, int(args.size_mb * MB), args.seed)
        results[dialect] = bench_dialect(dialect, streams, args.repeat)
    report_targets(results)
    if args.memory_mb:
        bench_memory(args.memory_mb)


if __name__ == "__main__":
    main()

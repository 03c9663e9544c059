"""Every verdict category, reached from realistic hand-written bytes, in every dialect.

Each stream below is built inline by small per-dialect helpers that write the bytes the way
the providers put them on the wire (see shared/PROTOCOLS.md): chat chunks as ``data: {json}``,
Responses events as ``event: <type>`` + ``data:`` with ``sequence_number``, Anthropic events
named by ``event:`` (optionally padded with spaces before the closing brace), Gemini chunks
with ``": "`` JSON and ``\\r\\n\\r\\n`` framing.  No corpus file is read here.

Every case goes through the ``judge`` fixture, which feeds it whole, byte by byte and at random
split points, on both scanner twins, and fails unless all agree.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field

import pytest

from fastsse import CATEGORIES, PROTOCOLS
from fastsse._limits import MAX_CHOICES, MAX_TOOL_CALLS
from fastsse._verdict import (
    MESSAGE_ABNORMAL_FINISH,
    MESSAGE_BLOCKED_PROMPT,
    MESSAGE_LIMITS,
    MESSAGE_NO_EVENTS,
    MESSAGE_PAUSE,
    MESSAGE_REFUSAL,
)

DIALECTS = ("chat", "responses", "anthropic", "gemini")
assert set(DIALECTS) | {"auto"} == set(PROTOCOLS)

# Our own statement of the retry rule (not read from fastsse): transient faults are worth a
# retry, walls the same request would hit again (limits, filters, token caps) are not.
EXPECTED_RETRYABLE = {
    "limit_exceeded": False,
    "transport_error": True,
    "upstream_error": True,  # unless the error code says the request itself is wrong
    "no_end_marker": True,
    "buffer_residual": True,
    "malformed_event": True,
    "sequence_gap": True,
    "missing_finish_reason": False,
    "reasoning_exhausted": False,
    "truncated_length": False,
    "content_filtered": False,
    "tool_call_malformed": True,
    "empty_output": True,
    "complete": False,
}
assert tuple(EXPECTED_RETRYABLE) == CATEGORIES

# A unique marker for payload text: it must never surface in a verdict.
CANARY = "Qz7cAnArY4xW9mK2vLp"


def _json(obj, gemini: bool = False) -> bytes:
    # Gemini puts a space after every colon ("candidates": [), OpenAI/Anthropic write compact JSON.
    return json.dumps(obj, separators=(",", ": ") if gemini else (",", ":"), ensure_ascii=False).encode()


# =============================================================================================
# chat (OpenAI Chat Completions and compatibles)
# =============================================================================================
NO_KEY = object()  # leave the finish_reason key out entirely (Snowflake, Z.ai)


def choice(index=0, finish=None, **delta):
    c = {"index": index, "delta": delta, "logprobs": None}
    if finish is not NO_KEY:
        c["finish_reason"] = finish
    return c


def chat_chunk(*choices, model="gpt-4o-mini-2024-07-18", **top) -> bytes:
    obj = {
        "id": "chatcmpl-BRq8xY2mT4kLz9wQe",
        "object": "chat.completion.chunk",
        "created": 1745923011,
        "model": model,
        "system_fingerprint": "fp_96c46af214",
        "choices": list(choices),
    }
    obj.update(top)
    return b"data: " + _json(obj) + b"\n\n"


def chat_usage(**extra) -> bytes:
    """The include_usage chunk: empty choices, totals, after the finish chunk."""
    usage = {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29}
    return chat_chunk(usage=usage, **extra)


def tool_call(index, arguments, id=None, name=None):
    call = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call = {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return call


CHAT_DONE = b"data: [DONE]\n\n"


def chat(*chunks, done=True) -> bytes:
    return b"".join(chunks) + (CHAT_DONE if done else b"")


def chat_text(*pieces, finish="stop", usage=False, done=True) -> bytes:
    """role chunk, one chunk per text piece, finish chunk, optional usage chunk, [DONE]."""
    chunks = [chat_chunk(choice(role="assistant", content="", refusal=None))]
    chunks += [chat_chunk(choice(content=p)) for p in pieces]
    if finish is not None:
        chunks.append(chat_chunk(choice(finish=finish)))
    if usage:
        chunks.append(chat_usage())
    return chat(*chunks, done=done)


def chat_tool_stream(*arg_pieces, name="get_weather", finish="tool_calls") -> bytes:
    return chat(
        chat_chunk(choice(role="assistant", content=None)),
        chat_chunk(choice(tool_calls=[tool_call(0, "", id="call_Jm2Wh1yEaYG4", name=name)])),
        *[chat_chunk(choice(tool_calls=[tool_call(0, p)])) for p in arg_pieces],
        chat_chunk(choice(finish=finish)),
    )


def chat_function_call(*arg_pieces, name="repl", model="gpt-3.5-turbo-0613", finish="function_call"):
    """Legacy function calling (gpt-3.5-turbo-0613): delta.function_call, named on its first
    fragment, its arguments in the fragments after; finish_reason "function_call"."""
    first = {"role": "assistant", "content": None, "function_call": {"name": name, "arguments": ""}}
    return chat(
        chat_chunk(choice(**first), model=model),
        *[chat_chunk(choice(function_call={"arguments": p}), model=model) for p in arg_pieces],
        chat_chunk(choice(finish=finish), model=model),
    )


def tgi_stream(*pieces, finish="eos_token"):
    """Hugging Face TGI: an empty id, model "tgi", "" as the finish reason of every chunk
    before the last (TGI 2.3), then its own finish reason."""
    def tgi(delta, finish_reason):
        return chat_chunk(choice(finish=finish_reason, **delta), model="tgi", id="",
                          system_fingerprint="2.3.1-sha-a094729-rocm")

    return chat(tgi({"role": "assistant", "content": pieces[0]}, ""),
                *[tgi({"content": p}, "") for p in pieces[1:]], tgi({}, finish))


def openrouter_finish(*pieces, finish, native, model="google/gemini-2.5-flash"):
    """OpenRouter: its normalized finish_reason beside the upstream's native_finish_reason."""
    last = choice(finish=finish)
    last["native_finish_reason"] = native
    return b": OPENROUTER PROCESSING\n\n" + chat(
        *[chat_chunk(choice(content=p), model=model) for p in pieces],
        chat_chunk(last, model=model), chat_usage(model=model))


def mistral_thinking(t):
    """Magistral: delta.content is a list of typed parts; reasoning is a "thinking" part."""
    return [{"type": "thinking", "thinking": [{"type": "text", "text": t}]}]


def chat_reasoning(*thoughts, key="reasoning_content", model="deepseek-reasoner") -> list[bytes]:
    return [chat_chunk(choice(role="assistant", content=None, **{key: ""}), model=model)] + [
        chat_chunk(choice(content=None, **{key: t}), model=model) for t in thoughts
    ]


# =============================================================================================
# responses (OpenAI Responses)
# =============================================================================================
RESP_ID = "resp_68c42d0fb418819dbfa579f69406b495"
MSG_ID = "msg_68c42d1d0878819d8266007cd3d1402c"
RS_ID = "rs_68c42d1d0878819d8266007cd3d1403e"
FC_ID = "fc_68c42d1d0878819d8266007cd3d1404f"
R_MODEL = "gpt-5-mini-2025-08-07"


def r(type_, **fields):
    return {"type": type_, **fields}


def _response(status, output=(), **extra):
    return {
        "id": RESP_ID,
        "object": "response",
        "created_at": 1757687055,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": R_MODEL,
        "output": list(output),
        **extra,
    }


def r_created():
    return [
        r("response.created", response=_response("in_progress")),
        r("response.in_progress", response=_response("in_progress")),
    ]


def r_message(*deltas):
    events = [
        r(
            "response.output_item.added",
            output_index=0,
            item={"id": MSG_ID, "type": "message", "status": "in_progress", "content": [], "role": "assistant"},
        ),
        r(
            "response.content_part.added",
            item_id=MSG_ID,
            output_index=0,
            content_index=0,
            part={"type": "output_text", "annotations": [], "text": ""},
        ),
    ]
    events += [
        r("response.output_text.delta", item_id=MSG_ID, output_index=0, content_index=0, delta=d, logprobs=[])
        for d in deltas
    ]
    text = "".join(deltas)
    events += [
        r("response.output_text.done", item_id=MSG_ID, output_index=0, content_index=0, text=text, logprobs=[]),
        r(
            "response.output_item.done",
            output_index=0,
            item={
                "id": MSG_ID,
                "type": "message",
                "status": "completed",
                "content": [{"type": "output_text", "annotations": [], "text": text}],
                "role": "assistant",
            },
        ),
    ]
    return events


def r_reasoning(*summary_deltas, kind="reasoning_summary_text"):
    events = [r("response.output_item.added", output_index=0, item={"id": RS_ID, "type": "reasoning", "summary": []})]
    events += [
        r(f"response.{kind}.delta", item_id=RS_ID, output_index=0, summary_index=0, delta=d) for d in summary_deltas
    ]
    return events


def r_function_call(arguments, name="get_weather"):
    return [
        r(
            "response.output_item.added",
            output_index=0,
            item={
                "id": FC_ID,
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": "call_sVidsfFJ6zlz",
                "name": name,
            },
        ),
        r("response.function_call_arguments.delta", item_id=FC_ID, output_index=0, delta=arguments),
        r("response.function_call_arguments.done", item_id=FC_ID, output_index=0, arguments=arguments),
    ]


def r_completed(text=""):
    output = [{"type": "message", "content": [{"type": "output_text", "text": text}]}] if text else []
    return r(
        "response.completed",
        response=_response("completed", output, usage={"input_tokens": 12, "output_tokens": 9, "total_tokens": 21}),
    )


def r_completed_saying(status, reason=None, **extra):
    """A response.completed whose response contradicts its name (as a wrong mock or a proxy
    may send it; a real server sends response.incomplete / response.failed instead)."""
    details = None if reason is None else {"reason": reason}
    return r("response.completed", response=_response(status, incomplete_details=details, **extra))


def r_incomplete(reason):
    details = None if reason is None else {"reason": reason}
    return r("response.incomplete", response=_response("incomplete", incomplete_details=details))


def r_failed(code, message):
    return r("response.failed", response=_response("failed", error={"code": code, "message": message}))


def r_refusal(delta):
    return r("response.refusal.delta", item_id=MSG_ID, output_index=0, content_index=0, delta=delta)


def responses(*events, seqs=None, event_lines=True, done=False, comments=0) -> bytes:
    """Frame events; sequence_number counts 0, 1, 2, ... unless seqs says otherwise (None: omit)."""
    out = [b": OPENROUTER PROCESSING\n\n"] * comments
    numbers = list(range(len(events))) if seqs is None else seqs
    for event, seq in zip(events, numbers, strict=True):
        if seq is not None:
            event = {**event, "sequence_number": seq}
        head = b"event: " + event["type"].encode() + b"\n" if event_lines else b""
        out.append(head + b"data: " + _json(event) + b"\n\n")
    if done:
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def responses_text(*deltas, **kw) -> bytes:
    return responses(*r_created(), *r_message(*deltas), r_completed("".join(deltas)), **kw)


# =============================================================================================
# anthropic (Messages)
# =============================================================================================
A_MODEL = "claude-sonnet-4-5-20250929"


def a(type_, **fields):
    return {"type": type_, **fields}


def a_start(model=A_MODEL):
    message = {
        "id": "msg_01UdjYBBipA9omjYhicnevgq", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }  # fmt: skip
    return a("message_start", message=message)


PING = a("ping")


def a_text(index, *texts):
    return [
        a("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *[a("content_block_delta", index=index, delta={"type": "text_delta", "text": t}) for t in texts],
        a("content_block_stop", index=index),
    ]


def a_thinking(index, *thoughts):
    return [
        a("content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""}),
        *[a("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": t}) for t in thoughts],
        a("content_block_delta", index=index, delta={"type": "signature_delta", "signature": "EqQBCkYIBxgCKkBk"}),
        a("content_block_stop", index=index),
    ]


def a_tool(index, *partials, name="get_weather", stop=True):
    block = {"type": "tool_use", "id": "toolu_01EKqbqmZrGRXy18eN7m9kvY", "name": name, "input": {}}
    events = [a("content_block_start", index=index, content_block=block)]
    events += [
        a("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p}) for p in partials
    ]
    if stop:
        events.append(a("content_block_stop", index=index))
    return events


def a_end(stop_reason, **delta_extra):
    return [
        a(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None, **delta_extra},
            usage={"output_tokens": 42},
        ),
        a("message_stop"),
    ]


def a_server_tool(index, query):
    block = {"type": "server_tool_use", "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "name": "web_search", "input": {}}
    return [
        a("content_block_start", index=index, content_block=block),
        a(
            "content_block_delta",
            index=index,
            delta={"type": "input_json_delta", "partial_json": json.dumps({"query": query})},
        ),
        a("content_block_stop", index=index),
    ]


def a_error(error_type, message):
    return a("error", error={"type": error_type, "message": message})


def anthropic(*events, pad=0) -> bytes:
    """Frame events; pad > 0 puts that many spaces before each closing brace, as the API does."""
    out = []
    for event in events:
        body = b'{"type": "ping"}' if event == PING else _json(event)
        if pad:
            body = body[:-1] + b" " * pad + b"}"
        out.append(b"event: " + event["type"].encode() + b"\ndata: " + body + b"\n\n")
    return b"".join(out)


def anthropic_text(*texts, stop_reason="end_turn", pad=0) -> bytes:
    return anthropic(a_start(), *a_text(0, *texts), *a_end(stop_reason), pad=pad)


# =============================================================================================
# gemini (streamGenerateContent?alt=sse)
# =============================================================================================
G_MODEL = "gemini-2.5-flash"


def text(t):
    return {"text": t}


def thought(t):
    return {"text": t, "thought": True}


def function_call(name, args):
    return {"functionCall": {"name": name, "args": args}, "thoughtSignature": "CiQBcsjafJ2bT0S3"}


def cand(*parts, finish=None, index=None, **extra):
    c = {"content": {"parts": list(parts), "role": "model"}} if parts else {}
    if finish is not None:
        c["finishReason"] = finish
    if index is not None:
        c["index"] = index
    c.update(extra)
    return c


def g_chunk(*candidates, **top) -> bytes:
    obj = {}
    if candidates:
        obj["candidates"] = list(candidates)
    obj.update(top)
    obj["usageMetadata"] = {"promptTokenCount": 9, "totalTokenCount": 9}
    obj["modelVersion"] = G_MODEL
    obj["responseId"] = "w1peaMz6INOvnvgPgYfPiQY"
    return b"data: " + _json(obj, gemini=True) + b"\r\n\r\n"


def g_bare_error(code, message, status) -> bytes:
    """A mid-stream error as Google sends it: pretty-printed JSON, no data: framing."""
    return json.dumps({"error": {"code": code, "message": message, "status": status}}, indent=2).encode() + b"\n"


def g_final(*parts, finish="STOP", **extra) -> bytes:
    return g_chunk(cand(*parts, finish=finish, **extra))


def gemini(*chunks) -> bytes:
    return b"".join(chunks)


def gemini_text(*pieces, finish="STOP") -> bytes:
    chunks = [g_chunk(cand(text(p))) for p in pieces[:-1]]
    chunks.append(g_chunk(cand(text(pieces[-1]), finish=finish)))
    return gemini(*chunks)


# =============================================================================================
# The table: (name, protocol, bytes, expected category, further expectations)
# =============================================================================================
@dataclass
class Case:
    name: str
    protocol: str
    data: bytes
    category: str
    expect: dict = field(default_factory=dict)
    auto: str | None = None  # protocol="auto" reports this (None: the same as `protocol`)
    transport: str = "eof"
    limits: dict = field(default_factory=dict)


def case(name, protocol, data, category, *, auto=None, transport="eof", limits=None, **expect):
    c = Case(name, protocol, data, category, expect, auto or protocol, transport, limits or {})
    return pytest.param(c, id=f"{category}-{protocol}-{name}")


SMALL = {"max_line_bytes": 64}
OPENAI_ERROR = (
    b'data: {"error":{"message":"The server had an error while processing your request.",'
    b'"type":"server_error","param":null,"code":null}}\n\n'
)
GROQ_ERROR = (
    b'event: error\ndata: {"error":{"message":"Tool call validation failed","type":"invalid_request_error",'
    b'"code":"tool_use_failed","status_code":400}}\n\n'
)
GEMINI_DATA_ERROR = (
    b'data: {"error": {"code": 503,"message": "The model is overloaded.","status": "UNAVAILABLE"}}\r\n\r\n'
)
CUT_CHAT_CHUNK = (  # a chunk whose JSON was cut short, but whose event was still terminated
    b'data: {"id":"chatcmpl-BRq8xY2mT4kLz9wQe","object":"chat.completion.chunk",'
    b'"choices":[{"index":0,"delta":{"content":"Hel\n\n'
)
QUOTA = "You exceeded your current quota."
SAFETY_RATINGS = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
DSR = "deepseek-reasoner"
MAGISTRAL = "magistral-medium-latest"

# fmt: off
CASES = [
    # ---------------------------------------------------------------- limit_exceeded
    case("long-chunk-line", "chat", chat_text("Hello", " world"), "limit_exceeded", auto="unknown",
         limits=SMALL, limit="line", events=0, message=MESSAGE_LIMITS["line"], finish_reason=None),
    case("long-data-line", "responses", responses_text("pong"), "limit_exceeded", auto="unknown",
         limits=SMALL, limit="line", events=0),
    case("long-data-line", "anthropic", anthropic_text("Hi"), "limit_exceeded", auto="unknown",
         limits=SMALL, limit="line", events=0),
    case("long-data-line", "gemini", gemini_text("The", " capital is Paris."), "limit_exceeded", auto="unknown",
         limits=SMALL, limit="line", events=0),
    case("event-too-big", "chat", chat_text("Hello"), "limit_exceeded", auto="unknown",
         limits={"max_event_bytes": 64}, limit="event", message=MESSAGE_LIMITS["event"]),
    case("event-too-big", "responses", responses_text("pong"), "limit_exceeded", auto="unknown",
         limits={"max_event_bytes": 64}, limit="event"),
    case("event-too-big", "anthropic", anthropic_text("Hi"), "limit_exceeded", auto="unknown",
         limits={"max_event_bytes": 64}, limit="event"),
    case("event-too-big", "gemini", gemini_text("Paris."), "limit_exceeded", auto="unknown",
         limits={"max_event_bytes": 64}, limit="event"),
    # the limit wins over everything after it, even a clean end
    case("limit-beats-transport", "anthropic", anthropic_text("Hi"), "limit_exceeded", auto="unknown",
         transport="reset", limits=SMALL, limit="line"),
    # ---------------------------------------------------------------- transport_error
    case("reset-after-complete", "chat", chat_text("Hi"), "transport_error", transport="reset",
         end_marker_seen=True, finish_reason="stop"),
    case("timeout-mid-stream", "responses", responses(*r_created(), *r_message("po")[:3]), "transport_error",
         transport="timeout", end_marker_seen=False),
    case("error-before-any-byte", "anthropic", b"", "transport_error", auto="unknown", transport="error", events=0),
    case("reset-mid-stream", "gemini", gemini(g_chunk(cand(text("The")))), "transport_error", transport="reset"),
    # ---------------------------------------------------------------- upstream_error
    # OpenRouter: a normal chunk with a top-level error object, then [DONE]
    case("openrouter-error-chunk", "chat",
         chat(chat_chunk(choice(role="assistant", content="")),
              chat_chunk(choice(content="", finish="error"), error={"code": 502, "message": "Provider returned error"})),
         "upstream_error", end_marker_seen=True, error_code="502", retryable=True, finish_reason="error"),
    # OpenAI (go-openai#396): data: {"error": {...}} then [DONE]
    case("openai-error-data", "chat",
         chat(chat_chunk(choice(role="assistant", content="")), chat_chunk(choice(content="The")),
              OPENAI_ERROR),
         "upstream_error", error_code="server_error", retryable=True),
    # Groq: event: error, deterministic code, no [DONE]
    case("groq-event-error", "chat",
         chat(*chat_reasoning("Let me call", key="reasoning", model="openai/gpt-oss-120b"),
              GROQ_ERROR,
              done=False),
         "upstream_error", end_marker_seen=False, error_code="tool_use_failed", retryable=False),
    # llama.cpp (2025): the failure in a non-standard "error:" field, then [DONE]
    case("llamacpp-error-field", "chat",
         chat(chat_chunk(choice(content="Once upon"), model="llama-3.1-8b"),
              b'error: {"code":500,"message":"context shift is disabled","type":"server_error"}\n\n'),
         "upstream_error", error_code=None, retryable=True, end_marker_seen=True),
    # a finish reason that does not mean success (vLLM abort), with no error object at all
    case("finish-abort", "chat", chat_text("Partial", finish="abort"), "upstream_error",
         finish_reason="error", finish_reason_raw="abort", message=MESSAGE_ABNORMAL_FINISH, retryable=True),
    case("finish-unknown-value", "chat", chat_text("Hi", finish="weird_new_reason"), "upstream_error",
         finish_reason="other", finish_reason_raw="weird_new_reason", message=MESSAGE_ABNORMAL_FINISH),
    # Responses: nested error event then response.failed (real capture shape)
    case("error-then-failed", "responses",
         responses(*r_created(),
                   r("error", error={"type": "insufficient_quota", "code": "insufficient_quota", "message": QUOTA, "param": None}),
                   r_failed("insufficient_quota", QUOTA)),
         "upstream_error", error_code="insufficient_quota", retryable=False, end_marker_seen=True),
    case("failed-server-error", "responses",
         responses(*r_created(), *r_message("Hel")[:3],
                   r_failed("server_error", "An error occurred while processing your request.")),
         "upstream_error", error_code="server_error", retryable=True, end_marker_seen=True),
    # the flat SDK shape of the error event; the stream just stops afterwards
    case("flat-error-event", "responses",
         responses(*r_created(), *r_message("Hel")[:3],
                   r("error", code="rate_limit_exceeded", message="Rate limit reached.", param=None)),
         "upstream_error", error_code="rate_limit_exceeded", retryable=True, end_marker_seen=False),
    case("overloaded", "anthropic",
         anthropic(a_start(), PING, *a_text(0, "Let me")[:2], a_error("overloaded_error", "Overloaded")),
         "upstream_error", error_code="overloaded_error", retryable=True, end_marker_seen=False),
    case("invalid-request", "anthropic",
         anthropic(a_start(), a_error("invalid_request_error", "prompt is too long")),
         "upstream_error", error_code="invalid_request_error", retryable=False),
    # a bare error stream (no message_start) names no dialect: auto cannot tell
    case("error-only", "anthropic", anthropic(a_error("api_error", "Internal server error")),
         "upstream_error", auto="unknown", error_code="api_error", events=1),
    # Vertex: STOP on every chunk, then a bare multi-line JSON error with no data: framing
    case("bare-json-error", "gemini",
         gemini(g_chunk(cand(text("First "), finish="STOP", index=0)),
                g_chunk(cand(text("Second "), finish="STOP", index=0)),
                g_bare_error(499, "The operation was cancelled.", "CANCELLED")),
         "upstream_error", error_code="CANCELLED", retryable=True, events=3),
    case("bare-json-error-invalid-argument", "gemini",
         gemini(g_chunk(cand(text("Hi"))), g_bare_error(400, "Request contains an invalid argument.", "INVALID_ARGUMENT")),
         "upstream_error", error_code="INVALID_ARGUMENT", retryable=False),
    case("data-error", "gemini",
         gemini(g_chunk(cand(text("The"))), GEMINI_DATA_ERROR),
         "upstream_error", error_code="UNAVAILABLE", retryable=True),
    # a terminal event is judged by what it says: response.completed with a failed status
    case("completed-status-failed", "responses",
         responses(*r_created(), *r_message("Hel")[:3],
                   r_completed_saying("failed", error={"code": "server_error", "message": "boom"})),
         "upstream_error", error_code="server_error", retryable=True, end_marker_seen=True,
         finish_reason="error", finish_reason_raw="failed"),
    case("completed-status-failed-no-error", "responses",
         responses(*r_created(), *r_message("Hello"), r_completed_saying("failed")),
         "upstream_error", error_code=None, retryable=True, finish_reason="error",
         finish_reason_raw="failed", message=MESSAGE_ABNORMAL_FINISH),
    case("completed-status-cancelled", "responses",
         responses(*r_created(), *r_message("Hello"), r_completed_saying("cancelled")),
         "upstream_error", retryable=True, finish_reason="error", finish_reason_raw="cancelled",
         message=MESSAGE_ABNORMAL_FINISH),
    case("completed-status-in-progress", "responses",
         responses(*r_created(), *r_message("Hello"), r_completed_saying("in_progress")),
         "upstream_error", finish_reason="other", finish_reason_raw="in_progress",
         message=MESSAGE_ABNORMAL_FINISH),
    case("completed-with-error-object", "responses",
         responses(*r_created(), *r_message("Hello"),
                   r_completed_saying("completed", error={"code": "rate_limit_exceeded", "message": "slow"})),
         "upstream_error", error_code="rate_limit_exceeded", retryable=True),
    case("finish-other", "gemini", gemini_text("The", " answer", finish="OTHER"), "upstream_error",
         finish_reason="other", finish_reason_raw="OTHER", message=MESSAGE_ABNORMAL_FINISH, retryable=True),
    # ---------------------------------------------------------------- no_end_marker
    case("no-done", "chat", chat_text("Hello", " wor", finish=None, done=False), "no_end_marker",
         end_marker_seen=False, finish_reason=None, finish_reason_seen=False),
    # a finish chunk but the [DONE] never came: the usage chunk may have been lost too
    case("finish-but-no-done", "chat", chat_text("Hi", done=False), "no_end_marker",
         finish_reason="stop", end_marker_seen=False),
    case("nothing-at-all", "chat", b"", "no_end_marker", auto="unknown", events=0, message=MESSAGE_NO_EVENTS),
    case("only-keepalives", "chat", b": OPENROUTER PROCESSING\n\n" * 3, "no_end_marker", auto="unknown",
         events=0, comments=3, message=MESSAGE_NO_EVENTS),
    case("no-terminal-event", "responses", responses(*r_created(), *r_message("Hel", "lo")[:4]), "no_end_marker",
         end_marker_seen=False),
    # OpenRouter appends [DONE] to Responses streams, but it is not the Responses terminal event
    case("done-without-completed", "responses",
         responses(*r_created(), *r_message("Hello"), event_lines=False, done=True, comments=1), "no_end_marker",
         end_marker_seen=False, comments=1),
    case("nothing-at-all", "responses", b"", "no_end_marker", auto="unknown", events=0, message=MESSAGE_NO_EVENTS),
    case("no-message-stop", "anthropic", anthropic(a_start(), *a_text(0, "Hello", " there")), "no_end_marker",
         end_marker_seen=False),
    # message_delta arrived, the connection closed before message_stop
    case("delta-but-no-stop", "anthropic", anthropic(a_start(), *a_text(0, "Hi"), a_end("end_turn")[0]), "no_end_marker",
         finish_reason="stop", finish_reason_raw="end_turn", end_marker_seen=False),
    case("last-chunk-no-finish", "gemini", gemini(g_chunk(cand(text("The"))), g_chunk(cand(text(" capital")))),
         "no_end_marker", end_marker_seen=False, text_events=2),
    case("nothing-at-all", "gemini", b"", "no_end_marker", auto="unknown", events=0, message=MESSAGE_NO_EVENTS),
    # ---------------------------------------------------------------- buffer_residual
    case("partial-line-after-done", "chat", chat_text("Hi") + b'data: {"id":"chatcmpl-BRq8', "buffer_residual",
         end_marker_seen=True, residual_bytes=len(b'data: {"id":"chatcmpl-BRq8')),
    # OpenRouter's trailing [DONE] cut short after response.completed
    case("cut-trailing-done", "responses", responses_text("pong", event_lines=False) + b"data: [DO", "buffer_residual",
         end_marker_seen=True, residual_bytes=9, finish_reason="stop"),
    case("unterminated-event-after-stop", "anthropic", anthropic_text("Hi") + b"event: ping\n", "buffer_residual",
         residual_bytes=len(b"event: ping")),
    # a mid-stream error object that was cut before its closing brace
    case("cut-bare-error", "gemini", gemini_text("Paris.") + b'{\n  "error": {\n    "code": 503,\n', "buffer_residual",
         residual_bytes=len(b'{  "error": {    "code": 503,')),
    # ---------------------------------------------------------------- malformed_event
    case("cut-json-chunk", "chat",
         chat(chat_chunk(choice(role="assistant", content="")),
              CUT_CHAT_CHUNK,
              chat_chunk(choice(content="lo")), chat_chunk(choice(finish="stop"))),
         "malformed_event", malformed_events=1, finish_reason="stop"),
    case("not-json", "chat", chat_text("Hi").replace(CHAT_DONE, b"data: <html>502 Bad Gateway</html>\n\n" + CHAT_DONE),
         "malformed_event", malformed_events=1),
    case("cut-json-event", "responses",
         responses_text("pong").replace(b'"delta":"pong"', b'"delta":"po'), "malformed_event", malformed_events=1),
    case("cut-json-event", "anthropic",
         anthropic_text("Hel", "lo").replace(b'"text":"Hel"}}', b'"text":"Hel"'), "malformed_event", malformed_events=1),
    case("trailing-garbage", "gemini", gemini_text("The", " sky").replace(b'"role": "model"}}]', b'"role": "model"}}]}', 1),
         "malformed_event", malformed_events=1),
    # a bare error object interrupted by the next data: line is abandoned as malformed
    case("interrupted-bare-json", "gemini", gemini(g_chunk(cand(text("The"))), b'{\n  "error": {\n', g_final(text(" end"))),
         "malformed_event", malformed_events=1),
    # ---------------------------------------------------------------- sequence_gap
    # Only Responses numbers its events; the other dialects carry no sequence to check.
    case("missing-event", "responses",
         responses(*r_created(), *r_message("po", "ng"), r_completed("pong"), seqs=[0, 1, 2, 3, 4, 6, 7, 8, 9]),
         "sequence_gap", finish_reason="stop", end_marker_seen=True),
    case("replayed-event", "responses",
         responses(*r_created(), *r_message("po", "ng"), r_completed("pong"), seqs=[0, 1, 2, 3, 4, 4, 5, 6, 7]),
         "sequence_gap"),
    # ---------------------------------------------------------------- missing_finish_reason
    # Snowflake Cortex: no finish_reason key at all, usage chunk, [DONE]
    case("snowflake-no-key", "chat",
         chat(chat_chunk(choice(role="assistant", content="Hello", finish=NO_KEY), model="claude-3-5-sonnet"),
              chat_chunk(choice(content="!", finish=NO_KEY), model="claude-3-5-sonnet"), chat_usage(model="claude-3-5-sonnet")),
         "missing_finish_reason", end_marker_seen=True, finish_reason=None, finish_reason_seen=False, choices=1),
    # OpenRouter -> Novita: a tool call whose finish_reason stays null; only [DONE] ends it
    case("toolcall-null-finish", "chat",
         chat(chat_chunk(choice(role="assistant", content="")),
              chat_chunk(choice(tool_calls=[tool_call(0, '{"city":"Paris"}', id="functions.get_weather:0", name="get_weather")]))),
         "missing_finish_reason", tool_calls=1, finish_reason_seen=False),
    # n=2: choice 1 never gets a finish reason although choice 0 does
    case("n2-one-unfinished", "chat",
         chat(chat_chunk(choice(0, role="assistant", content="")), chat_chunk(choice(1, role="assistant", content="")),
              chat_chunk(choice(0, content="Red")), chat_chunk(choice(1, content="Blue")),
              chat_chunk(choice(0, finish="stop")), chat_usage()),
         "missing_finish_reason", choices=2, finish_reason="stop", finish_reason_seen=True),
    # a terminal response.incomplete whose incomplete_details is null: it never says why
    case("incomplete-without-reason", "responses", responses(*r_created(), *r_message("Hel"), r_incomplete(None)),
         "missing_finish_reason", end_marker_seen=True, finish_reason=None),
    # response.completed saying "incomplete" without a reason never said why it stopped
    case("completed-status-incomplete-no-reason", "responses",
         responses(*r_created(), *r_message("Hel"), r_completed_saying("incomplete")),
         "missing_finish_reason", end_marker_seen=True, finish_reason=None),
    # ... and response.incomplete saying "completed" is still incomplete: the name of a
    # failure is not overruled by a status of success
    case("incomplete-status-completed", "responses",
         responses(*r_created(), *r_message("Hel"),
                   r("response.incomplete", response=_response("completed"))),
         "missing_finish_reason", end_marker_seen=True, finish_reason=None),
    case("null-stop-reason", "anthropic", anthropic(a_start(), *a_text(0, "Hi"), *a_end(None)),
         "missing_finish_reason", end_marker_seen=True, finish_reason=None, choices=1),
    case("no-message-delta", "anthropic", anthropic(a_start(), *a_text(0, "Hi"), a("message_stop")),
         "missing_finish_reason", end_marker_seen=True),
    # candidateCount=2: the last chunk closes candidate 1 only, candidate 0 never finished
    case("two-candidates-one-unfinished", "gemini",
         gemini(g_chunk(cand(text("Red"), index=0), cand(text("Blue"), index=1)),
                g_chunk(cand(text(" sky"), index=1, finish="STOP"))),
         "missing_finish_reason", end_marker_seen=True, choices=2, finish_reason="stop"),
    # ---------------------------------------------------------------- reasoning_exhausted
    case("deepseek-reasoning-content", "chat",
         chat(*chat_reasoning("Let me think", " about primes"), chat_chunk(choice(content=None, finish="length"), model=DSR)),
         "reasoning_exhausted", finish_reason="length", reasoning_events=2, text_events=0, model=DSR),
    case("openrouter-reasoning", "chat",
         b": OPENROUTER PROCESSING\n\n"
         + chat(*chat_reasoning("Considering", " options", key="reasoning", model="anthropic/claude-sonnet-4"),
                chat_chunk(choice(content="", finish="length"), model="anthropic/claude-sonnet-4"), chat_usage()),
         "reasoning_exhausted", reasoning_events=2, comments=1),
    # the survey's rows (see the provider finish-reason tests below for every one)
    case("mistral-model-length", "chat", chat_text("The history of", " Rome", finish="model_length"),
         "truncated_length", finish_reason="length", finish_reason_raw="model_length"),
    # OpenRouter says "stop", the upstream said MAX_TOKENS: the upstream's worse word wins
    case("openrouter-native-max-tokens", "chat", openrouter_finish("The", " history", finish="stop", native="MAX_TOKENS"),
         "truncated_length", finish_reason="length", finish_reason_raw="MAX_TOKENS", comments=1),
    case("mistral-thinking-parts", "chat",
         chat(chat_chunk(choice(role="assistant", content=mistral_thinking("Okay")), model=MAGISTRAL),
              chat_chunk(choice(content=mistral_thinking(", the user")), model=MAGISTRAL),
              chat_chunk(choice(finish="length"), model=MAGISTRAL)),
         "reasoning_exhausted", reasoning_events=2),
    case("summary-then-incomplete", "responses",
         responses(*r_created(), *r_reasoning("**Planning**", " the answer"), r_incomplete("max_output_tokens")),
         "reasoning_exhausted", finish_reason="length", finish_reason_raw="max_output_tokens", reasoning_events=3),
    case("reasoning-text-then-incomplete", "responses",
         responses(*r_created(), *r_reasoning("We need", " to", kind="reasoning_text"), r_incomplete("max_output_tokens"), event_lines=False),
         "reasoning_exhausted", reasoning_events=3),
    # response.completed whose status is incomplete: judged by its reason, not its name
    case("completed-incomplete-after-reasoning", "responses",
         responses(*r_created(), *r_reasoning("**Planning**"), r_completed_saying("incomplete", "max_output_tokens")),
         "reasoning_exhausted", finish_reason="length", finish_reason_raw="max_output_tokens", end_marker_seen=True),
    case("thinking-then-max-tokens", "anthropic",
         anthropic(a_start(), *a_thinking(0, "Let me work", " through this"), *a_end("max_tokens")),
         "reasoning_exhausted", finish_reason="length", finish_reason_raw="max_tokens", reasoning_events=3),
    case("thought-parts-then-max-tokens", "gemini",
         gemini(g_chunk(cand(thought("**Clarifying the goal**"))), g_final(thought("**Planning**"), finish="MAX_TOKENS")),
         "reasoning_exhausted", finish_reason="length", finish_reason_raw="MAX_TOKENS", reasoning_events=2, text_events=0),
    # ---------------------------------------------------------------- truncated_length
    case("length-then-usage", "chat", chat_text('{"', finish="length", usage=True), "truncated_length",
         finish_reason="length", finish_reason_raw="length", text_events=1, end_marker_seen=True),
    case("reasoning-and-some-text", "chat",
         chat(*chat_reasoning("Hmm"), chat_chunk(choice(content="The answer is"), model=DSR),
              chat_chunk(choice(finish="length"), model=DSR)),
         "truncated_length", reasoning_events=1, text_events=1),
    case("incomplete-max-output-tokens", "responses",
         responses(*r_created(), *r_message("Once", " upon")[:4], r_incomplete("max_output_tokens")),
         "truncated_length", finish_reason="length", finish_reason_raw="max_output_tokens", text_events=2, end_marker_seen=True),
    # the hole one widely used CLI has: it never reads the status of response.completed
    case("completed-status-incomplete", "responses",
         responses(*r_created(), *r_message("Once", " upon")[:4], r_completed_saying("incomplete", "max_output_tokens")),
         "truncated_length", finish_reason="length", finish_reason_raw="max_output_tokens", end_marker_seen=True),
    # a reason beside status "completed": the failure it names wins
    case("completed-status-completed-with-reason", "responses",
         responses(*r_created(), *r_message("Once", " upon"), r_completed_saying("completed", "max_output_tokens")),
         "truncated_length", finish_reason="length", finish_reason_raw="max_output_tokens"),
    # the APY fixture shape: the open tool_use block never gets content_block_stop
    case("max-tokens-mid-tool-use", "anthropic",
         anthropic(a_start(), *a_text(0, "I'll create the file."), *a_tool(1, '{"filename": "tax', stop=False), *a_end("max_tokens"), pad=9),
         "truncated_length", finish_reason="length", tool_calls=1, text_events=1),
    case("context-window", "anthropic", anthropic_text("Long", stop_reason="model_context_window_exceeded"), "truncated_length",
         finish_reason="length", finish_reason_raw="model_context_window_exceeded"),
    case("max-tokens", "gemini", gemini_text("The", " history of", finish="MAX_TOKENS"), "truncated_length",
         finish_reason="length", finish_reason_raw="MAX_TOKENS", text_events=2),
    # ---------------------------------------------------------------- content_filtered
    case("azure-content-filter", "chat", chat_text("I can", finish="content_filter"), "content_filtered",
         finish_reason="content_filter", finish_reason_raw="content_filter"),
    # structured-output refusal: refusal deltas, content null, finish_reason stop
    case("delta-refusal", "chat",
         chat(chat_chunk(choice(role="assistant", content=None, refusal="")), chat_chunk(choice(refusal="I'm")),
              chat_chunk(choice(refusal=" sorry, I can't help.")), chat_chunk(choice(finish="stop"))),
         "content_filtered", finish_reason="stop", refusal_events=2, message=MESSAGE_REFUSAL),
    case("incomplete-content-filter", "responses",
         responses(*r_created(), *r_message("Sure")[:3], r_incomplete("content_filter")),
         "content_filtered", finish_reason="content_filter", finish_reason_raw="content_filter"),
    case("completed-incomplete-content-filter", "responses",
         responses(*r_created(), *r_message("Sure"), r_completed_saying("incomplete", "content_filter")),
         "content_filtered", finish_reason="content_filter", finish_reason_raw="content_filter"),
    case("refusal-delta", "responses",
         responses(*r_created(), r_refusal("I can't help with that."), r_completed()),
         "content_filtered", refusal_events=1, finish_reason="stop", message=MESSAGE_REFUSAL),
    case("refusal-no-blocks", "anthropic",
         anthropic(a_start(), PING, *a_end("refusal", stop_details={"type": "refusal", "category": "cyber"})),
         "content_filtered", finish_reason="content_filter", finish_reason_raw="refusal", message=MESSAGE_REFUSAL,
         text_events=0),
    # stop_details says refusal while stop_reason says end_turn: the refusal wins
    case("refusal-in-stop-details-only", "anthropic",
         anthropic(a_start(), *a_text(0, "I can't"), *a_end("end_turn", stop_details={"type": "refusal", "category": "cyber"})),
         "content_filtered", finish_reason="content_filter", finish_reason_raw="refusal", message=MESSAGE_REFUSAL),
    case("refusal-after-thinking", "anthropic",
         anthropic(a_start(), *a_thinking(0, "This asks for"), *a_text(1, "I can't"), *a_end("refusal"), pad=3),
         "content_filtered", reasoning_events=2, text_events=1),
    case("safety", "gemini", g_final(finish="SAFETY", safetyRatings=SAFETY_RATINGS),
         "content_filtered", finish_reason="content_filter", finish_reason_raw="SAFETY", text_events=0),
    case("recitation-no-content", "gemini",
         gemini(g_chunk(cand(text("text1"))), g_chunk(cand(text("text2"))), g_final(finish="RECITATION")),
         "content_filtered", finish_reason_raw="RECITATION", text_events=2),
    # the prompt itself was blocked: one chunk, promptFeedback.blockReason, no candidates
    case("blocked-prompt", "gemini",
         g_chunk(promptFeedback={"blockReason": "SAFETY", "safetyRatings": SAFETY_RATINGS}),
         "content_filtered", finish_reason="content_filter", finish_reason_raw="SAFETY", message=MESSAGE_BLOCKED_PROMPT,
         end_marker_seen=True, choices=0),
    # ---------------------------------------------------------------- tool_call_malformed
    case("args-cut-short", "chat", chat_tool_stream('{"ci', 'ty": "Par'), "tool_call_malformed",
         tool_calls=1, finish_reason="tool_calls"),
    case("args-trailing-comma", "chat", chat_tool_stream('{"city": "Paris",', "}"), "tool_call_malformed"),
    # parallel calls: the first one is fine, the second does not parse
    case("second-parallel-call-bad", "chat",
         chat(chat_chunk(choice(role="assistant", content=None)),
              chat_chunk(choice(tool_calls=[tool_call(0, '{"city": "Paris"}', id="call_a1", name="get_weather")])),
              chat_chunk(choice(tool_calls=[tool_call(1, '{"city": Rome}', id="call_b2", name="get_weather")])),
              chat_chunk(choice(finish="tool_calls"))),
         "tool_call_malformed", tool_calls=2),
    # every call at index 0, told apart by a new id: the first one's arguments never closed
    case("new-id-same-index", "chat",
         chat(chat_chunk(choice(tool_calls=[tool_call(0, '{"city": "Pa', id="call_a1", name="get_weather")])),
              chat_chunk(choice(tool_calls=[tool_call(0, '{"city": "Rome"}', id="call_b2", name="get_weather")])),
              chat_chunk(choice(finish="tool_calls"))),
         "tool_call_malformed", tool_calls=2),
    case("args-done-bad-json", "responses", responses(*r_created(), *r_function_call('{"city": "Paris"'), r_completed()),
         "tool_call_malformed", tool_calls=1, finish_reason="tool_calls", finish_reason_raw="completed"),
    case("input-json-bad", "anthropic",
         anthropic(a_start(), *a_text(0, "Checking."), *a_tool(1, '{"city": ', '"Paris"'), *a_end("tool_use")),
         "tool_call_malformed", finish_reason="tool_calls", tool_calls=1),
    case("malformed-function-call", "gemini",
         g_final(finish="MALFORMED_FUNCTION_CALL", finishMessage="Malformed function call: print(default_api.get_weather(city=Paris"),
         "tool_call_malformed", finish_reason="malformed_tool_call", finish_reason_raw="MALFORMED_FUNCTION_CALL"),
    # ---------------------------------------------------------------- empty_output
    case("stop-with-nothing", "chat", chat_text(), "empty_output", finish_reason="stop", text_events=0, end_marker_seen=True),
    case("completed-with-nothing", "responses", responses(*r_created(), r_completed()), "empty_output", finish_reason="stop"),
    case("end-turn-with-empty-block", "anthropic", anthropic(a_start(), *a_text(0, ""), *a_end("end_turn")), "empty_output",
         finish_reason="stop", text_events=0),
    case("stop-with-empty-text", "gemini", gemini_text(""), "empty_output", finish_reason="stop", text_events=0),
    # legacy function calling whose arguments were cut mid-JSON
    case("legacy-function-call-cut", "chat", chat_function_call('{\n', '  "code": "print(1', finish="function_call"),
         "tool_call_malformed", tool_calls=1, finish_reason="tool_calls", finish_reason_raw="function_call"),
    # ---------------------------------------------------------------- complete
    case("legacy-function-call", "chat", chat_function_call('{\n', '  "code": "print(1)"\n', '}'),
         "complete", tool_calls=1, finish_reason="tool_calls", finish_reason_raw="function_call", text_events=0),
    # a legacy call and a tool call at index 0 are two calls, not one
    case("legacy-function-call-beside-tool-call", "chat",
         chat(chat_chunk(choice(function_call={"name": "repl", "arguments": '{"a":'})),
              chat_chunk(choice(tool_calls=[tool_call(0, '{"b": 2}', id="call_x", name="f")])),
              chat_chunk(choice(function_call={"arguments": " 1}"})), chat_chunk(choice(finish="function_call"))),
         "complete", tool_calls=2),
    case("tgi-eos-token", "chat", tgi_stream("Paris", " is the capital."), "complete", finish_reason="stop",
         finish_reason_raw="eos_token", text_events=2, model="tgi"),
    # OpenRouter's finish_reason beside a native one of the same meaning, or one we do not know
    case("openrouter-native-end-turn", "chat",
         openrouter_finish("Hi", finish="stop", native="end_turn", model="anthropic/claude-sonnet-4"),
         "complete", finish_reason="stop", finish_reason_raw="stop", comments=1),
    case("openrouter-native-unknown", "chat", openrouter_finish("Hi", finish="stop", native="COMPLETE", model="cohere/command-r"),
         "complete", finish_reason="stop", finish_reason_raw="stop", comments=1),
    case("basic", "chat", chat_text("Hello", " there!"), "complete", finish_reason="stop", finish_reason_raw="stop",
         text_events=2, events=5, choices=1, end_marker_seen=True, finish_reason_seen=True, model="gpt-4o-mini-2024-07-18"),
    # the usage chunk (choices: []) comes after the finish chunk; on gpt-5, a moderation chunk after that
    case("usage-and-moderation-after-finish", "chat",
         chat_text("Hi", usage=True)[: -len(CHAT_DONE)]
         + chat_chunk(moderation={"input": {"flagged": False}, "output": {"flagged": False}}) + CHAT_DONE,
         "complete", finish_reason="stop", events=6, choices=1),
    # OpenRouter repeats finish_reason on the usage chunk, whose choices are not empty
    case("openrouter-finish-twice", "chat",
         b": OPENROUTER PROCESSING\n\n"
         + chat(chat_chunk(choice(content="Hi")), chat_chunk(choice(finish="stop")),
                chat_chunk(choice(content="", finish="stop"), usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4})),
         "complete", comments=1),
    case("n3-interleaved", "chat",
         chat(*[chat_chunk(choice(i, content=w)) for i, w in ((0, "Red"), (2, "Green"), (1, "Blue"))],
              *[chat_chunk(choice(i, finish="stop")) for i in (1, 0, 2)], chat_usage()),
         "complete", choices=3, text_events=3),
    case("parallel-tool-calls", "chat",
         chat(chat_chunk(choice(role="assistant", content=None)),
              chat_chunk(choice(tool_calls=[tool_call(0, "", id="call_a1", name="get_weather")])),
              chat_chunk(choice(tool_calls=[tool_call(0, '{"city": ')])), chat_chunk(choice(tool_calls=[tool_call(0, '"Paris"}')])),
              chat_chunk(choice(tool_calls=[tool_call(1, "", id="call_b2", name="get_weather")])),
              chat_chunk(choice(tool_calls=[tool_call(1, '{"city": "Rome"}')])), chat_chunk(choice(finish="tool_calls"))),
         "complete", tool_calls=2, finish_reason="tool_calls", text_events=0),
    # Anthropic's OpenAI-compatible endpoint: tool index mirrors the content-block index (1)
    case("tool-index-starts-at-1", "chat",
         chat(chat_chunk(choice(content="Let me check.")),
              chat_chunk(choice(tool_calls=[tool_call(1, "", id="toolu_01A", name="get_weather")])),
              chat_chunk(choice(tool_calls=[tool_call(1, '{"city":"Paris"}')])), chat_chunk(choice(finish="tool_calls"))),
         "complete", tool_calls=1, text_events=1),
    case("new-id-same-index", "chat",
         chat(chat_chunk(choice(tool_calls=[tool_call(0, '{"city": "Paris"}', id="call_a1", name="get_weather")])),
              chat_chunk(choice(tool_calls=[tool_call(0, '{"city": "Rome"}', id="call_b2", name="get_weather")])),
              chat_chunk(choice(finish="tool_calls"))),
         "complete", tool_calls=2),
    # an escape sequence of the arguments split across two fragments
    case("escape-split-across-fragments", "chat", chat_tool_stream('{"city": "S\\u00', 'e3o Paulo\\', 'n"}'), "complete", tool_calls=1),
    case("reasoning-then-answer", "chat",
         chat(*chat_reasoning("Think"), chat_chunk(choice(content="42"), model=DSR), chat_chunk(choice(finish="stop"), model=DSR)),
         "complete", reasoning_events=1, text_events=1),
    case("basic", "responses", responses_text("po", "ng"), "complete", finish_reason="stop", finish_reason_raw="completed",
         end_marker_seen=True, text_events=2, events=9, model=R_MODEL),
    case("function-call", "responses", responses(*r_created(), *r_function_call('{"city":"Paris"}'), r_completed()), "complete",
         tool_calls=1, finish_reason="tool_calls", finish_reason_raw="completed"),
    case("reasoning-then-answer", "responses", responses(*r_created(), *r_reasoning("**Thinking**"), *r_message("Paris"), r_completed("Paris")),
         "complete", reasoning_events=2, text_events=1),
    # March-2025 captures have no sequence_number; a resumed stream starts past 0
    case("no-sequence-numbers", "responses", responses_text("pong", seqs=[None] * 8), "complete"),
    case("resumed-starting-after", "responses", responses_text("pong", seqs=list(range(5, 13))), "complete"),
    case("openrouter-data-only-done", "responses", responses_text("pong", event_lines=False, done=True, comments=2), "complete",
         comments=2, events=9, end_marker_seen=True),
    case("steered", "responses", responses(*r_created(), *r_message("Par"), r_incomplete("steered")), "complete",
         finish_reason="pause", message=MESSAGE_PAUSE),
    # ping right after the first content_block_start, as the API sends it
    case("basic", "anthropic",
         anthropic(a_start(), *a_text(0, "Hello")[:1], PING, *a_text(0, "Hello", " there!")[1:], *a_end("end_turn")),
         "complete", finish_reason="stop", finish_reason_raw="end_turn", text_events=2, events=8, model=A_MODEL,
         end_marker_seen=True),
    # real bodies pad the JSON with runs of spaces before the closing brace
    case("padded-json", "anthropic", anthropic_text("Hi", " there", pad=10), "complete", text_events=2),
    case("pause-turn", "anthropic",
         anthropic(a_start(), *a_text(0, "Searching."), *a_server_tool(1, "weather in Paris"), *a_end("pause_turn")),
         "complete", finish_reason="pause", finish_reason_raw="pause_turn", message=MESSAGE_PAUSE, tool_calls=1),
    case("tool-use", "anthropic",
         anthropic(a_start(), *a_text(0, "Checking."), *a_tool(1, '{"city": ', '"Paris"}'), *a_end("tool_use"), pad=5),
         "complete", finish_reason="tool_calls", tool_calls=1),
    case("stop-sequence", "anthropic", anthropic_text("1, 2, 3", stop_reason="stop_sequence"), "complete", finish_reason="stop"),
    case("thinking-then-text", "anthropic", anthropic(a_start(), *a_thinking(0, "Simple."), *a_text(1, "4"), *a_end("end_turn")),
         "complete", reasoning_events=2, text_events=1),
    case("redacted-thinking-then-text", "anthropic",
         anthropic(a_start(),
                   a("content_block_start", index=0, content_block={"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
                   a("content_block_stop", index=0), *a_text(1, "Done."), *a_end("end_turn")),
         "complete", reasoning_events=1),
    case("basic-crlf", "gemini", gemini_text("The", " capital of France", " is Paris."), "complete", finish_reason="stop",
         finish_reason_raw="STOP", text_events=3, events=3, end_marker_seen=True, model=G_MODEL, choices=1),
    # old Vertex: finishReason STOP on every chunk
    case("stop-on-every-chunk", "gemini",
         gemini(*[g_chunk(cand(text(t), finish="STOP", index=0)) for t in ("One", " two", " three")]),
         "complete", text_events=3),
    case("thoughts-then-answer", "gemini", gemini(g_chunk(cand(thought("**Planning**"))), g_final(text("Paris."))),
         "complete", reasoning_events=1, text_events=1),
    # a function call ends with STOP: no tool-specific finish reason exists
    case("function-call-stop", "gemini",
         gemini(g_chunk(cand(function_call("get_weather", {"city": "Paris"}))), g_final(text(""))),
         "complete", tool_calls=1, finish_reason="tool_calls", finish_reason_raw="STOP"),
]
# fmt: on

# sequence_gap needs sequence numbers, which only the Responses API sends.
IMPOSSIBLE = {
    ("sequence_gap", "chat"): "chat chunks carry no sequence number; order cannot be checked",
    ("sequence_gap", "anthropic"): "Anthropic events carry no sequence number",
    ("sequence_gap", "gemini"): "Gemini chunks carry no sequence number",
}

DEFAULTS = {"residual_bytes": 0, "limit": None, "malformed_events": 0}


@pytest.mark.parametrize("c", CASES)
def test_category(judge, c: Case):
    verdict = judge(c.data, c.protocol, c.transport, **c.limits)
    assert verdict.category == c.category, verdict
    assert verdict.protocol == c.protocol
    assert verdict.complete is (c.category == "complete")
    assert verdict.transport == c.transport
    assert verdict.bytes == len(c.data)
    assert verdict.message
    defaults = dict(DEFAULTS)
    if c.category == "buffer_residual":
        del defaults["residual_bytes"]
        assert verdict.residual_bytes > 0
    if c.category == "malformed_event":
        del defaults["malformed_events"]
        assert verdict.malformed_events > 0
    if c.category == "limit_exceeded":
        del defaults["limit"]
        assert verdict.limit in ("line", "event")
    expected = {**defaults, "retryable": EXPECTED_RETRYABLE[c.category], **c.expect}
    for name, value in expected.items():
        assert getattr(verdict, name) == value, f"{name}: {getattr(verdict, name)!r} != {value!r}"

    auto = judge(c.data, "auto", c.transport, **c.limits)
    if c.auto == c.protocol:
        assert auto == verdict  # auto-detection reaches exactly the same verdict
    else:
        assert auto.protocol == c.auto
        assert auto.category == c.category


def test_every_category_in_every_dialect():
    """The table reaches each category in each dialect, except where it cannot occur."""
    covered = {(p.values[0].category, p.values[0].protocol) for p in CASES}
    for category in CATEGORIES:
        for dialect in DIALECTS:
            if (category, dialect) in IMPOSSIBLE:
                assert (category, dialect) not in covered
            else:
                assert (category, dialect) in covered, f"no case reaches {category} in {dialect}"


def test_sequence_numbers_are_ignored_outside_responses(judge):
    """A stray sequence_number field in another dialect does not make a gap (see IMPOSSIBLE)."""
    data = chat(
        chat_chunk(choice(content="Hi"), sequence_number=3), chat_chunk(choice(finish="stop"), sequence_number=9)
    )
    assert judge(data, "chat").category == "complete"
    data = anthropic(
        a_start(), *[{**e, "sequence_number": n * 5} for n, e in enumerate(a_text(0, "Hi"))], *a_end("end_turn")
    )
    assert judge(data, "anthropic").category == "complete"


# =============================================================================================
# Framing (WHATWG event-stream rules)
# =============================================================================================
COMPLETE_STREAMS = {
    "chat": chat_text("Hello", " there!", usage=True),
    "responses": responses_text("po", "ng"),
    "anthropic": anthropic_text("Hello", " there!"),
    "gemini": gemini_text("The", " capital", " is Paris."),
}


def _lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")


def _without_bytes(verdict):
    return dataclasses.replace(verdict, bytes=0)


def feed(impl, chunks, protocol="auto", transport="eof", **limits):
    scanner = impl.Scanner(protocol, **limits)
    for chunk in chunks:
        scanner.feed(chunk)
    return scanner.close(transport)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_line_endings(judge, dialect, ending):
    reference = judge(_lf(COMPLETE_STREAMS[dialect]), dialect)
    assert reference.category == "complete"
    data = _lf(COMPLETE_STREAMS[dialect]).replace(b"\n", ending)
    verdict = judge(data, dialect)
    assert _without_bytes(verdict) == _without_bytes(reference)
    assert verdict.bytes == len(data)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_mixed_line_endings(judge, dialect):
    lines = _lf(COMPLETE_STREAMS[dialect]).split(b"\n")
    # CR is always followed by CRLF: a CR followed by an empty line's LF would be one CRLF.
    endings = (b"\r\n", b"\n", b"\r")
    data = b"".join(line + endings[i % 3] for i, line in enumerate(lines[:-1])) + lines[-1]
    verdict = judge(data, dialect)
    assert verdict.category == "complete"
    assert verdict.events == judge(COMPLETE_STREAMS[dialect], dialect).events


def test_cr_then_lf_in_next_chunk_is_one_line_end(impl):
    # The chunk's JSON spans two data: lines; had CR|LF been read as two line ends, the blank
    # line between them would dispatch the first half alone as a malformed event.
    first = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,\r'
    second = b'\ndata: "delta":{"content":"Hi"},"finish_reason":"stop"}]}\r\n\r\ndata: [DONE]\r\n\r\n'
    verdict = feed(impl, [first, second], "chat")
    assert verdict.category == "complete"
    assert verdict.malformed_events == 0
    assert verdict.events == 2
    assert verdict.text_events == 1
    # also when the CR is the very last byte of a chunk and the LF a chunk of its own,
    # or when an empty chunk comes between them
    assert feed(impl, [first, b"\n", second[1:]], "chat") == verdict
    assert feed(impl, [first, b"", second], "chat") == verdict


def test_cr_then_cr_in_next_chunk_is_two_line_ends(impl):
    verdict = feed(impl, [chat_text("Hi").replace(b"\n", b"\r")[:-1], b"\r"], "chat")
    assert verdict.category == "complete"
    assert verdict.end_marker_seen


@pytest.mark.parametrize("dialect", DIALECTS)
def test_leading_bom_is_dropped(judge, dialect):
    data = COMPLETE_STREAMS[dialect]
    verdict = judge(b"\xef\xbb\xbf" + data, dialect)
    assert _without_bytes(verdict) == _without_bytes(judge(data, dialect))
    assert verdict.bytes == len(data) + 3


@pytest.mark.parametrize("split", [1, 2], ids=["ef|bbbf", "efbb|bf"])
def test_bom_split_across_chunks(impl, split):
    bom = b"\xef\xbb\xbf"
    data = gemini_text("Paris.")  # one chunk: if its first line were spoilt, nothing would remain
    verdict = feed(impl, [bom[:split], bom[split:], data], "gemini")
    assert verdict.category == "complete"
    assert verdict.events == 1
    assert feed(impl, [bom[:split], bom[split:] + data[:4], data[4:]], "gemini") == verdict


def test_only_one_bom_is_dropped(judge):
    # A second BOM belongs to the first field name ("\ufeffdata"), so that line is ignored.
    data = gemini_text("The", " end.")
    verdict = judge(b"\xef\xbb\xbf" * 2 + data, "gemini")
    assert verdict.events == 1  # the first chunk is lost
    assert verdict.text_events == 1
    assert judge(b"\xef\xbb\xbf" + data, "gemini").events == 2


def test_utf16_bom_is_not_honoured(judge):
    # Decoded as UTF-8 it spoils the first field name, so the (only) chunk is not an event.
    verdict = judge(b"\xff\xfe" + gemini_text("Paris."), "gemini")
    assert (verdict.category, verdict.events) == ("no_end_marker", 0)


def test_bom_in_the_middle_is_not_dropped(judge):
    # Only a *leading* BOM is dropped: before the [DONE] line it spoils "data" -> no end marker.
    data = chat_text("Hi").replace(CHAT_DONE, b"\xef\xbb\xbf" + CHAT_DONE)
    assert judge(data, "chat").category == "no_end_marker"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_comments_and_keepalives(judge, dialect):
    data = _lf(COMPLETE_STREAMS[dialect])
    noisy = b": OPENROUTER PROCESSING\n\n:\n\n" + data.replace(b"\n\n", b"\n\n: keep-alive\n\n")
    noisy = noisy.replace(b"}\n\n", b"}\n: inside an event\n\n", 1)  # between a data line and its blank line
    verdict = judge(noisy, dialect)
    assert verdict.category == "complete"
    assert verdict.events == judge(data, dialect).events
    assert verdict.comments == sum(1 for line in noisy.split(b"\n") if line.startswith(b":"))
    assert verdict.comments >= 4


@pytest.mark.parametrize("dialect", DIALECTS)
def test_data_without_space(judge, dialect):
    data = _lf(COMPLETE_STREAMS[dialect]).replace(b"data: ", b"data:")
    verdict = judge(data, dialect)
    assert verdict.category == "complete"
    assert verdict.events == judge(COMPLETE_STREAMS[dialect], dialect).events


def test_data_colon_without_space_done(judge):
    assert judge(chat_text("Hi").replace(b"data: [DONE]", b"data:[DONE]"), "chat").category == "complete"


def test_only_one_space_is_removed(judge):
    # "data:  [DONE]" has the value " [DONE]": not the end marker, and not JSON either.
    verdict = judge(chat_text("Hi").replace(b"data: [DONE]", b"data:  [DONE]"), "chat")
    assert verdict.category == "no_end_marker"
    assert verdict.end_marker_seen is False
    assert verdict.malformed_events == 1


def test_tab_is_not_the_optional_space(judge):
    verdict = judge(chat_text("Hi").replace(b"data: [DONE]", b"data:\t[DONE]"), "chat")
    assert verdict.category == "no_end_marker"


@pytest.mark.parametrize(
    "line",
    [b"Data: [DONE]", b"DATA: [DONE]", b": data: [DONE]", b" data: [DONE]", b"data : [DONE]"],
    ids=["Data", "DATA", "comment", "leading-space", "space-before-colon"],
)
def test_field_names_are_exact(judge, line):
    # Field names are case-sensitive and taken literally; none of these is the end marker.
    verdict = judge(chat_text("Hi", done=False) + line + b"\n\n", "chat")
    assert verdict.category == "no_end_marker"
    assert verdict.malformed_events == 0


@pytest.mark.parametrize(
    "body",
    [b'{"a":01}', b'{"a":1.}', b'{"a":NaN}', b'{"a":[1,]}', b"{'a':1}", b'{"a":"\\x"}', b'{"a":1}}', b'{"a":"\x01"}'],
)
def test_strict_json(judge, body):
    """Leading zeros, NaN, trailing commas, single quotes, bad escapes, raw control bytes."""
    ok = chat_text("Hi")
    assert judge(ok, "chat").category == "complete"
    verdict = judge(ok.replace(CHAT_DONE, b"data: " + body + b"\n\n" + CHAT_DONE), "chat")
    assert (verdict.category, verdict.malformed_events) == ("malformed_event", 1)
    # the same strictness for tool-call arguments
    args = body.decode("latin-1")
    assert judge(chat_tool_stream(args), "chat").category == "tool_call_malformed"


def test_multiline_data_is_joined_with_lf(judge):
    # One chunk's JSON split over two data: lines joins with "\n", which is JSON whitespace.
    split = (
        b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk",\n'
        b'data: "choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}\n\n'
    )
    verdict = judge(split + CHAT_DONE, "chat")
    assert verdict.category == "complete"
    assert verdict.events == 2
    assert verdict.text_events == 1
    # the same split inside a JSON string is not valid (a raw LF in a string)
    bad = b'data: {"choices":[{"index":0,"delta":{"content":"H\ndata: i"},"finish_reason":"stop"}]}\n\n'
    assert judge(bad + CHAT_DONE, "chat").malformed_events == 1


def test_multiline_data_anthropic(judge):
    data = anthropic_text("Hi").replace(
        b'data: {"type":"message_stop"}', b'data: {\ndata:   "type": "message_stop"\ndata: }'
    )
    verdict = judge(data, "anthropic")
    assert verdict.category == "complete"
    assert verdict.end_marker_seen


@pytest.mark.parametrize("tail", [b"", b"\n"], ids=["no-newline", "one-newline"])
def test_unterminated_final_event_is_residue(judge, tail):
    complete = chat_text("Hi")
    data = complete[: -len(b"\n\n")] + tail  # "data: [DONE]" never gets its blank line
    verdict = judge(data, "chat")
    assert verdict.category == "no_end_marker"
    assert verdict.end_marker_seen is False
    assert verdict.residual_bytes == len(b"data: [DONE]")
    assert verdict.events == judge(complete, "chat").events - 1


def test_unterminated_final_event_anthropic(judge):
    data = anthropic_text("Hi")[: -len(b"\n")]  # message_stop's blank line missing
    verdict = judge(data, "anthropic")
    assert verdict.category == "no_end_marker"
    assert verdict.residual_bytes == len(b"event: message_stop") + len(b'data: {"type":"message_stop"}')


def test_unterminated_final_gemini_chunk(judge):
    data = gemini(g_chunk(cand(text("The"))), g_chunk(cand(text(" end."), finish="STOP"))[:-2])
    verdict = judge(data, "gemini")
    assert verdict.category == "no_end_marker"
    assert verdict.residual_bytes > 0
    assert verdict.events == 1


@pytest.mark.parametrize("dialect", DIALECTS)
def test_event_without_data_dispatches_nothing(judge, dialect):
    data = _lf(COMPLETE_STREAMS[dialect])
    noisy = b"event: ping\n\n" + data.replace(b"\n\n", b"\n\nevent: keepalive\n\n", 1) + b"event: x\n\n"
    verdict = judge(noisy, dialect)
    assert verdict.category == "complete"
    assert verdict.events == judge(data, dialect).events
    assert verdict.residual_bytes == 0


def test_id_retry_and_unknown_fields_are_ignored(judge):
    data = anthropic_text("Hi").replace(b"event: ", b"id: 7\nretry: 3000\nx-trace: abc\nevent: ")
    verdict = judge(data, "anthropic")
    assert verdict.category == "complete"
    assert verdict.events == judge(anthropic_text("Hi"), "anthropic").events


# =============================================================================================
# Traps from PROTOCOLS.md that are not plain table rows
# =============================================================================================
def test_gemini_stop_is_only_final_on_the_last_chunk(judge):
    # STOP on an earlier chunk does not end the stream if a later chunk carries none.
    data = gemini(g_chunk(cand(text("One"), finish="STOP")), g_chunk(cand(text(" two"))))
    verdict = judge(data, "gemini")
    assert verdict.category == "no_end_marker"
    assert verdict.finish_reason == "stop"  # seen, but not on the last chunk


def test_response_incomplete_vs_completed(judge):
    body = (*r_created(), *r_message("Once", " upon"))
    done = judge(responses(*body, r_completed("Once upon")), "responses")
    cut = judge(responses(*body, r_incomplete("max_output_tokens")), "responses")
    assert (done.category, done.finish_reason, done.complete) == ("complete", "stop", True)
    assert (cut.category, cut.finish_reason, cut.complete) == ("truncated_length", "length", False)
    assert done.end_marker_seen and cut.end_marker_seen


def test_anthropic_content_block_stop_is_not_the_end(judge):
    data = anthropic(a_start(), *a_text(0, "Hi"))
    verdict = judge(data, "anthropic")
    assert verdict.category == "no_end_marker"


def test_anthropic_routing_uses_json_type_when_event_line_is_missing(judge):
    data = anthropic_text("Hi").replace(b"event: ", b"x-event: ")
    assert judge(data, "anthropic").category == "complete"


def test_chat_done_ends_only_chat(judge):
    # [DONE] is the chat end marker; in an Anthropic stream it ends nothing.
    data = anthropic(a_start(), *a_text(0, "Hi")) + CHAT_DONE
    verdict = judge(data, "anthropic")
    assert verdict.category == "no_end_marker"
    assert verdict.end_marker_seen is False


# =============================================================================================
# Limits
# =============================================================================================
def _lines(data: bytes):
    return re.split(rb"\r\n|\n|\r", data)


def _largest_event(data: bytes) -> int:
    largest = current = 0
    for line in _lines(data):
        if not line:
            current = 0
        elif not line.startswith(b":"):
            current += len(line)
            largest = max(largest, current)
    return largest


@pytest.mark.parametrize("dialect", DIALECTS)
def test_line_limit_boundary(judge, dialect):
    data = COMPLETE_STREAMS[dialect]
    longest = max(len(line) for line in _lines(data))
    assert judge(data, dialect, max_line_bytes=longest).category == "complete"
    verdict = judge(data, dialect, max_line_bytes=longest - 1)
    assert (verdict.category, verdict.limit, verdict.retryable) == ("limit_exceeded", "line", False)
    assert verdict.message == MESSAGE_LIMITS["line"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_event_limit_boundary(judge, dialect):
    data = COMPLETE_STREAMS[dialect]
    largest = _largest_event(data)
    assert judge(data, dialect, max_event_bytes=largest).category == "complete"
    verdict = judge(data, dialect, max_event_bytes=largest - 1)
    assert (verdict.category, verdict.limit) == ("limit_exceeded", "event")


@pytest.mark.parametrize("limit", ["max_line_bytes", "max_event_bytes"])
def test_limit_without_newline(judge, limit):
    # A run-away line that never ends: the limit is reached without any line terminator.
    data = chat_chunk(choice(content="x" * 5000))[:-2]
    assert b"\n" not in data and b"\r" not in data
    unlimited = judge(data, "chat")
    assert (unlimited.category, unlimited.residual_bytes) == ("no_end_marker", len(data))
    verdict = judge(data, "chat", **{limit: 64})
    assert verdict.category == "limit_exceeded"
    assert verdict.limit == ("line" if limit == "max_line_bytes" else "event")
    assert verdict.residual_bytes == 0
    assert verdict.bytes == len(data)


def test_limit_exceeded_in_a_single_feed_call(impl):
    scanner = impl.Scanner("chat", max_line_bytes=64)
    scanner.feed(b"data: " + b"y" * 10_000)
    scanner.feed(b"z" * 10_000)  # ignored: nothing more is read
    verdict = scanner.close()
    assert verdict.limit == "line"
    assert verdict.bytes == 20_006


def test_comments_count_against_the_line_limit_only(judge):
    stream = gemini_text("Hi")
    longest = max(len(line) for line in _lines(stream))
    data = b": " + b"k" * 1000 + b"\n\n" + stream
    # the 1002-byte comment is no part of any event ...
    verdict = judge(data, "gemini", max_event_bytes=longest)
    assert (verdict.category, verdict.comments) == ("complete", 1)
    # ... but it is still a line
    assert judge(data, "gemini", max_line_bytes=longest).limit == "line"


def test_bare_json_counts_against_the_event_limit(judge):
    data = gemini(g_chunk(cand(text("Hi")))) + g_bare_error(503, "The model is overloaded. " * 8, "UNAVAILABLE")
    assert judge(data, "gemini").category == "upstream_error"
    verdict = judge(data, "gemini", max_event_bytes=len(data) // 2 + 1, max_line_bytes=len(data))
    assert verdict.limit == "event"


@pytest.mark.parametrize("dialect", ["chat", "gemini"])
def test_choices_limit(judge, dialect):
    def stream(n):
        if dialect == "chat":
            return chat(chat_chunk(*[choice(i, content="a", finish="stop") for i in range(n)]))
        return g_chunk(*[cand(text("a"), finish="STOP", index=i) for i in range(n)])

    verdict = judge(stream(MAX_CHOICES), dialect)
    assert (verdict.category, verdict.choices) == ("complete", MAX_CHOICES)
    verdict = judge(stream(MAX_CHOICES + 1), dialect)
    assert (verdict.category, verdict.limit) == ("limit_exceeded", "choices")
    assert verdict.message == MESSAGE_LIMITS["choices"]


def test_tool_calls_limit(judge):
    def stream(n):
        half = n // 2
        chunks = [
            chat_chunk(choice(tool_calls=[tool_call(i, "{}", id=f"call_{i}", name="f") for i in range(lo, hi)]))
            for lo, hi in ((0, half), (half, n))
        ]
        return chat(*chunks, chat_chunk(choice(finish="tool_calls")))

    verdict = judge(stream(MAX_TOOL_CALLS), "chat")
    assert (verdict.category, verdict.tool_calls) == ("complete", MAX_TOOL_CALLS)
    verdict = judge(stream(MAX_TOOL_CALLS + 1), "chat")
    assert (verdict.category, verdict.limit) == ("limit_exceeded", "tool_calls")


# =============================================================================================
# Transport and argument checks
# =============================================================================================
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("transport", ["reset", "timeout", "error"])
@pytest.mark.parametrize("shape", ["complete", "cut", "empty"])
def test_transport_failure_wins_whatever_the_bytes(judge, dialect, transport, shape):
    data = COMPLETE_STREAMS[dialect]
    data = {"complete": data, "cut": data[: len(data) // 2], "empty": b""}[shape]
    verdict = judge(data, dialect, transport)
    assert verdict.category == "transport_error"
    assert verdict.transport == transport
    assert verdict.retryable is True
    assert verdict.complete is False
    assert verdict.protocol == dialect


def test_transport_does_not_override_an_exceeded_limit(judge):
    verdict = judge(COMPLETE_STREAMS["chat"], "chat", "timeout", max_line_bytes=64)
    assert verdict.category == "limit_exceeded"
    assert verdict.transport == "timeout"


def test_invalid_transport(impl):
    with pytest.raises(ValueError):
        impl.scan(COMPLETE_STREAMS["chat"], "chat", "closed")
    scanner = impl.Scanner("chat")
    scanner.feed(COMPLETE_STREAMS["chat"])
    with pytest.raises(ValueError):
        scanner.close("EOF")


@pytest.mark.parametrize("protocol", ["openai", "Chat", "", "unknown", "gemini "])
def test_invalid_protocol(impl, protocol):
    with pytest.raises(ValueError):
        impl.Scanner(protocol)
    with pytest.raises(ValueError):
        impl.scan(b"", protocol)


@pytest.mark.parametrize("bad", [0, -1, True])
@pytest.mark.parametrize("name", ["max_line_bytes", "max_event_bytes"])
def test_invalid_limits(impl, name, bad):
    with pytest.raises(ValueError):
        impl.Scanner("chat", **{name: bad})


def test_feed_after_close(impl):
    scanner = impl.Scanner("anthropic")
    scanner.feed(COMPLETE_STREAMS["anthropic"])
    assert scanner.close().category == "complete"
    with pytest.raises(RuntimeError):
        scanner.feed(b"event: ping\n\n")
    with pytest.raises(RuntimeError):
        scanner.close()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_empty_feeds_change_nothing(impl, dialect):
    data = COMPLETE_STREAMS[dialect]
    chunks = [b""] + [bytes([b]) + b"" for b in data[:5]] + [b"", data[5:], b""]
    assert feed(impl, chunks, dialect) == impl.scan(data, dialect)


# =============================================================================================
# Canary: no payload text ever reaches a verdict
# =============================================================================================
def _canary_streams():
    k = CANARY
    # fmt: off
    return {
        "chat-text": chat_text("Hello ", k, " bye"),
        "chat-reasoning": chat(*chat_reasoning(f"thinking {k} more"), chat_chunk(choice(finish="length"))),
        "chat-tool-args": chat_tool_stream('{"note": "', k, '"}'),
        "chat-bad-tool-args": chat_tool_stream('{"note": ', k, "}"),
        "chat-error": chat(chat_chunk(choice(content="x")), OPENAI_ERROR.replace(b"The server", k.encode())),
        "chat-refusal": chat(chat_chunk(choice(refusal=f"I can't {k}")), chat_chunk(choice(finish="stop"))),
        "responses-text": responses_text("Hi ", k),
        "responses-reasoning": responses(*r_created(), *r_reasoning(f"**{k}**"), r_incomplete("max_output_tokens")),
        "responses-args": responses(*r_created(), *r_function_call(f'{{"note": "{k}"}}'), r_completed()),
        "responses-bad-args": responses(*r_created(), *r_function_call(f'{{"note": {k}}}'), r_completed()),
        "responses-error": responses(*r_created(), r("error", error={"type": "server_error", "message": k})),
        "responses-failed": responses(*r_created(), r_failed("server_error", k)),
        "responses-refusal": responses(*r_created(), r_refusal(f"I can't {k}"), r_completed()),
        "anthropic-text": anthropic_text("Hi ", k),
        "anthropic-thinking": anthropic(a_start(), *a_thinking(0, k), *a_end("max_tokens")),
        "anthropic-tool-input": anthropic(a_start(), *a_tool(0, f'{{"note": "{k}"}}'), *a_end("tool_use")),
        "anthropic-bad-tool-input": anthropic(a_start(), *a_tool(0, f'{{"note": {k}'), *a_end("tool_use")),
        "anthropic-error": anthropic(a_start(), a_error("overloaded_error", k)),
        "anthropic-refusal": anthropic(a_start(), *a_text(0, k), *a_end("refusal", stop_details={"type": "refusal", "explanation": k})),
        "gemini-text": gemini_text("Hi ", k),
        "gemini-thought": gemini(g_chunk(cand(thought(k))), g_chunk(cand(thought("x"), finish="MAX_TOKENS"))),
        "gemini-function-call": gemini(g_chunk(cand(function_call("note", {"text": k}), finish="STOP"))),
        "gemini-error": gemini(g_chunk(cand(text("x"))), g_bare_error(500, k, "INTERNAL")),
        "gemini-finish-message": g_final(finish="MALFORMED_FUNCTION_CALL", finishMessage=f"Malformed function call: {k}("),
    }
    # fmt: on


CANARY_STREAMS = _canary_streams()


def assert_no_payload(verdict, secret: str):
    for rendered in (repr(verdict), str(verdict), json.dumps(verdict.to_dict()), verdict.message):
        assert secret not in rendered


@pytest.mark.parametrize("name", sorted(CANARY_STREAMS))
def test_canary_never_in_verdict(judge, impl, name):
    data = CANARY_STREAMS[name]
    dialect = name.split("-")[0]
    assert CANARY.encode() in data  # the test is only meaningful if the payload is there
    for protocol in (dialect, "auto"):
        assert_no_payload(judge(data, protocol), CANARY)
    # truncated streams: cut in the middle of the canary, and just after it
    at = data.index(CANARY.encode())
    half = len(CANARY) // 2
    for cut, secret in ((at + half, CANARY[:half]), (at + len(CANARY), CANARY), (at + len(CANARY) + 3, CANARY)):
        for protocol in (dialect, "auto"):
            verdict = impl.scan(data[:cut], protocol)
            assert verdict.category != "complete"
            assert_no_payload(verdict, secret)


def test_canary_detector_works(judge):
    # positive control: the model name IS reported, so a canary there must be found
    data = chat(chat_chunk(choice(content="Hi"), model=f"m-{CANARY}"), chat_chunk(choice(finish="stop")))
    verdict = judge(data, "chat")
    with pytest.raises(AssertionError):
        assert_no_payload(verdict, CANARY)


def test_empty_data_event_is_a_keep_alive_not_malformed(judge):
    stream = (
        b"data:\n\n"
        b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
        b"data: \n\n"
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    verdict = judge(stream)
    assert (verdict.category, verdict.malformed_events, verdict.events) == ("complete", 0, 5)
    # whitespace is not emptiness: it is data that is not JSON
    assert judge(stream.replace(b"data: \n\n", b"data:  \n\n")).category == "malformed_event"

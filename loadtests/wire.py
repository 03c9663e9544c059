"""Stream bytes as the providers put them on the wire, healthy or with one fault injected.

The protocols are written byte for byte as real captures and the providers' documents show them
(``shared/PROTOCOLS.md``, ``shared/corpus``, docs/verdict/protocols.md): chat chunks as compact
``data: {json}`` events ending in ``[DONE]``, Responses events as ``event:`` + ``data:`` with
``sequence_number``, Anthropic events named by ``event:`` with ``{"type": "ping"}`` pings, Gemini
chunks with ``": "`` JSON and CRLF framing; Bedrock's ConverseStream and
InvokeModelWithResponseStream as AWS event stream frames (``loadtests/eventstream.py``), the
latter's chunks carrying Anthropic's events; Ollama's ``/api/chat`` lines as NDJSON.
The answer is readable text ("Sentence 3 of 12 ...") so that a person can see where it was cut.

This is the one place that builds real-shaped streams.  ``wire(protocol, fault, ...)`` returns
what the mock provider sends for one request: the pieces in order and how the connection ends.
``short_stream`` is one short body of it, for the service's tests; ``complete_stream`` one of a
given size, for loads; ``build_corpus`` many varied ones, for the scanner's benchmarks.  (The
library's own tests build single events byte for byte instead: tests/fastsse/events.py.)

Faults (``FAULTS``):

F0      a normal, complete stream
F1      a clean end mid-answer: no terminal event, the body ends properly
F2      everything but the terminal event ([DONE], response.completed, message_stop, the
        final Gemini chunk with its finishReason)
F2C     chat: the finish chunk dropped, [DONE] kept; anthropic (and bedrock-invoke):
        message_delta dropped, message_stop kept (the terminal event comes, the reason never does)
F3      half an event (its JSON cut), then a clean end
F4      cut by the token limit, in the protocol's own words (finish_reason length,
        response.incomplete with max_output_tokens, stop_reason max_tokens, MAX_TOKENS)
F5      the token limit used up by reasoning before any visible answer
error   an error inside the stream, as the provider sends it
reset   part of the stream, then a TCP reset
stall   part of the stream, then no bytes for a while, then a clean end
empty   a 200 with no body at all
crc     event streams: one frame mid-answer with a payload bit flipped (its CRC no longer
        matches), the rest of the stream whole

``applies(protocol, fault)`` says where a fault exists (F2C needs a separate finish event, crc
an event stream).
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import random
import re
import string
from dataclasses import dataclass, field

from fastsse import PROTOCOLS
from fastsse._eventstream_py import EventStreamFraming

from . import eventstream as es

FAULTS = ("F0", "F1", "F2", "F2C", "F3", "F4", "F5", "error", "reset", "stall", "empty", "crc")
# What fastsse should say of the bytes each fault puts on the wire (a gateway that saw the
# connection end cleanly: transport eof).  The mock's own tests hold it to these.
EXPECTED_CATEGORY = {
    "F0": "complete",
    "F1": "no_end_marker",
    "F2": "no_end_marker",
    "F2C": "missing_finish_reason",
    "F3": "no_end_marker",
    "F4": "truncated_length",
    "F5": "reasoning_exhausted",
    "error": "upstream_error",
    "reset": "no_end_marker",
    "stall": "no_end_marker",
    "empty": "no_end_marker",
    "crc": "malformed_event",
}
# What it should say when the gateway saw the connection end as the fault ends it: a reset is a
# transport error (a stall ends cleanly once its silence is over, unless a client gave up first).
EXPECTED_OVER_HTTP = {**EXPECTED_CATEGORY, "reset": "transport_error"}
# Faults that only make sense where the protocol has a separate finish event, and where it
# frames events with checksums.
F2C_PROTOCOLS = ("chat", "anthropic", "bedrock-invoke")
CRC_PROTOCOLS = ("bedrock-converse", "bedrock-invoke")


def applies(protocol: str, fault: str) -> bool:
    """Can this fault happen in this protocol?"""
    if fault == "F2C":
        return protocol in F2C_PROTOCOLS
    if fault == "crc":
        return protocol in CRC_PROTOCOLS
    return True


# What a fault becomes where it cannot happen: the nearest fault that can.
FALLBACK = {"F2C": "F2", "crc": "F3"}


def fault_for(protocol: str, fault: str) -> str:
    """The fault, or its FALLBACK where the protocol cannot have it."""
    return fault if applies(protocol, fault) else FALLBACK[fault]


DEFAULT_MODELS = {
    "chat": "gpt-4o-2024-08-06",
    "responses": "gpt-5-mini-2025-08-07",
    "anthropic": "claude-sonnet-4-5-20250929",
    "gemini": "gemini-2.5-flash",
    "bedrock-converse": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "bedrock-invoke": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "ollama": "llama3.2",
}
CONTENT_TYPES = {
    "bedrock-converse": es.CONTENT_TYPE,
    "bedrock-invoke": es.CONTENT_TYPE,
    "ollama": "application/x-ndjson",
}
CREATED = 1764590400  # 2025-12-01, every stream's creation time
ENDINGS = ("close", "reset", "stall")


@dataclass
class Wire:
    """One response body: its pieces in order, and how the connection ends after them."""

    pieces: list[bytes]
    ending: str = "close"  # "close": the body ends properly; "reset": TCP RST; "stall": silence
    terminal_sent: bool = True  # whether the protocol's terminal event is among the pieces
    content_type: str = "text/event-stream; charset=utf-8"
    fault: str = "F0"
    protocol: str = "chat"
    text_chars: int = 0  # how much of the answer's text went out

    @property
    def body(self) -> bytes:
        return b"".join(self.pieces)


def answer_text(sentences: int = 12) -> str:
    """A readable answer whose every sentence says where it stands."""
    return " ".join(
        f"Sentence {i} of {sentences} of the mock provider's answer, which keeps going until it is complete."
        for i in range(1, sentences + 1)
    )


def reasoning_text(sentences: int = 6) -> str:
    return " ".join(
        f"Thought {i} of {sentences}: I should check the question once more." for i in range(1, sentences + 1)
    )


def tokens(text: str) -> list[str]:
    """Split text the way streamed deltas come: a word and the space before it, per piece."""
    words = text.split(" ")
    return [words[0]] + [" " + w for w in words[1:]] if text else []


class _Ids:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def token(self, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def hex(self, n: int) -> str:
        return self.token(n, "0123456789abcdef")

    def obfuscation(self) -> str:
        return self.token(self.rng.randint(1, 14))


def _compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


# =============================================================================================
# chat (OpenAI Chat Completions)
# =============================================================================================
def _chat(fault, text, reasoning, model, ids, usage) -> tuple[list[bytes], int | None, int]:
    chunk_id = "chatcmpl-" + ids.token(29)
    fingerprint = "fp_" + ids.hex(10)

    def chunk(delta, finish=None, **top) -> bytes:
        obj = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": fingerprint,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if usage:
            obj["usage"] = None
        obj.update(top)
        obj["obfuscation"] = ids.obfuscation()
        return b"data: " + _compact(obj) + b"\n\n"

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    thought = tokens(reasoning) if fault != "F5" else tokens(reasoning or reasoning_text())
    events += [chunk({"reasoning_content": t}) for t in thought]
    answer = [] if fault == "F5" else tokens(text)
    if fault == "F4":
        answer = answer[: max(1, len(answer) // 2)]
    events += [chunk({"content": t}) for t in answer]
    middle = len(events) - len(answer) // 2
    if fault == "error":
        error = {
            "error": {
                "message": "The server had an error while processing your request. Sorry about that!",
                "type": "server_error",
                "code": None,
            }
        }
        return (
            events[:middle] + [b"data: " + _compact(error) + b"\n\n", b"data: [DONE]\n\n"],
            middle + 1,
            sum(len(t) for t in answer[: middle - 1 - len(thought)]),
        )
    finish = "length" if fault in ("F4", "F5") else "stop"
    finish_chunk = chunk({}, finish)
    tail = [] if fault == "F2C" else [finish_chunk]
    if usage:
        completion = len(answer) + len(thought)
        tail.append(
            chunk(
                None,
                None,
                choices=[],
                usage={
                    "prompt_tokens": 24,
                    "completion_tokens": completion,
                    "total_tokens": 24 + completion,
                    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                    "completion_tokens_details": {
                        "reasoning_tokens": len(thought),
                        "audio_tokens": 0,
                        "accepted_prediction_tokens": 0,
                        "rejected_prediction_tokens": 0,
                    },
                },
            )
        )
    tail.append(b"data: [DONE]\n\n")
    return events + tail, len(events) + len(tail) - 1, sum(len(t) for t in answer)


# =============================================================================================
# responses (OpenAI Responses)
# =============================================================================================
_NO_FIELD = object()


def response_object(
    response_id: str,
    created: int,
    model: str,
    status: str,
    output: list,
    usage: dict | None,
    *,
    reasoning_effort: str,
    service_tier: str,
    summary: str | None = None,
    completed_at: object = _NO_FIELD,
) -> dict:
    """The response object a Responses stream's lifecycle events carry, its fields in the order
    OpenAI sends them (``completed_at`` only where given: older captures lack it)."""
    head: dict = {"id": response_id, "object": "response", "created_at": created, "status": status, "background": False}
    if completed_at is not _NO_FIELD:
        head["completed_at"] = completed_at
    return {
        **head,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": reasoning_effort, "summary": summary},
        "service_tier": service_tier,
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


def _responses(fault, text, reasoning, model, ids, usage) -> tuple[list[bytes], int | None, int]:
    response_id = "resp_" + ids.hex(48)
    seq = iter(range(1_000_000))
    events = []

    def event(type_, **fields) -> None:
        obj = {"type": type_, **fields, "sequence_number": next(seq)}
        events.append(b"event: " + type_.encode() + b"\ndata: " + _compact(obj) + b"\n\n")

    def response(status, output=(), **extra) -> dict:
        return {
            **response_object(
                response_id, CREATED, model, status, list(output), None, reasoning_effort="low", service_tier="auto"
            ),
            **extra,
        }

    event("response.created", response=response("in_progress"))
    event("response.in_progress", response=response("in_progress"))
    output = []
    thought = tokens(reasoning or (reasoning_text() if fault == "F5" else ""))
    if thought:
        rs_id = "rs_" + ids.hex(48)
        event("response.output_item.added", output_index=0, item={"id": rs_id, "type": "reasoning", "summary": []})
        event(
            "response.reasoning_summary_part.added",
            item_id=rs_id,
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        )
        for t in thought:
            event(
                "response.reasoning_summary_text.delta",
                item_id=rs_id,
                output_index=0,
                summary_index=0,
                delta=t,
                obfuscation=ids.obfuscation(),
            )
        summary = "".join(thought)
        if fault != "F5":
            event("response.reasoning_summary_text.done", item_id=rs_id, output_index=0, summary_index=0, text=summary)
            event(
                "response.reasoning_summary_part.done",
                item_id=rs_id,
                output_index=0,
                summary_index=0,
                part={"type": "summary_text", "text": summary},
            )
            item = {"id": rs_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": summary}]}
            event("response.output_item.done", output_index=0, item=item)
            output.append(item)
    answer = [] if fault == "F5" else tokens(text)
    if fault == "F4":
        answer = answer[: max(1, len(answer) // 2)]
    before_text = len(events)
    if answer:
        msg_id = "msg_" + ids.hex(48)
        index = len(output)
        event(
            "response.output_item.added",
            output_index=index,
            item={"id": msg_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"},
        )
        event(
            "response.content_part.added",
            item_id=msg_id,
            output_index=index,
            content_index=0,
            part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
        )
        before_text = len(events)
        for t in answer:
            event(
                "response.output_text.delta",
                item_id=msg_id,
                output_index=index,
                content_index=0,
                delta=t,
                logprobs=[],
                obfuscation=ids.obfuscation(),
            )
    middle = before_text + len(answer) // 2
    if fault == "error":
        code = "server_error"
        message = "An error occurred while processing your request."
        kept = events[:middle]
        seq = iter(range(middle, 1_000_000))
        events.clear()
        event("error", error={"type": "server_error", "code": code, "message": message, "param": None})
        event("response.failed", response=response("failed", output, error={"code": code, "message": message}))
        return kept + events, len(kept) + 1, sum(len(t) for t in answer[: len(answer) // 2])
    status = "incomplete" if fault in ("F4", "F5") else "completed"
    if answer:
        done_text = "".join(answer)
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": done_text}
        event(
            "response.output_text.done",
            item_id=msg_id,
            output_index=index,
            content_index=0,
            text=done_text,
            logprobs=[],
        )
        event("response.content_part.done", item_id=msg_id, output_index=index, content_index=0, part=part)
        item = {"id": msg_id, "type": "message", "status": status, "content": [part], "role": "assistant"}
        event("response.output_item.done", output_index=index, item=item)
        output.append(item)
    totals = {
        "input_tokens": 24,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": len(answer) + len(thought),
        "output_tokens_details": {"reasoning_tokens": len(thought)},
        "total_tokens": 24 + len(answer) + len(thought),
    }
    if status == "incomplete":
        event(
            "response.incomplete",
            response=response("incomplete", output, incomplete_details={"reason": "max_output_tokens"}, usage=totals),
        )
    else:
        event("response.completed", response=response("completed", output, usage=totals))
    return events, len(events) - 1, sum(len(t) for t in answer)


# =============================================================================================
# anthropic (Messages)
# =============================================================================================
def _anthropic(fault, text, reasoning, model, ids, usage) -> tuple[list[bytes], int | None, int]:
    events, terminal, chars = _anthropic_events(fault, text, reasoning, model, ids)
    pieces = [
        b"event: "
        + e["type"].encode()
        + b"\ndata: "
        + (b'{"type": "ping"}' if e["type"] == "ping" else _compact(e))
        + b"\n\n"
        for e in events
    ]
    return pieces, terminal, chars


def _anthropic_events(fault, text, reasoning, model, ids) -> tuple[list[dict], int | None, int]:
    """The events of an Anthropic Messages stream, as dicts (the SSE API and Bedrock frame them)."""
    events: list[dict] = []

    def event(type_, **fields) -> None:
        events.append({"type": type_, **fields})

    event(
        "message_start",
        message={
            "id": "msg_01" + ids.token(22),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 24,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 1,
                "service_tier": "standard",
            },
        },
    )
    index = 0
    thought = tokens(reasoning or (reasoning_text() if fault == "F5" else ""))
    if thought:
        event("content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""})
        event("ping")
        for t in thought:
            event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": t})
        if fault != "F5":
            event(
                "content_block_delta", index=index, delta={"type": "signature_delta", "signature": "Eq" + ids.token(86)}
            )
            event("content_block_stop", index=index)
            index += 1
    answer = [] if fault == "F5" else tokens(text)
    if fault == "F4":
        answer = answer[: max(1, len(answer) // 2)]
    before_text = len(events)
    if answer:
        event("content_block_start", index=index, content_block={"type": "text", "text": ""})
        if not thought:
            event("ping")
        before_text = len(events)
        for t in answer:
            event("content_block_delta", index=index, delta={"type": "text_delta", "text": t})
    middle = before_text + len(answer) // 2
    if fault == "error":
        kept = events[:middle]
        events.clear()
        event("error", error={"type": "overloaded_error", "message": "Overloaded"})
        return kept + events, None, sum(len(t) for t in answer[: len(answer) // 2])
    if answer:
        event("content_block_stop", index=index)
    stop = "max_tokens" if fault in ("F4", "F5") else "end_turn"
    if fault != "F2C":
        event(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": len(answer) + len(thought)},
        )
    event("message_stop")
    return events, len(events) - 1, sum(len(t) for t in answer)


# =============================================================================================
# bedrock-invoke (InvokeModelWithResponseStream): Anthropic's events, each in a chunk frame
# =============================================================================================
_BEDROCK_ID = re.compile(r"^(?:[a-z]+\.)?anthropic\.|-v\d+:\d+$")
INVOCATION_METRICS = {"inputTokenCount": 24, "invocationLatency": 1630, "firstByteLatency": 412}


def _bedrock_invoke(fault, text, reasoning, model, ids, usage) -> tuple[list[bytes], int | None, int]:
    # the model names itself as the Anthropic API does: no region, vendor or version of Bedrock's id
    events, terminal, chars = _anthropic_events(fault, text, reasoning, _BEDROCK_ID.sub("", model), ids)
    events = [e for e in events if e["type"] != "ping"]  # Bedrock passes no pings on
    if fault == "error":  # Bedrock's own error, a modeled exception, in place of the model's
        kept = events[:-1]
        return (
            [es.chunk(e, pad=ids.rng.randint(1, len(es.PADDING))) for e in kept]
            + [es.exception("modelStreamErrorException", "The model stream was interrupted. Try your request again.")],
            None,
            chars,
        )
    terminal = len(events) - 1
    events[-1] = {**events[-1], "amazon-bedrock-invocationMetrics": {**INVOCATION_METRICS, "outputTokenCount": 12}}
    return [es.chunk(e, pad=ids.rng.randint(1, len(es.PADDING))) for e in events], terminal, chars


# =============================================================================================
# bedrock-converse (ConverseStream): its own events, each a frame
# =============================================================================================
def _bedrock_converse(fault, text, reasoning, model, ids, usage) -> tuple[list[bytes], int | None, int]:
    events = []

    def event(event_type, **payload) -> None:
        events.append(es.event(event_type, payload, pad=ids.rng.randint(1, len(es.PADDING))))

    event("messageStart", role="assistant")
    index = 0
    thought = tokens(reasoning or (reasoning_text() if fault == "F5" else ""))
    for t in thought:
        event("contentBlockDelta", contentBlockIndex=index, delta={"reasoningContent": {"text": t}})
    if thought and fault != "F5":
        event("contentBlockDelta", contentBlockIndex=index, delta={"reasoningContent": {"signature": ids.token(88)}})
        event("contentBlockStop", contentBlockIndex=index)
        index += 1
    answer = [] if fault == "F5" else tokens(text)
    if fault == "F4":
        answer = answer[: max(1, len(answer) // 2)]
    before_text = len(events)
    for t in answer:
        event("contentBlockDelta", contentBlockIndex=index, delta={"text": t})
    middle = before_text + len(answer) // 2
    if fault == "error":
        return (
            events[:middle] + [es.exception("modelStreamErrorException", "The model stream was interrupted.")],
            None,
            sum(len(t) for t in answer[: len(answer) // 2]),
        )
    if answer:
        event("contentBlockStop", contentBlockIndex=index)
    event("messageStop", stopReason="max_tokens" if fault in ("F4", "F5") else "end_turn")
    terminal = len(events) - 1
    if usage:
        out = len(answer) + len(thought)
        event(
            "metadata",
            usage={"inputTokens": 24, "outputTokens": out, "totalTokens": 24 + out},
            metrics={"latencyMs": 1630},
        )
    return events, terminal, sum(len(t) for t in answer)


# =============================================================================================
# ollama (/api/chat): one JSON object per line, the last with done: true
# =============================================================================================
def _as_generated(line: bytes) -> bytes:
    """An /api/chat line as /api/generate writes it: the message's content and thinking at the top."""
    obj = json.loads(line)
    message = obj.pop("message", None)
    if message is None:
        return line  # an error line
    generated = {"model": obj.pop("model"), "created_at": obj.pop("created_at"), "response": message["content"]}
    if "thinking" in message:
        generated["thinking"] = message["thinking"]
    return _compact({**generated, **obj}) + b"\n"


def _ollama(fault, text, reasoning, model, ids, usage) -> tuple[list[bytes], int | None, int]:
    lines = []

    def line(done=False, **message) -> None:
        obj = {
            "model": model,
            "created_at": f"2025-12-01T12:00:{len(lines) // 100:02d}.{len(lines) % 100:02d}0000Z",
            "message": {"role": "assistant", "content": "", **message},
            "done": done,
        }
        if done:
            obj.update(done_reason="length" if fault in ("F4", "F5") else "stop")
            if usage:
                obj.update(total_duration=1630000000, prompt_eval_count=24, eval_count=len(lines))
        lines.append(_compact(obj) + b"\n")

    thought = tokens(reasoning or (reasoning_text() if fault == "F5" else ""))
    for t in thought:
        line(thinking=t)
    answer = [] if fault == "F5" else tokens(text)
    if fault == "F4":
        answer = answer[: max(1, len(answer) // 2)]
    before_text = len(lines)
    for t in answer:
        line(content=t)
    middle = before_text + len(answer) // 2
    if fault == "error":
        error = b'{"error":"an error was encountered while running the model: unexpected EOF"}\n'
        return lines[:middle] + [error], None, sum(len(t) for t in answer[: len(answer) // 2])
    line(done=True)
    return lines, len(lines) - 1, sum(len(t) for t in answer)


# =============================================================================================
# gemini (streamGenerateContent?alt=sse)
# =============================================================================================
def _gemini(fault, text, reasoning, model, ids, usage) -> tuple[list[bytes], int | None, int]:
    response_id = ids.token(22)
    events = []

    def chunk(parts, finish=None, final_usage=None) -> None:
        candidate = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        meta = final_usage or {"promptTokenCount": 24, "totalTokenCount": 24}
        obj = {"candidates": [candidate], "usageMetadata": meta, "modelVersion": model, "responseId": response_id}
        events.append(b"data: " + json.dumps(obj, separators=(",", ": "), ensure_ascii=False).encode() + b"\r\n\r\n")

    thought = tokens(reasoning or (reasoning_text() if fault == "F5" else ""))
    # Gemini sends a few words per chunk: a thought summary part, then answer parts
    for i in range(0, len(thought), 4):
        chunk([{"text": "".join(thought[i : i + 4]), "thought": True}])
    answer = [] if fault == "F5" else tokens(text)
    if fault == "F4":
        answer = answer[: max(1, len(answer) // 2)]
    pieces = ["".join(answer[i : i + 4]) for i in range(0, len(answer), 4)]
    before_text = len(events)
    for piece in pieces[:-1]:
        chunk([{"text": piece}])
    middle = before_text + len(pieces) // 2
    if fault == "error":
        error = {
            "error": {
                "code": 503,
                "message": "The model is overloaded. Please try again later.",
                "status": "UNAVAILABLE",
            }
        }
        return (
            events[:middle] + [json.dumps(error, indent=2).encode() + b"\n"],
            None,
            sum(len(p) for p in pieces[: middle - before_text]),
        )
    finish = "MAX_TOKENS" if fault in ("F4", "F5") else "STOP"
    last = [{"text": pieces[-1]}] if pieces else [{"text": ""}]
    chunk(
        last,
        finish,
        {
            "promptTokenCount": 24,
            "candidatesTokenCount": len(answer),
            "totalTokenCount": 24 + len(answer) + len(thought),
            "thoughtsTokenCount": len(thought),
        },
    )
    return events, len(events) - 1, sum(len(t) for t in answer)


_BUILDERS = {
    "chat": _chat,
    "responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock-converse": _bedrock_converse,
    "bedrock-invoke": _bedrock_invoke,
    "ollama": _ollama,
}


def wire(
    protocol: str,
    fault: str = "F0",
    *,
    text: str | None = None,
    reasoning: str = "",
    model: str | None = None,
    usage: bool = True,
    seed: int = 0,
    generate: bool = False,
) -> Wire:
    """What the mock provider sends for one streamed request with this fault (``generate``:
    Ollama's /api/generate, whose lines carry "response" where /api/chat's carry "message")."""
    if protocol not in _BUILDERS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {FAULTS}, not {fault!r}")
    if not applies(protocol, fault):
        raise ValueError(f"{fault} does not happen in {protocol}: see wire.applies")
    text = answer_text() if text is None else text
    model = model or DEFAULT_MODELS[protocol]
    # F4/F5/error build their own shapes; the others cut or damage a healthy stream
    build_fault = fault if fault in ("F2C", "F4", "F5", "error") else "F0"
    pieces, terminal, sent_chars = _BUILDERS[protocol](build_fault, text, reasoning, model, _Ids(seed), usage)
    if generate and protocol == "ollama":
        pieces = [_as_generated(line) for line in pieces]
    result = Wire(pieces, fault=fault, protocol=protocol, text_chars=sent_chars, terminal_sent=terminal is not None)
    if protocol == "gemini":
        result.content_type = "text/event-stream"
    result.content_type = CONTENT_TYPES.get(protocol, result.content_type)
    if fault in ("F0", "F2C", "F4", "F5", "error"):
        return result
    if fault == "crc":  # a frame mid-answer damaged; everything else arrives
        half = max(1, len(pieces) // 2)
        result.pieces = pieces[:half] + [es.corrupt(pieces[half])] + pieces[half + 1 :]
        return result
    if fault == "empty":
        result.pieces, result.terminal_sent, result.text_chars = [], False, 0
        return result
    if fault == "F2":
        result.pieces = pieces[:terminal] + pieces[terminal + 1 :]
        result.terminal_sent = False
        return result
    # F1, F3, reset, stall: stop halfway through the answer
    half = max(1, len(pieces) // 2)
    result.pieces = pieces[:half]
    result.terminal_sent = False
    result.text_chars = _text_chars(protocol, pieces[:half])
    if fault == "F3":
        cut = pieces[half]
        result.pieces.append(cut[: len(cut) // 2])
    elif fault in ("reset", "stall"):
        result.ending = fault
    return result


def _events(protocol: str, pieces: list[bytes]):
    """The JSON events of whole pieces, and what each is (the SSE event name, or the frame's
    :event-type)."""
    if protocol == "ollama":
        for line in b"".join(pieces).splitlines():
            yield "message", json.loads(line)
        return
    if protocol.startswith("bedrock-"):
        for frame in EventStreamFraming().read(b"".join(pieces), 1 << 30):
            name = frame.headers.get(b":event-type", b"").decode()
            value = json.loads(frame.payload or b"{}")
            if name == "chunk":
                value = json.loads(base64.b64decode(value["bytes"]))
                name = value.get("type", "")
            yield name, value
        return
    for piece in pieces:
        for line in piece.decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                value = json.loads(line[6:])
                yield value.get("type", "") if isinstance(value, dict) else "", value


def _text_chars(protocol: str, pieces: list[bytes]) -> int:
    """How much answer text these whole pieces carry (for the byte log)."""
    from_body = {
        "chat": ("choices", 0, "delta", "content"),
        "responses": ("delta",),
        "anthropic": ("delta", "text"),
        "gemini": ("candidates", 0, "content", "parts", 0, "text"),
        "bedrock-converse": ("delta", "text"),
        "bedrock-invoke": ("delta", "text"),
        "ollama": ("message", "content"),
    }[protocol]
    total = 0
    for name, value in _events(protocol, pieces):
        if protocol == "responses" and name != "response.output_text.delta":
            continue
        if protocol in ("anthropic", "bedrock-invoke") and value.get("delta", {}).get("type") != "text_delta":
            continue
        if protocol == "gemini" and value["candidates"][0]["content"]["parts"][0].get("thought"):
            continue
        try:
            for key in from_body:
                value = value[key]
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(value, str):
            total += len(value)
    return total


SHORT_ANSWER = "Hello there."


def short_stream(
    protocol: str = "chat", fault: str = "F0", *, text: str = SHORT_ANSWER, model: str | None = None
) -> bytes:
    """A short body with this fault (F0: complete): a few events, without usage chunks."""
    return wire(protocol, fault, text=text, model=model, usage=False).body


def complete_stream(protocol: str, size_bytes: int, *, seed: int = 0, model: str | None = None) -> bytes:
    """A complete stream of about size_bytes (at least one word): for loads and benchmarks."""
    words = answer_text(1 + size_bytes // 40).split(" ")

    def body(n: int) -> bytes:
        return wire(protocol, text=" ".join(words[:n]), seed=seed, model=model).body

    low, high = 1, len(words)
    while low < high:  # the fewest words that reach the size
        mid = (low + high) // 2
        if len(body(mid)) < size_bytes:
            low = mid + 1
        else:
            high = mid
    return body(high)


@dataclass
class Mix:
    """Streams of several protocols, for loads that post them in turn."""

    bodies: list[tuple[str, bytes]] = field(default_factory=list)

    @classmethod
    def of(cls, size_bytes: int, protocols=PROTOCOLS, seed: int = 0) -> Mix:
        return cls([(d, complete_stream(d, size_bytes, seed=seed)) for d in protocols])


# =============================================================================================
# A varied corpus, for the scanner's benchmarks (bench/bench_scanner.py, bench_instructions.py):
# many streams of many sizes, with tool calls, reasoning, unicode and escapes, from a seed.
# =============================================================================================
# Stream sizes are drawn log-uniformly between these: a one-line answer to a long essay.
STREAM_MIN_BYTES = 2_000
STREAM_MAX_BYTES = 100_000


# =============================================================================================
# Corpus: realistic streams, generated from a seed.  Nothing is read from disk.

_WORDS = (
    "the stream of tokens arrives one chunk at a time and the client must decide whether the "
    "answer it holds is whole or was silently cut off by a proxy a timeout or a crash in the "
    "middle of a sentence so we count events check the end marker and read the finish reason "
    "before we trust it model gateway latency budget retry request response server client "
    "function weather report summary table value index result error limit token output input"
).split()
# Text that JSON must escape, or that is not ASCII: providers send all of it.
_SPECIAL_TOKENS = ('"quoted"', "\n", "\n\n", "café", "naïve", "résumé", "C:\\temp", "\t", "🙂", "{x}")
_CITIES = ("Paris, France", "Boston, MA", "São Paulo", "Zürich", "Tokyo", "Lagos", "Lima")
_TOOL_NAMES = ("get_weather", "search_docs", "create_ticket", "run_sql")
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"


def _random_id(rng: random.Random, prefix: str, length: int, alphabet: str = _ALNUM) -> str:
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


def _text_piece(rng: random.Random) -> str:
    """What one streamed delta carries: a few words, now and then something JSON escapes."""
    words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.08:
        words.insert(rng.randrange(len(words) + 1), rng.choice(_SPECIAL_TOKENS))
    return " " + " ".join(words)


def _obfuscation(rng: random.Random) -> str:
    """OpenAI pads deltas with random characters so sizes do not leak the tokens."""
    return _random_id(rng, "", rng.randint(1, 12))


def _tool_arguments(rng: random.Random) -> str:
    """A tool call's arguments: one JSON object, as the model writes it."""
    arguments = {
        "location": rng.choice(_CITIES),
        "days": rng.randint(1, 14),
        "unit": rng.choice(("celsius", "fahrenheit")),
        "note": "".join(_text_piece(rng) for _ in range(rng.randint(1, 12))).strip(),
    }
    return json.dumps(arguments, ensure_ascii=rng.random() < 0.5)


def _fragments(rng: random.Random, text: str, longest: int = 8) -> list[str]:
    """Split text at arbitrary points, as tokens split tool-call arguments."""
    pieces, start = [], 0
    while start < len(text):
        end = start + rng.randint(1, longest)
        pieces.append(text[start:end])
        start = end
    return pieces


def _sse(payload: dict, event: str | None = None, ascii_only: bool = True, pad: int = 0) -> str:
    """One SSE event.  ``pad`` spaces before the closing brace, as Anthropic sends them."""
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=ascii_only)
    if pad:
        data = data[:-1] + " " * pad + "}"
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n"


# --- OpenAI Chat Completions (stream: true) ---------------------------------------------------


def varied_chat(rng: random.Random, target_bytes: float) -> bytes:
    kind = rng.choices(("text", "tools", "reasoning"), weights=(70, 15, 15))[0]
    reasoning = kind == "reasoning"  # DeepSeek's shape: reasoning_content before the content
    envelope = {
        "id": _random_id(rng, "chatcmpl-", 29),
        "object": "chat.completion.chunk",
        "created": rng.randint(1_720_000_000, 1_780_000_000),
        "model": "deepseek-reasoner" if reasoning else "gpt-4o-2024-08-06",
        "system_fingerprint": _random_id(rng, "fp_", 10, _HEX),
    }
    events: list[str] = []
    size = 0

    def chunk(delta: dict, finish_reason: str | None = None) -> None:
        nonlocal size
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        payload = {**envelope, "choices": [choice]}
        if not reasoning:  # DeepSeek sends no _obfuscation
            payload["obfuscation"] = _obfuscation(rng)
        events.append(_sse(payload))
        size += len(events[-1])

    if reasoning:
        chunk({"role": "assistant", "content": None, "reasoning_content": ""})
        while size < target_bytes * 0.4:
            chunk({"content": None, "reasoning_content": _text_piece(rng)})
    else:
        chunk({"role": "assistant", "content": "", "refusal": None})
    text_share = 0.3 if kind == "tools" else 1.0  # tool streams: a short preamble, then calls
    while size < target_bytes * text_share:
        delta = {"content": _text_piece(rng)}
        if reasoning:
            delta["reasoning_content"] = None
        chunk(delta)
    if kind == "tools":
        for index in range(rng.randint(1, 3)):
            call = {"name": rng.choice(_TOOL_NAMES), "arguments": ""}
            call_id = _random_id(rng, "call_", 24)
            first = {"index": index, "id": call_id, "type": "function", "function": call}
            chunk({"tool_calls": [first]})
            for piece in _fragments(rng, _tool_arguments(rng)):
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    chunk({}, "tool_calls" if kind == "tools" else "stop")

    prompt_tokens, completion_tokens = rng.randint(10, 4000), len(events)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    usage_chunk = {**envelope, "choices": [], "usage": usage}  # stream_options.include_usage
    if not reasoning:
        usage_chunk["obfuscation"] = _obfuscation(rng)
    events.append(_sse(usage_chunk))
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


# --- OpenAI Responses -------------------------------------------------------------------------


class _ResponsesWriter:
    """Writes the events of one Responses stream; sequence_number counts every event."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.events: list[str] = []
        self.size = 0
        self.response_id = self.hex_id("resp_")
        self.model = rng.choice(("gpt-5-2025-08-07", "gpt-4.1-2025-04-14"))
        self.created = rng.randint(1_720_000_000, 1_780_000_000)

    def emit(self, event_type: str, fields: dict) -> None:
        payload = {"type": event_type, **fields, "sequence_number": len(self.events)}
        self.events.append(_sse(payload, event=event_type, ascii_only=False))
        self.size += len(self.events[-1])

    def hex_id(self, prefix: str) -> str:
        return _random_id(self.rng, prefix, 48, _HEX)

    def response(self, status: str, output: list, usage: dict | None) -> dict:
        """The response object that response.created/in_progress/completed carry."""
        completed_at = self.created + 3 if status == "completed" else None
        return response_object(
            self.response_id,
            self.created,
            self.model,
            status,
            output,
            usage,
            reasoning_effort="medium",
            summary="auto",
            service_tier="default",
            completed_at=completed_at,
        )


def _responses_reasoning_item(w: _ResponsesWriter, output_index: int, until_bytes: float) -> dict:
    item_id = w.hex_id("rs_")
    where = {"item_id": item_id, "output_index": output_index, "summary_index": 0}
    added = {"id": item_id, "type": "reasoning", "summary": []}
    w.emit("response.output_item.added", {"output_index": output_index, "item": added})
    empty = {"type": "summary_text", "text": ""}
    w.emit("response.reasoning_summary_part.added", {**where, "part": empty})
    pieces = []
    while w.size < until_bytes:
        pieces.append(_text_piece(w.rng))
        delta = {**where, "delta": pieces[-1], "obfuscation": _obfuscation(w.rng)}
        w.emit("response.reasoning_summary_text.delta", delta)
    summary = {"type": "summary_text", "text": "".join(pieces)}
    w.emit("response.reasoning_summary_text.done", {**where, "text": summary["text"]})
    w.emit("response.reasoning_summary_part.done", {**where, "part": summary})
    item = {**added, "summary": [summary]}
    w.emit("response.output_item.done", {"output_index": output_index, "item": item})
    return item


def _responses_message_item(w: _ResponsesWriter, output_index: int, until_bytes: float) -> dict:
    item_id = w.hex_id("msg_")
    added = {
        "id": item_id,
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }
    where = {"content_index": 0, "item_id": item_id, "output_index": output_index}
    w.emit("response.output_item.added", {"output_index": output_index, "item": added})
    empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    w.emit("response.content_part.added", {**where, "part": empty})
    pieces = []
    while not pieces or w.size < until_bytes:  # a message says something, however small
        pieces.append(_text_piece(w.rng))
        delta = {**where, "delta": pieces[-1], "logprobs": [], "obfuscation": _obfuscation(w.rng)}
        w.emit("response.output_text.delta", delta)
    part = {**empty, "text": "".join(pieces)}
    w.emit("response.output_text.done", {**where, "logprobs": [], "text": part["text"]})
    w.emit("response.content_part.done", {**where, "part": part})
    item = {**added, "status": "completed", "content": [part]}
    w.emit("response.output_item.done", {"output_index": output_index, "item": item})
    return item


def _responses_function_call_item(w: _ResponsesWriter, output_index: int) -> dict:
    item_id = w.hex_id("fc_")
    arguments = _tool_arguments(w.rng)
    added = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": _random_id(w.rng, "call_", 24),
        "name": w.rng.choice(_TOOL_NAMES),
    }
    where = {"item_id": item_id, "output_index": output_index}
    w.emit("response.output_item.added", {"output_index": output_index, "item": added})
    for piece in _fragments(w.rng, arguments):
        delta = {**where, "delta": piece, "obfuscation": _obfuscation(w.rng)}
        w.emit("response.function_call_arguments.delta", delta)
    w.emit("response.function_call_arguments.done", {**where, "arguments": arguments})
    item = {**added, "status": "completed", "arguments": arguments}
    w.emit("response.output_item.done", {"output_index": output_index, "item": item})
    return item


def varied_responses(rng: random.Random, target_bytes: float) -> bytes:
    kind = rng.choices(("text", "reasoning", "function_call"), weights=(70, 15, 15))[0]
    w = _ResponsesWriter(rng)
    in_progress = w.response("in_progress", [], None)
    w.emit("response.created", {"response": in_progress})
    w.emit("response.in_progress", {"response": in_progress})

    output = []
    if kind == "reasoning":
        output.append(_responses_reasoning_item(w, len(output), target_bytes * 0.4))
    if kind == "function_call":
        output.append(_responses_message_item(w, len(output), target_bytes * 0.3))
        for _ in range(rng.randint(1, 2)):
            output.append(_responses_function_call_item(w, len(output)))
    else:
        output.append(_responses_message_item(w, len(output), target_bytes))

    input_tokens, output_tokens = rng.randint(10, 4000), len(w.events)
    usage = {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }
    w.emit("response.completed", {"response": w.response("completed", output, usage)})
    return "".join(w.events).encode()


# --- Anthropic Messages -----------------------------------------------------------------------


def varied_anthropic(rng: random.Random, target_bytes: float) -> bytes:
    kind = rng.choices(("text", "thinking", "tool_use"), weights=(70, 15, 15))[0]
    # Some deployments pad every event's JSON with spaces before the closing brace.
    padded = rng.random() < 0.5
    events: list[str] = []
    size = 0

    def emit(event: str, payload: dict) -> None:
        nonlocal size
        pad = rng.randint(1, 16) if padded else 0
        events.append(_sse(payload, event=event, ascii_only=False, pad=pad))
        size += len(events[-1])

    def block(index: int, content_block: dict, deltas) -> None:
        start = {"type": "content_block_start", "index": index, "content_block": content_block}
        emit("content_block_start", start)
        if index == 0:
            events.append('event: ping\ndata: {"type": "ping"}\n\n')
        for delta in deltas:
            payload = {"type": "content_block_delta", "index": index, "delta": delta}
            emit("content_block_delta", payload)
        emit("content_block_stop", {"type": "content_block_stop", "index": index})

    def text_deltas(field: str, delta_type: str, until_bytes: float):
        """Lazy: block() emits each delta before the size is checked again."""
        while size < until_bytes:
            yield {"type": delta_type, field: _text_piece(rng)}

    message = {
        "model": "claude-sonnet-4-5-20250929",
        "id": _random_id(rng, "msg_01", 22),
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
        thinking = text_deltas("thinking", "thinking_delta", target_bytes * 0.4)
        signature = {"type": "signature_delta", "signature": _random_id(rng, "", 200, _ALNUM + "+/")}
        empty = {"type": "thinking", "thinking": "", "signature": ""}
        block(index, empty, itertools.chain(thinking, [signature]))
        index += 1
    text_share = 0.3 if kind == "tool_use" else 1.0
    text = text_deltas("text", "text_delta", target_bytes * text_share)
    block(index, {"type": "text", "text": ""}, text)
    if kind == "tool_use":
        index += 1
        tool_id = _random_id(rng, "toolu_01", 22)
        tool = {"type": "tool_use", "id": tool_id, "name": rng.choice(_TOOL_NAMES), "input": {}}
        partial = ["", *_fragments(rng, _tool_arguments(rng), longest=16)]  # the first is empty
        block(index, tool, ({"type": "input_json_delta", "partial_json": p} for p in partial))
    stop_reason = "tool_use" if kind == "tool_use" else "end_turn"
    emit("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": len(events)},
    })  # fmt: skip
    emit("message_stop", {"type": "message_stop"})
    return "".join(events).encode()


def build_corpus(
    protocol: str, total_bytes: int, seed: int, min_bytes: int = STREAM_MIN_BYTES, max_bytes: int = STREAM_MAX_BYTES
) -> list[bytes]:
    """Varied streams of one protocol (any of VARIED: every protocol), their sizes drawn
    log-uniformly between min_bytes and max_bytes, until they add up to total_bytes; the same
    seed, the same bytes.  The scanner's benchmarks judge them."""
    rng = random.Random(f"{seed}:{protocol}")
    generate = VARIED[protocol]
    streams, size = [], 0
    log_min, log_max = math.log(min_bytes), math.log(max_bytes)
    while size < total_bytes:
        stream = generate(rng, math.exp(rng.uniform(log_min, log_max)))
        streams.append(stream)
        size += len(stream)
    return streams


# --- Gemini, Bedrock and Ollama: Anthropic's varied events, said the way each protocol says them --
# The same varied content (text, thinking, tool calls; sizes, unicode, escapes) in each
# protocol's own words and framing, so that their figures compare.


def _varied_anthropic_events(rng: random.Random, target_bytes: float) -> list[dict]:
    """The JSON events of a varied Anthropic stream (its pings left out)."""
    stream = varied_anthropic(rng, target_bytes)
    events = []
    for line in stream.split(b"\n"):
        if line.startswith(b"data: "):
            event = json.loads(line[6:])
            if event["type"] != "ping":
                events.append(event)
    return events


def varied_gemini(rng: random.Random, target_bytes: float) -> bytes:
    """Gemini's chunks as its captures show them, one part per candidate: a few deltas' text
    joined in one part, thoughts in a thought part, a call whole in the last chunk."""
    model = "gemini-2.5-flash"
    response_id = _random_id(rng, "", 22)
    chunks: list[str] = []
    pieces: list[str] = []  # the part being gathered
    thought = False  # whether it is a thought
    call_args = ""

    def flush(finish: str | None = None, call: dict | None = None) -> None:
        parts: list[dict] = []
        if pieces:
            parts.append({"text": "".join(pieces), **({"thought": True} if thought else {})})
        if call:
            parts.append({"functionCall": call})
        candidate: dict = {"content": {"parts": parts or [{"text": ""}], "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        usage = {"promptTokenCount": 24, "candidatesTokenCount": len(chunks) + 1, "totalTokenCount": 25 + len(chunks),
                 "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 24}]}  # fmt: skip
        payload = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": response_id}
        chunks.append("data: " + json.dumps(payload, separators=(",", ": "), ensure_ascii=False) + "\r\n\r\n")
        pieces.clear()

    for event in _varied_anthropic_events(rng, target_bytes):
        delta = event.get("delta", {})
        if delta.get("type") == "input_json_delta":
            call_args += delta["partial_json"]
            continue
        if delta.get("type") not in ("text_delta", "thinking_delta"):
            continue
        is_thought = delta["type"] == "thinking_delta"
        if pieces and is_thought != thought:
            flush()
        thought = is_thought
        pieces.append(delta["thinking"] if is_thought else delta["text"])
        if len(pieces) >= rng.randint(2, 5):
            flush()
    call = {"name": rng.choice(_TOOL_NAMES), "args": json.loads(call_args)} if call_args else None
    flush("STOP", call)
    return "".join(chunks).encode()


def _converse_payload(event: dict) -> tuple[str, dict] | None:
    """An Anthropic event as the ConverseStream event that says the same, or None."""
    kind, index = event["type"], event.get("index", 0)
    delta = event.get("delta", {})
    if kind == "message_start":
        return "messageStart", {"role": "assistant"}
    if kind == "content_block_start" and event["content_block"]["type"] == "tool_use":
        block = event["content_block"]
        start = {"toolUse": {"toolUseId": block["id"].replace("toolu_01", "tooluse_"), "name": block["name"]}}
        return "contentBlockStart", {"contentBlockIndex": index, "start": start}
    if kind == "content_block_delta":
        said = {
            "text_delta": lambda: {"text": delta["text"]},
            "thinking_delta": lambda: {"reasoningContent": {"text": delta["thinking"]}},
            "signature_delta": lambda: {"reasoningContent": {"signature": delta["signature"]}},
            "input_json_delta": lambda: {"toolUse": {"input": delta["partial_json"]}},
        }[delta["type"]]()
        return "contentBlockDelta", {"contentBlockIndex": index, "delta": said}
    if kind == "content_block_stop":
        return "contentBlockStop", {"contentBlockIndex": index}
    if kind == "message_delta":
        return "messageStop", {"stopReason": delta["stop_reason"]}
    return None


def varied_bedrock_converse(rng: random.Random, target_bytes: float) -> bytes:
    frames = []
    for event in _varied_anthropic_events(rng, target_bytes):
        said = _converse_payload(event)
        if said is not None:
            frames.append(es.event(*said, pad=rng.randint(1, len(es.PADDING))))
    usage = {"inputTokens": 24, "outputTokens": len(frames), "totalTokens": 24 + len(frames)}
    metadata = {"usage": usage, "metrics": {"latencyMs": rng.randint(200, 9000)}}
    frames.append(es.event("metadata", metadata, pad=rng.randint(1, len(es.PADDING))))
    return b"".join(frames)


def varied_bedrock_invoke(rng: random.Random, target_bytes: float) -> bytes:
    events = _varied_anthropic_events(rng, target_bytes)
    events[-1] = {**events[-1], "amazon-bedrock-invocationMetrics": {**INVOCATION_METRICS, "outputTokenCount": 9}}
    return b"".join(es.chunk(event, pad=rng.randint(1, len(es.PADDING))) for event in events)


def varied_ollama(rng: random.Random, target_bytes: float) -> bytes:
    """Ollama's /api/chat lines: a delta's text (or thinking) each, tool calls whole at the end."""
    lines = []
    calls = []
    call_args = ""
    stamp = rng.randint(0, 10**6)

    def line(done: bool = False, **message) -> None:
        obj = {
            "model": "qwen3:8b",
            "created_at": f"2025-12-01T12:{len(lines) // 600 % 60:02d}:{len(lines) // 10 % 60:02d}"
            f".{stamp + len(lines):09d}Z",
            "message": {"role": "assistant", "content": "", **message},
            "done": done,
        }
        if done:
            obj.update(done_reason="stop", total_duration=rng.randint(10**8, 10**10), eval_count=len(lines))
        lines.append(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")

    for event in _varied_anthropic_events(rng, target_bytes):
        delta = event.get("delta", {})
        if delta.get("type") == "text_delta":
            line(content=delta["text"])
        elif delta.get("type") == "thinking_delta":
            line(thinking=delta["thinking"])
        elif delta.get("type") == "input_json_delta":
            call_args += delta["partial_json"]
        elif event["type"] == "content_block_stop" and call_args:
            calls.append({"function": {"name": rng.choice(_TOOL_NAMES), "arguments": json.loads(call_args)}})
            call_args = ""
    if calls:
        line(tool_calls=calls)
    line(done=True)
    return b"".join(lines)


VARIED = {
    "chat": varied_chat,
    "responses": varied_responses,
    "anthropic": varied_anthropic,
    "gemini": varied_gemini,
    "bedrock-converse": varied_bedrock_converse,
    "bedrock-invoke": varied_bedrock_invoke,
    "ollama": varied_ollama,
}

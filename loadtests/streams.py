"""Stream bytes as the providers put them on the wire, healthy or with one fault injected.

The four dialects are written byte for byte as real captures show them (``shared/PROTOCOLS.md``
and ``shared/corpus``): chat chunks as compact ``data: {json}`` events ending in ``[DONE]``,
Responses events as ``event:`` + ``data:`` with ``sequence_number``, Anthropic events named by
``event:`` with ``{"type": "ping"}`` pings, Gemini chunks with ``": "`` JSON and CRLF framing.
The answer is readable text ("Sentence 3 of 12 ...") so that a person can see where it was cut.

``wire(dialect, fault, ...)`` returns what the mock provider sends for one request: the pieces
in order and how the connection ends.  The load tests and benchmarks take their bytes from
here too, so they post the providers' real dialects.

Faults (``FAULTS``):

F0      a normal, complete stream
F1      a clean end mid-answer: no terminal event, the body ends properly
F2      everything but the terminal event ([DONE], response.completed, message_stop, the
        final Gemini chunk with its finishReason)
F2C     chat: the finish chunk dropped, [DONE] kept; anthropic: message_delta dropped,
        message_stop kept (the terminal event comes, the reason never does)
F3      half an event (its JSON cut), then a clean end
F4      cut by the token limit, in the dialect's own words (finish_reason length,
        response.incomplete with max_output_tokens, stop_reason max_tokens, MAX_TOKENS)
F5      the token limit used up by reasoning before any visible answer
error   an error inside the stream, as the provider sends it
reset   part of the stream, then a TCP reset
stall   part of the stream, then no bytes for a while, then a clean end
empty   a 200 with no body at all
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field

DIALECTS = ("chat", "responses", "anthropic", "gemini")
FAULTS = ("F0", "F1", "F2", "F2C", "F3", "F4", "F5", "error", "reset", "stall", "empty")
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
}
# What it should say when the gateway saw the connection end as the fault ends it: a reset is a
# transport error (a stall ends cleanly once its silence is over, unless a client gave up first).
EXPECTED_OVER_HTTP = {**EXPECTED_CATEGORY, "reset": "transport_error"}
# Faults that only make sense where the dialect has a separate finish event.
F2C_DIALECTS = ("chat", "anthropic")

DEFAULT_MODELS = {
    "chat": "gpt-4o-2024-08-06",
    "responses": "gpt-5-mini-2025-08-07",
    "anthropic": "claude-sonnet-4-5-20250929",
    "gemini": "gemini-2.5-flash",
}
CREATED = 1764590400  # 2025-12-01, every stream's creation time
ENDINGS = ("close", "reset", "stall")


@dataclass
class Wire:
    """One response body: its pieces in order, and how the connection ends after them."""

    pieces: list[bytes]
    ending: str = "close"  # "close": the body ends properly; "reset": TCP RST; "stall": silence
    terminal_sent: bool = True  # whether the dialect's terminal event is among the pieces
    content_type: str = "text/event-stream; charset=utf-8"
    fault: str = "F0"
    dialect: str = "chat"
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
def _responses(fault, text, reasoning, model, ids, usage) -> tuple[list[bytes], int | None, int]:
    response_id = "resp_" + ids.hex(48)
    seq = iter(range(1_000_000))
    events = []

    def event(type_, **fields) -> None:
        obj = {"type": type_, **fields, "sequence_number": next(seq)}
        events.append(b"event: " + type_.encode() + b"\ndata: " + _compact(obj) + b"\n\n")

    def response(status, output=(), **extra) -> dict:
        return {
            "id": response_id,
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "max_output_tokens": None,
            "model": model,
            "output": list(output),
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": "low", "summary": None},
            "service_tier": "auto",
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": None,
            "user": None,
            "metadata": {},
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
    events = []

    def event(type_, **fields) -> None:
        body = b'{"type": "ping"}' if type_ == "ping" else _compact({"type": type_, **fields})
        events.append(b"event: " + type_.encode() + b"\ndata: " + body + b"\n\n")

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


_BUILDERS = {"chat": _chat, "responses": _responses, "anthropic": _anthropic, "gemini": _gemini}


def wire(
    dialect: str,
    fault: str = "F0",
    *,
    text: str | None = None,
    reasoning: str = "",
    model: str | None = None,
    usage: bool = True,
    seed: int = 0,
) -> Wire:
    """What the mock provider sends for one streamed request with this fault."""
    if dialect not in _BUILDERS:
        raise ValueError(f"dialect must be one of {DIALECTS}, not {dialect!r}")
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {FAULTS}, not {fault!r}")
    if fault == "F2C" and dialect not in F2C_DIALECTS:
        raise ValueError(f"F2C needs a separate finish event: {', '.join(F2C_DIALECTS)} only")
    text = answer_text() if text is None else text
    model = model or DEFAULT_MODELS[dialect]
    # F4/F5/error build their own shapes; the others cut a healthy stream
    build_fault = fault if fault in ("F2C", "F4", "F5", "error") else "F0"
    pieces, terminal, sent_chars = _BUILDERS[dialect](build_fault, text, reasoning, model, _Ids(seed), usage)
    result = Wire(pieces, fault=fault, dialect=dialect, text_chars=sent_chars, terminal_sent=terminal is not None)
    if dialect == "gemini":
        result.content_type = "text/event-stream"
    if fault in ("F0", "F2C", "F4", "F5", "error"):
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
    result.text_chars = _text_chars(dialect, pieces[:half])
    if fault == "F3":
        cut = pieces[half]
        result.pieces.append(cut[: len(cut) // 2])
    elif fault in ("reset", "stall"):
        result.ending = fault
    return result


def _text_chars(dialect: str, pieces: list[bytes]) -> int:
    """How much answer text these whole pieces carry (for the byte log)."""
    from_body = {
        "chat": ("choices", 0, "delta", "content"),
        "responses": ("delta",),
        "anthropic": ("delta", "text"),
        "gemini": ("candidates", 0, "content", "parts", 0, "text"),
    }[dialect]
    total = 0
    for piece in pieces:
        for line in piece.decode().splitlines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            value = json.loads(line[6:])
            if dialect == "responses" and value.get("type") != "response.output_text.delta":
                continue
            if dialect == "anthropic" and value.get("delta", {}).get("type") != "text_delta":
                continue
            if dialect == "gemini" and value["candidates"][0]["content"]["parts"][0].get("thought"):
                continue
            try:
                for key in from_body:
                    value = value[key]
            except (KeyError, IndexError, TypeError):
                continue
            if isinstance(value, str):
                total += len(value)
    return total


def complete_stream(dialect: str, size_bytes: int, *, seed: int = 0, model: str | None = None) -> bytes:
    """A complete stream of about size_bytes (at least one word): for loads and benchmarks."""
    words = answer_text(1 + size_bytes // 40).split(" ")

    def body(n: int) -> bytes:
        return wire(dialect, text=" ".join(words[:n]), seed=seed, model=model).body

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
    """Streams of several dialects, for loads that post them in turn."""

    bodies: list[tuple[str, bytes]] = field(default_factory=list)

    @classmethod
    def of(cls, size_bytes: int, dialects=DIALECTS, seed: int = 0) -> Mix:
        return cls([(d, complete_stream(d, size_bytes, seed=seed)) for d in dialects])

"""Captured-stream bytes for the service tests, built the way providers send them."""

from __future__ import annotations

import json

CANARY = "CANARY-payload-7f3a9c51-must-never-be-stored"


def chat_stream(
    *,
    text: str = "Hello there.",
    finish: str | None = "stop",
    done: bool = True,
    model: str = "gpt-4o-2024-08-06",
    tool_arguments: str | None = None,
) -> bytes:
    def chunk(delta: dict, finish_reason: str | None) -> bytes:
        event = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        return b"data: " + json.dumps(event).encode() + b"\n\n"

    out = chunk({"role": "assistant", "content": ""}, None)
    for word in text.split(" "):
        out += chunk({"content": word + " "}, None)
    if tool_arguments is not None:
        out += chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": tool_arguments},
                    }
                ]
            },
            None,
        )
    if finish is not None:
        out += chunk({}, finish)
    if done:
        out += b"data: [DONE]\n\n"
    return out


def anthropic_stream(*, text: str = "Hi.", stop_reason: str = "end_turn", error: str | None = None) -> bytes:
    def event(name: str, payload: dict) -> bytes:
        return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()

    out = event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
            },
        },
    )
    out += event(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    out += event(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
    )
    if error is not None:
        return out + event("error", {"type": "error", "error": {"type": "overloaded_error", "message": error}})
    out += event("content_block_stop", {"type": "content_block_stop", "index": 0})
    out += event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {}})
    return out + event("message_stop", {"type": "message_stop"})

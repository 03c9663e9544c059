"""Finished turns of every shape: the streams fastsse must judge complete.

A false alarm makes a gateway re-send an answer that was whole, so every failure rule is held
to these as well as to the misses it exists to catch.  Each stream is shaped as its provider
documents and sends it (shared/PROTOCOLS.md, docs/verdict/protocols.md): text, tool calls,
reasoning then text, audio, images, code that ran, approval requests, compaction, paused turns,
whole messages, resumed streams.  Every one of them cut at any event boundary before its end is
a miss if judged complete.

``tests/fastsse/test_false_alarms.py`` runs them on both twins under every chunking;
``bench/bench_scanner.py`` prints the two figures (false alarms, misses) with its speeds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .events import (
    FC_ID,
    MSG_ID,
    RS_ID,
    a,
    a_end,
    a_server_tool,
    a_start,
    a_text,
    a_thinking,
    a_tool,
    anthropic,
    anthropic_text,
    cand,
    chat,
    chat_chunk,
    chat_reasoning,
    chat_text,
    chat_tool_stream,
    chat_usage,
    choice,
    function_call,
    g_chunk,
    g_final,
    gemini,
    gemini_text,
    r,
    r_completed,
    r_created,
    r_function_call,
    r_message,
    r_reasoning,
    responses,
    responses_text,
    text,
    thought,
)


@dataclass(frozen=True)
class Healthy:
    name: str
    protocol: str
    data: bytes
    # events at the end that a finished turn may lose and stay whole (OpenRouter's [DONE]
    # after response.completed): cuts inside them are not misses
    trailer: int = 0

    @property
    def id(self) -> str:
        return f"{self.protocol}-{self.name}"


_FRAME = re.compile(rb"(?s).*?(?:\r\n\r\n|\n\n)")


def frames(data: bytes) -> list[bytes]:
    """The stream's events, each with its blank line."""
    found = _FRAME.findall(data)
    assert b"".join(found) == data, "a healthy stream ends with a whole event"
    return found


def cuts(stream: Healthy) -> list[bytes]:
    """The stream cut at every event boundary before its end (the empty stream included)."""
    events = frames(stream.data)
    return [b"".join(events[:k]) for k in range(len(events) - stream.trailer)]


# ---------------------------------------------------------------------------------- chat
def _audio_chunks() -> list[bytes]:
    """gpt-4o-audio-preview with modalities ["text", "audio"]: content stays null, the audio
    (base64) and its transcript stream in delta.audio, the last audio delta says when it
    expires."""
    audio_id = "audio_6790cc2a1b4c8190a1b2c3d4e5f6"
    return [
        chat_chunk(choice(role="assistant", content=None, refusal=None), model="gpt-4o-audio-preview-2024-12-17"),
        chat_chunk(choice(audio={"id": audio_id, "transcript": "Hello"}), model="gpt-4o-audio-preview-2024-12-17"),
        chat_chunk(choice(audio={"transcript": " there."}), model="gpt-4o-audio-preview-2024-12-17"),
        chat_chunk(choice(audio={"data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEA"}), model="gpt-4o-audio-preview-2024-12-17"),
        chat_chunk(choice(audio={"data": "IlYAAESsAAACABAAZGF0YQAAAAA="}), model="gpt-4o-audio-preview-2024-12-17"),
        chat_chunk(choice(audio={"id": audio_id, "expires_at": 1737640300}), model="gpt-4o-audio-preview-2024-12-17"),
        chat_chunk(choice(finish="stop"), model="gpt-4o-audio-preview-2024-12-17"),
    ]


def _perplexity_chunks(last_object: str = "chat.completion.done") -> list[bytes]:
    """A Perplexity sonar answer as recorded (crmne/ruby_llm's cassettes, 2026): a bare UUID id,
    CRLF framing, the accumulated message beside each delta, usage and citations throughout."""
    top = {
        "id": "aced166e-c42e-42ea-941e-24477b147dac",
        "model": "sonar",
        "created": 1780944367,
        "usage": {"prompt_tokens": 8, "completion_tokens": 5, "total_tokens": 13, "search_context_size": "low"},
        "citations": ["https://example.com/a"],
        "object": "chat.completion.chunk",
        "system_fingerprint": None,
    }
    chunks, said = [], ""
    for piece, finish in (("1 2", None), (" 3", None), ("", "stop")):
        said += piece
        message = {"role": "assistant", "content": said}
        extra = {"object": last_object} if finish else {}
        choice_ = {"index": 0, "message": message, "delta": {"role": "assistant", "content": piece}}
        if finish:
            choice_["finish_reason"] = finish
        chunks.append(chat_chunk(choice_, **{**top, **extra}).replace(b"\n\n", b"\r\n\r\n"))
    return chunks


def _chat_streams() -> list[Healthy]:
    usage_with_reasoning = chat_chunk(
        usage={
            "prompt_tokens": 19,
            "completion_tokens": 210,
            "total_tokens": 229,
            "completion_tokens_details": {"reasoning_tokens": 192, "audio_tokens": 0},
        }
    )
    return [
        Healthy("text", "chat", chat_text("Hello", " there!", usage=True)),
        # Perplexity: usage and citations in every chunk, the last one's object
        # "chat.completion.done" with the finish, and no [DONE] (_protocols.CHAT_DONE_OBJECT)
        Healthy("perplexity-without-done", "chat", chat(*_perplexity_chunks(), done=False)),
        Healthy("tool-call", "chat", chat_tool_stream('{"city": ', '"Paris"}')),
        Healthy(
            "reasoning-then-text",
            "chat",
            chat(
                *chat_reasoning("Let me think.", " 2 + 2 is 4."),
                chat_chunk(choice(content="4"), model="deepseek-reasoner"),
                chat_chunk(choice(finish="stop"), model="deepseek-reasoner"),
            ),
        ),
        Healthy(
            "hidden-reasoning-then-text",
            "chat",
            chat(
                chat_chunk(choice(role="assistant", content="")),
                chat_chunk(choice(content="4")),
                chat_chunk(choice(finish="stop")),
                usage_with_reasoning,
            ),
        ),
        Healthy("audio", "chat", chat(*_audio_chunks())),
        Healthy(
            "audio-ending-at-expires-at",  # no finish_reason at all (openai/openai-node #1206)
            "chat",
            chat(*[c for c in _audio_chunks() if b'"finish_reason":"stop"' not in c]),
        ),
        Healthy(
            "azure-annotation-after-stop",  # the asynchronous filter's chunk: no delta, finish null
            "chat",
            chat(
                chat_chunk(choices=[], id="", object="", created=0, model="", prompt_filter_results=[]),
                chat_chunk(choice(role="assistant", content="Hi.")),
                chat_chunk(choice(finish="stop")),
                chat_chunk(
                    choices=[
                        {
                            "index": 0,
                            "finish_reason": None,
                            "content_filter_results": {},
                            "content_filter_offsets": {"check_offset": 3, "start_offset": 0, "end_offset": 3},
                        }
                    ],
                    id="",
                    object="",
                    created=0,
                    model="",
                ),
            ),
        ),
        Healthy(
            "two-choices",
            "chat",
            chat(
                chat_chunk(choice(0, content="Yes")),
                chat_chunk(choice(1, content="No")),
                chat_chunk(choice(0, finish="stop")),
                chat_chunk(choice(1, finish="stop")),
                chat_usage(),
            ),
        ),
    ]


# ---------------------------------------------------------------------------------- responses
def _resp(status, output, **extra):
    return {
        "id": "resp_68c42d0fb418819dbfa579f69406b495",
        "object": "response",
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5-mini-2025-08-07",
        "output": output,
        **extra,
    }


def _completed(*output, **extra):
    return r("response.completed", response=_resp("completed", list(output), **extra))


def _message_item(text_, status="completed"):
    return {
        "id": MSG_ID,
        "type": "message",
        "status": status,
        "content": [{"type": "output_text", "annotations": [], "text": text_, "logprobs": []}],
        "role": "assistant",
    }


def _fc_item(arguments, status="completed"):
    return {
        "id": FC_ID,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": "call_sVidsfFJ6zlz",
        "name": "get_weather",
    }


def _approval_item():
    return {
        "id": "mcpr_68c42d1d0878819d",
        "type": "mcp_approval_request",
        "arguments": '{"url":"https://ai-sdk.dev/"}',
        "name": "create_short_url",
        "server_label": "zip1",
    }


def _image_item(status="completed"):
    item = {"id": "ig_68c42d1d0878819d", "type": "image_generation_call", "status": status}
    if status == "completed":
        item.update(output_format="webp", quality="low", result="UklGRiQAAABXRUJQ", size="1536x1024")
    return item


def _compaction_item():
    return {"id": "cmp_68c42d1d0878819d", "type": "compaction", "encrypted_content": "gAAAAABo0x9Q"}


def _added(index, item):
    return r("response.output_item.added", output_index=index, item=item)


def _done(index, item):
    return r("response.output_item.done", output_index=index, item=item)


def _responses_streams() -> list[Healthy]:
    answer = "2 + 2 equals 4."
    tail = [  # resumed after the last delta: the done events, then the terminal one
        r("response.output_text.done", item_id=MSG_ID, output_index=0, content_index=0, text=answer, logprobs=[]),
        r(
            "response.content_part.done",
            item_id=MSG_ID,
            output_index=0,
            content_index=0,
            part={"type": "output_text", "annotations": [], "text": answer, "logprobs": []},
        ),
        _done(0, _message_item(answer)),
        _completed(_message_item(answer), background=True),
    ]
    fc = _fc_item('{"city":"Paris"}')
    return [
        Healthy("text", "responses", responses_text("po", "ng")),
        Healthy(
            "function-call",
            "responses",
            responses(*r_created(), *r_function_call('{"city":"Paris"}'), _done(0, fc), _completed(fc)),
        ),
        Healthy(
            "function-call-arguments-only-whole",  # no delta, no arguments' done event
            "responses",
            responses(*r_created(), _added(0, _fc_item("", "in_progress")), _done(0, fc), _completed(fc)),
        ),
        Healthy(
            "reasoning-then-text",
            "responses",
            responses(
                *r_created(),
                *r_reasoning("Adding", " two and two."),
                *[{**e, "output_index": 1} for e in r_message("4")],
                _completed({"id": RS_ID, "type": "reasoning", "summary": []}, _message_item("4")),
            ),
        ),
        Healthy(
            "approval-request",
            "responses",
            responses(
                *r_created(), _added(0, _approval_item()), _done(0, _approval_item()), _completed(_approval_item())
            ),
        ),
        Healthy(
            "image-and-empty-message",
            "responses",
            responses(
                *r_created(),
                _added(0, _image_item("in_progress")),
                r("response.image_generation_call.generating", output_index=0, item_id="ig_68c42d1d0878819d"),
                r(
                    "response.image_generation_call.partial_image",
                    output_index=0,
                    item_id="ig_68c42d1d0878819d",
                    partial_image_index=0,
                    partial_image_b64="UklGRiQAAABXRUJQ",
                ),
                _done(0, _image_item()),
                *[{**e, "output_index": 1} for e in r_message("")],
                _completed(_image_item(), _message_item("")),
            ),
        ),
        Healthy(
            "answer-then-compaction",
            "responses",
            responses(
                *r_created(),
                *r_message("Done."),
                _added(1, _compaction_item()),
                _done(1, _compaction_item()),
                _completed(_message_item("Done."), _compaction_item()),
            ),
        ),
        Healthy(
            "compaction-only",
            "responses",
            responses(
                *r_created(),
                _added(0, _compaction_item()),
                _done(0, _compaction_item()),
                _completed(_compaction_item()),
            ),
        ),
        Healthy("resumed-after-last-delta", "responses", responses(*tail, seqs=list(range(13, 17)))),
        Healthy("resumed-at-the-end", "responses", responses(tail[-1], seqs=[16])),
        Healthy(
            "background-with-keepalive",
            "responses",
            responses(
                r("response.created", response=_resp("queued", [], background=True)),
                r("response.queued", response=_resp("queued", [], background=True)),
                r("keepalive"),
                r("response.in_progress", response=_resp("in_progress", [], background=True)),
                *r_message("4"),
                _completed(_message_item("4"), background=True),
            ),
        ),
        Healthy(
            "client-tool-search",  # its arguments are an object, not a JSON string
            "responses",
            responses(
                *r_created(),
                _done(
                    0,
                    {
                        "id": "tsc_1",
                        "type": "tool_search_call",
                        "status": "completed",
                        "arguments": {"goal": "Find a weather tool"},
                        "call_id": "call_1",
                        "execution": "client",
                    },
                ),
                _completed({"id": "tsc_1", "type": "tool_search_call", "status": "completed", "execution": "client"}),
            ),
        ),
        Healthy(
            "openrouter-done-after-completed",
            "responses",
            responses(*r_created(), *r_message("Hi"), r_completed("Hi"), event_lines=False, done=True, comments=1),
            trailer=1,
        ),
    ]


# ---------------------------------------------------------------------------------- anthropic
A_OPUS = "claude-opus-4-6"


def _anthropic_streams() -> list[Healthy]:
    compaction_block = [
        a("content_block_start", index=0, content_block={"type": "compaction", "content": None}),
        a(
            "content_block_delta",
            index=0,
            delta={"type": "compaction_delta", "content": "<summary>Earlier turns.</summary>"},
        ),
        a("content_block_stop", index=0),
    ]
    web_result = a(
        "content_block_start",
        index=1,
        content_block={
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
            "content": [
                {"type": "web_search_result", "title": "T", "url": "https://example.com", "encrypted_content": "Eo8J"}
            ],
        },
    )
    web_search = [*a_server_tool(0, "q1"), web_result, a("content_block_stop", index=1)]  # and its result
    whole_message = {
        "id": "msg_01Xk3c",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_01Ab",
                "name": "rollDie",
                "input": {"player": "player2"},
                "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_01Cd"},
            }
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    mcp_use = {"type": "mcp_tool_use", "id": "mcptoolu_01", "name": "echo", "input": {}, "server_name": "echo"}
    mcp_result = {
        "type": "mcp_tool_result",
        "tool_use_id": "mcptoolu_01",
        "is_error": False,
        "content": [{"type": "text", "text": "hi"}],
    }
    fallback = {
        "type": "fallback",
        "from": {"model": "claude-opus-4-7"},
        "to": {"model": "claude-sonnet-4-5"},
        "trigger": {"type": "refusal", "category": None},
    }
    return [
        Healthy("text", "anthropic", anthropic_text("Hello", " there!", pad=6)),
        Healthy(
            "tool-use",
            "anthropic",
            anthropic(a_start(), *a_text(0, "Checking."), *a_tool(1, '{"city": ', '"Paris"}'), *a_end("tool_use")),
        ),
        Healthy(
            "thinking-then-text",
            "anthropic",
            anthropic(a_start(), *a_thinking(0, "Two and two."), *a_text(1, "4"), *a_end("end_turn")),
        ),
        Healthy(
            "pause-turn-on-a-server-tool",
            "anthropic",
            anthropic(a_start(), *web_search, *a_server_tool(2, "q2"), *a_end("pause_turn")),
        ),
        Healthy(
            "web-search-then-text",
            "anthropic",
            anthropic(a_start(), *web_search, *a_text(2, "Found it."), *a_end("end_turn")),
        ),
        Healthy(
            "compaction-then-text",
            "anthropic",
            anthropic(a_start(A_OPUS), *compaction_block, *a_text(1, "Based on that."), *a_end("end_turn")),
        ),
        Healthy(
            "compaction-only-paused", "anthropic", anthropic(a_start(A_OPUS), *compaction_block, *a_end("compaction"))
        ),
        Healthy(
            "whole-message-start", "anthropic", anthropic(a("message_start", message=whole_message), a("message_stop"))
        ),
        Healthy(
            "mcp-call-result-text",
            "anthropic",
            anthropic(
                a_start(),
                a("content_block_start", index=0, content_block=mcp_use),
                a(
                    "content_block_delta",
                    index=0,
                    delta={"type": "input_json_delta", "partial_json": '{"message":"hi"}'},
                ),
                a("content_block_stop", index=0),
                a("content_block_start", index=1, content_block=mcp_result),
                a("content_block_stop", index=1),
                *a_text(2, "It said hi."),
                *a_end("end_turn"),
            ),
        ),
        Healthy(
            "fallback-then-text",
            "anthropic",
            anthropic(
                a_start(),
                a("content_block_start", index=0, content_block=fallback),
                a("content_block_stop", index=0),
                *a_text(1, "Here."),
                *a_end("end_turn"),
            ),
        ),
    ]


# ---------------------------------------------------------------------------------- gemini
def _gemini_streams() -> list[Healthy]:
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAE="}}
    audio = {"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": "AAABAAIAAwAEAA=="}}
    code = {"executableCode": {"language": "PYTHON", "code": "print(2 + 2)"}}
    result = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}}
    return [
        Healthy("text", "gemini", gemini_text("The", " capital", " is Paris.")),
        Healthy("text-finish-as-number", "gemini", gemini_text("The", " capital", finish=1)),  # enum-encoding=int
        Healthy(
            "function-call",
            "gemini",
            gemini(g_chunk(cand(function_call("get_weather", {"city": "Paris"}))), g_final(text(""))),
        ),
        Healthy(
            "thoughts-then-text",
            "gemini",
            gemini(g_chunk(cand(thought("Thinking about it."))), g_final(text("Paris."))),
        ),
        Healthy("image", "gemini", gemini(g_chunk(cand(text("Here it is:"))), g_final(image))),
        Healthy("image-only", "gemini", gemini(g_final(image))),
        Healthy("audio-only", "gemini", gemini(g_chunk(cand(audio)), g_final(audio))),
        Healthy(
            "code-that-ran", "gemini", gemini(g_chunk(cand(code)), g_chunk(cand(result)), g_final(text("It prints 4.")))
        ),
    ]


STREAMS: list[Healthy] = [*_chat_streams(), *_responses_streams(), *_anthropic_streams(), *_gemini_streams()]
assert len({s.id for s in STREAMS}) == len(STREAMS)

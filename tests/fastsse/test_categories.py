"""Every verdict category, reached from realistic hand-written bytes (tests/fastsse/streams.py),
in every protocol, and the protocol traps that are not plain table rows.

Every case goes through the ``judge`` fixture, which feeds it whole, byte by byte and at random
split points, on both scanner twins, and fails unless all agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from fastsse import CATEGORIES
from fastsse._verdict import (
    MESSAGE_ABNORMAL_FINISH,
    MESSAGE_BLOCKED_PROMPT,
    MESSAGE_GUARDRAIL,
    MESSAGE_LIMITS,
    MESSAGE_NO_EVENTS,
    MESSAGE_PAUSE,
    MESSAGE_REASONING_ONLY,
    MESSAGE_REFUSAL,
)
from loadtests import eventstream as es

from .events import (
    A_MODEL,
    C_START,
    CHAT_DONE,
    CUT_CHAT_CHUNK,
    DSR,
    FC_ID,
    G_MODEL,
    GEMINI_DATA_ERROR,
    GROQ_ERROR,
    MAGISTRAL,
    NO_KEY,
    O_MODEL,
    OPENAI_ERROR,
    PING,
    PROTOCOLS,
    QUOTA,
    R_MODEL,
    SAFETY_RATINGS,
    _response,
    a,
    a_end,
    a_error,
    a_server_tool,
    a_start,
    a_text,
    a_thinking,
    a_tool,
    anthropic,
    anthropic_text,
    c_delta,
    c_reasoning,
    c_stop,
    c_text,
    c_tool,
    cand,
    chat,
    chat_chunk,
    chat_function_call,
    chat_reasoning,
    chat_text,
    chat_tool_stream,
    chat_usage,
    choice,
    converse,
    converse_text,
    function_call,
    g_bare_error,
    g_chunk,
    g_final,
    g_object,
    gemini,
    gemini_array,
    gemini_text,
    invoke,
    invoke_text,
    mistral_thinking,
    o_chat,
    o_generate,
    ollama_text,
    openrouter_finish,
    r,
    r_completed,
    r_completed_saying,
    r_created,
    r_failed,
    r_function_call,
    r_incomplete,
    r_message,
    r_reasoning,
    r_refusal,
    responses,
    responses_text,
    text,
    tgi_stream,
    thought,
    tool_call,
)

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
ARRAY_CUT = gemini_array(g_object(cand(text("The capital"))), g_object(cand(text(" is Paris."), finish="STOP")))[:-60]
FC_ADDED = {"id": FC_ID, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_1",
            "name": "get_weather"}  # fmt: skip
APPROVAL = {"id": "mcpr_1", "type": "mcp_approval_request", "arguments": '{"url":"https://ai-sdk.dev/"}',
            "name": "create_short_url", "server_label": "zip1"}  # fmt: skip

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
    # a bare error stream (no message_start) names no protocol: auto cannot tell
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
    # Only Responses numbers its events; the other protocols carry no sequence to check.
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
    # ---------------------------------------------------------------- truth, round three
    # hidden reasoning: usage counted reasoning tokens, none of them shown, the limit hit
    case("limit-hidden-reasoning", "chat",
         chat(chat_chunk(choice(role="assistant", content="")), chat_chunk(choice(finish="length")),
              chat_chunk(usage={"prompt_tokens": 9, "completion_tokens": 64, "total_tokens": 73,
                                "completion_tokens_details": {"reasoning_tokens": 64}})),
         "reasoning_exhausted", finish_reason="length", reasoning_events=0, text_events=0),
    case("limit-hidden-reasoning", "responses",
         responses(*r_created(), r("response.incomplete", response={
             "id": "resp_1", "object": "response", "status": "incomplete", "output": [],
             "incomplete_details": {"reason": "max_output_tokens"},
             "usage": {"input_tokens": 9, "output_tokens": 64, "output_tokens_details": {"reasoning_tokens": 64}}})),
         "reasoning_exhausted", finish_reason_raw="max_output_tokens", reasoning_events=0),
    case("limit-hidden-thoughts", "gemini",
         b"data: " + json.dumps({"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}],
                                 "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 73, "thoughtsTokenCount": 64},
                                 "modelVersion": G_MODEL}, separators=(",", ": ")).encode() + b"\r\n\r\n",
         "reasoning_exhausted", finish_reason_raw="MAX_TOKENS", reasoning_events=0),
    # reasoning and nothing else, then a normal stop: no answer
    case("reasoning-only-stop", "chat",
         chat(*chat_reasoning("Let me think."), chat_chunk(choice(finish="stop"), model=DSR)),
         "empty_output", reasoning_events=1, message=MESSAGE_REASONING_ONLY),
    case("reasoning-only-completed", "responses",
         responses(*r_created(), *r_reasoning("Thinking."), r_completed()),
         "empty_output", reasoning_events=2, message=MESSAGE_REASONING_ONLY),
    case("thinking-only-end-turn", "anthropic",
         anthropic(a_start(), *a_thinking(0, "Two and two."), *a_end("end_turn")),
         "empty_output", reasoning_events=2, message=MESSAGE_REASONING_ONLY),
    case("thoughts-only-stop", "gemini", gemini(g_chunk(cand(thought("Thinking."))), g_final(text(""))),
         "empty_output", reasoning_events=1, message=MESSAGE_REASONING_ONLY),
    # vendor extensions that say a stream stopped early, inside an ordinary chunk
    case("groq-x-groq-error", "chat",
         chat(chat_chunk(choice(content="Partial"), model="llama-3.3-70b-versatile"),
              chat_chunk(choice(), model="llama-3.3-70b-versatile", x_groq={"id": "req_01", "error": "over capacity"})),
         "upstream_error", error_code=None),
    case("error-object-chunk", "chat",
         chat(chat_chunk(choice(content="Partial")),
              b'data: {"object":"error","message":"Service unavailable","type":"ServiceUnavailable","code":503}\n\n'),
         "upstream_error", error_code="503", retryable=True),
    # vLLM and SGLang send [DONE] after an error chunk: [DONE] is no success
    case("vllm-error-then-done", "chat",
         chat(chat_chunk(choice(content="Partial")),
              b'data: {"error": {"message": "Internal server error", "type": "InternalServerError", '
              b'"param": null, "code": 500}}\n\n'),
         "upstream_error", error_code="InternalServerError", retryable=True),
    case("sglang-nested-error-then-done", "chat",
         chat(chat_chunk(choice(content="Partial")),
              b'data: {"error": {"object": "error", "message": "Request waiting timeout reached.", '
              b'"type": "SERVICE_UNAVAILABLE", "param": null, "code": 503}}\n\n'),
         "upstream_error", error_code="SERVICE_UNAVAILABLE", retryable=True),
    # function-call arguments judged from every place they appear, not only their done event
    case("args-cut-in-deltas-only", "responses",
         responses(*r_created(), r("response.output_item.added", output_index=0, item=FC_ADDED),
                   r("response.function_call_arguments.delta", item_id=FC_ID, output_index=0, delta='{"city": "Pa'),
                   r_completed()),
         "tool_call_malformed", tool_calls=1),
    case("args-cut-in-item-done", "responses",
         responses(*r_created(), r("response.output_item.added", output_index=0, item=FC_ADDED),
                   r("response.function_call_arguments.delta", item_id=FC_ID, output_index=0, delta='{"city": "Pa'),
                   r("response.output_item.done", output_index=0, item={**FC_ADDED, "arguments": '{"city": "Pa'}),
                   r_completed()),
         "tool_call_malformed", tool_calls=1),
    case("args-cut-in-the-terminal-output", "responses",
         responses(*r_created(), r("response.output_item.added", output_index=0, item=FC_ADDED),
                   r("response.completed", response={"id": "resp_1", "object": "response", "status": "completed",
                                                     "output": [{**FC_ADDED, "arguments": '{"city": "Pa'}]})),
         "tool_call_malformed", tool_calls=1),
    # output that is not text ends a turn
    case("audio-ends-without-finish-reason", "chat",
         chat(chat_chunk(choice(role="assistant", content=None, audio={"id": "audio_1", "transcript": "Hi"})),
              chat_chunk(choice(audio={"data": "UklGRiQAAABXQVZF"})),
              chat_chunk(choice(audio={"id": "audio_1", "expires_at": 1730768595}))),
         "complete", finish_reason="stop", finish_reason_raw="expires_at", output_events=2, text_events=0),
    case("length-then-audio-expiry", "chat",
         chat(chat_chunk(choice(audio={"transcript": "Hi", "data": "UklGRiQAAABXQVZF"})),
              chat_chunk(choice(finish="length")), chat_chunk(choice(audio={"expires_at": 1730768595}))),
         "truncated_length", finish_reason_raw="length", output_events=2),
    case("image-only", "chat",
         chat(chat_chunk(choice(content="", images=[{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]),
                         model="google/gemini-2.5-flash-image"),
              chat_chunk(choice(finish="stop"), model="google/gemini-2.5-flash-image")),
         "complete", output_events=1, text_events=0),
    case("resumed-at-the-terminal-event", "responses",
         responses(r("response.completed", response={"id": "resp_1", "object": "response", "status": "completed",
                                                     "output": [{"type": "message", "role": "assistant",
                                                                 "content": [{"type": "output_text", "text": "4"}]}]}),
                   seqs=[16]),
         "complete", text_events=0, finish_reason="stop"),
    case("resumed-refusal", "responses",
         responses(r("response.completed", response={"id": "resp_1", "object": "response", "status": "completed",
                                                     "output": [{"type": "message", "role": "assistant",
                                                                 "content": [{"type": "refusal", "refusal": "No."}]}]}),
                   seqs=[16]),
         "content_filtered", refusal_events=0, message=MESSAGE_REFUSAL),
    case("approval-request", "responses",
         responses(*r_created(), r("response.output_item.added", output_index=0, item=APPROVAL),
                   r("response.completed", response={"id": "resp_1", "object": "response", "status": "completed",
                                                     "output": [APPROVAL]})),
         "complete", output_events=1, tool_calls=0),
    case("whole-message-start", "anthropic",
         anthropic(a("message_start", message={"id": "msg_1", "type": "message", "role": "assistant", "model": A_MODEL,
                                               "content": [{"type": "tool_use", "id": "toolu_1", "name": "roll",
                                                            "input": {}}],
                                               "stop_reason": "tool_use", "usage": {"output_tokens": 0}}),
                   a("message_stop")),
         "complete", finish_reason="tool_calls", finish_reason_raw="tool_use", tool_calls=0),
    case("compaction-only", "anthropic",
         anthropic(a_start(), a("content_block_start", index=0, content_block={"type": "compaction", "content": None}),
                   a("content_block_delta", index=0, delta={"type": "compaction_delta", "content": "<summary/>"}),
                   a("content_block_stop", index=0), *a_end("compaction")),
         "complete", finish_reason="pause", output_events=1, message=MESSAGE_PAUSE),
    # streamGenerateContent without alt=sse: one JSON array, every byte of it read
    case("array-form", "gemini", gemini_array(g_object(cand(text("The capital"))), g_object(cand(text(" is Paris."), finish="STOP"))),
         "complete", text_events=2, events=2),
    case("array-form-one-line", "gemini",
         gemini_array(g_object(cand(text("The capital"))), g_object(cand(text(" is Paris."), finish="STOP")), compact=True),
         "complete", text_events=2),
    case("array-form-cut-in-an-element", "gemini", ARRAY_CUT, "no_end_marker",
         residual_bytes=len(ARRAY_CUT) - ARRAY_CUT.index(b"\n,\r\n") - len(b"\n,\r\n")),
    case("array-form-cut-after-an-element", "gemini",
         gemini_array(g_object(cand(text("The capital"))), g_object(cand(text(" is Paris."), finish="STOP")))[:-2],
         "complete"),
    case("image-only", "gemini", g_final({"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}),
         "complete", output_events=1, text_events=0),
]
# fmt: on

# ---------------------------------------------------------------------------------------------
# The framings beyond SSE: Bedrock's event streams (AWS event stream frames) and Ollama's NDJSON.
# ---------------------------------------------------------------------------------------------
C_HALF_FRAME = c_delta(0, text="more")[:20]
I_HALF_FRAME = es.chunk({"type": "ping"})[:30]
C_TOOL_RESULT = es.event(
    "contentBlockStart",
    {
        "contentBlockIndex": 1,
        "start": {"toolResult": {"toolUseId": "tooluse_srv_1", "type": "web_search_result", "status": "success"}},
    },
)
C_IMAGE = es.event("contentBlockStart", {"contentBlockIndex": 0, "start": {"image": {"format": "png"}}})
NOT_BASE64 = es.event("chunk", {"bytes": "eyJ0eXBlIjoicGluZyJ9!"})
NOT_JSON_INSIDE = es.event("chunk", {"bytes": "PGh0bWw+NTAyPC9odG1sPg=="})  # <html>502</html>
I_INTERVENED = {"amazon-bedrock-guardrailAction": "INTERVENED"}
_BLOCKED, _END = a_text(0, "Blocked."), a_end("end_turn")
GUARDRAIL_ANSWER = (
    a_start(),
    _BLOCKED[0],
    {**_BLOCKED[1], **I_INTERVENED},
    _BLOCKED[2],
    _END[0],
    {**_END[1], **I_INTERVENED},
)
LLAMA = (
    {"generation": "Hi", "prompt_token_count": 9, "generation_token_count": 1, "stop_reason": None},
    {"generation": "", "prompt_token_count": None, "generation_token_count": 2, "stop_reason": "stop"},
)
GPT_OSS = (
    {
        "object": "chat.completion.chunk",
        "model": "openai.gpt-oss-120b-1:0",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": None}],
    },
    {
        "object": "chat.completion.chunk",
        "model": "openai.gpt-oss-120b-1:0",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    },
)
O_ERROR = b'{"error":"an error was encountered while running the model: unexpected EOF"}\n'
O_CALL = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}

# fmt: off
CASES += [
    # ---------------------------------------------------------------- bedrock-converse
    case("frame-too-big", "bedrock-converse", converse_text("Hello"), "limit_exceeded", auto="unknown",
         limits={"max_event_bytes": 60}, limit="event", events=0),
    case("reset-mid-answer", "bedrock-converse", converse(C_START, *c_text(0, "Hel")), "transport_error",
         transport="reset"),
    case("throttled", "bedrock-converse", converse(C_START, c_delta(0, text="Hel"),
                                                   es.exception("throttlingException", "Too many tokens")),
         "upstream_error", error_code="throttlingException", retryable=True),
    case("validation", "bedrock-converse", converse(C_START, es.exception("validationException", "Bad input")),
         "upstream_error", error_code="validationException", retryable=False),
    case("model-stream-error", "bedrock-converse", converse(C_START, *c_text(0, "Hel"),
         es.exception("modelStreamErrorException", "The model stream was interrupted.")), "upstream_error",
         error_code="modelStreamErrorException"),
    case("service-error-frame", "bedrock-converse", converse(C_START, c_delta(0, text="Hi"),
                                                             es.error("InternalFailure", "internal")),
         "upstream_error", error_code="InternalFailure"),
    case("malformed-model-output", "bedrock-converse", converse_text("Hi", stop="malformed_model_output"),
         "upstream_error", finish_reason="error", message=MESSAGE_ABNORMAL_FINISH),
    case("no-message-stop", "bedrock-converse", converse(C_START, *c_text(0, "Hello", " there")), "no_end_marker"),
    case("cut-inside-a-frame", "bedrock-converse", converse(C_START, *c_text(0, "Hello"))[:-7], "no_end_marker",
         residual_bytes=len(es.event("contentBlockStop", {"contentBlockIndex": 0})) - 7),
    case("half-frame-after-the-end", "bedrock-converse", converse_text("Hi") + C_HALF_FRAME, "buffer_residual",
         residual_bytes=len(C_HALF_FRAME), end_marker_seen=True),
    case("crc-mismatch", "bedrock-converse",
         converse(C_START, es.corrupt(c_delta(0, text="Hel")), *c_text(0, "lo"), *c_stop("end_turn")),
         "malformed_event", malformed_events=1, text_events=1),
    case("corrupt-prelude-after-the-end", "bedrock-converse",
         converse(C_START, *c_text(0, "Hi"), c_stop("end_turn")[0], b"\x00\x00\x00\x40\x00\x00\x00\x20junkjunk" + b"x" * 52),
         "malformed_event", malformed_events=1),
    case("payload-not-json", "bedrock-converse",
         converse(C_START, es.frame({":event-type": "contentBlockDelta", ":message-type": "event"}, b"<html>502</html>"),
                  *c_text(0, "Hi"), *c_stop("end_turn")), "malformed_event", malformed_events=1),
    case("stop-without-reason", "bedrock-converse",
         converse(C_START, *c_text(0, "Hi"), es.event("messageStop", {})), "missing_finish_reason"),
    case("reasoning-then-max-tokens", "bedrock-converse",
         converse(C_START, *c_reasoning(0, "Let me", " think"), *c_stop("max_tokens")), "reasoning_exhausted",
         finish_reason="length", reasoning_events=2),
    case("max-tokens", "bedrock-converse", converse_text("Long", stop="max_tokens"), "truncated_length",
         finish_reason="length", finish_reason_raw="max_tokens"),
    case("context-window", "bedrock-converse", converse_text("Long", stop="model_context_window_exceeded"),
         "truncated_length"),
    case("guardrail", "bedrock-converse", converse_text("I can", stop="guardrail_intervened"), "content_filtered",
         finish_reason="content_filter"),
    case("model-filter", "bedrock-converse", converse_text("", stop="content_filtered"), "content_filtered"),
    case("tool-input-bad", "bedrock-converse",
         converse(C_START, *c_tool(0, '{"city": "Par'), *c_stop("tool_use")), "tool_call_malformed", tool_calls=1),
    case("malformed-tool-use", "bedrock-converse", converse(C_START, *c_stop("malformed_tool_use")),
         "tool_call_malformed", finish_reason="malformed_tool_call"),
    case("end-turn-nothing-said", "bedrock-converse", converse(C_START, *c_stop("end_turn")), "empty_output"),
    case("text", "bedrock-converse", converse_text("Hello", " there!"), "complete", text_events=2, events=6,
         finish_reason="stop", finish_reason_raw="end_turn", end_marker_seen=True),
    case("no-metadata", "bedrock-converse", converse(C_START, *c_text(0, "Hi"), *c_stop("end_turn", metadata=False)),
         "complete"),
    case("tool-use", "bedrock-converse",
         converse(C_START, *c_text(0, "Let me check."), *c_tool(1, '{"city":', ' "Paris"}'), *c_stop("tool_use")),
         "complete", tool_calls=1, finish_reason="tool_calls"),
    case("reasoning-then-text", "bedrock-converse",
         converse(C_START, *c_reasoning(0, "Simple."), *c_text(1, "4"), *c_stop("end_turn")), "complete",
         reasoning_events=1, text_events=1),
    case("server-tool-result", "bedrock-converse",
         converse(C_START, *c_tool(0, '{"query": "news"}', name="web_search"), C_TOOL_RESULT, *c_text(2, "Today..."),
                  *c_stop("end_turn")), "complete", tool_calls=1, output_events=1),
    case("image", "bedrock-converse", converse(C_START, C_IMAGE, *c_stop("end_turn")), "complete", output_events=1),
    # ---------------------------------------------------------------- bedrock-invoke
    case("chunk-too-big", "bedrock-invoke", invoke_text("Hello"), "limit_exceeded", auto="unknown",
         limits={"max_event_bytes": 100}, limit="event"),
    case("reset-mid-answer", "bedrock-invoke", invoke(a_start(), *a_text(0, "Hel")), "transport_error",
         transport="reset"),
    case("overloaded", "bedrock-invoke", invoke(a_start(), *a_text(0, "Hel"), a_error("overloaded_error", "Overloaded")),
         "upstream_error", error_code="overloaded_error"),
    case("model-timeout", "bedrock-invoke",
         invoke(a_start(), *a_text(0, "Hel")) + es.exception("modelTimeoutException", "Model timed out"),
         "upstream_error", error_code="modelTimeoutException"),
    case("no-message-stop", "bedrock-invoke", invoke(a_start(), *a_text(0, "Hello")), "no_end_marker"),
    # other families end with Bedrock's last chunk (invoke() adds its invocation metrics)
    case("llama", "bedrock-invoke", invoke(*LLAMA), "complete", finish_reason="stop", auto="bedrock-invoke"),
    case("llama-cut-before-bedrocks-end", "bedrock-invoke", b"".join(es.chunk(e) for e in LLAMA), "no_end_marker",
         finish_reason="stop", auto="bedrock-invoke"),
    case("gpt-oss", "bedrock-invoke", invoke(*GPT_OSS), "complete", finish_reason="stop"),
    case("gpt-oss-cut-before-bedrocks-end", "bedrock-invoke", b"".join(es.chunk(e) for e in GPT_OSS),
         "no_end_marker", finish_reason="stop"),
    case("half-frame-after-the-end", "bedrock-invoke", invoke_text("Hi") + I_HALF_FRAME, "buffer_residual",
         residual_bytes=len(I_HALF_FRAME)),
    case("not-base64", "bedrock-invoke", invoke_text("Hi")[:0] + es.chunk(a_start()) + NOT_BASE64
         + invoke(*a_text(0, "Hi"), *a_end("end_turn")), "malformed_event", malformed_events=1),
    case("not-json-inside", "bedrock-invoke", es.chunk(a_start()) + NOT_JSON_INSIDE
         + invoke(*a_text(0, "Hi"), *a_end("end_turn")), "malformed_event", malformed_events=1),
    case("crc-mismatch", "bedrock-invoke", es.chunk(a_start()) + es.corrupt(es.chunk(a_text(0, "Hi")[1]))
         + invoke(*a_text(0, "Hi"), *a_end("end_turn")), "malformed_event", malformed_events=1),
    case("no-message-delta", "bedrock-invoke", invoke(a_start(), *a_text(0, "Hi"), a("message_stop")),
         "missing_finish_reason"),
    case("thinking-then-max-tokens", "bedrock-invoke", invoke(a_start(), *a_thinking(0, "Hmm"), *a_end("max_tokens")),
         "reasoning_exhausted"),
    case("max-tokens", "bedrock-invoke", invoke_text("Long", stop_reason="max_tokens"), "truncated_length",
         finish_reason_raw="max_tokens"),
    case("refusal", "bedrock-invoke", invoke(a_start(), *a_end("refusal")), "content_filtered",
         message=MESSAGE_REFUSAL),
    # a guardrail's message in place of the answer, marked (the shape Bedrock's invocation log
    # recorded: test_invoke_families.anthropic_guarded); Titan's is one chunk, without metrics
    case("guardrail-intervened", "bedrock-invoke", invoke(*GUARDRAIL_ANSWER), "content_filtered",
         finish_reason="content_filter", finish_reason_raw="guardrail_intervened", message=MESSAGE_GUARDRAIL),
    case("titan-guardrail-intervened", "bedrock-invoke", es.chunk({"outputText": "Blocked.", **I_INTERVENED}),
         "content_filtered", finish_reason_raw="guardrail_intervened", text_events=1),
    case("input-json-bad", "bedrock-invoke",
         invoke(a_start(), *a_tool(0, '{"city": "Par'), *a_end("tool_use")), "tool_call_malformed"),
    case("end-turn-nothing-said", "bedrock-invoke", invoke(a_start(), *a_end("end_turn")), "empty_output"),
    case("text", "bedrock-invoke", invoke_text("Hello", " there!"), "complete", text_events=2, model=A_MODEL,
         finish_reason="stop", finish_reason_raw="end_turn"),
    case("tool-use", "bedrock-invoke", invoke(a_start(), *a_tool(0, '{"city":', ' "Paris"}'), *a_end("tool_use")),
         "complete", tool_calls=1, finish_reason="tool_calls"),
    # ---------------------------------------------------------------- ollama
    case("long-line", "ollama", ollama_text("Hello"), "limit_exceeded", auto="unknown", limits=SMALL, limit="line"),
    case("reset-mid-answer", "ollama", o_chat("Hel"), "transport_error", transport="reset"),
    case("error-line", "ollama", o_chat("Hel") + O_ERROR, "upstream_error", error_code=None),
    case("error-only", "ollama", O_ERROR, "upstream_error", auto="unknown"),
    case("no-done-line", "ollama", o_chat("Hello") + o_chat(" there"), "no_end_marker"),
    case("repetition-cut", "ollama", o_generate("la") + o_generate(" la"), "no_end_marker"),
    case("cut-done-line", "ollama", o_chat("Hi") + o_chat(done=True, done_reason="stop")[:-12], "no_end_marker",
         residual_bytes=len(o_chat(done=True, done_reason="stop")) - 12),
    case("half-line-after-done", "ollama", ollama_text("Hi") + b'{"model":"lla', "buffer_residual",
         residual_bytes=len(b'{"model":"lla')),
    case("html-line", "ollama", o_chat("Hi") + b"<html>502 Bad Gateway</html>\n" + o_chat(done=True, done_reason="stop"),
         "malformed_event", malformed_events=1),
    case("done-without-reason", "ollama", o_chat("Hi") + o_chat(done=True), "complete", finish_reason_raw="done"),
    case("thinking-then-length", "ollama", o_chat(thinking="Hmm") + o_chat(done=True, done_reason="length"),
         "reasoning_exhausted", reasoning_events=1),
    case("length", "ollama", ollama_text("Long", done_reason="length"), "truncated_length", finish_reason="length"),
    case("nothing-said", "ollama", o_chat(done=True, done_reason="stop"), "empty_output"),
    case("chat", "ollama", ollama_text("Hello", " there!"), "complete", text_events=2, events=3, model=O_MODEL,
         finish_reason="stop", finish_reason_raw="stop"),
    case("generate", "ollama", o_generate("Hello") + o_generate(done=True, done_reason="stop", context=[1, 2, 3]),
         "complete", text_events=1),
    case("last-line-without-newline", "ollama", ollama_text("Hi")[:-1], "complete", events=2),
    case("blank-lines", "ollama", b"\n" + o_chat("Hi") + b"\r\n  \n" + o_chat(done=True, done_reason="stop") + b"  ",
         "complete", events=2),
    case("tool-call", "ollama", o_chat(tool_calls=[O_CALL]) + o_chat(done=True, done_reason="stop"), "complete",
         tool_calls=1, finish_reason="tool_calls"),
    case("thinking-then-text", "ollama",
         o_chat(thinking="Simple.") + o_chat("4") + o_chat(done=True, done_reason="stop"), "complete",
         reasoning_events=1, text_events=1),
]
# fmt: on

# sequence_gap needs sequence numbers, which only the Responses API sends.
IMPOSSIBLE = {
    ("sequence_gap", "chat"): "chat chunks carry no sequence number; order cannot be checked",
    ("sequence_gap", "anthropic"): "Anthropic events carry no sequence number",
    ("sequence_gap", "gemini"): "Gemini chunks carry no sequence number",
    ("sequence_gap", "bedrock-converse"): "Converse events carry no sequence number",
    ("sequence_gap", "bedrock-invoke"): "a chunk carries its model's event, without a sequence number",
    ("sequence_gap", "ollama"): "Ollama's lines carry no sequence number",
    ("content_filtered", "ollama"): "Ollama has no safety filter: no finish reason or field says one stopped it",
    ("tool_call_malformed", "ollama"): "Ollama sends each tool call whole, its arguments a JSON object",
    (
        "missing_finish_reason",
        "ollama",
    ): 'the done line is its finish: without a done_reason, an old server\'s ("done")',
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


def test_every_category_in_every_protocol():
    """The table reaches each category in each protocol, except where it cannot occur."""
    covered = {(p.values[0].category, p.values[0].protocol) for p in CASES}
    for category in CATEGORIES:
        for protocol in PROTOCOLS:
            if (category, protocol) in IMPOSSIBLE:
                assert (category, protocol) not in covered
            else:
                assert (category, protocol) in covered, f"no case reaches {category} in {protocol}"


def test_sequence_numbers_are_ignored_outside_responses(judge):
    """A stray sequence_number field in another protocol does not make a gap (see IMPOSSIBLE)."""
    data = chat(
        chat_chunk(choice(content="Hi"), sequence_number=3), chat_chunk(choice(finish="stop"), sequence_number=9)
    )
    assert judge(data, "chat").category == "complete"
    data = anthropic(
        a_start(), *[{**e, "sequence_number": n * 5} for n, e in enumerate(a_text(0, "Hi"))], *a_end("end_turn")
    )
    assert judge(data, "anthropic").category == "complete"


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
# Errors answered whole instead of a stream, and which of them a retry meets again
# =============================================================================================
OPENAI_MODEL_NOT_FOUND = (  # an API's 404 body as it answers it: pretty-printed, no final newline
    b'{\n  "error": {\n    "message": "The model `gpt-9` does not exist or you do not have access to it.",\n'
    b'    "type": "invalid_request_error",\n    "param": null,\n    "code": "model_not_found"\n  }\n}'
)
GEMINI_NOT_FOUND = (
    b'[{\n  "error": {\n    "code": 404,\n    "message": "models/gemini-9 is not found for API version v1beta.",\n'
    b'    "status": "NOT_FOUND"\n  }\n}\n]'
)


@pytest.mark.parametrize(
    "body, protocol, code",
    [
        (OPENAI_MODEL_NOT_FOUND, "auto", "model_not_found"),
        (OPENAI_MODEL_NOT_FOUND, "chat", "model_not_found"),
        (OPENAI_MODEL_NOT_FOUND + b"\n", "chat", "model_not_found"),
        (OPENAI_MODEL_NOT_FOUND.replace(b"\n", b""), "chat", "model_not_found"),  # one line
        (GEMINI_NOT_FOUND, "auto", "NOT_FOUND"),
        (GEMINI_NOT_FOUND, "gemini", "NOT_FOUND"),
    ],
)
def test_a_whole_error_body_is_that_error(judge, body, protocol, code):
    verdict = judge(body, protocol)
    assert (verdict.category, verdict.error_code, verdict.retryable) == ("upstream_error", code, False), verdict


def test_an_error_body_or_a_stream_cut_short_stays_a_cut(judge):
    # half an error body is no error yet; a stream cut inside its last event is a cut
    assert judge(OPENAI_MODEL_NOT_FOUND[:-5], "auto").category == "no_end_marker"
    for data in (chat(chat_chunk(choice(content="Hi")), done=False) + CUT_CHAT_CHUNK[:-2],
                 chat(chat_chunk(choice(content="Hi")), done=False) + b"data: {"):  # fmt: skip
        assert judge(data, "chat").category == "no_end_marker"
        assert judge(data).category == "no_end_marker"


@pytest.mark.parametrize(
    "error, retryable",
    [
        ({"code": "model_not_found", "type": "invalid_request_error"}, False),
        ({"code": "some_new_code", "type": "invalid_request_error"}, False),  # the type says it
        ({"code": "invalid_api_key", "type": "some_new_type"}, False),  # the code says it
        ({"code": "server_error", "type": "server_error"}, True),
        ({"code": None, "type": "overloaded_error"}, True),
    ],
)
def test_an_error_is_deterministic_when_its_code_or_its_type_is(judge, error, retryable):
    data = b"data: " + json.dumps({"error": {"message": "m", **error}}).encode() + b"\n\n"
    verdict = judge(data, "chat")
    assert verdict.category == "upstream_error" and verdict.retryable is retryable
    assert verdict.error_code == (error["code"] or error["type"])  # the code is still the one shown


BEDROCK_EXCEPTIONS = {  # :exception-type -> would the same request succeed later
    "modelStreamErrorException": True,
    "throttlingException": True,
    "internalServerException": True,
    "serviceUnavailableException": True,
    "modelTimeoutException": True,
    "validationException": False,
}


@pytest.mark.parametrize("name", BEDROCK_EXCEPTIONS)
@pytest.mark.parametrize(
    "protocol, begun",
    [
        ("bedrock-converse", converse(C_START, *c_text(0, "Hel"))),
        ("bedrock-invoke", invoke(a_start(), *a_text(0, "Hel"))),
    ],
)
def test_bedrock_exceptions(judge, protocol, begun, name):
    for data in (es.exception(name, "boom"), begun + es.exception(name, "boom")):
        verdict = judge(data, protocol)
        assert (verdict.category, verdict.error_code, verdict.retryable) == (
            "upstream_error", name, BEDROCK_EXCEPTIONS[name],
        ), verdict  # fmt: skip

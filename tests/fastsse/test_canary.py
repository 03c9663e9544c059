"""The canary: no payload text ever reaches a verdict, however the stream is cut."""

from __future__ import annotations

import json

import pytest

from .events import (
    OPENAI_ERROR,
    a_end,
    a_error,
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
    choice,
    function_call,
    g_bare_error,
    g_chunk,
    g_final,
    gemini,
    gemini_text,
    r,
    r_completed,
    r_created,
    r_failed,
    r_function_call,
    r_incomplete,
    r_reasoning,
    r_refusal,
    responses,
    responses_text,
    text,
    thought,
)

# A unique marker for payload text: it must never surface in a verdict.
CANARY = "Qz7cAnArY4xW9mK2vLp"


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
    protocol = name.split("-")[0]
    assert CANARY.encode() in data  # the test is only meaningful if the payload is there
    for given in (protocol, "auto"):
        assert_no_payload(judge(data, given), CANARY)
    # truncated streams: cut in the middle of the canary, and just after it
    at = data.index(CANARY.encode())
    half = len(CANARY) // 2
    for cut, secret in ((at + half, CANARY[:half]), (at + len(CANARY), CANARY), (at + len(CANARY) + 3, CANARY)):
        for given in (protocol, "auto"):
            verdict = impl.scan(data[:cut], given)
            assert verdict.category != "complete"
            assert_no_payload(verdict, secret)


def test_canary_detector_works(judge):
    # positive control: the model name IS reported, so a canary there must be found
    data = chat(chat_chunk(choice(content="Hi"), model=f"m-{CANARY}"), chat_chunk(choice(finish="stop")))
    verdict = judge(data, "chat")
    with pytest.raises(AssertionError):
        assert_no_payload(verdict, CANARY)

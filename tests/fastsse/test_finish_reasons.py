"""The chat finish reasons of the OpenAI-compatible providers, as their own sources give them.

``_protocols.CHAT_PROVIDERS`` says who sends which value and where that is documented; every
value is judged here from a real-shaped stream, on both twins under every chunking, against
the category we expect for it (stated here, not read from fastsse).  The docs' table
(docs/verdict/protocols.md) is printed from the same data: ``python
tests/fastsse/test_finish_reasons.py`` prints it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fastsse import _protocols as d

PAGE = Path(__file__).resolve().parents[2] / "docs" / "verdict" / "protocols.md"

# Our own statement: what a stream with visible text that ends with this value is.
EXPECTED = {
    "stop": "complete",
    "eos": "complete",
    "eos_token": "complete",
    "stop_sequence": "complete",
    "tool_calls": "complete",
    "function_call": "complete",
    "length": "truncated_length",
    "model_length": "truncated_length",
    "content_filter": "content_filtered",
    "guardrail_intervened": "content_filtered",
    "malformed_function_call": "tool_call_malformed",
    "error": "upstream_error",
    "abort": "upstream_error",
    "insufficient_system_resource": "upstream_error",
    "connection_closed": "upstream_error",
    "repetition": "upstream_error",
    "finish_reason_unspecified": "upstream_error",
}
# A retry helps when the server gave up (aborted, overloaded, closed); a limit, a filter or an
# answer that ended normally is what the same request gets again.
EXPECTED_RETRYABLE = {
    "error",
    "abort",
    "insufficient_system_resource",
    "connection_closed",
    "repetition",
    "finish_reason_unspecified",
    "malformed_function_call",
}

MODELS = {
    "OpenAI": "gpt-4o-mini-2024-07-18",
    "Azure OpenAI": "gpt-4o-2024-11-20",
    "Mistral": "mistral-small-latest",
    "DeepSeek": "deepseek-chat",
    "Groq": "llama-3.3-70b-versatile",
    "OpenRouter": "openai/gpt-4o",
    "Together": "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "Fireworks": "accounts/fireworks/models/llama-v3p1-8b-instruct",
    "xAI": "grok-code-fast-1",
    "vLLM": "Qwen/Qwen2.5-7B-Instruct",
    "SGLang": "meta-llama/Llama-3.1-8B-Instruct",
    "TGI": "tgi",
    "Ollama": "llama3.2",
    "LM Studio": "qwen2.5-7b-instruct",
    "llama.cpp server": "gpt-3.5-turbo",
    "LiteLLM proxy": "claude-3-5-sonnet",
}
PAIRS = [(provider, value) for provider, values, _source in d.CHAT_PROVIDERS for value in values]


def chunk(model: str, delta: dict, finish: str | None) -> bytes:
    event = {
        "id": "chatcmpl-9f2",
        "object": "chat.completion.chunk",
        "created": 1764590000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


def stream(model: str, value: str) -> bytes:
    """Role chunk, two text chunks, the finish chunk with ``value``, [DONE]; a tool call before
    a tool finish, as such streams carry one."""
    out = chunk(model, {"role": "assistant", "content": ""}, None)
    out += chunk(model, {"content": "The answer"}, None) + chunk(model, {"content": " is 4."}, None)
    if value == "tool_calls":
        call = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'},
        }
        out += chunk(model, {"tool_calls": [call]}, None)
    elif value == "function_call":
        out += chunk(model, {"function_call": {"name": "add", "arguments": '{"a": 2}'}}, None)
    return out + chunk(model, {}, value) + b"data: [DONE]\n\n"


def test_every_value_sent_has_a_row_and_every_row_a_sender():
    sent = {value for _provider, value in PAIRS}
    assert sent == set(d.CHAT_FINISH_REASONS)
    assert sent == set(EXPECTED)
    assert len({provider for provider, _v, _s in d.CHAT_PROVIDERS}) == len(d.CHAT_PROVIDERS)
    for provider, values, source in d.CHAT_PROVIDERS:
        assert source and len(values) == len(set(values)), provider


@pytest.mark.parametrize(("provider", "value"), PAIRS, ids=[f"{p}-{v}" for p, v in PAIRS])
def test_provider_finish_reason(judge, provider, value):
    verdict = judge(stream(MODELS[provider], value), "chat")
    assert verdict.category == EXPECTED[value], verdict
    assert verdict.finish_reason_raw == value
    assert verdict.retryable is (value in EXPECTED_RETRYABLE)
    assert judge(stream(MODELS[provider], value), "auto") == verdict


@pytest.mark.parametrize("protocol", d.CHAT_FORWARDED_PROTOCOLS)
def test_values_gateways_forward_mean_what_they_mean_at_home(judge, protocol):
    for value, meaning in d.FINISH_REASONS[protocol].items():
        verdict = judge(stream("openrouter/auto", value), "chat")
        assert verdict.finish_reason == meaning[0], value
        assert verdict.finish_reason_raw == value


# Gemini's enums as their proto numbers (Google's REST clients ask for enum-encoding=int): each
# number judged as its name is, and reported by its name.  Our own statement of the numbers
# (google/cloud/aiplatform/v1 content.proto, prediction_service.proto), not read from fastsse.
GEMINI_FINISH_NUMBERS = {
    0: "FINISH_REASON_UNSPECIFIED", 1: "STOP", 2: "MAX_TOKENS", 3: "SAFETY", 4: "RECITATION", 5: "OTHER",
    6: "BLOCKLIST", 7: "PROHIBITED_CONTENT", 8: "SPII", 9: "MALFORMED_FUNCTION_CALL", 10: "MODEL_ARMOR",
    11: "IMAGE_SAFETY", 12: "IMAGE_PROHIBITED_CONTENT", 13: "IMAGE_RECITATION", 14: "IMAGE_OTHER",
    15: "UNEXPECTED_TOOL_CALL", 16: "NO_IMAGE",
}  # fmt: skip
GEMINI_BLOCK_NUMBERS = {
    0: "BLOCKED_REASON_UNSPECIFIED", 1: "SAFETY", 2: "OTHER", 3: "BLOCKLIST", 4: "PROHIBITED_CONTENT",
    5: "MODEL_ARMOR", 6: "JAILBREAK",
}  # fmt: skip


def _gemini(finish) -> bytes:
    chunk = {
        "candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "finishReason": finish, "index": 0}]
    }
    return b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"


def _judged(verdict) -> dict:
    return {k: v for k, v in verdict.to_dict().items() if k != "bytes"}


@pytest.mark.parametrize(("number", "name"), GEMINI_FINISH_NUMBERS.items())
def test_gemini_finish_reason_as_its_number(judge, number, name):
    by_number = judge(_gemini(number), "gemini")
    assert _judged(by_number) == _judged(judge(_gemini(name), "gemini"))
    assert by_number.finish_reason_raw == name
    assert judge(_gemini(number)) == by_number


def test_gemini_numbers_the_table_lacks_are_not_success(judge):
    verdict = judge(_gemini(17), "gemini")  # the Gemini API's IMAGE_RECITATION; Vertex has none
    assert (verdict.category, verdict.finish_reason_raw) == ("upstream_error", "17")
    # a number in chat's finish_reason names nothing
    data = b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":1}]}\n\n'
    assert judge(data + b"data: [DONE]\n\n", "chat").category == "missing_finish_reason"


@pytest.mark.parametrize(("number", "name"), GEMINI_BLOCK_NUMBERS.items())
def test_gemini_block_reason_as_its_number(judge, number, name):
    blocked = b'data: {"promptFeedback": {"blockReason": %d}, "modelVersion": "gemini-2.5-flash"}\r\n\r\n' % number
    verdict = judge(blocked, "gemini")
    assert (verdict.category, verdict.finish_reason_raw) == ("content_filtered", name)


def page_tables() -> str:
    """The docs page's two tables, from CHAT_PROVIDERS and the verdicts fastsse gives."""
    import fastsse

    lines = ["| value | normalized | category | retryable | sent by |", "|---|---|---|---|---|"]
    for value in d.CHAT_FINISH_REASONS:
        verdict = fastsse.scan(stream("m", value), "chat")
        senders = ", ".join(p for p, values, _s in d.CHAT_PROVIDERS if value in values)
        lines.append(
            f"| `{value}` | `{verdict.finish_reason}` | `{verdict.category}` | "
            f"{'yes' if verdict.retryable else 'no'} | {senders} |"
        )
    lines += ["", "| provider | finish reasons | source |", "|---|---|---|"]
    for provider, values, source in d.CHAT_PROVIDERS:
        lines.append(f"| {provider} | {', '.join(f'`{v}`' for v in values)} | {source} |")
    return "\n".join(lines) + "\n"


def test_the_docs_show_the_table():
    assert page_tables() in PAGE.read_text(), (
        "docs/verdict/protocols.md's finish-reason tables are stale; "
        "print them with `python tests/fastsse/test_finish_reasons.py`"
    )


if __name__ == "__main__":
    sys.stdout.write(page_tables())

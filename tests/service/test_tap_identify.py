"""What the tap tells of a request without keeping it: its protocol, whether it streams, the
model, the tool, and whether it repeats an earlier request."""

from __future__ import annotations

import json

import pytest

from fastsse_service.tap.identify import RequestTracker, credential, generation, model_name, tool_from_user_agent


def body(**fields) -> bytes:
    return json.dumps(fields).encode()


@pytest.mark.parametrize(
    ("method", "path", "sent", "expected"),
    [
        (
            "POST",
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            b"{}",
            ("gemini", True, "gemini-2.5-pro"),
        ),
        ("POST", "/v1/chat/completions", body(model="gpt-4o", stream=True), ("chat", True, "gpt-4o")),
        ("POST", "/F4/v1/chat/completions/", body(model="m"), ("chat", False, "m")),
        ("POST", "/openai/v1/responses", body(model="gpt-5", stream=True), ("responses", True, "gpt-5")),
        (
            "POST",
            "/v1/messages",
            body(model="claude-sonnet-4-5", stream=True),
            ("anthropic", True, "claude-sonnet-4-5"),
        ),
        # Without alt=sse Gemini answers one JSON array: not a stream to judge.
        ("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", b"{}", ("gemini", False, "gemini-2.5-pro")),
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContent", b"{}", ("gemini", False, "gemini-2.5-pro")),
        ("POST", "/v1/chat/completions", b"not json", ("chat", False, None)),
        ("POST", "/v1/chat/completions", b"[1, 2]", ("chat", False, None)),
        # nested past the JSON parser's depth (a RecursionError, once a 500 of the tap's)
        ("POST", "/v1/chat/completions", b"[" * 100_000, ("chat", False, None)),
        ("POST", "/v1/messages", b'{"a":' * 100_000, ("anthropic", False, None)),
        ("POST", "/v1/chat/completions", body(model="x", stream="yes"), ("chat", False, "x")),
        # Bedrock names the model in its path, percent-encoded; its streaming operations stream
        (
            "POST",
            "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream",
            b"{}",
            ("bedrock-converse", True, "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ),
        (
            "POST",
            "/model/meta.llama3-70b-instruct-v1:0/invoke-with-response-stream",
            b"{}",
            ("bedrock-invoke", True, "meta.llama3-70b-instruct-v1:0"),
        ),
        # Ollama streams unless it is told not to; the tap tells its answers by their framing
        ("POST", "/api/chat", body(model="llama3.2"), ("ollama", False, "llama3.2")),
        ("POST", "/api/chat", body(model="llama3.2", stream=True), ("ollama", True, "llama3.2")),
        ("POST", "/api/generate", body(model="qwen3:8b", stream=False), ("ollama", False, "qwen3:8b")),
    ],
)
def test_a_generation_is_told_by_its_path_and_body(method, path, sent, expected):
    path, _, query = path.partition("?")
    asked = generation(method, path, sent, query.encode())
    assert (asked.protocol, asked.streamed, asked.model) == expected


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/models"),
        ("POST", "/v1/messages/count_tokens"),
        ("HEAD", "/"),
        ("POST", "/v1beta/models/gemini-2.5-pro:countTokens"),
        ("GET", "/v1/chat/completions"),
        ("POST", "/v1/embeddings"),
        ("POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse"),  # not streamed
        ("POST", "/api/embed"),
    ],
)
def test_anything_else_is_no_generation(method, path):
    assert generation(method, path, body(model="m", stream=True)) is None


def test_a_model_name_is_kept_in_the_identifier_alphabet():
    assert model_name("models/gemini 2.5\n<script>") == "models/gemini-2.5--script-"
    assert model_name("m" * 500) == "m" * 128
    assert model_name("  ") is None and model_name(42) is None and model_name(None) is None


@pytest.mark.parametrize(
    ("agent", "tool"),
    [
        ("codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex-exec; 0.171.0)", "codex"),
        ("codex_cli_rs/0.171.0", "codex"),
        ("claude-cli/2.1.332 (external, sdk-cli)", "claude-code"),
        ("KimiCLI/1.52.0", "kimi-cli"),
        ("kimi-cli/1.52.0", "kimi-cli"),
        ("OpenAI/Python 3.57.0", "openai-python"),
        ("AsyncOpenAI/Python 2.14.0", "openai-python"),  # kimi-cli 1.52.0 sends only this
        ("Anthropic/Python 2.14.0", "anthropic-python"),
        ("AsyncAnthropic/Python 2.14.0", "anthropic-python"),  # the async client says so
        ("AnthropicBedrock/Python 2.16.0", "anthropic-python"),  # the same SDK, its Bedrock client
        ("Boto3/1.40.61 md/Botocore#1.44.8 ua/2.1 os/linux#6.1 lang/python#3.11.7", "boto3"),
        ("ollama-python/0.6.3 (x86_64 linux) Python/3.11.7", "ollama-python"),
        ("google-genai-sdk/3.6.1 gl-python/3.11.2", "google-genai"),
        ("curl/8.5.0", "curl"),
        ("", None),
        (None, None),
    ],
)
def test_the_tool_is_told_by_its_user_agent(agent, tool):
    assert tool_from_user_agent(agent) == tool


def test_a_repeated_request_is_the_next_attempt_within_the_window():
    now = [0.0]
    tracker = RequestTracker(window_seconds=60, capacity=2, clock=lambda: now[0])
    first = tracker.attempt("POST", "/v1/responses", b"same", "key-a")
    now[0] = 30
    again = tracker.attempt("POST", "/v1/responses", b"same", "key-a")
    assert (again.request_id, again.attempt) == (first.request_id, 2)
    now[0] = 89  # within the window of the last attempt
    assert tracker.attempt("POST", "/v1/responses", b"same", "key-a").attempt == 3
    now[0] = 200  # past it: a new request
    later = tracker.attempt("POST", "/v1/responses", b"same", "key-a")
    assert later.attempt == 1 and later.request_id != first.request_id
    # Another caller, body or path is another request.
    for args in (
        ("POST", "/v1/responses", b"same", "key-b"),
        ("POST", "/v1/responses", b"other", "key-a"),
        ("POST", "/v2/responses", b"same", "key-a"),
    ):
        assert tracker.attempt(*args).attempt == 1
    # At most `capacity` digests are kept: the oldest is forgotten.
    assert tracker.attempt("POST", "/v1/responses", b"same", "key-a").attempt == 1


def test_the_credential_tells_callers_apart_whatever_header_carries_it():
    assert credential({"authorization": "Bearer a"}) != credential({"authorization": "Bearer b"})
    assert credential({"x-api-key": "a"}) != credential({"x-goog-api-key": "a"})
    assert credential({}, b"alt=sse&key=one") != credential({}, b"alt=sse&key=two")

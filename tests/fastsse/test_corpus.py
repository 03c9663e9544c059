"""Real captured streams (shared/corpus, see its MANIFEST.tsv) with our own expected verdicts.

Read from ../shared/corpus where it exists; skipped with a reason where it does not.  Every
capture is judged whole, byte by byte and at random split points, on both twins.
"""

from __future__ import annotations

import pytest

from .conftest import corpus_file

# file -> (protocol, category, raw finish reason)
EXPECTED = {
    # chat
    "chat/openai-n3-choices.sse": ("chat", "complete", "stop"),
    "chat/openai-length-truncation.sse": ("chat", "truncated_length", "length"),
    "chat/openai-refusal.sse": ("chat", "content_filtered", "stop"),  # delta.refusal
    "chat/openai-parallel-tool-calls.sse": ("chat", "complete", "tool_calls"),
    "chat/openai-logprobs.sse": ("chat", "complete", "stop"),
    "chat/openai-gpt5-moderation-after-usage.sse": ("chat", "complete", "stop"),
    "chat/openai-tool-call-usage.sse": ("chat", "complete", "tool_calls"),
    "chat/openrouter-length-then-error.sse": ("chat", "upstream_error", "length"),
    "chat/openrouter-claude-reasoning.sse": ("chat", "complete", "stop"),
    "chat/openrouter-websearch-finish-twice.sse": ("chat", "complete", "stop"),
    "chat/openrouter-kimi-toolcall-no-finish-reason.sse": ("chat", "missing_finish_reason", None),
    "chat/deepseek-reasoner-reasoning-content.sse": ("chat", "complete", "stop"),
    "chat/deepseek-chat-length.sse": ("chat", "truncated_length", "length"),
    "chat/groq-event-error-no-done.sse": ("chat", "upstream_error", None),
    "chat/groq-gpt-oss-tool-calls.sse": ("chat", "complete", "tool_calls"),
    "chat/snowflake-no-finish-reason.sse": ("chat", "missing_finish_reason", None),
    # the fixture lost the blank line after [DONE]: a spec parser never dispatches it
    "chat/anthropic-openai-compat-tool-call.sse": ("chat", "no_end_marker", "tool_calls"),
    "chat/azure-prompt-filter-first-chunk.sse": ("chat", "complete", "stop"),
    "chat/zai-glm-reasoning.sse": ("chat", "complete", "stop"),
    "chat/mistral-magistral-thinking.sse": ("chat", "complete", "stop"),
    # responses
    "responses/openai-basic-pong.sse": ("responses", "complete", "completed"),
    "responses/openai-function-call.sse": ("responses", "complete", "completed"),
    "responses/openai-2025-03-no-sequence-number.sse": ("responses", "complete", "completed"),
    "responses/openai-background-resume-starting-after.sse": ("responses", "complete", "completed"),
    "responses/openai-reasoning-summary.sse": ("responses", "complete", "completed"),
    "responses/openai-web-search.sse": ("responses", "complete", "completed"),
    "responses/openai-error-then-failed.sse": ("responses", "upstream_error", None),
    "responses/openai-incomplete-max-output-tokens.sse": ("responses", "truncated_length", "max_output_tokens"),
    "responses/openrouter-responses-done-sentinel.sse": ("responses", "complete", "completed"),
    "responses/deepseek-responses-reasoning-text.sse": ("responses", "complete", "completed"),
    # anthropic
    "anthropic/basic-end-turn.sse": ("anthropic", "complete", "end_turn"),
    "anthropic/max-tokens-mid-tool-use.sse": ("anthropic", "truncated_length", "max_tokens"),
    "anthropic/tool-use.sse": ("anthropic", "complete", "tool_use"),
    "anthropic/refusal-with-thinking.sse": ("anthropic", "content_filtered", "refusal"),
    "anthropic/refusal-no-content-blocks.sse": ("anthropic", "content_filtered", "refusal"),
    "anthropic/thinking-signature.sse": ("anthropic", "complete", "end_turn"),
    "anthropic/redacted-thinking.sse": ("anthropic", "complete", "end_turn"),
    "anthropic/pause-turn-web-search.sse": ("anthropic", "complete", "pause_turn"),
    "anthropic/stop-sequence.sse": ("anthropic", "complete", "stop_sequence"),
    "anthropic/opus46-adaptive-thinking.sse": ("anthropic", "complete", "end_turn"),
    "anthropic/compaction-block.sse": ("anthropic", "complete", "end_turn"),
    "anthropic/duplicate-message-start.sse": ("anthropic", "complete", "end_turn"),
    # gemini
    "gemini/basic-stop-crlf.sse": ("gemini", "complete", "STOP"),
    "gemini/thinking-thought-parts.sse": ("gemini", "complete", "STOP"),
    "gemini/function-call-thought-signature.sse": ("gemini", "complete", "STOP"),
    "gemini/web-search-grounding.sse": ("gemini", "complete", "STOP"),
    "gemini/vertex-partial-args-tool-call.sse": ("gemini", "complete", "STOP"),
    "gemini/recitation-no-content.sse": ("gemini", "content_filtered", "RECITATION"),
    "gemini/safety-finish.sse": ("gemini", "content_filtered", "SAFETY"),
    "gemini/prompt-blocked-safety.sse": ("gemini", "content_filtered", "SAFETY"),
    "gemini/error-mid-stream-bare-json.sse": ("gemini", "upstream_error", "STOP"),
    "gemini/unknown-finish-enum.sse": ("gemini", "upstream_error", "FAKE_ENUM"),
    "gemini/vertex-stop-on-every-chunk.sse": ("gemini", "complete", "STOP"),
    # the fixture lost the blank line after the last chunk: its finishReason never dispatches
    "gemini/finish-message-unterminated.sse": ("gemini", "no_end_marker", None),
    "gemini/code-execution.sse": ("gemini", "complete", "STOP"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_verdict(judge, name):
    protocol, category, raw = EXPECTED[name]
    data = corpus_file(name)
    verdict = judge(data)
    assert (verdict.protocol, verdict.category, verdict.finish_reason_raw) == (protocol, category, raw)
    assert verdict.complete is (category == "complete")
    assert verdict.bytes == len(data)
    # naming the protocol gives the same verdict as recognizing it
    assert judge(data, protocol) == verdict


def test_manifest_is_covered():
    manifest = corpus_file("MANIFEST.tsv").decode().splitlines()[1:]
    files = {line.split("\t")[0] for line in manifest if line.strip()}
    assert files == set(EXPECTED)


# Streams whose every strict prefix must be judged incomplete: cutting a stream anywhere before
# its end must never look complete.  (Old Vertex streams that put STOP on every chunk are the
# documented exception: a cut between chunks is indistinguishable from the end.)
COMPLETE_CAPTURES = [
    name
    for name, (_p, category, _r) in sorted(EXPECTED.items())
    if category == "complete" and name != "gemini/vertex-stop-on-every-chunk.sse"
]


def cut_points(data: bytes):
    """About 40 cuts spread over the stream, and every byte of its last 200."""
    step = max(1, len(data) // 40)
    return sorted(set(range(0, len(data), step)) | set(range(max(0, len(data) - 200), len(data))))


@pytest.mark.slow  # some 240 scans of each capture: most of the library's time in make test-fast
@pytest.mark.parametrize("name", COMPLETE_CAPTURES)
def test_no_prefix_of_a_complete_capture_is_complete(impl, name):
    data = corpus_file(name)
    assert impl.scan(data).complete
    end = data.rstrip(b"\r\n")  # trailing line ends after the last event change nothing
    if EXPECTED[name][0] == "responses" and end.endswith(b"data: [DONE]"):
        # OpenRouter's [DONE] after response.completed is extra: the stream already ended
        end = end[: -len(b"data: [DONE]")].rstrip(b"\r\n")
    for cut in cut_points(data):
        if cut >= len(end) + 1:
            continue
        verdict = impl.scan(data[:cut])
        assert not verdict.complete, f"cut at {cut} of {len(data)} looked complete"

"""Bedrock's InvokeModel with the model families that are neither Anthropic's nor OpenAI-compatible
(_protocols.BEDROCK_INVOKE_FAMILIES): each ends with the chunk that carries
amazon-bedrock-invocationMetrics, and says why in its own field.  A finished turn of any of them is
complete; a stream cut before that last chunk is not, whatever its last chunk said."""

from __future__ import annotations

import pytest

from fastsse import _protocols as d
from loadtests import eventstream as es

from .feeding import agree

METRICS = {
    d.BEDROCK_INVOKE_END: {"inputTokenCount": 5, "outputTokenCount": 2, "invocationLatency": 90, "firstByteLatency": 30}
}


def invoke(*events: dict) -> bytes:
    return b"".join(es.chunk(event, pad=i % 7) for i, event in enumerate(events))


def llama(reason: str | None) -> list[dict]:
    return [
        {"generation": "Hello", "prompt_token_count": 5, "generation_token_count": 1, "stop_reason": None},
        {"generation": " there", "prompt_token_count": None, "generation_token_count": 2, "stop_reason": reason},
    ]


def titan(reason: str | None) -> list[dict]:
    last = {"outputText": " there", "index": 0, "totalOutputTextTokenCount": 2}
    if reason is not None:
        last["completionReason"] = reason
    return [{"outputText": "Hello", "index": 0, "inputTextTokenCount": 5}, last]


def mistral(reason: str | None) -> list[dict]:
    return [
        {"outputs": [{"text": "Hello", "stop_reason": None}]},
        {"outputs": [{"text": " there", "stop_reason": reason}]},
    ]


def cohere(reason: str | None) -> list[dict]:
    last = {"is_finished": True, "event_type": "stream-end", "response": {"text": "Hello there"}}
    if reason is not None:
        last["finish_reason"] = reason
    return [{"is_finished": False, "event_type": "text-generation", "text": "Hello"}, last]


def nova(reason: str | None) -> list[dict]:
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hello"}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
    ]
    if reason is not None:
        events.append({"messageStop": {"stopReason": reason}})
    return [*events, {"metadata": {"usage": {"inputTokens": 5, "outputTokens": 2}, "metrics": {}, "trace": {}}}]


def deepseek(reason: str | None) -> list[dict]:
    """DeepSeek-R1's answer as AWS documents it (model-parameters-deepseek): a completion's text."""
    return [
        {"choices": [{"text": "Hello", "stop_reason": None}]},
        {"choices": [{"text": " there", "stop_reason": reason}]},
    ]


def mistral_chat(reason: str | None) -> list[dict]:
    """Mistral's chat format (Mistral Large 2 and later; model-parameters-mistral-chat-completion)."""
    return [
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "stop_reason": None}]},
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": " there"}, "stop_reason": reason}]},
    ]


BUILDERS = {
    "Meta Llama; DeepSeek-R1 (as LiteLLM reads its stream)": llama,
    "DeepSeek-R1 (as AWS documents its answer)": deepseek,
    "Mistral (chat format: Mistral Large 2 and later)": mistral_chat,
    "Amazon Titan Text": titan,
    "Mistral (text completion)": mistral,
    "Cohere Command": cohere,
    "Amazon Nova": nova,
}
VALUES = [(family, value) for family, table in d.BEDROCK_INVOKE_FAMILIES.items() for value in table["values"]]


def finished(family: str, reason: str | None) -> bytes:
    events = BUILDERS[family](reason)
    events[-1] = {**events[-1], **METRICS}
    return invoke(*events)


def test_every_family_has_a_builder_and_its_example_is_its_event():
    assert set(BUILDERS) == set(d.BEDROCK_INVOKE_FAMILIES)
    for family, table in d.BEDROCK_INVOKE_FAMILIES.items():
        assert set(table["example"]) <= {key for event in BUILDERS[family](None) for key in event}


@pytest.mark.parametrize(("family", "value"), VALUES)
def test_each_value_is_judged_as_its_meaning_says(family, value):
    verdict = agree(finished(family, value), "bedrock-invoke")
    normalized, outcome = d.FINISH_REASONS["bedrock-invoke"][value]
    expected = {
        d.O_OK: {"complete"},
        d.O_LENGTH: {"truncated_length"},
        d.O_FILTER: {"content_filtered"},
        d.O_ABNORMAL: {"abnormal_finish", "upstream_error"},  # an "error" finish is the upstream's
    }[outcome]
    assert verdict.category in expected
    assert (verdict.finish_reason, verdict.finish_reason_raw) == (normalized, value)
    assert verdict.protocol == "bedrock-invoke" and verdict.text_events >= 1
    assert agree(finished(family, value)) == verdict  # auto tells the framing and the outer protocol


@pytest.mark.parametrize("family", BUILDERS)
def test_a_stream_cut_before_its_last_chunk_is_not_complete(family):
    """The model's own field may say stop on a chunk before Bedrock's last (Nova's messageStop,
    then metadata): without that last chunk the stream was cut."""
    reason = next(iter(d.BEDROCK_INVOKE_FAMILIES[family]["values"]))
    stream = finished(family, reason)
    cut = invoke(*BUILDERS[family](reason))  # every chunk but Bedrock's end
    assert agree(cut, "bedrock-invoke").category == "no_end_marker"
    assert agree(stream[:-5], "bedrock-invoke").category == "no_end_marker"  # inside the last frame
    assert agree(stream, "bedrock-invoke").complete


@pytest.mark.parametrize("family", BUILDERS)
def test_an_end_without_a_reason_is_not_complete(family):
    verdict = agree(finished(family, None), "bedrock-invoke")
    assert verdict.category == "missing_finish_reason"


def test_anthropic_models_still_end_with_message_stop():
    """Bedrock's metrics ride on Anthropic's message_stop; without message_stop (a chunk with
    metrics alone) the Messages stream is not whole."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [],
            "stop_reason": None,
        },
    }
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}
    stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}
    whole = invoke(
        start, block, delta, {"type": "content_block_stop", "index": 0}, stop, {"type": "message_stop", **METRICS}
    )
    assert agree(whole, "bedrock-invoke").category == "complete"
    cut = invoke(start, block, delta, {"type": "content_block_stop", "index": 0}, {**stop, **METRICS})
    assert agree(cut, "bedrock-invoke").category == "no_end_marker"


def test_openai_compatible_models_end_with_bedrocks_last_chunk():
    """gpt-oss and Qwen send chat chunks, without chat's [DONE]: Bedrock's last chunk ends them."""
    first = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "openai.gpt-oss-20b-1:0",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": None}],
    }
    last = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "openai.gpt-oss-20b-1:0",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    assert agree(invoke(first, {**last, **METRICS}), "bedrock-invoke").category == "complete"
    assert agree(invoke(first, last), "bedrock-invoke").category == "no_end_marker"
    length = {**last, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    assert agree(invoke(first, {**length, **METRICS}), "bedrock-invoke").category == "truncated_length"


def test_a_chat_shaped_finish_reason_still_speaks_first():
    """Mistral's chat format as LiteLLM reads it (choices[].finish_reason): read as chat's, and
    finish_reason wins over a stop_reason beside it."""
    first = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": None}]}
    last = {"choices": [{"index": 0, "message": {"content": ""}, "finish_reason": "length", "stop_reason": "stop"}]}
    verdict = agree(invoke(first, {**last, **METRICS}), "bedrock-invoke")
    assert (verdict.category, verdict.finish_reason_raw, verdict.text_events) == ("truncated_length", "length", 1)


def test_chat_does_not_read_vllms_stop_reason():
    """vLLM's chat chunks carry stop_reason (the stop string that matched, or null) beside
    finish_reason: outside Bedrock it is never the finish reason."""
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null,"stop_reason":"###"}]}\n\n'
    verdict = agree(chunk + b"data: [DONE]\n\n", "chat")
    assert verdict.category == "missing_finish_reason" and verdict.finish_reason_raw is None


def test_a_chat_shaped_stop_reason_is_never_replayed_past():
    """Many chunks that repeat one shape, the last with a stop_reason: the compiled twin, which
    replays repeats, must read the last."""
    chunks = [{"choices": [{"text": f"w{i}", "stop_reason": None}]} for i in range(12)]
    for reason, category in (("stop", "complete"), ("length", "truncated_length")):
        last = {"choices": [{"text": "w99", "stop_reason": reason}], **METRICS}
        verdict = agree(invoke(*chunks, last), "bedrock-invoke")
        assert (verdict.category, verdict.text_events) == (category, 13)

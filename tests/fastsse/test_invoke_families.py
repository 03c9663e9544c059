"""Bedrock's InvokeModel with the model families that are neither Anthropic's nor OpenAI-compatible
(_protocols.BEDROCK_INVOKE_FAMILIES): each ends with the chunk that carries
amazon-bedrock-invocationMetrics, and says why in its own field.  A finished turn of any of them is
complete; a stream cut before that last chunk is not, whatever its last chunk said."""

from __future__ import annotations

import json

import pytest

from fastsse import _protocols as d
from fastsse._verdict import MESSAGE_GUARDRAIL
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


def test_jamba_ends_with_bedrocks_metrics_in_a_chunk_of_their_own():
    """AI21's Jamba sends chat chunks (choices[].delta.content, finish_reason stop or length;
    AI21Labs/ai21-python `ai21/models/chat/chat_completion_chunk.py`), and Bedrock sends its
    invocation metrics as a chunk of their own after the one whose finish_reason is set: AI21's
    SDK holds that chunk and merges the next into it (`ai21/clients/bedrock/_stream_decoder.py`,
    `_build_last_chunk`).  Read as chat: complete with the metrics' chunk, cut without it."""

    def jamba(content: str, finish: str | None, usage: dict | None = None) -> dict:
        delta = {"role": "assistant", "content": content}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {"id": "chatcmpl-1", "choices": [choice], "usage": usage}

    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    for reason, category in (("stop", "complete"), ("length", "truncated_length")):
        answer = [jamba("Hello", None), jamba(" there", None), jamba("", reason, usage)]
        verdict = agree(invoke(*answer, METRICS), "bedrock-invoke")
        assert (verdict.category, verdict.finish_reason_raw, verdict.text_events) == (category, reason, 2)
        assert agree(invoke(*answer, METRICS)) == verdict
        assert agree(invoke(*answer), "bedrock-invoke").category == "no_end_marker"


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


# ------------------------------------------------------------------------------- guardrails
# A guardrail on InvokeModel marks the model's events with amazon-bedrock-guardrailAction
# (_protocols.BEDROCK_GUARDRAIL_INTERVENED): INTERVENED when the user got the guardrail's message
# in place of the model's answer, NONE when it let the answer pass.
GUARDRAIL = "amazon-bedrock-guardrailAction"
INTERVENED = {GUARDRAIL: d.BEDROCK_GUARDRAIL_INTERVENED}
PASSED = {GUARDRAIL: "NONE"}
TRACE = {
    "amazon-bedrock-trace": {
        "guardrail": {
            "input": {"g1": {"topicPolicy": {"topics": [{"name": "t1", "type": "DENY", "action": "BLOCKED"}]}}},
            "actionReason": "blocked",
        }
    }
}


def anthropic_guarded(action: dict, stop_reason: str = "end_turn") -> list[dict]:
    """An Anthropic answer on InvokeModel that a guardrail replaced, in the shape Bedrock's
    invocation log recorded (elastic/ecs `rfcs/text/0050-gen_ai-security-fields.md`, its source
    data): the guardrail's message as one text delta that carries the action, the model's usual
    end_turn, and message_stop with the action and the guardrail's trace."""
    return [
        {
            "type": "message_start",
            "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": []},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Blocked."}, **action},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 0}},
        {"type": "message_stop", **action, **TRACE, **METRICS},
    ]


def titan_blocked(action: dict) -> dict:
    """Titan Text's answer to a prompt a guardrail blocked, as recorded whole (traceloop/openllmetry,
    `packages/opentelemetry-instrumentation-bedrock/tests/traces/cassettes/test_guardrails/
    test_guardrail_invoke_stream.yaml`): one chunk, the guardrail's message as outputText, no
    completionReason and no amazon-bedrock-invocationMetrics."""
    return {
        "outputText": "Blocked.",
        "index": 0,
        "totalOutputTextTokenCount": 3,
        "inputTextTokenCount": 6,
        **action,
        **TRACE,
    }


def test_an_anthropic_answer_a_guardrail_replaced_is_content_filtered():
    verdict = agree(invoke(*anthropic_guarded(INTERVENED)), "bedrock-invoke")
    assert (verdict.category, verdict.finish_reason, verdict.finish_reason_raw) == (
        "content_filtered",
        "content_filter",
        d.GUARDRAIL_FINISH,
    )
    assert verdict.message == MESSAGE_GUARDRAIL and not verdict.retryable
    assert agree(invoke(*anthropic_guarded(PASSED)), "bedrock-invoke").category == "complete"
    # the guardrail's word wins over the model's own reason
    assert agree(invoke(*anthropic_guarded(INTERVENED, "max_tokens")), "bedrock-invoke").category == "content_filtered"


def test_an_anthropic_stream_a_guardrail_marked_still_ends_with_message_stop():
    """Cut after the guardrail's delta, or at any chunk before message_stop, the stream is what
    the same cut is without the marker: never complete, never content_filtered."""
    guarded, passed = anthropic_guarded(INTERVENED), anthropic_guarded(PASSED)
    for k in range(len(guarded)):
        verdict = agree(invoke(*guarded[:k]), "bedrock-invoke")
        assert verdict.category == agree(invoke(*passed[:k]), "bedrock-invoke").category == "no_end_marker", k
    whole = b"".join(es.chunk(event) for event in guarded)
    assert agree(whole[:-5], "bedrock-invoke").category == "no_end_marker"  # inside message_stop


def test_titan_blocked_by_a_guardrail_in_one_chunk_is_content_filtered():
    """The turn ended with the guardrail's message: a retry would meet the same guardrail, and
    calling it cut would make a gateway send it again."""
    stream = es.chunk(titan_blocked(INTERVENED), pad=13)
    verdict = agree(stream, "bedrock-invoke")
    assert (verdict.category, verdict.finish_reason_raw, verdict.text_events) == (
        "content_filtered",
        d.GUARDRAIL_FINISH,
        1,
    )
    assert agree(stream) == verdict  # auto tells the framing and the outer protocol
    # without the marker it is what it was: a chunk that says neither why nor that it was last
    assert agree(es.chunk(titan_blocked(PASSED)), "bedrock-invoke").category == "no_end_marker"
    assert agree(stream[:-5], "bedrock-invoke").category == "no_end_marker"  # the chunk cut


@pytest.mark.parametrize("family", BUILDERS)
def test_every_family_a_guardrail_replaced_is_content_filtered(family):
    """The marker on Bedrock's last chunk, or on a chunk of the model's own that ends the stream
    (Bedrock blocks what would follow it): content_filtered.  NONE changes nothing."""
    reason = next(iter(d.BEDROCK_INVOKE_FAMILIES[family]["values"]))
    events = BUILDERS[family](reason)
    events[-1] = {**events[-1], **METRICS}
    marked = [*events[:-1], {**events[-1], **INTERVENED}]
    verdict = agree(invoke(*marked), "bedrock-invoke")
    assert (verdict.category, verdict.finish_reason, verdict.finish_reason_raw) == (
        "content_filtered",
        "content_filter",
        d.GUARDRAIL_FINISH,
    )
    last_model_event = BUILDERS[family](reason)[-1]
    early_end = invoke(*BUILDERS[family](reason)[:-1], {**last_model_event, **INTERVENED})
    assert agree(early_end, "bedrock-invoke").category == "content_filtered"
    passed = agree(invoke(*(({**event, **PASSED}) for event in events)), "bedrock-invoke")
    unmarked = agree(finished(family, reason), "bedrock-invoke")
    assert passed.complete and {**passed.to_dict(), "bytes": 0} == {**unmarked.to_dict(), "bytes": 0}


@pytest.mark.parametrize("family", BUILDERS)
def test_every_family_cut_before_the_guardrails_chunk_is_what_it_was(family):
    reason = next(iter(d.BEDROCK_INVOKE_FAMILIES[family]["values"]))
    events = BUILDERS[family](reason)
    marked = [*events[:-1], {**events[-1], **INTERVENED, **METRICS}]
    for k in range(len(marked)):
        assert agree(invoke(*marked[:k]), "bedrock-invoke").category == "no_end_marker", k
    stream = invoke(*marked)
    assert agree(stream[:-5], "bedrock-invoke").category == "no_end_marker"  # inside its chunk


def test_a_chat_shaped_answer_a_guardrail_replaced_is_content_filtered():
    """OpenAI-compatible models (gpt-oss): the marker on a chat chunk."""
    first = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}],
    }
    last = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    for end in ({**last, **INTERVENED, **METRICS}, {**last, **INTERVENED}):
        verdict = agree(invoke(first, end), "bedrock-invoke")
        assert (verdict.category, verdict.finish_reason_raw) == ("content_filtered", d.GUARDRAIL_FINISH)
    assert agree(invoke({**first, **INTERVENED}), "bedrock-invoke").category == "content_filtered"
    assert agree(invoke({**first, **PASSED}), "bedrock-invoke").category == "no_end_marker"


def test_only_the_top_level_action_and_only_intervened_count():
    """The guardrail's trace may hold policies that say BLOCKED; the action beside it decides.  A
    key of that name deeper in the event is the model's, and other values are not INTERVENED."""
    for action in ({GUARDRAIL: "intervened"}, {GUARDRAIL: "GUARDRAIL_INTERVENED"}, {"x": INTERVENED}, {GUARDRAIL: 1}):
        assert agree(invoke(*anthropic_guarded(action)), "bedrock-invoke").category == "complete", action


def test_the_marker_counts_only_in_bedrock_invoke():
    """Other protocols do not read it: an Anthropic stream over SSE with the key is judged as
    it always was."""
    events = anthropic_guarded(INTERVENED)
    stream = b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), json.dumps(e).encode()) for e in events)
    assert agree(stream, "anthropic").category == "complete"


def test_a_repeated_chunk_never_hides_the_guardrails_marker():
    """The compiled twin replays a chunk that repeats the one kept but for its text and padding:
    a chunk that differs from it only by INTERVENED in place of NONE must be read."""
    from fastsse import _scanner as compiled

    blocks = anthropic_guarded(PASSED)
    deltas = [{**blocks[2], "delta": {"type": "text_delta", "text": f"w{i}"}} for i in range(12)]
    marked = {**deltas[0], **INTERVENED}
    for events, category in (
        ([*blocks[:2], *deltas, *blocks[3:]], "complete"),
        ([*blocks[:2], *deltas, marked, *blocks[3:]], "content_filtered"),
    ):
        stream = invoke(*events)
        assert agree(stream, "bedrock-invoke").category == category
        scanner = compiled.Scanner("bedrock-invoke")
        scanner.feed(stream)
        scanner.close()
        assert scanner.replayed >= 10  # the path the marker must not slip through ran
    llama_chunks = [
        {"generation": f"w{i}", "generation_token_count": i, "stop_reason": None, **PASSED} for i in range(12)
    ]
    last = {"generation": "w99", "generation_token_count": 99, "stop_reason": None, **INTERVENED}
    verdict = agree(invoke(*llama_chunks, last), "bedrock-invoke")
    assert (verdict.category, verdict.text_events) == ("content_filtered", 13)

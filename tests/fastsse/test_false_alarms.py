"""False alarms as a tracked figure: finished turns of every shape (tests/fastsse/healthy.py)
are complete on both twins under every chunking, with the protocol named or detected; and
each of them cut at any event boundary before its end is not (a miss otherwise)."""

from __future__ import annotations

import pytest

from .events import o_chat, o_generate
from .healthy import STREAMS, Healthy, cuts


@pytest.mark.parametrize("stream", STREAMS, ids=lambda s: s.id)
def test_a_finished_turn_is_complete(judge, stream: Healthy):
    verdict = judge(stream.data, stream.protocol)
    assert verdict.category == "complete", verdict
    assert judge(stream.data) == verdict  # auto-detection reaches the same verdict


@pytest.mark.parametrize("stream", STREAMS, ids=lambda s: s.id)
def test_a_finished_turn_cut_short_is_not_complete(impl, stream: Healthy):
    for prefix in cuts(stream):
        verdict = impl.scan(prefix, stream.protocol)
        assert not verdict.complete, (len(prefix), verdict)


# Ollama's own API: finished answers whose last line says less than "done_reason": "stop".
@pytest.mark.parametrize("line", [o_chat, o_generate], ids=["chat", "generate"])
def test_ollama_finished_answers_are_complete(judge, line):
    content = o_chat if line is o_chat else (lambda t: o_generate(response=t))
    answer = content("Hi") + content(" there")
    old_server = judge(answer + line(done=True), "ollama")  # before 0.1.35: no done_reason at all
    assert (old_server.category, old_server.finish_reason_raw) == ("complete", "done")
    assert judge(line(done=True), "ollama").category == "empty_output"  # ... and no answer
    for reason in ("load", "unload"):  # a request with no prompt: it asked for no answer
        verdict = judge(line(done=True, done_reason=reason), "ollama")
        assert (verdict.category, verdict.finish_reason_raw) == ("complete", reason)
        assert judge(line(done=True, done_reason=reason)) == verdict
    assert judge(answer + line(done=True, done_reason="length"), "ollama").category == "truncated_length"
    assert judge(answer, "ollama").category == "no_end_marker"  # the done line never came

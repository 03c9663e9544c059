"""The stream generator of the load tests and the mock provider: every fault of every protocol
puts on the wire exactly what its name says, as fastsse (both twins) judges it."""

from __future__ import annotations

import pytest

from loadtests.wire import (
    EXPECTED_CATEGORY,
    FAULTS,
    PROTOCOLS,
    answer_text,
    applies,
    complete_stream,
    wire,
)

# The protocols whose in-stream error is followed by their terminal event ([DONE], response.failed).
ERROR_ENDS = ("chat", "responses")
CASES = [(d, f) for d in PROTOCOLS for f in FAULTS if applies(d, f)]


@pytest.mark.parametrize(("protocol", "fault"), CASES, ids=[f"{d}-{f}" for d, f in CASES])
def test_every_fault_is_judged_as_its_name_says(judge, protocol, fault):
    sent = wire(protocol, fault, text=answer_text(4), seed=7)
    verdict = judge(sent.body, protocol)
    assert verdict.category == EXPECTED_CATEGORY[fault], verdict
    if fault != "empty":
        assert judge(sent.body, "auto").protocol == protocol
    assert sent.terminal_sent is (
        fault in ("F0", "F2C", "F4", "F5", "error", "crc") and not (fault == "error" and protocol not in ERROR_ENDS)
    )
    assert sent.ending == {"reset": "reset", "stall": "stall"}.get(fault, "close")


def test_the_answer_is_readable_and_where_it_was_cut_shows():
    text = answer_text(6)
    assert text.startswith("Sentence 1 of 6 ") and "Sentence 6 of 6" in text
    whole = wire("chat", "F0", text=text)
    cut = wire("chat", "F1", text=text)
    assert whole.text_chars == len(text)
    assert 0 < cut.text_chars < len(text)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("size", [2_000, 20_000, pytest.param(200_000, marks=pytest.mark.slow)])
def test_complete_streams_come_in_the_size_asked(impl, protocol, size):
    body = complete_stream(protocol, size, seed=size)
    assert size <= len(body) < max(size * 1.05, 4_100)  # Responses carries 4 KB at the least
    assert impl.scan(body, protocol).category == "complete"


def test_unknown_faults_and_protocols_are_refused():
    with pytest.raises(ValueError):
        wire("chat", "F9")
    with pytest.raises(ValueError):
        wire("grpc", "F0")
    with pytest.raises(ValueError):
        wire("gemini", "F2C")

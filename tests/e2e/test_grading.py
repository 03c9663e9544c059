"""The matrix's grades, on made-up outcomes: what a client did is told from its exit status,
how much of the answer it printed, what it said and how many requests it made."""

from __future__ import annotations

from loadtests.wire import answer_text

from .clients import SENTENCES, Outcome

WHOLE = answer_text(SENTENCES)
CUT = WHOLE[: WHOLE.index(f"Sentence 3 of {SENTENCES}")]
STREAM = {"kind": "stream"}


def test_a_cut_answer_with_exit_0_and_nothing_said_is_silent():
    outcome = Outcome(0, CUT, "", [STREAM])
    assert outcome.grade() == "L0" and outcome.printed() == "cut answer (2/6 sentences)"


def test_a_whole_answer_from_one_broken_stream_is_still_silent():
    # The fault cost no text (a dropped end marker), but the client took the stream as whole.
    assert Outcome(0, WHOLE, "", [STREAM]).grade() == "L0"


def test_a_warning_on_the_side_with_exit_0_is_a_weak_signal():
    outcome = Outcome(0, CUT, "warning: stream closed early\n", [STREAM])
    assert outcome.grade() == "L1" and outcome.said() == "warning: stream closed early"
    # Its own chatter that names nothing is no signal.
    assert Outcome(0, CUT, "To resume this session: kimi -r 42\n", [STREAM]).grade() == "L0"


def test_a_failing_exit_status_tells():
    assert Outcome(1, CUT, "", [STREAM]).grade() == "L2"
    assert Outcome(None, "", "", [STREAM]).grade() == "L2"  # killed at the time limit


def test_the_whole_answer_after_a_retry_is_a_recovery():
    outcome = Outcome(0, CUT + "\n" + WHOLE, "", [STREAM, STREAM])
    assert outcome.grade() == "L3" and outcome.whole and outcome.printed() == "whole answer"


def test_no_answer_is_said_so_and_addresses_are_hidden():
    outcome = Outcome(1, "", "ERROR: stream error from http://127.0.0.1:4711/F1/v1", [STREAM])
    assert outcome.printed() == "no answer"
    assert outcome.said() == "ERROR: stream error from <tap>/F1/v1"

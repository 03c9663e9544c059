"""False alarms as a tracked figure: finished turns of every shape (tests/fastsse/healthy.py)
are complete on both twins under every chunking, with the protocol named or detected; and
each of them cut at any event boundary before its end is not (a miss otherwise)."""

from __future__ import annotations

import pytest

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

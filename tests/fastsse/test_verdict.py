"""The Verdict value and the identifier sanitizer that decide() uses.

decide() builds its Verdict in one step (``_verdict``) rather than through the dataclass
constructor, and sanitizes identifiers with ``bytes.translate`` plus a table of the finish
reasons the protocols know; these tests hold both to what the plain versions give.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import pickle
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsse import Verdict, _verdict
from fastsse import _protocols as d
from fastsse._scanner_py import scan

from .events import COMPLETE_STREAMS, chat_text

# The rule as first written: decode with U+FFFD for non-ASCII bytes, keep [A-Za-z0-9_.:/@+-].
_JUNK = re.compile(r"[^A-Za-z0-9_.:/@+-]")


def reference_sanitize(raw, limit=_verdict.MAX_IDENTIFIER_CHARS):
    if raw is None:
        return None
    return _JUNK.sub("", raw.decode("ascii", "replace"))[:limit] or None


identifier_bytes = st.one_of(
    st.binary(max_size=200),
    st.lists(st.sampled_from(list(b'az09_.:/@+- "\\\x00\x7f\x80\xc3\xa9\xff')), max_size=150).map(bytes),
    st.sampled_from(sorted(_verdict._KNOWN_IDENTIFIERS)),
)


@given(identifier_bytes, st.sampled_from([1, 3, _verdict.MAX_IDENTIFIER_CHARS, _verdict.MAX_MODEL_CHARS]))
def test_sanitize_matches_the_regex_rule(raw, limit):
    assert _verdict.sanitize_identifier(raw, limit) == reference_sanitize(raw, limit)
    assert _verdict.sanitize_identifier(bytearray(raw), limit) == reference_sanitize(raw, limit)


def test_known_finish_reasons_are_their_own_sanitized_form():
    for table in d.FINISH_REASONS.values():
        for name in table:
            raw = name.encode()
            assert _verdict.sanitize_identifier(raw) == reference_sanitize(raw) == name
            assert _verdict._sanitize(raw, _verdict.MAX_IDENTIFIER_CHARS) == name
    assert _verdict.sanitize_identifier(None) is None
    assert _verdict.sanitize_identifier(b'\xff"') is None


def verdicts():
    out = [scan(data) for data in COMPLETE_STREAMS.values()]
    out.append(scan(chat_text("Hi")[:-20]))
    out.append(scan(b"", transport="reset"))
    return out


@pytest.mark.parametrize("verdict", verdicts(), ids=lambda v: f"{v.protocol}-{v.category}")
def test_decided_verdict_is_the_constructed_one(verdict):
    names = [f.name for f in dataclasses.fields(Verdict)]
    assert tuple(names) == _verdict.VERDICT_FIELDS
    assert not hasattr(verdict, "__dict__")  # slots only, each one set (an empty one raises)
    assert all(hasattr(verdict, name) for name in names)
    built = Verdict(**{name: getattr(verdict, name) for name in names})
    assert verdict == built and hash(verdict) == hash(built)
    assert repr(verdict) == repr(built) and str(verdict) == str(built)
    assert verdict.to_dict() == dataclasses.asdict(verdict) == built.to_dict()
    assert list(verdict.to_dict()) == names
    json.dumps(verdict.to_dict())
    assert dataclasses.replace(verdict) == verdict
    assert dataclasses.replace(verdict, bytes=-1) != verdict
    assert pickle.loads(pickle.dumps(verdict)) == verdict
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.category = "complete"


@contextlib.contextmanager
def nothing_else_runs():
    """Counts of strings the whole interpreter shares ("stop", "complete") move whenever any code
    takes or drops one: the collector freeing an earlier test's garbage, or another thread (a
    service or browser fixture's). Collect first, then keep the collector off and this thread
    holding the GIL until the counting is done."""
    gc.collect()
    interval = sys.getswitchinterval()
    gc.disable()
    sys.setswitchinterval(1000.0)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        gc.enable()


@pytest.mark.parametrize("protocol", sorted(COMPLETE_STREAMS))
def test_making_verdicts_keeps_no_reference(impl, protocol):
    """The compiled close() puts each value in its Verdict's slot, holding one reference: a
    verdict made and dropped a thousand times leaves the shared strings' counts where they were."""
    data = COMPLETE_STREAMS[protocol]
    verdict = impl.scan(data, protocol)
    shared = [verdict.category, verdict.protocol, verdict.message, verdict.finish_reason, verdict.model]
    shared = [value for value in shared if value is not None]
    with nothing_else_runs():
        before = [sys.getrefcount(value) for value in shared]
        for _ in range(1000):
            assert impl.scan(data, protocol) == verdict
        after = [sys.getrefcount(value) for value in shared]
    assert after == before
    with pytest.raises(dataclasses.FrozenInstanceError):
        del verdict.bytes


# decide() caches the judgement of streams that end alike (_judge_cached): the cache must be
# invisible.
evidence = st.builds(
    _verdict.Evidence,
    protocol=st.sampled_from(["chat", "responses", "anthropic", "gemini", "unknown"]),
    bytes=st.integers(0, 10**9),
    events=st.integers(0, 3),
    comments=st.integers(0, 3),
    limit=st.sampled_from([None, "line", "event", "choices", "tool_calls"]),
    errors=st.integers(0, 2),
    error_code=st.sampled_from([None, b"", b"429", b"overloaded_error", b"context_length_exceeded"]),
    end_marker=st.booleans(),
    residual_bytes=st.integers(0, 2),
    malformed_events=st.integers(0, 2),
    sequence_gap=st.booleans(),
    finishes=st.lists(
        st.tuples(
            st.integers(0, 9),
            st.sampled_from([None, b"stop", b"length", b"tool_calls", b"content_filter", b"MAX_TOKENS", b"weird\xff"]),
        ),
        max_size=6,
    ),
    blocked=st.sampled_from([None, b"SAFETY"]),
    text=st.integers(0, 2),
    reasoning=st.integers(0, 2),
    refusal=st.integers(0, 1),
    tool_calls=st.integers(0, 2),
    tool_malformed=st.booleans(),
    model=st.sampled_from([None, b"gpt-4o", b"bad model\x00"]),
)


@given(evidence, st.sampled_from(_verdict.TRANSPORTS))
def test_cached_judgement_is_invisible(e, transport):
    first = _verdict.decide(e, transport)  # may fill the cache
    _verdict._judge_cached.cache_clear()
    _verdict._model_name.cache_clear()
    uncached = _verdict.decide(e, transport)
    again = _verdict.decide(e, transport)  # from the cache
    assert first == uncached == again
    assert first is not again
    # the counters are this evidence's own
    assert (again.events, again.bytes, again.comments, again.residual_bytes) == (
        e.events,
        e.bytes,
        e.comments,
        e.residual_bytes,
    )
    assert (again.text_events, again.reasoning_events, again.refusal_events, again.tool_calls) == (
        e.text,
        e.reasoning,
        e.refusal,
        e.tool_calls,
    )
    assert again.choices == len(e.finishes) and again.malformed_events == e.malformed_events


def test_streams_that_end_alike_share_a_judgement_not_counters():
    _verdict._judge_cached.cache_clear()
    small = _verdict.Evidence(
        "chat", 10, 2, 0, None, 0, None, True, 0, 0, False, [(0, b"stop")], None, 1, 0, 0, 0, False, b"gpt-4o"
    )
    large = dataclasses.replace(small, bytes=99999, events=500, text=480, comments=3)
    a, b = _verdict.decide(small), _verdict.decide(large)
    assert _verdict._judge_cached.cache_info().hits == 1
    assert a.category == b.category == "complete"
    assert (a.bytes, a.events, a.text_events) == (10, 2, 1)
    assert (b.bytes, b.events, b.text_events, b.comments) == (99999, 500, 480, 3)
    assert _verdict.decide(small) == a  # nothing the second verdict did changed the first


def test_many_choices_are_judged_without_the_cache():
    """The cache keys hold the raw finish reasons: a stream with many choices stays out."""
    _verdict._judge_cached.cache_clear()
    finishes = [(i, b"stop") for i in range(_verdict._CACHED_FINISHES + 1)]
    e = _verdict.Evidence("chat", 10, 2, 0, None, 0, None, True, 0, 0, False, finishes, None, 1, 0, 0, 0, False, None)
    assert _verdict.decide(e).category == "complete"
    assert _verdict._judge_cached.cache_info().currsize == 0


def test_each_verdict_is_its_own_whatever_was_judged_before():
    """The compiled close() reuses the last stream's judgement when its inputs match: run every
    category case right after every other one, and compare with the Python twin's verdict."""
    compiled = pytest.importorskip("fastsse._scanner")
    from .test_categories import CASES

    cases = [param.values[0] for param in CASES]
    expected = [scan(c.data, c.protocol, c.transport, **c.limits) for c in cases]
    for before in cases:
        for c, verdict in zip(cases, expected, strict=True):
            compiled.scan(before.data, before.protocol, before.transport, **before.limits)
            assert compiled.scan(c.data, c.protocol, c.transport, **c.limits) == verdict, (before.name, c.name)

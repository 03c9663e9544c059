"""The two twins: the compiled one loaded, and both give identical verdicts on any bytes."""

from __future__ import annotations

import json
import os
import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fastsse
from fastsse import _json_py, _scanner_py

from .conftest import CORPUS
from .events import cand, g_object, gemini_array, text
from .feeding import chunkings
from .healthy import STREAMS

ARRAY_FORM = gemini_array(g_object(cand(text("The capital"))), g_object(cand(text(" is Paris."), finish="STOP")))

try:
    from fastsse import _scanner as _scanner_c
except ImportError:  # reported by test_extension_loaded
    _scanner_c = None


def test_extension_loaded():
    """A normal install builds the extension; only FASTSSE_NO_EXTENSIONS=1 may run without it."""
    if os.environ.get("FASTSSE_NO_EXTENSIONS"):
        assert fastsse.IMPLEMENTATION == "python"
        return
    assert _scanner_c is not None, "the compiled scanner did not build or import"
    assert fastsse.IMPLEMENTATION == "cython"
    assert fastsse.Scanner is _scanner_c.Scanner


needs_both = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")

SSE_ALPHABET = st.sampled_from(
    [
        b"data: ",
        b"data:",
        b"event: ",
        b"id: 1",
        b"retry: 5",
        b":",
        b"\n",
        b"\r",
        b"\r\n",
        b"{",
        b"}",
        b"[",
        b"]",
        b'"',
        b",",
        b":",
        b"\\",
        b"\\u00e9",
        b"[DONE]",
        b"\xef\xbb\xbf",
        b"null",
        b"0",
        b"-1",
        b'"type"',
        b'"choices"',
        b'"finish_reason"',
        b'"stop"',
        b'"length"',
        b'"index"',
        b'"delta"',
        b'"content"',
        b'"error"',
        b'"candidates"',
        b'"finishReason"',
        b'"STOP"',
        b'"message_stop"',
        b'"response.completed"',
        b'"sequence_number"',
        b'"tool_calls"',
        b'"arguments"',
        b"x",
        b" ",
    ]
)


def judge_both(data: bytes, protocol="auto", **limits):
    verdict_py = _scanner_py.scan(data, protocol, **limits)
    verdict_c = _scanner_c.scan(data, protocol, **limits)
    assert verdict_c == verdict_py
    return verdict_py


@needs_both
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400), protocol=st.sampled_from((fastsse.AUTO, *fastsse.PROTOCOLS)))
def test_twins_agree_on_arbitrary_bytes(data, protocol):
    judge_both(data, protocol)


@needs_both
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(SSE_ALPHABET, max_size=80),
    protocol=st.sampled_from((fastsse.AUTO, *fastsse.PROTOCOLS)),
    limit=st.sampled_from([None, 8, 40, 200]),
)
def test_twins_agree_on_sse_shaped_bytes(pieces, protocol, limit):
    limits = {} if limit is None else {"max_event_bytes": limit, "max_line_bytes": limit}
    judge_both(b"".join(pieces), protocol, **limits)


def mutate(rng: random.Random, data: bytes, inserts: list[bytes]) -> bytes:
    """One to six edits: a run deleted, random bytes or one of inserts put in."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(out) + 1)
        action = rng.randrange(3)
        if action == 0 and out:
            del out[at : at + rng.randint(1, 20)]
        elif action == 1:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        else:
            out[at:at] = rng.choice(inserts)
    return bytes(out)


@needs_both
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_twins_agree_on_mutated_captures(seed):
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    rng = random.Random(seed)
    files = sorted(CORPUS.glob("*/*.sse"))
    data = mutate(rng, rng.choice(files).read_bytes()[:6000], [b"\n", b"\r", b"\n\n", b'"', b"}", b"\\"])
    verdict = judge_both(data)
    for _name, chunks in chunkings(data, seed):
        scanner = _scanner_c.Scanner()
        for chunk in chunks:
            scanner.feed(chunk)
        assert scanner.close() == verdict


@needs_both
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_twins_agree_on_mutated_finished_turns(seed):
    """The finished turns of every shape (healthy.py: whole items, audio, argument deltas,
    Gemini's array form too), mutated as the captures are above."""
    rng = random.Random(seed)
    stream = rng.choice(STREAMS)
    data = mutate(
        rng, stream.data if rng.random() < 0.8 else ARRAY_FORM, [b"\n", b"\r", b"\n\n", b'"', b"}", b"\\", b"[", b","]
    )
    judge_both(data, rng.choice((fastsse.AUTO, stream.protocol)))


# JSON values as providers send them, to check the automaton against the json module.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(value=JSON_VALUES, ensure_ascii=st.booleans())
def test_json_automaton_accepts_valid_json(value, ensure_ascii):
    text = json.dumps(value, ensure_ascii=ensure_ascii).encode()
    scanner = _json_py.JsonScanner()
    scanner.feed(text)
    assert scanner.finish()


@settings(max_examples=200, deadline=None)
@given(value=JSON_VALUES, cut=st.integers(0, 10_000), insert=st.sampled_from(list(b'{}[]",:\\ 0e-.tfnx\x01')))
def test_json_automaton_agrees_with_json_module_on_damaged_json(value, cut, insert):
    text = json.dumps(value).encode()  # ASCII: the json module then judges the same bytes
    at = cut % (len(text) + 1)
    damaged = text[:at] + bytes([insert]) + text[at:]
    assume(b"NaN" not in damaged and b"Infinity" not in damaged)  # json accepts them, RFC 8259 not
    try:
        json.loads(damaged)
        expected = True
    except ValueError:
        expected = False
    scanner = _json_py.JsonScanner()
    scanner.feed(damaged)
    assert scanner.finish() == expected
    assert _json_py.analyze_json(damaged) is None or expected


def test_both_twins_have_one_api_but_the_compiled_twins_diagnostics():
    """The same Scanner and scan on both; only the compiled twin counts what it replayed and
    what it took from templates (it alone does either), as its stub says."""
    compiled = pytest.importorskip("fastsse._scanner")

    def public(thing) -> set[str]:
        return {name for name in dir(thing) if not name.startswith("_")}

    assert public(compiled.Scanner("chat")) - public(_scanner_py.Scanner("chat")) == {
        "replayed",
        "in_runs",
        "templated",
    }
    assert public(_scanner_py.Scanner("chat")) <= public(compiled.Scanner("chat"))
    assert {"Caches", "Scanner", "default_caches", "scan"} <= public(compiled) & public(_scanner_py)
    assert public(compiled.Caches()) == public(_scanner_py.Caches())


SEPARATE_FINISH = ("chat", "anthropic", "bedrock-invoke")  # (Converse: messageStop ends it)


@needs_both
@pytest.mark.parametrize("fault", ["F0", "F1", "F2", "F2C", "F4", "error"])
@pytest.mark.parametrize("protocol", fastsse.PROTOCOLS)
def test_settled_alike_at_every_byte(protocol, fault):
    """``settled`` (the stream has said how it ends) and ``ended`` (its end marker or an error)
    are the same in both twins after every byte; settled becomes true at the event that says it and stays so, and holds at the end of every
    stream that has its finish, never of one cut before it."""
    from loadtests.wire import applies, wire

    if not applies(protocol, fault):
        pytest.skip("no such fault in this protocol")
    body = b"".join(wire(protocol, fault, seed=3).pieces)
    twins = [_scanner_py.Scanner(protocol), _scanner_c.Scanner(protocol)]
    seen = []
    for i in range(len(body)):
        for scanner in twins:
            scanner.feed(body[i : i + 1])
        python, compiled = ((scanner.settled, scanner.ended) for scanner in twins)
        assert python == compiled, f"the twins differ at byte {i}"
        assert python[0] or not python[1], "ended before it settled"
        seen.append(python[0])
    assert seen == sorted(seen), "settled went back to false"
    # F2 drops the terminal event: what is left has its finish where the finish is an event
    # of its own, before the end marker
    ends = fault in ("F0", "F2C", "F4", "error") or (fault == "F2" and protocol in SEPARATE_FINISH)
    assert seen[-1] == ends
    if fault == "F0" and protocol in ("chat", "anthropic", "bedrock-invoke"):
        assert not seen[len(body) // 2], "settled in the middle of the answer"
    assert twins[0].ended == (fault in ("F0", "F2C", "F4", "error")), "ended without its end"
    for scanner in twins:
        scanner.close()
        assert scanner.settled and scanner.ended

"""Feeding helpers for the scanner tests: the chunkings every case is fed in, a check that
both twins agree under them, a plain feed of given chunks, and a stream judged after another
(the compiled twin's templates)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# A hole's value in the generated streams of the template tests: empty, escapes good and bad,
# a bare quote or control byte (which no template may take), any bytes, any text.
HOLE_TEXTS = st.one_of(
    st.sampled_from([b"", b"a", b"\\n", b"\\u00e9", b'\\"', b"\\x", b"\\u12", b'"', b"\n", b"\r"]),
    st.binary(max_size=10),
    st.text(max_size=6).map(str.encode),
)


def chunkings(data: bytes, seed: int = 0):
    """Whole, byte by byte, and at random split points (a few different ways)."""
    yield "whole", [data]
    yield "bytewise", [data[i : i + 1] for i in range(len(data))]
    rng = random.Random(seed)
    for attempt in range(3):
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 12)))) if len(data) > 1 else []
        pieces, last = [], 0
        for cut in cuts:
            pieces.append(data[last:cut])
            last = cut
        pieces.append(data[last:])
        yield f"random{attempt}", pieces


def agree(data: bytes, protocol: str = "auto", chunked: bool = True, **limits):
    """Both twins give the same verdict, whole and (``chunked``) under several chunkings; byte by
    byte only for short data.  For the tests that aim at the compiled twin's own fast paths."""
    from fastsse import _scanner as compiled
    from fastsse import _scanner_py as python

    verdict = python.scan(data, protocol, **limits)
    assert compiled.scan(data, protocol, **limits) == verdict
    if chunked:
        for name, chunks in chunkings(data, len(data)):
            if name == "bytewise" and len(data) > 3000:
                continue
            for twin in (compiled, python):
                scanner = twin.Scanner(protocol, **limits)
                for chunk in chunks:
                    scanner.feed(chunk)
                assert scanner.close() == verdict, (twin.__name__, name)
    return verdict


def feed(impl, chunks, protocol="auto", transport="eof", **limits):
    scanner = impl.Scanner(protocol, **limits)
    for chunk in chunks:
        scanner.feed(chunk)
    return scanner.close(transport)


def judge(twin, data: bytes, protocol: str = "chat", chunks=None, **limits):
    """The verdict of a scanner of twin fed data (or the given chunks), and the scanner."""
    scanner = twin.Scanner(protocol, **limits)
    for piece in chunks if chunks is not None else [data]:
        scanner.feed(piece)
    return scanner.close(), scanner


def after(first: bytes, second: bytes, protocol: str = "chat", **limits):
    """Judge first (it makes the compiled twin's templates), then second in every chunking, each
    time from the same templates; the compiled verdicts must equal the Python twin's.  Returns
    the verdict on second and how many of its events the compiled twin counted from templates,
    fed whole."""
    from fastsse import _scanner as compiled
    from fastsse import _scanner_py as python

    expected = python.scan(second, protocol, **limits)
    templated = None
    for name, pieces in chunkings(second, len(second)):
        compiled.default_caches.clear()
        assert judge(compiled, first, protocol, **limits)[0] == python.scan(first, protocol, **limits)
        verdict, scanner = judge(compiled, second, protocol, pieces, **limits)
        assert verdict == expected, name
        if name == "whole":
            templated = scanner.templated
    return expected, templated


def judged_in_turn(streams, protocol: str, rng) -> None:
    """Judge streams one after another, from empty templates, each cut at up to three random
    points: the compiled verdicts must equal the Python twin's."""
    from fastsse import _scanner as compiled
    from fastsse import _scanner_py as python

    compiled.default_caches.clear()
    for data in streams:
        cut = sorted(rng.sample(range(len(data)), min(len(data), rng.randint(0, 3))))
        pieces = [data[a:b] for a, b in zip([0, *cut], [*cut, len(data)], strict=True)]
        assert judge(compiled, data, protocol, pieces)[0] == python.scan(data, protocol)


def judged_in_orders(data: bytes, orders) -> None:
    """The same bytes judged by scanners of each protocol of an order in turn, from empty
    templates: each protocol's templates are its own (Template.detected), and every compiled
    verdict is the Python twin's."""
    from fastsse import _scanner as compiled
    from fastsse import _scanner_py as python

    for order in orders:
        compiled.default_caches.clear()
        for protocol in order:
            assert judge(compiled, data, protocol)[0] == python.scan(data, protocol), (order, protocol)


def twins_agree_in_turn(streams, protocols):
    """A property test: lists of streams drawn from ``streams`` judged one after another (by
    judged_in_turn) as each of ``protocols``; assign it to a ``test_`` name in a test module."""

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(streams, min_size=2, max_size=6), st.sampled_from(protocols), st.randoms(use_true_random=False))
    def test(streams, protocol, rng):
        judged_in_turn(streams, protocol, rng)

    return test

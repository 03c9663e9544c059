"""Feeding helpers for the scanner tests: the chunkings every case is fed in, a check that
both twins agree under them, a plain feed of given chunks, and a stream judged after another
(the compiled twin's templates)."""

from __future__ import annotations

import random


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

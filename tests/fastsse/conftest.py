"""Every scanner test runs on both twins; ``judge`` feeds each case in several chunkings."""

from __future__ import annotations

import importlib
import os
import random
from pathlib import Path

import pytest

from fastsse._verdict import VERDICT_FIELDS, Verdict

IMPLEMENTATIONS = {"python": "fastsse._scanner_py", "cython": "fastsse._scanner"}
CORPUS = Path(os.environ.get("FASTSSE_CORPUS") or Path(__file__).resolve().parents[3] / "shared" / "corpus")


@pytest.fixture(scope="session", params=sorted(IMPLEMENTATIONS))
def impl(request):
    """The scanner module of one twin (has ``Scanner`` and ``scan``)."""
    try:
        return importlib.import_module(IMPLEMENTATIONS[request.param])
    except ImportError as exc:  # test_extension_loaded fails loudly for this
        pytest.skip(f"{request.param} scanner not importable: {exc}")


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


@pytest.fixture
def judge(impl):
    """judge(data, protocol="auto", transport="eof", **limits) -> Verdict.

    Feeds the bytes whole, byte by byte and at random split points, and fails unless every
    chunking gives the same verdict.
    """

    def run(data: bytes, protocol: str = "auto", transport: str = "eof", **limits):
        verdicts = {}
        for name, pieces in chunkings(data):
            scanner = impl.Scanner(protocol, **limits)
            for piece in pieces:
                scanner.feed(piece)
            verdicts[name] = scanner.close(transport)
        first = verdicts["whole"]
        for name, verdict in verdicts.items():
            assert verdict == first, f"chunking {name!r} changed the verdict"
        assert impl.scan(data, protocol, transport, **limits) == first
        # decide() builds verdicts without the dataclass constructor: same value either way
        assert set(vars(first)) == set(VERDICT_FIELDS) and Verdict(**first.to_dict()) == first
        return first

    return run


def corpus_file(relative: str) -> bytes:
    path = CORPUS / relative
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return path.read_bytes()

"""Every scanner test runs on both twins; ``judge`` feeds each case in several chunkings."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from fastsse._verdict import VERDICT_FIELDS, Verdict

from .feeding import chunkings

IMPLEMENTATIONS = {"python": "fastsse._scanner_py", "cython": "fastsse._scanner"}
CORPUS = Path(os.environ.get("FASTSSE_CORPUS") or Path(__file__).resolve().parents[3] / "shared" / "corpus")


@pytest.fixture(scope="session", params=sorted(IMPLEMENTATIONS))
def impl(request):
    """The scanner module of one twin (has ``Scanner`` and ``scan``)."""
    try:
        return importlib.import_module(IMPLEMENTATIONS[request.param])
    except ImportError as exc:  # test_extension_loaded fails loudly for this
        pytest.skip(f"{request.param} scanner not importable: {exc}")


@pytest.fixture(autouse=True)
def no_templates():
    """Every test starts with the compiled twin's process-wide caches (its templates, its last
    judgements) empty and leaves them empty, so that no test's verdicts depend on the tests that
    ran before it."""
    try:
        from fastsse import _scanner as compiled
    except ImportError:
        yield
        return
    compiled.default_caches.clear()
    yield
    compiled.default_caches.clear()


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
        # close() fills a verdict's slots without the dataclass constructor: same value either way
        assert all(hasattr(first, name) for name in VERDICT_FIELDS) and Verdict(**first.to_dict()) == first
        return first

    return run


def corpus_file(relative: str) -> bytes:
    path = CORPUS / relative
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return path.read_bytes()

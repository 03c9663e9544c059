"""The ``Caches`` object: what scanners share across streams has one owner and one lifetime.

By default every scanner of a process shares ``default_caches``; a scanner given its own
``Caches`` learns from, and teaches, only the scanners given the same one (a test starting from
nothing, a gateway keeping tenants apart).  Either way the verdicts are the Python twin's, whose
``Caches`` keeps nothing."""

from __future__ import annotations

import pytest

from fastsse import _scanner_py

from .test_templates import stream

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None

compiled_only = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")

SECOND = stream([b"Second", b" answer"], chunk_id=b"chatcmpl-B22", padding=b"bbbbbb")


def judge(twin, data: bytes, caches=None):
    scanner = twin.Scanner("chat", caches=caches)
    scanner.feed(data)
    return scanner.close(), scanner


@compiled_only
def test_a_scanner_uses_the_process_caches_unless_given_its_own():
    own = _scanner_c.Caches()
    assert _scanner_c.Scanner("chat").caches is _scanner_c.default_caches
    assert _scanner_c.Scanner("chat", caches=own).caches is own
    judge(_scanner_c, stream(), own)
    assert len(own.template_bytes()) == 4 and _scanner_c.default_caches.template_bytes() == []
    # what one Caches learnt serves its scanners only
    verdict, scanner = judge(_scanner_c, SECOND, own)
    assert verdict == _scanner_py.scan(SECOND, "chat") and scanner.templated == 4
    verdict, scanner = judge(_scanner_c, SECOND, _scanner_c.Caches())
    assert verdict == _scanner_py.scan(SECOND, "chat") and scanner.templated == 0
    verdict, scanner = judge(_scanner_c, SECOND)
    assert scanner.templated == 0


@compiled_only
def test_clearing_caches_forgets_templates_and_judgements():
    caches = _scanner_c.Caches()
    assert caches.stats() == {"template_slots": 0, "template_tries": 0, "template_score": 256, "judgements": 0}
    judge(_scanner_c, stream(), caches)
    judge(_scanner_c, SECOND, caches)
    stats = caches.stats()
    assert stats["template_slots"] == 4 and stats["template_tries"] > 0 and stats["judgements"] == 1
    caches.clear()
    assert caches.stats()["template_slots"] == 0 and caches.stats()["judgements"] == 0
    assert judge(_scanner_c, SECOND, caches)[1].templated == 0


@compiled_only
def test_a_cached_judgement_is_the_judgement():
    """The second stream ends like the first: its verdict comes from the cached judgement, with
    its own counters."""
    caches = _scanner_c.Caches()
    first, _ = judge(_scanner_c, stream(), caches)
    second, _ = judge(_scanner_c, stream([b"one", b"two", b"three"]), caches)
    assert caches.stats()["judgements"] == 1
    assert second == _scanner_py.scan(stream([b"one", b"two", b"three"]), "chat")
    assert (first.category, first.text_events) == ("complete", 2)
    assert (second.category, second.text_events) == ("complete", 3)


def test_both_twins_take_the_same_caches_argument(impl):
    caches = impl.Caches()
    verdict = impl.scan(SECOND, "chat", caches=caches)
    assert verdict == _scanner_py.scan(SECOND, "chat")
    assert set(caches.stats()) == {"template_slots", "template_tries", "template_score", "judgements"}
    with pytest.raises(TypeError):
        impl.Scanner("chat", caches=object())


def test_the_python_twins_caches_keep_nothing():
    caches = _scanner_py.Caches()
    judge(_scanner_py, stream(), caches)
    judge(_scanner_py, SECOND, caches)
    assert caches.template_bytes() == [] and set(caches.stats().values()) == {0}


@compiled_only
def test_rebinding_the_module_name_leaves_scanners_their_caches(monkeypatch):
    """default_caches names the object scanners use; rebinding the name (a monkeypatch gone
    wrong) must not leave a scanner without caches, which crashed the interpreter once."""
    process_caches = _scanner_c.default_caches
    monkeypatch.setattr(_scanner_c, "default_caches", None)
    verdict, scanner = judge(_scanner_c, SECOND)
    assert scanner.caches is process_caches and verdict == _scanner_py.scan(SECOND, "chat")

"""The Verdict value and the identifier sanitizer that decide() uses.

decide() builds its Verdict in one step (``_verdict``) rather than through the dataclass
constructor, and sanitizes identifiers with ``bytes.translate`` plus a table of the finish
reasons the dialects know; these tests hold both to what the plain versions give.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsse import Verdict, _verdict
from fastsse import _dialects as d
from fastsse._scanner_py import scan

from .test_categories import COMPLETE_STREAMS, chat_text

# The rule as first written: decode with U+FFFD for non-ASCII bytes, keep [A-Za-z0-9_.:/@+-].
_JUNK = re.compile(r"[^A-Za-z0-9_.:/@+-]")


def reference_sanitize(raw, limit=_verdict.MAX_IDENTIFIER_CHARS):
    if raw is None:
        return None
    return _JUNK.sub("", raw.decode("ascii", "replace"))[:limit] or None


identifier_bytes = st.one_of(
    st.binary(max_size=200),
    st.lists(st.sampled_from(list(b"az09_.:/@+- \"\\\x00\x7f\x80\xc3\xa9\xff")), max_size=150).map(bytes),
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
    assert _verdict.sanitize_identifier(b"\xff\"") is None


def verdicts():
    out = [scan(data) for data in COMPLETE_STREAMS.values()]
    out.append(scan(chat_text("Hi")[:-20]))
    out.append(scan(b"", transport="reset"))
    return out


@pytest.mark.parametrize("verdict", verdicts(), ids=lambda v: f"{v.protocol}-{v.category}")
def test_decided_verdict_is_the_constructed_one(verdict):
    names = [f.name for f in dataclasses.fields(Verdict)]
    assert tuple(names) == _verdict.VERDICT_FIELDS
    assert set(vars(verdict)) == set(names)  # every field set, nothing else
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
    with pytest.raises(dataclasses.FrozenInstanceError):
        del verdict.bytes

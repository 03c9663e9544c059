"""The compiled twin's templates: a chat event read in full (the role chunk, the first content
chunk, the finish chunk, the usage chunk) becomes a template shared by every scanner, and a later
stream's event that equals it outside its holes (string values and numbers no rule reads, and
the text) is counted from the template's effect instead of being read.  These cases judge one
stream to make the templates, then another against them: new hole values, broken ones, values
outside the holes that change the effect, limits, and streams judged side by side.  The Python
twin reads every event; both must agree, and ``Scanner.templated`` shows the path ran."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .feeding import HOLE_TEXTS, after, chunkings, judge, judged_in_turn

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None
from fastsse import _scanner_py

pytestmark = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")

DONE = b"data: [DONE]\n\n"
CANARY = b"CANARY-7f3a9c"


# Each test starts from an empty template table (conftest.no_templates).


def chunk(
    delta: bytes,
    *,
    finish: bytes = b"null",
    chunk_id: bytes = b"chatcmpl-A1",
    created: bytes = b"1751551190",
    model: bytes = b"gpt-4o",
    fingerprint: bytes = b"fp_1",
    padding: bytes = b"xyz",
    index: bytes = b"0",
    end: bytes = b"\n\n",
) -> bytes:
    """A chat chunk written byte by byte, so that any value can be anything, broken too."""
    return (
        b'data: {"id":"'
        + chunk_id
        + b'","object":"chat.completion.chunk","created":'
        + created
        + b',"model":"'
        + model
        + b'","system_fingerprint":"'
        + fingerprint
        + b'","choices":[{"index":'
        + index
        + b',"delta":{'
        + delta
        + b'},"logprobs":null,"finish_reason":'
        + finish
        + b'}],"obfuscation":"'
        + padding
        + b'"}'
        + end
    )


def usage(
    prompt: bytes = b"12",
    completion: bytes = b"7",
    *,
    chunk_id: bytes = b"chatcmpl-A1",
    created: bytes = b"1751551190",
    model: bytes = b"gpt-4o",
    padding: bytes = b"q",
    end: bytes = b"\n\n",
) -> bytes:
    return (
        b'data: {"id":"'
        + chunk_id
        + b'","object":"chat.completion.chunk","created":'
        + created
        + b',"model":"'
        + model
        + b'","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":'
        + prompt
        + b',"completion_tokens":'
        + completion
        + b',"total_tokens":19,"completion_tokens_details":'
        b'{"reasoning_tokens":0}},"obfuscation":"' + padding + b'"}' + end
    )


def stream(
    texts=(b"Hello", b" world"),
    *,
    finish: bytes = b'"stop"',
    chunk_id: bytes = b"chatcmpl-A1",
    created: bytes = b"1751551190",
    role: bool = True,
    end: bytes = b"\n\n",
    **values,
) -> bytes:
    """A whole chat stream: role chunk, content chunks, finish chunk, usage chunk, [DONE]."""
    common = dict(chunk_id=chunk_id, created=created, end=end, **values)
    events = [chunk(b'"role":"assistant","content":"","refusal":null', **common)] if role else []
    events += [chunk(b'"content":"' + text + b'"', **common) for text in texts]
    events.append(chunk(b"", finish=finish, **common))
    events.append(usage(chunk_id=chunk_id, created=created, model=values.get("model", b"gpt-4o"), end=end))
    return b"".join(events) + DONE.replace(b"\n\n", end)


def test_a_stream_of_the_same_shapes_is_counted_from_templates():
    first = stream([b"Hi", b" there", b"!"], padding=b"a")
    second = stream(
        [b"Second", b" answer"],
        chunk_id=b"chatcmpl-B22",
        created=b"1751559999",
        fingerprint=b"fp_other",
        padding=b"bbbbbb",
    )
    verdict, templated = after(first, second)
    assert verdict.category == "complete" and verdict.text_events == 2 and verdict.choices == 1
    assert verdict.model == "gpt-4o" and verdict.finish_reason == "stop" and verdict.events == 6
    assert templated == 4  # role, first content, finish and usage chunks: nothing read but [DONE]


def test_the_first_stream_makes_templates_without_using_them():
    verdict, scanner = judge(_scanner_c, stream())
    assert verdict.category == "complete" and scanner.templated == 0
    assert len(_scanner_c.default_caches.template_bytes()) == 4


@pytest.mark.parametrize(
    "finish, category",
    [
        (b'"length"', "truncated_length"),
        (b'"content_filter"', "content_filtered"),
        (b"null", "missing_finish_reason"),
        (b'"tool_calls"', "complete"),
        (b'"no_such_reason"', "upstream_error"),
    ],
)
def test_a_finish_reason_is_never_a_hole(finish, category):
    verdict, templated = after(stream(), stream(finish=finish))
    assert verdict.category == category
    assert templated == 3  # the finish chunk differs from its template: read


def test_another_model_is_read_and_named():
    verdict, templated = after(stream(), stream(model=b"gpt-4o-mini"))
    assert verdict.model == "gpt-4o-mini" and templated == 0  # every chunk names the model


def test_another_choice_index_is_read():
    verdict, templated = after(stream(), stream(index=b"1"))
    assert verdict.category == "complete" and verdict.choices == 1 and templated == 1


def test_a_templated_event_registers_its_choice():
    # The second stream has no role chunk: its first content chunk, matched to a template,
    # must register the choice that its finish then closes, or that stays open.
    first = stream(role=False)
    verdict, templated = after(first, stream([b"other"], role=False, chunk_id=b"other"))
    assert verdict.category == "complete" and verdict.choices == 1 and templated == 3
    verdict, templated = after(first, stream(role=False, finish=b"null"))
    assert verdict.category == "missing_finish_reason" and verdict.choices == 1 and templated == 2
    # after a stream with a role chunk, the content chunk is read: it is not what streams
    # began with; the rest follows the templates again
    verdict, templated = after(stream(), stream(role=False))
    assert verdict.category == "complete" and verdict.choices == 1 and templated == 2


def test_several_choices_each_keep_their_finish():
    def two_choices(finishes: tuple) -> bytes:
        events = b""
        for index in (b"0", b"1"):
            events += chunk(b'"content":"x"', index=index)
        for index, finish in zip((b"0", b"1"), finishes, strict=True):
            events += chunk(b"", index=index, finish=finish)
        return events + DONE

    verdict, templated = after(two_choices((b'"stop"', b'"stop"')), two_choices((b'"stop"', b'"length"')))
    assert verdict.category == "truncated_length" and verdict.choices == 2 and templated == 3
    verdict, _ = after(two_choices((b'"stop"', b'"stop"')), two_choices((b'"stop"', b"null")))
    assert verdict.category == "missing_finish_reason"


@pytest.mark.parametrize(
    "created",
    [
        b"1",
        b"0",
        b"-0",
        b"-17",
        b"1.5",
        b"1.5e+3",
        b"2E-2",
        b"1e9",
        b"12345678901234567890123",
    ],
)
def test_any_valid_number_fills_a_number_hole(created):
    verdict, templated = after(stream(), stream(created=created))
    assert verdict.category == "complete" and templated == 4


@pytest.mark.parametrize(
    "created",
    [
        b"01",
        b"1.",
        b"-",
        b".5",
        b"1e",
        b"1e+",
        b"+1",
        b"0x10",
        b"1..2",
        b"--1",
        b"",
        b'"1751551190"',
        b"null",
        b"1 ",
        b" 1",
        b"NaN",
        b"1,2",
    ],
)
def test_a_broken_or_different_number_is_read(created):
    verdict, templated = after(stream(), stream(created=created))
    assert verdict == _scanner_py.scan(stream(created=created), "chat")
    assert templated < 4


@pytest.mark.parametrize(
    "value",
    [
        b'say \\"hi\\"',
        b"caf\\u00e9",
        b"\\ud83d\\ude00",
        "naïve 🙂".encode(),
        b"",
    ],
)
def test_escaped_and_empty_strings_fill_string_holes(value):
    verdict, templated = after(stream(), stream([value, b"x"], chunk_id=value, padding=value))
    assert verdict.category == "complete" and templated == 4
    assert verdict.text_events == (1 if value == b"" else 2)


@pytest.mark.parametrize(
    "value",
    [
        b"\\x41",
        b"\\u12zz",
        b"cut \\",
        b"raw\ttab",
        b"nul\x00",
        b'a"b',
        b"line\nbreak",
        b"cr\rhere",
        b"end\n\n",
    ],
)
def test_broken_strings_in_holes_are_read(value):
    verdict, _ = after(stream(), stream([value], padding=value))
    assert verdict.category in ("malformed_event", "no_end_marker", "buffer_residual", "complete")


def test_crlf_and_lf_streams_use_their_own_templates():
    verdict, templated = after(stream(end=b"\r\n\r\n"), stream(end=b"\r\n\r\n", chunk_id=b"other"))
    assert verdict.category == "complete" and templated == 4
    verdict, templated = after(stream(), stream(end=b"\r\n\r\n"))
    assert verdict.category == "complete" and templated == 0
    verdict, templated = after(stream(), stream(end=b"\r\r"))
    assert verdict.category == "complete" and templated == 0


@pytest.mark.parametrize("over", [0, 1])
def test_a_templated_event_past_the_line_limit_is_the_limit(over):
    first = stream([b"x"])
    long_text = b"y" * 200
    second = stream([long_text])
    line = next(line for line in second.split(b"\n") if long_text in line)
    verdict, templated = after(first, second, max_line_bytes=len(line) - over)
    assert verdict.category == ("limit_exceeded" if over else "complete")


def test_a_new_choice_past_the_choice_limit_is_the_limit():
    many = (
        b"data: {"
        + b'"choices":['
        + b",".join(b'{"index":%d,"delta":{"content":"a"},"finish_reason":null}' % i for i in range(128))
        + b"]}\n\n"
    )
    first = chunk(b'"content":"x"', index=b"500") + DONE
    verdict, _ = after(first, many + chunk(b'"content":"x"', index=b"500") + DONE)
    assert verdict.category == "limit_exceeded" and verdict.limit == "choices"


def test_an_auto_stream_takes_its_protocol_from_a_template():
    verdict, templated = after(stream(), stream(chunk_id=b"other"), protocol="auto")
    assert verdict.category == "complete" and verdict.protocol == "chat"
    assert templated == 4  # the first event too: the template names the protocol it named


def test_a_template_made_where_the_protocol_was_given_names_none():
    # Made by a "chat" scanner, the role chunk's template never named a protocol: an auto
    # stream reads that event (and names it); from then on the template names it too.
    judge(_scanner_c, stream(), "chat")
    for templated in (3, 4):
        verdict, scanner = judge(_scanner_c, stream(chunk_id=b"other"), "auto")
        assert verdict == _scanner_py.scan(stream(chunk_id=b"other"), "auto")
        assert verdict.protocol == "chat" and scanner.templated == templated


def test_tool_calls_and_errors_make_no_templates():
    tool = chunk(b'"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]')
    args = chunk(b'"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]')
    error = b'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n'
    judge(_scanner_c, tool + args + error + chunk(b"", finish=b'"tool_calls"') + DONE)
    kept = _scanner_c.default_caches.template_bytes()
    assert len(kept) == 1 and b'"finish_reason":"tool_calls"' in kept[0]


def test_templates_keep_no_payload():
    # the canary in every place payload can be: text, reasoning, refusal, ids, padding,
    # log probabilities (strings and byte arrays), a Gemini-shaped part a chat scanner reads
    logprobs = (
        b'{"content":[{"token":"' + CANARY + b'","logprob":-0.1,"bytes":[67,65,78],'
        b'"top_logprobs":[{"token":"' + CANARY + b'","logprob":-0.2}]}]}'
    )
    events = [
        chunk(b'"role":"assistant","content":"' + CANARY + b'"', chunk_id=CANARY, padding=CANARY),
        chunk(b'"reasoning_content":"' + CANARY + b'"', fingerprint=CANARY),
        chunk(b'"refusal":"' + CANARY + b'"'),
        chunk(b'"content":"' + CANARY + b'"').replace(b'"logprobs":null', b'"logprobs":' + logprobs),
        b'data: {"candidates":[{"content":{"parts":[{"text":"' + CANARY + b'"}]}}]}\n\n',
        chunk(b"", finish=b'"stop"', padding=CANARY),
        usage(chunk_id=CANARY, padding=CANARY),
    ]
    data = b"".join(events) + DONE
    for protocol in ("chat", "auto"):
        for _name, pieces in chunkings(data):
            judge(_scanner_c, data, protocol, pieces)
            kept = _scanner_c.default_caches.template_bytes()
            assert kept and not any(CANARY in template for template in kept)
            assert not any(b"67,65,78" in template for template in kept)


def test_interleaved_streams_share_templates():
    streams = [
        stream(
            [b"a%d" % i] * (i % 3 + 1),
            chunk_id=b"id-%d" % i,
            created=b"%d" % (1000 + i),
            finish=(b'"stop"', b'"length"')[i % 2],
            model=(b"gpt-4o", b"other")[i % 3 == 0],
        )
        for i in range(8)
    ]
    expected = [_scanner_py.scan(data, "chat") for data in streams]
    for _round in range(3):
        scanners = [_scanner_c.Scanner("chat") for _ in streams]
        events = [[line + b"\n\n" for line in data.split(b"\n\n")[:-1]] for data in streams]
        for step in range(max(map(len, events))):
            for scanner, pieces in zip(scanners, events, strict=True):
                if step < len(pieces):
                    scanner.feed(pieces[step])
        assert [scanner.close() for scanner in scanners] == expected
    assert sum(scanner.templated for scanner in scanners) > 0


def test_events_whose_numbers_change_are_replayed():
    events = b"".join(chunk(b'"content":"w%d"' % i, created=b"%d" % (1751551190 + i)) for i in range(20))
    data = events + chunk(b"", finish=b'"stop"') + DONE
    verdict, scanner = judge(_scanner_c, data)
    assert verdict == _scanner_py.scan(data, "chat") and verdict.text_events == 20
    assert scanner.replayed == 19
    broken = events + chunk(b'"content":"z"', created=b"1.") + chunk(b"", finish=b'"stop"') + DONE
    assert judge(_scanner_c, broken)[0] == _scanner_py.scan(broken, "chat")
    assert _scanner_py.scan(broken, "chat").category == "malformed_event"


# ------------------------------------------------------------------------------ generated
number = st.one_of(
    st.integers(-(10**20), 10**20).map(lambda n: str(n).encode()),
    st.sampled_from([b"0", b"1.5", b"1e5", b"-0.0E+1", b"01", b"1.", b"-", b"", b"1e", b'"1"', b"null", b"1 "]),
)
text = HOLE_TEXTS
generated_stream = st.builds(
    stream,
    texts=st.lists(text, max_size=4),
    finish=st.sampled_from([b'"stop"', b'"length"', b"null", b'"content_filter"']),
    chunk_id=st.sampled_from([b"chatcmpl-1", b"chatcmpl-2", b"\\u0041", b""]),
    created=number,
    role=st.booleans(),
    end=st.sampled_from([b"\n\n", b"\n\n", b"\r\n\r\n"]),
    model=st.sampled_from([b"gpt-4o", b"gpt-4o", b"other"]),
    padding=text,
    index=st.sampled_from([b"0", b"0", b"1"]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(generated_stream, min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_twins_agree_on_streams_judged_one_after_another(streams, rng):
    judged_in_turn(streams, "chat", rng)


def test_templates_back_off_when_they_do_not_pay_and_come_back():
    # Streams of a new model each: no template ever matches, so they stop being tried but
    # for one event in sixteen; the verdicts stay right all along.
    def new_models(first: int) -> int:
        tries = _scanner_c.default_caches.stats()["template_tries"]
        for i in range(first, first + 200):
            data = stream([b"x%d" % i], model=b"model-%d" % i, chunk_id=b"id-%d" % i)
            assert judge(_scanner_c, data)[0] == _scanner_py.scan(data, "chat")
        return _scanner_c.default_caches.stats()["template_tries"] - tries

    assert new_models(0) > 256  # every event tries, until the score (256) is spent
    assert _scanner_c.default_caches.stats()["template_score"] < 0
    assert new_models(200) < 1200 / 16 + 10  # 6 events a stream, one in 16 tries
    # Then one model again: the templates made now and then start to match, and pay again.
    templated = []
    for i in range(300):
        data = stream([b"y%d" % i], chunk_id=b"id-%d" % i)
        verdict, scanner = judge(_scanner_c, data)
        assert verdict == _scanner_py.scan(data, "chat")
        templated.append(scanner.templated)
    assert _scanner_c.default_caches.stats()["template_score"] > 0
    assert templated[0] == 0 and templated[-1] == 4

"""The compiled twin's templates of Responses events (test_templates.py says how templates work).
A Responses stream reads in full, once each, its created and in_progress events, the message
item added, its content part added and done, its text done: events whose rule does nothing but
follow the stream's sequence numbers.  These become templates; an event that matches one still
has its sequence number checked (a gap is read, and reported), and the item done and completed
events, whose items' texts a rule reads, never become templates.  The Python twin reads every
event; both must agree."""

from __future__ import annotations

import pytest

from .feeding import after, judge

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None
from fastsse import _scanner_py

pytestmark = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")

CANARY = b"CANARY-0b94d2"


def event(kind: bytes, body: bytes, seq: bytes) -> bytes:
    return b"event: " + kind + b'\ndata: {"type":"' + kind + b'",' + body + b',"sequence_number":' + seq + b"}\n\n"


def response(status: bytes, output: bytes, *, rid: bytes, instructions: bytes = b"null", extra: bytes = b"") -> bytes:
    return (
        b'"response":{"id":"' + rid + b'","object":"response","created_at":1721348235,"status":"' + status + b'",'
        b'"error":null,"incomplete_details":' + extra + b'null,"instructions":' + instructions + b',"model":"gpt-4.1",'
        b'"output":[' + output + b'],"temperature":1.0,"usage":null}'
    )


def stream(
    texts=(b"Hello", b" world"),
    *,
    rid: bytes = b"resp_1",
    item: bytes = b"msg_1",
    status: bytes = b"completed",
    seqs=None,
    instructions: bytes = b"null",
    added_item: bytes | None = None,
) -> bytes:
    """A Responses stream of one message, its numbers 0, 1, 2, ... unless seqs says otherwise."""
    whole = b"".join(texts)
    message = b'{"id":"' + item + b'","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"' + whole + b'"}],"role":"assistant"}'  # fmt: skip
    added = (
        added_item or b'{"id":"' + item + b'","type":"message","status":"in_progress","content":[],"role":"assistant"}'
    )
    part = b'"item_id":"' + item + b'","output_index":0,"content_index":0'
    bodies = [
        (b"response.created", response(b"in_progress", b"", rid=rid, instructions=instructions)),
        (b"response.in_progress", response(b"in_progress", b"", rid=rid, instructions=instructions)),
        (b"response.output_item.added", b'"output_index":0,"item":' + added),
        (b"response.content_part.added", part + b',"part":{"type":"output_text","annotations":[],"text":""}'),
    ]
    bodies += [(b"response.output_text.delta", part + b',"delta":"' + text + b'"') for text in texts]
    bodies += [
        (b"response.output_text.done", part + b',"text":"' + whole + b'"'),
        (
            b"response.content_part.done",
            part + b',"part":{"type":"output_text","annotations":[],"text":"' + whole + b'"}',
        ),
        (b"response.output_item.done", b'"output_index":0,"item":' + message),
        (b"response.completed", response(status, message, rid=rid, instructions=instructions)),
    ]
    seqs = seqs if seqs is not None else [b"%d" % i for i in range(len(bodies))]
    return b"".join(event(kind, body, seq) for (kind, body), seq in zip(bodies, seqs, strict=True))


# the events a second stream of the same shapes counts from templates: created, in_progress,
# the item and the part added, the text and the part done
TEMPLATED = 6


@pytest.mark.parametrize("protocol", ["responses", "auto"])
def test_a_stream_of_the_same_shapes_is_counted_from_templates(protocol):
    first = stream([b"Hi", b" there", b"!"], instructions=b'"a"')
    second = stream([b"Second", b" answer"], rid=b"resp_22", item=b"msg_22", instructions=b'"be brief"')
    verdict, templated = after(first, second, protocol)
    assert verdict.category == "complete" and verdict.protocol == "responses" and verdict.text_events == 2
    assert templated == TEMPLATED


@pytest.mark.parametrize("status, category", [(b"completed", "complete"), (b"failed", "upstream_error")])
def test_the_completed_event_is_never_a_template(status, category):
    verdict, templated = after(stream(), stream(status=status), "responses")
    assert verdict.category == category and templated == TEMPLATED
    assert not any(b"response.completed" in kept for kept in _scanner_c.default_caches.template_bytes())
    assert not any(b"response.output_item.done" in kept for kept in _scanner_c.default_caches.template_bytes())


def test_a_cut_after_templated_events_is_a_cut():
    second = stream([b"x"])
    cut = second[: second.index(b"event: response.output_item.done")]
    verdict, templated = after(stream(), cut, "responses")
    assert verdict.category == "no_end_marker" and templated == TEMPLATED


@pytest.mark.parametrize(
    "at, number",
    [(1, b"5"), (1, b"0"), (2, b"1"), (3, b"9"), (5, b"4"), (6, b"3")],
)
def test_a_templated_event_whose_number_does_not_follow_is_a_gap(at, number):
    # the event at index `at` says `number` where `at` was due (index 4 and 5 are deltas)
    seqs = [b"%d" % i for i in range(10)]
    seqs[at] = number
    verdict, templated = after(stream(), stream(seqs=seqs), "responses")
    assert verdict.category == "sequence_gap" and templated < TEMPLATED


@pytest.mark.parametrize("number", [b"01", b"1.0", b"-1", b"1e0", b'"1"', b"1234567890123456789"])
def test_a_number_that_is_not_plain_is_read(number):
    seqs = [b"%d" % i for i in range(10)]
    seqs[1] = number
    second = stream(seqs=seqs)
    verdict, templated = after(stream(), second, "responses")
    assert verdict.category == _scanner_py.scan(second, "responses").category != "complete"
    assert templated < TEMPLATED


def test_items_whose_kind_counts_are_read():
    # an item added that is a call or reasoning counts for the verdict (_count_kind): read
    call = b'{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"c","name":"f"}'
    reasoning = b'{"id":"rs_1","type":"reasoning","summary":[]}'
    for added in (call, reasoning):
        verdict, templated = after(stream(added_item=added), stream(added_item=added, rid=b"resp_2"), "responses")
        assert templated == TEMPLATED - 1
        assert (verdict.tool_calls, verdict.reasoning_events) == ((1, 0) if added is call else (0, 1))


def test_responses_chat_and_auto_scanners_of_the_same_bytes_keep_their_own_templates():
    data = stream()
    for order in (("chat", "responses", "auto", "chat"), ("auto", "chat", "responses", "gemini")):
        _scanner_c.default_caches.clear()
        for protocol in order:
            verdict, scanner = judge(_scanner_c, data, protocol)
            assert verdict == _scanner_py.scan(data, protocol), (order, protocol)


def test_templates_keep_no_payload():
    data = stream([CANARY, CANARY], rid=CANARY, item=CANARY, instructions=b'"' + CANARY + b'"')
    for protocol in ("responses", "auto"):
        judge(_scanner_c, data, protocol)
        kept = _scanner_c.default_caches.template_bytes()
        assert len(kept) == TEMPLATED and not any(CANARY in template for template in kept)

"""The compiled twin's templates of Responses events (test_templates.py says how templates work).
A Responses stream reads in full, once each, its created and in_progress events, the message
item added, its content part added and done, its text done, the item done and the completed
(or incomplete) event.  These become templates.  Their effect, besides the sequence number that
a match must still follow (a gap is read, and reported): the item done ends the call arguments
at its output_index; the completed event ends the stream with the finish its status says; a
whole message's text and refusal count by whether their holes are empty (an answer given only
in whole items, or a refusal, changes the verdict).  Deltas are replayed, not templated; an
event with whole call arguments is read.  The Python twin reads every event; both must agree."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from .feeding import HOLE_TEXTS, after, judge, judged_in_orders, twins_agree_in_turn

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None
from fastsse import _scanner_py

pytestmark = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")

CANARY = b"CANARY-0b94d2"

# the events a second stream of the same shapes counts from templates: all but its deltas, and
# of those the first (the kept event the others replay); a stream without deltas, TEMPLATED
TEMPLATED = 8
FIRST_DELTA = 1


def response(status: bytes, output: bytes, *, rid: bytes, instructions: bytes, reason: bytes | None) -> bytes:
    details = b'{"reason":"' + reason + b'"}' if reason is not None else b"null"
    return (
        b'"response":{"id":"' + rid + b'","object":"response","created_at":1721348235,"status":"' + status + b'",'
        b'"error":null,"incomplete_details":' + details + b',"instructions":' + instructions + b',"model":"gpt-4.1",'
        b'"output":[' + output + b'],"temperature":1.0,"usage":null}'
    )


def stream(
    texts=(b"Hello", b" world"),
    *,
    whole: bytes | None = None,
    content_type: bytes = b"output_text",
    rid: bytes = b"resp_1",
    item: bytes = b"msg_1",
    status: bytes = b"completed",
    reason: bytes | None = None,
    seqs=None,
    instructions: bytes = b"null",
    added_item: bytes | None = None,
    before_done=(),
    after_item=(),
) -> bytes:
    """A Responses stream of one message: its text deltas, then its text whole (the deltas'
    unless whole says otherwise) in the done events; its numbers 0, 1, 2, ... unless seqs says
    otherwise; before_done, after_item: (type, body) events before the text done, after the
    item done."""
    whole = b"".join(texts) if whole is None else whole
    key = b"refusal" if content_type == b"refusal" else b"text"
    content = b'{"type":"' + content_type + b'","annotations":[],"' + key + b'":"' + whole + b'"}'
    message = b'{"id":"' + item + b'","type":"message","status":"completed","content":[' + content + b'],"role":"assistant"}'  # fmt: skip
    added = (
        added_item or b'{"id":"' + item + b'","type":"message","status":"in_progress","content":[],"role":"assistant"}'
    )
    part = b'"item_id":"' + item + b'","output_index":0,"content_index":0'
    start = response(b"in_progress", b"", rid=rid, instructions=instructions, reason=None)
    end = response(status, message, rid=rid, instructions=instructions, reason=reason)
    bodies = [
        (b"response.created", start),
        (b"response.in_progress", start),
        (b"response.output_item.added", b'"output_index":0,"item":' + added),
        (b"response.content_part.added", part + b',"part":{"type":"output_text","annotations":[],"text":""}'),
    ]
    bodies += [(b"response.output_text.delta", part + b',"delta":"' + text + b'"') for text in texts]
    bodies += list(before_done)
    bodies += [
        (b"response.output_text.done", part + b',"text":"' + whole + b'"'),
        (b"response.content_part.done", part + b',"part":' + content),
        (b"response.output_item.done", b'"output_index":0,"item":' + message),
        *after_item,
        (b"response.incomplete" if status == b"incomplete" else b"response.completed", end),
    ]
    seqs = seqs if seqs is not None else [b"%d" % i for i in range(len(bodies))]
    return b"".join(
        b"event: " + kind + b'\ndata: {"type":"' + kind + b'",' + body + b',"sequence_number":' + seq + b"}\n\n"
        for (kind, body), seq in zip(bodies, seqs, strict=True)
    )


@pytest.mark.parametrize("protocol", ["responses", "auto"])
def test_a_stream_of_the_same_shapes_is_counted_from_templates(protocol):
    first = stream([b"Hi", b" there", b"!"], instructions=b'"a"')
    second = stream([b"Second", b" answer"], rid=b"resp_22", item=b"msg_22", instructions=b'"be brief"')
    verdict, templated = after(first, second, protocol)
    assert verdict.category == "complete" and verdict.protocol == "responses" and verdict.text_events == 2
    assert templated == TEMPLATED + FIRST_DELTA


@pytest.mark.parametrize(
    "status, reason, category, templated",
    [
        (b"completed", None, "complete", TEMPLATED + FIRST_DELTA),
        (b"incomplete", b"max_output_tokens", "truncated_length", TEMPLATED + FIRST_DELTA),
        (b"incomplete", b"content_filter", "content_filtered", TEMPLATED + FIRST_DELTA),
        (b"incomplete", None, "missing_finish_reason", TEMPLATED + FIRST_DELTA),
        (b"failed", None, "upstream_error", TEMPLATED + FIRST_DELTA),
        (b"in_progress", None, "upstream_error", TEMPLATED + FIRST_DELTA),
    ],
)
def test_the_terminal_event_says_its_finish_from_a_template(status, reason, category, templated):
    # the first stream ends the same way, so the terminal event of the second is a template's
    first = stream([b"a"], status=status, reason=reason)
    verdict, counted = after(first, stream([b"x", b"y"], status=status, reason=reason, rid=b"r2"), "responses")
    assert verdict.category == category and counted == templated
    # and another status than the template's is read
    verdict, counted = after(stream(), stream(status=status, reason=reason), "responses")
    assert verdict.category == category and counted == FIRST_DELTA + (
        TEMPLATED if status == b"completed" else TEMPLATED - 1
    )


def test_a_cut_after_templated_events_is_a_cut():
    second = stream([b"x"])
    for cut_before in (b"event: response.output_item.done", b"event: response.completed"):
        verdict, templated = after(stream(), second[: second.index(cut_before)], "responses")
        assert verdict.category == "no_end_marker"


@pytest.mark.parametrize(
    "texts, whole, category",
    [
        ((b"a",), b"a", "complete"),
        ((), b"said only whole", "complete"),  # no delta: the whole items are the answer
        ((), b"", "empty_output"),
    ],
)
def test_a_whole_message_text_counts_by_its_hole(texts, whole, category):
    for first_texts in ([b"Hi"], []):
        first = stream(first_texts, whole=b"" if not first_texts else None)
        verdict, templated = after(first, stream(texts, whole=whole, rid=b"r2"), "responses")
        assert verdict.category == category
        # the same shapes: every event but the deltas after the first; a delta where the first
        # stream had none is read, and so is the event after the part added where one stream
        # had a delta there and the other not (templates expect what followed them last)
        if bool(texts) == bool(first_texts):
            assert templated == TEMPLATED + (FIRST_DELTA if texts else 0)
        else:
            assert templated == TEMPLATED - 1


@pytest.mark.parametrize("refusal, category", [(b"I cannot help with that", "content_filtered"), (b"", "empty_output")])
def test_a_whole_message_refusal_counts_by_its_hole(refusal, category):
    first = stream([], whole=b"no", content_type=b"refusal")
    verdict, templated = after(first, stream([], whole=refusal, content_type=b"refusal", rid=b"r2"), "responses")
    assert verdict.category == category and templated >= TEMPLATED - 2


def test_the_item_done_ends_the_arguments_at_its_index():
    # argument deltas at the message's output_index (a stream no API sends, but a stream that
    # could arrive): the item done ends them, and their JSON must be whole
    def args(piece: bytes) -> tuple:
        body = b'"item_id":"msg_1","output_index":0,"delta":"' + piece + b'","obfuscation":"ab"'
        return (b"response.function_call_arguments.delta", body)

    for pieces, category in (([b'{\\"a\\":', b"1}"], "complete"), ([b'{\\"a\\":'], "tool_call_malformed")):
        verdict, templated = after(stream(), stream(before_done=[args(p) for p in pieces]), "responses")
        assert verdict.category == category and templated == TEMPLATED + FIRST_DELTA
    # ended there, arguments sent at the same index after it are a new value, whole on its own
    second = stream(before_done=[args(b'{\\"a\\":1}')], after_item=[args(b'{\\"b\\":2}')])
    verdict, templated = after(stream(), second, "responses")
    assert verdict.category == "complete" and templated == TEMPLATED + FIRST_DELTA


@pytest.mark.parametrize(
    "at, number", [(1, b"5"), (1, b"0"), (2, b"1"), (3, b"9"), (4, b"6"), (5, b"7"), (7, b"4"), (8, b"3"), (9, b"20")]
)
def test_a_templated_event_whose_number_does_not_follow_is_a_gap(at, number):
    # the event at index `at` says `number` where `at` was due (4 and 5 are deltas: 4 from a
    # template, kept; 5 replays it, its number checked as the kept event's was)
    seqs = [b"%d" % i for i in range(10)]
    seqs[at] = number
    verdict, templated = after(stream(), stream(seqs=seqs), "responses")
    assert verdict.category == "sequence_gap" and templated < TEMPLATED + FIRST_DELTA


@pytest.mark.parametrize("number", [b"01", b"1.0", b"-1", b"1e0", b'"1"', b"1234567890123456789"])
def test_a_number_that_is_not_plain_is_read(number):
    seqs = [b"%d" % i for i in range(10)]
    seqs[1] = number
    second = stream(seqs=seqs)
    verdict, templated = after(stream(), second, "responses")
    assert verdict.category == _scanner_py.scan(second, "responses").category != "complete"
    assert templated < TEMPLATED + FIRST_DELTA


def test_items_whose_kind_counts_are_read_where_added():
    # an item added that is a call or reasoning counts for the verdict (_count_kind): read
    call = b'{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"c","name":"f"}'
    reasoning = b'{"id":"rs_1","type":"reasoning","summary":[]}'
    for added in (call, reasoning):
        verdict, templated = after(stream(added_item=added), stream(added_item=added, rid=b"resp_2"), "responses")
        assert templated == TEMPLATED - 1 + FIRST_DELTA
        assert (verdict.tool_calls, verdict.reasoning_events) == ((1, 0) if added is call else (0, 1))


def test_responses_chat_and_auto_scanners_of_the_same_bytes_keep_their_own_templates():
    judged_in_orders(stream(), [("chat", "responses", "auto", "chat"), ("auto", "chat", "responses", "gemini")])


def test_templates_keep_no_payload():
    data = stream([CANARY, CANARY], rid=CANARY, item=CANARY, instructions=b'"' + CANARY + b'"')
    refusal = stream([], whole=CANARY, content_type=b"refusal", rid=CANARY)
    for protocol in ("responses", "auto"):
        for stream_data in (data, refusal):
            judge(_scanner_c, stream_data, protocol)
            kept = _scanner_c.default_caches.template_bytes()
            assert kept and not any(CANARY in template for template in kept)


@pytest.mark.parametrize("thought", [b"thinking it over", b""])
def test_a_text_outside_a_message_counts_for_nothing(thought):
    # a reasoning item's own text is no answer: an empty message after it is empty output,
    # whatever the reasoning said (its hole is free, not a message's text)
    reasoning = b'{"id":"rs_1","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"%s"}]}'
    events = [
        (b"response.output_item.added", b'"output_index":1,"item":' + reasoning % b""),
        (b"response.output_item.done", b'"output_index":1,"item":' + reasoning % thought),
    ]
    first = stream([b"a"], before_done=[(kind, body.replace(b"%s", b"x")) for kind, body in events])
    second = stream([], whole=b"", before_done=events)
    verdict, templated = after(first, second, "responses")
    # (the reasoning item added followed the first stream's delta, which the second has not:
    # it is not among the templates expected after the part added, and is read)
    assert verdict.category == "empty_output" and templated == TEMPLATED


@pytest.mark.parametrize(
    "kind, counted",
    [
        (b"response.output_text.delta", "text_events"),
        (b"response.reasoning_summary_text.delta", "reasoning_events"),
        (b"response.refusal.delta", "refusal_events"),
    ],
)
def test_a_first_delta_from_a_template_counts_by_its_kind(kind, counted):
    # the first delta of the second stream is a template's, and is kept: the deltas after it
    # replay it, each counted as its kind says (an empty one counts for nothing)
    def deltas(*texts) -> list:
        return [(kind, b'"item_id":"it_1","output_index":0,"content_index":0,"delta":"' + t + b'"') for t in texts]

    first = stream([], whole=b"ab", before_done=deltas(b"a", b"b"))
    second = stream([], whole=b"xy", before_done=deltas(b"x", b"", b"y"), rid=b"r2")
    verdict, scanner = judge(_scanner_c, first, "responses")
    verdict, scanner = judge(_scanner_c, second, "responses")
    assert verdict == _scanner_py.scan(second, "responses") and getattr(verdict, counted) == 2
    assert scanner.templated == TEMPLATED + FIRST_DELTA and scanner.replayed == 2
    verdict, templated = after(first, second, "responses")
    assert getattr(verdict, counted) == 2 and templated == TEMPLATED + FIRST_DELTA


# ------------------------------------------------------------------------------ generated
text = HOLE_TEXTS


@st.composite
def generated_stream(draw) -> bytes:
    texts = draw(st.lists(text, max_size=3))
    data = stream(
        texts,
        whole=draw(st.one_of(st.none(), text)),
        content_type=draw(st.sampled_from([b"output_text", b"output_text", b"refusal"])),
        rid=draw(st.sampled_from([b"resp_1", b"resp_2", b""])),
        status=draw(st.sampled_from([b"completed", b"completed", b"incomplete", b"failed"])),
        reason=draw(st.sampled_from([None, b"max_output_tokens"])),
        instructions=draw(st.sampled_from([b"null", b'"be brief"'])),
    )
    if draw(st.booleans()):  # a number changed, or a cut
        seqs = data.split(b'"sequence_number":')
        at = draw(st.integers(1, len(seqs) - 1))
        number = draw(st.sampled_from([b"0", b"1", b"7", b"01", b"-1", b"99"]))
        seqs[at] = number + seqs[at].lstrip(b"0123456789")
        data = b'"sequence_number":'.join(seqs)
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return data


test_twins_agree_on_streams_judged_one_after_another = twins_agree_in_turn(
    generated_stream(), ["responses", "auto", "chat"]
)

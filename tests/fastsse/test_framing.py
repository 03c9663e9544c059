"""Framing: the WHATWG event-stream rules (line endings, BOM, comments, fields, multi-line
data, unterminated events), in every protocol and chunking.
"""

from __future__ import annotations

import dataclasses

import pytest

from .events import (
    CHAT_DONE,
    COMPLETE_STREAMS,
    SSE_PROTOCOLS,
    anthropic_text,
    cand,
    chat_text,
    chat_tool_stream,
    g_chunk,
    gemini,
    gemini_text,
    text,
)
from .feeding import feed


def _lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")


def _without_bytes(verdict):
    return dataclasses.replace(verdict, bytes=0)


@pytest.mark.parametrize("protocol", SSE_PROTOCOLS)
@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_line_endings(judge, protocol, ending):
    reference = judge(_lf(COMPLETE_STREAMS[protocol]), protocol)
    assert reference.category == "complete"
    data = _lf(COMPLETE_STREAMS[protocol]).replace(b"\n", ending)
    verdict = judge(data, protocol)
    assert _without_bytes(verdict) == _without_bytes(reference)
    assert verdict.bytes == len(data)


@pytest.mark.parametrize("protocol", SSE_PROTOCOLS)
def test_mixed_line_endings(judge, protocol):
    lines = _lf(COMPLETE_STREAMS[protocol]).split(b"\n")
    # CR is always followed by CRLF: a CR followed by an empty line's LF would be one CRLF.
    endings = (b"\r\n", b"\n", b"\r")
    data = b"".join(line + endings[i % 3] for i, line in enumerate(lines[:-1])) + lines[-1]
    verdict = judge(data, protocol)
    assert verdict.category == "complete"
    assert verdict.events == judge(COMPLETE_STREAMS[protocol], protocol).events


def test_cr_then_lf_in_next_chunk_is_one_line_end(impl):
    # The chunk's JSON spans two data: lines; had CR|LF been read as two line ends, the blank
    # line between them would dispatch the first half alone as a malformed event.
    first = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,\r'
    second = b'\ndata: "delta":{"content":"Hi"},"finish_reason":"stop"}]}\r\n\r\ndata: [DONE]\r\n\r\n'
    verdict = feed(impl, [first, second], "chat")
    assert verdict.category == "complete"
    assert verdict.malformed_events == 0
    assert verdict.events == 2
    assert verdict.text_events == 1
    # also when the CR is the very last byte of a chunk and the LF a chunk of its own,
    # or when an empty chunk comes between them
    assert feed(impl, [first, b"\n", second[1:]], "chat") == verdict
    assert feed(impl, [first, b"", second], "chat") == verdict


def test_cr_then_cr_in_next_chunk_is_two_line_ends(impl):
    verdict = feed(impl, [chat_text("Hi").replace(b"\n", b"\r")[:-1], b"\r"], "chat")
    assert verdict.category == "complete"
    assert verdict.end_marker_seen


@pytest.mark.parametrize("protocol", SSE_PROTOCOLS)
def test_leading_bom_is_dropped(judge, protocol):
    data = COMPLETE_STREAMS[protocol]
    verdict = judge(b"\xef\xbb\xbf" + data, protocol)
    assert _without_bytes(verdict) == _without_bytes(judge(data, protocol))
    assert verdict.bytes == len(data) + 3


@pytest.mark.parametrize("split", [1, 2], ids=["ef|bbbf", "efbb|bf"])
def test_bom_split_across_chunks(impl, split):
    bom = b"\xef\xbb\xbf"
    data = gemini_text("Paris.")  # one chunk: if its first line were spoilt, nothing would remain
    verdict = feed(impl, [bom[:split], bom[split:], data], "gemini")
    assert verdict.category == "complete"
    assert verdict.events == 1
    assert feed(impl, [bom[:split], bom[split:] + data[:4], data[4:]], "gemini") == verdict


def test_only_one_bom_is_dropped(judge):
    # A second BOM belongs to the first field name ("\ufeffdata"), so that line is ignored.
    data = gemini_text("The", " end.")
    verdict = judge(b"\xef\xbb\xbf" * 2 + data, "gemini")
    assert verdict.events == 1  # the first chunk is lost
    assert verdict.text_events == 1
    assert judge(b"\xef\xbb\xbf" + data, "gemini").events == 2


def test_utf16_bom_is_not_honoured(judge):
    # Decoded as UTF-8 it spoils the first field name, so the (only) chunk is not an event.
    verdict = judge(b"\xff\xfe" + gemini_text("Paris."), "gemini")
    assert (verdict.category, verdict.events) == ("no_end_marker", 0)


def test_bom_in_the_middle_is_not_dropped(judge):
    # Only a *leading* BOM is dropped: before the [DONE] line it spoils "data" -> no end marker.
    data = chat_text("Hi").replace(CHAT_DONE, b"\xef\xbb\xbf" + CHAT_DONE)
    assert judge(data, "chat").category == "no_end_marker"


@pytest.mark.parametrize("protocol", SSE_PROTOCOLS)
def test_comments_and_keepalives(judge, protocol):
    data = _lf(COMPLETE_STREAMS[protocol])
    noisy = b": OPENROUTER PROCESSING\n\n:\n\n" + data.replace(b"\n\n", b"\n\n: keep-alive\n\n")
    noisy = noisy.replace(b"}\n\n", b"}\n: inside an event\n\n", 1)  # between a data line and its blank line
    verdict = judge(noisy, protocol)
    assert verdict.category == "complete"
    assert verdict.events == judge(data, protocol).events
    assert verdict.comments == sum(1 for line in noisy.split(b"\n") if line.startswith(b":"))
    assert verdict.comments >= 4


@pytest.mark.parametrize("protocol", SSE_PROTOCOLS)
def test_data_without_space(judge, protocol):
    data = _lf(COMPLETE_STREAMS[protocol]).replace(b"data: ", b"data:")
    verdict = judge(data, protocol)
    assert verdict.category == "complete"
    assert verdict.events == judge(COMPLETE_STREAMS[protocol], protocol).events


def test_data_colon_without_space_done(judge):
    assert judge(chat_text("Hi").replace(b"data: [DONE]", b"data:[DONE]"), "chat").category == "complete"


def test_only_one_space_is_removed(judge):
    # "data:  [DONE]" has the value " [DONE]": not the end marker, and not JSON either.
    verdict = judge(chat_text("Hi").replace(b"data: [DONE]", b"data:  [DONE]"), "chat")
    assert verdict.category == "no_end_marker"
    assert verdict.end_marker_seen is False
    assert verdict.malformed_events == 1


def test_tab_is_not_the_optional_space(judge):
    verdict = judge(chat_text("Hi").replace(b"data: [DONE]", b"data:\t[DONE]"), "chat")
    assert verdict.category == "no_end_marker"


@pytest.mark.parametrize(
    "line",
    [b"Data: [DONE]", b"DATA: [DONE]", b": data: [DONE]", b" data: [DONE]", b"data : [DONE]"],
    ids=["Data", "DATA", "comment", "leading-space", "space-before-colon"],
)
def test_field_names_are_exact(judge, line):
    # Field names are case-sensitive and taken literally; none of these is the end marker.
    verdict = judge(chat_text("Hi", done=False) + line + b"\n\n", "chat")
    assert verdict.category == "no_end_marker"
    assert verdict.malformed_events == 0


@pytest.mark.parametrize(
    "body",
    [b'{"a":01}', b'{"a":1.}', b'{"a":NaN}', b'{"a":[1,]}', b"{'a':1}", b'{"a":"\\x"}', b'{"a":1}}', b'{"a":"\x01"}'],
)
def test_strict_json(judge, body):
    """Leading zeros, NaN, trailing commas, single quotes, bad escapes, raw control bytes."""
    ok = chat_text("Hi")
    assert judge(ok, "chat").category == "complete"
    verdict = judge(ok.replace(CHAT_DONE, b"data: " + body + b"\n\n" + CHAT_DONE), "chat")
    assert (verdict.category, verdict.malformed_events) == ("malformed_event", 1)
    # the same strictness for tool-call arguments
    args = body.decode("latin-1")
    assert judge(chat_tool_stream(args), "chat").category == "tool_call_malformed"


def test_multiline_data_is_joined_with_lf(judge):
    # One chunk's JSON split over two data: lines joins with "\n", which is JSON whitespace.
    split = (
        b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk",\n'
        b'data: "choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}\n\n'
    )
    verdict = judge(split + CHAT_DONE, "chat")
    assert verdict.category == "complete"
    assert verdict.events == 2
    assert verdict.text_events == 1
    # the same split inside a JSON string is not valid (a raw LF in a string)
    bad = b'data: {"choices":[{"index":0,"delta":{"content":"H\ndata: i"},"finish_reason":"stop"}]}\n\n'
    assert judge(bad + CHAT_DONE, "chat").malformed_events == 1


def test_multiline_data_anthropic(judge):
    data = anthropic_text("Hi").replace(
        b'data: {"type":"message_stop"}', b'data: {\ndata:   "type": "message_stop"\ndata: }'
    )
    verdict = judge(data, "anthropic")
    assert verdict.category == "complete"
    assert verdict.end_marker_seen


@pytest.mark.parametrize("tail", [b"", b"\n"], ids=["no-newline", "one-newline"])
def test_unterminated_final_event_is_residue(judge, tail):
    complete = chat_text("Hi")
    data = complete[: -len(b"\n\n")] + tail  # "data: [DONE]" never gets its blank line
    verdict = judge(data, "chat")
    assert verdict.category == "no_end_marker"
    assert verdict.end_marker_seen is False
    assert verdict.residual_bytes == len(b"data: [DONE]")
    assert verdict.events == judge(complete, "chat").events - 1


def test_unterminated_final_event_anthropic(judge):
    data = anthropic_text("Hi")[: -len(b"\n")]  # message_stop's blank line missing
    verdict = judge(data, "anthropic")
    assert verdict.category == "no_end_marker"
    assert verdict.residual_bytes == len(b"event: message_stop") + len(b'data: {"type":"message_stop"}')


def test_unterminated_final_gemini_chunk(judge):
    data = gemini(g_chunk(cand(text("The"))), g_chunk(cand(text(" end."), finish="STOP"))[:-2])
    verdict = judge(data, "gemini")
    assert verdict.category == "no_end_marker"
    assert verdict.residual_bytes > 0
    assert verdict.events == 1


@pytest.mark.parametrize("protocol", SSE_PROTOCOLS)
def test_event_without_data_dispatches_nothing(judge, protocol):
    data = _lf(COMPLETE_STREAMS[protocol])
    noisy = b"event: ping\n\n" + data.replace(b"\n\n", b"\n\nevent: keepalive\n\n", 1) + b"event: x\n\n"
    verdict = judge(noisy, protocol)
    assert verdict.category == "complete"
    assert verdict.events == judge(data, protocol).events
    assert verdict.residual_bytes == 0


def test_id_retry_and_unknown_fields_are_ignored(judge):
    data = anthropic_text("Hi").replace(b"event: ", b"id: 7\nretry: 3000\nx-trace: abc\nevent: ")
    verdict = judge(data, "anthropic")
    assert verdict.category == "complete"
    assert verdict.events == judge(anthropic_text("Hi"), "anthropic").events


def test_empty_data_event_is_a_keep_alive_not_malformed(judge):
    stream = (
        b"data:\n\n"
        b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
        b"data: \n\n"
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    verdict = judge(stream)
    assert (verdict.category, verdict.malformed_events, verdict.events) == ("complete", 0, 5)
    # whitespace is not emptiness: it is data that is not JSON
    assert judge(stream.replace(b"data: \n\n", b"data:  \n\n")).category == "malformed_event"

"""The guard's transports, each case on httpx and on httpx2, sync and async, with a stand-in
inner transport that answers given chunks (or breaks after them)."""

from __future__ import annotations

import asyncio
import gc
import gzip
import itertools
import pickle

import httpx
import httpx2
import pytest

import fastsse
from fastsse.guard import FAILURES, UNSEEN, AsyncTransport, StreamFailed, Transport

from .events import CHAT_CUT, CHAT_LENGTH, CHAT_NO_DONE, CHAT_WHOLE, GEMINI_ARRAY, OLLAMA_WHOLE, chunked

LIBRARIES = [httpx, httpx2]
CHAT = "http://provider.test/v1/chat/completions"


class Broken(Exception):
    """Not a transport error: the reader's own."""


def answering(lib, chunks, *, status=200, headers=None, fail=None):
    """A handler that answers ``chunks`` one by one, then raises ``fail`` (if given)."""
    headers = {"content-type": "text/event-stream", **(headers or {})}

    class Chunks(lib.SyncByteStream, lib.AsyncByteStream):
        def __iter__(self):
            yield from chunks
            if fail is not None:
                raise fail

        async def __aiter__(self):
            for chunk in chunks:
                yield chunk
            if fail is not None:
                raise fail

    return lambda request: lib.Response(status, headers=headers, stream=Chunks())


def read(lib, handler, url=CHAT, mode="sync", **options):
    """What a reader gets: the chunks of the body, or the exception; and every verdict."""
    verdicts = []
    options.setdefault("on_verdict", lambda verdict, request: verdicts.append(verdict))
    if mode == "sync":
        client = lib.Client(transport=Transport(lib.MockTransport(handler), **options))
        with client, client.stream("POST", url, json={"model": "m", "stream": True}) as response:
            return list(response.iter_raw()), verdicts

    async def main():
        client = lib.AsyncClient(transport=AsyncTransport(lib.MockTransport(handler), **options))
        async with client, client.stream("POST", url, json={"model": "m", "stream": True}) as response:
            return [chunk async for chunk in response.aiter_raw()], verdicts

    return asyncio.run(main())


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.__name__)
class TestEveryLibrary:
    def test_the_reader_gets_the_same_chunks_and_a_complete_verdict(self, lib, mode):
        """Chunk for chunk until the answer's finish; from there, one chunk up to its end (the
        guard reads its closing events before it hands the finish on)."""
        chunks = chunked(CHAT_WHOLE, 7)
        got, verdicts = read(lib, answering(lib, chunks), mode=mode)
        assert b"".join(got) == CHAT_WHOLE
        finish = CHAT_WHOLE.rindex(b'"finish_reason":"stop"')
        before = [
            chunk for chunk, end in zip(chunks, itertools.accumulate(map(len, chunks)), strict=True) if end <= finish
        ]
        assert got[: len(before)] == before and len(got) < len(chunks)
        assert [v.category for v in verdicts] == ["complete"] and verdicts[0].protocol == "chat"

    def test_a_cut_answer_raises_at_its_end(self, lib, mode):
        with pytest.raises(StreamFailed) as raised:
            read(lib, answering(lib, chunked(CHAT_CUT, 5)), mode=mode)
        assert raised.value.category == "no_end_marker" and raised.value.retryable
        assert str(raised.value) == raised.value.verdict.message

    def test_a_transport_error_mid_answer_becomes_a_stream_failure_from_it(self, lib, mode):
        error = lib.ReadError("connection reset by peer")
        with pytest.raises(StreamFailed) as raised:
            read(lib, answering(lib, chunked(CHAT_CUT, 3), fail=error), mode=mode)
        assert raised.value.category == "transport_error" and raised.value.verdict.transport == "reset"
        assert raised.value.__cause__ is error

    def test_a_read_timeout_is_a_timeout(self, lib, mode):
        with pytest.raises(StreamFailed) as raised:
            read(lib, answering(lib, [CHAT_CUT], fail=lib.ReadTimeout("idle")), mode=mode)
        assert raised.value.verdict.transport == "timeout"

    def test_the_readers_own_exception_passes_unjudged(self, lib, mode):
        with pytest.raises(Broken):
            read(lib, answering(lib, [CHAT_CUT], fail=Broken()), mode=mode)

    @pytest.mark.parametrize(
        ("status", "content_type"), [(500, "text/event-stream"), (200, "application/json"), (429, "application/json")]
    )
    def test_other_answers_pass_untouched(self, lib, mode, status, content_type):
        got, verdicts = read(
            lib, answering(lib, [b'{"x": 1}'], status=status, headers={"content-type": content_type}), mode=mode
        )
        assert got == [b'{"x": 1}'] and verdicts == []

    def test_geminis_json_array_stream_is_judged(self, lib, mode):
        url = "http://provider.test/v1beta/models/gemini-2.5-flash:streamGenerateContent"
        whole = GEMINI_ARRAY
        handler = answering(lib, chunked(whole, 9), headers={"content-type": "application/json"})
        got, verdicts = read(lib, handler, url=url, mode=mode)
        assert b"".join(got) == whole and [(v.category, v.protocol) for v in verdicts] == [("complete", "gemini")]
        with pytest.raises(StreamFailed):
            read(lib, answering(lib, [whole[:-40]], headers={"content-type": "application/json"}), url=url, mode=mode)

    def test_the_paths_protocol_holds_only_for_its_own_framing(self, lib, mode):
        """An app's own /api/chat that streams OpenAI's chunks (SSE) is judged as "auto", not
        as Ollama's NDJSON; Ollama's NDJSON is judged there; NDJSON or Bedrock's event stream
        from any other path passes untouched."""
        api_chat = "http://app.test/api/chat"
        got, verdicts = read(lib, answering(lib, chunked(CHAT_WHOLE, 5)), url=api_chat, mode=mode)
        assert [(v.category, v.protocol) for v in verdicts] == [("complete", "chat")]
        ndjson = {"content-type": "application/x-ndjson"}
        lines = OLLAMA_WHOLE
        got, verdicts = read(lib, answering(lib, chunked(lines, 6), headers=ndjson), url=api_chat, mode=mode)
        assert [(v.category, v.protocol) for v in verdicts] == [("complete", "ollama")]
        for content_type in ("application/x-ndjson", "application/vnd.amazon.eventstream"):
            handler = answering(lib, [lines[:-30]], headers={"content-type": content_type})
            got, verdicts = read(lib, handler, url="http://app.test/v1/other", mode=mode)
            assert got == [lines[:-30]] and verdicts == []

    def test_a_compressed_answer_is_judged_as_it_decodes(self, lib, mode):
        handler = answering(lib, chunked(gzip.compress(CHAT_LENGTH), 4), headers={"content-encoding": "gzip"})
        with pytest.raises(StreamFailed) as raised:
            read(lib, handler, mode=mode, raise_on=FAILURES)
        assert raised.value.category == "truncated_length"

    def test_an_encoding_it_cannot_read_passes_unjudged_and_unchanged(self, lib, mode):
        got, verdicts = read(lib, answering(lib, [b"\x8b\x00"], headers={"content-encoding": "x-snappy"}), mode=mode)
        assert got == [b"\x8b\x00"] and verdicts == []

    def test_brotli_is_read_when_it_is_installed(self, lib, mode):
        brotli = pytest.importorskip("brotli")
        handler = answering(lib, chunked(brotli.compress(CHAT_LENGTH), 5), headers={"content-encoding": "br"})
        with pytest.raises(StreamFailed) as raised:
            read(lib, handler, mode=mode, raise_on=FAILURES)
        assert raised.value.category == "truncated_length"

    def test_a_break_after_a_complete_answer_is_no_failure(self, lib, mode):
        """openai's async stream drains the connection after [DONE] and ignores what breaks
        then: the answer is whole, and the break reaches the reader as it was."""
        verdicts = []
        error = lib.RemoteProtocolError("peer closed connection")
        with pytest.raises(lib.RemoteProtocolError) as raised:
            read(lib, answering(lib, [CHAT_WHOLE], fail=error), mode=mode, on_verdict=lambda v, r: verdicts.append(v))
        assert raised.value is error
        assert [v.category for v in verdicts] == ["complete"]

    @pytest.mark.parametrize("cut", [CHAT_CUT, CHAT_WHOLE[:-30]])
    @pytest.mark.parametrize("transport", ["reset", "timeout", "error"])
    def test_a_break_before_the_end_is_judged_as_the_scanner_judges_it(self, lib, mode, cut, transport):
        failure = {"reset": lib.ReadError("x"), "timeout": lib.ReadTimeout("x"), "error": lib.RemoteProtocolError("x")}
        with pytest.raises(StreamFailed) as raised:
            read(lib, answering(lib, [cut], fail=failure[transport]), mode=mode)
        assert raised.value.verdict == fastsse.scan(cut, "chat", transport)
        # still the transport's own error, for the handlers an application has for it
        assert isinstance(raised.value, type(failure[transport]))

    def test_a_break_after_the_end_marker_is_the_answers_verdict(self, lib, mode):
        """A token-limit answer ended by [DONE], then the connection breaks: the answer was
        judged at its end, and raises there (in the place of the chunk that ended it)."""
        with pytest.raises(StreamFailed) as raised:
            read(lib, answering(lib, [CHAT_LENGTH], fail=lib.ReadError("x")), mode=mode, raise_on=FAILURES)
        assert raised.value.verdict == fastsse.scan(CHAT_LENGTH, "chat")

    def test_raise_on_chooses_what_raises_and_on_verdict_hears_all(self, lib, mode):
        got, verdicts = read(lib, answering(lib, [CHAT_LENGTH]), mode=mode, raise_on=["no_end_marker"])
        assert [v.category for v in verdicts] == ["truncated_length"]
        got, verdicts = read(lib, answering(lib, [CHAT_CUT]), mode=mode, raise_on=())
        assert [v.category for v in verdicts] == ["no_end_marker"]

    def test_protocol_from_the_path_else_detected_else_given(self, lib, mode):
        _, verdicts = read(lib, answering(lib, [CHAT_WHOLE]), url="http://gateway.test/llm/stream", mode=mode)
        assert verdicts[0].protocol == "chat" and verdicts[0].complete
        with pytest.raises(StreamFailed) as raised:
            read(lib, answering(lib, [CHAT_WHOLE]), mode=mode, protocol="anthropic")
        assert raised.value.verdict.protocol == "anthropic"


def test_unknown_categories_are_refused():
    with pytest.raises(ValueError, match="no category"):
        Transport(httpx2.MockTransport(lambda r: None), raise_on=["cut"])


def sdk_like(client, *, stop_at_done=True, error_on=None):
    """Reads an answer as openai-python does: SSE events until [DONE], then closes the answer
    in a ``finally`` without reading on; raises its own error on an event it dislikes.  It
    holds its iterator (as the SDKs do), so the answer is closed by its ``finally``."""
    with client.stream("POST", CHAT, json={}) as response:
        lines = response.iter_lines()
        try:
            for line in lines:
                if stop_at_done and line == "data: [DONE]":
                    break
                if error_on and error_on in line:
                    raise RuntimeError("the SDK's own error")
        finally:
            response.close()


def guarded_client(chunks, **options):
    return httpx2.Client(transport=Transport(httpx2.MockTransport(answering(httpx2, chunks)), **options))


def test_a_reader_that_stops_at_the_end_marker_gets_the_failure_when_it_closes():
    """openai-python closes a chat answer at [DONE]: a token-limit answer raises then."""
    with pytest.raises(StreamFailed) as raised:
        sdk_like(guarded_client([CHAT_LENGTH, b": trailing comment after the end\n\n"], raise_on=FAILURES))
    assert raised.value.category == "truncated_length"


def test_a_reader_that_drops_its_iterator_at_the_end_marker_gets_the_failure_in_its_loop():
    """Breaking out of ``for line in response.iter_lines()`` at [DONE] drops the library's
    generators, and an exception raised as they close would be lost: the failure is raised
    before the reader has the chunk that ended the answer, in its loop."""
    verdicts = []
    client = guarded_client([CHAT_LENGTH], on_verdict=lambda v, r: verdicts.append(v), raise_on=FAILURES)
    with pytest.raises(StreamFailed), client.stream("POST", CHAT, json={}) as response:
        for line in response.iter_lines():
            if line == "data: [DONE]":
                break
    assert [v.category for v in verdicts] == ["truncated_length"]


def test_a_reader_that_leaves_before_the_end_is_not_judged():
    verdicts = []
    client = guarded_client([CHAT_CUT, b"data: [DONE]\n\n"], on_verdict=lambda v, r: verdicts.append(v))
    with client.stream("POST", CHAT, json={}) as response:
        next(response.iter_raw())
    assert verdicts == []


def test_the_sdks_own_error_keeps_its_type_with_the_failure_as_its_cause():
    error_event = b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
    with pytest.raises(RuntimeError) as raised:
        sdk_like(guarded_client([CHAT_CUT, error_event]), error_on='"error"')
    assert isinstance(raised.value.__cause__, StreamFailed)
    assert raised.value.__cause__.category == "upstream_error"


def test_a_stream_read_inside_an_unrelated_except_block_still_raises():
    client = guarded_client([CHAT_LENGTH], raise_on=FAILURES)
    own = KeyError("the application's own, handled")
    with pytest.raises(StreamFailed):
        try:
            raise own
        except KeyError:
            sdk_like(client)
    assert own.__cause__ is None


def test_a_retry_inside_an_except_block_still_raises():
    """The exception being handled when the request is made is not one on its way out."""
    with pytest.raises(StreamFailed) as second:
        try:
            sdk_like(guarded_client([CHAT_LENGTH], raise_on=FAILURES))
        except StreamFailed:
            sdk_like(guarded_client([CHAT_LENGTH], raise_on=FAILURES))
    assert second.value.__context__ is not None and second.value.__context__ is not second.value


def test_a_reporter_that_raises_never_reaches_the_application():
    class Failing:
        capture_limit = 1 << 20

        def report(self, finished):
            raise OSError("disk full")

    read(httpx2, answering(httpx2, [CHAT_WHOLE]), reporter=Failing())


def test_the_reporter_gets_the_answer_as_judged_within_its_limit():
    class Keeping:
        def __init__(self, limit):
            self.capture_limit, self.finished = limit, []

        def report(self, finished):
            self.finished.append(finished)

    keeping = Keeping(1 << 20)
    read(
        httpx2,
        answering(httpx2, chunked(gzip.compress(CHAT_WHOLE), 3), headers={"content-encoding": "gzip"}),
        reporter=keeping,
    )
    (finished,) = keeping.finished
    assert finished.body == CHAT_WHOLE and finished.transport == "eof" and finished.status == 200
    assert finished.path == "/v1/chat/completions" and b'"model":"m"' in finished.request_body.replace(b" ", b"")
    small = Keeping(len(CHAT_WHOLE) - 1)
    read(httpx2, answering(httpx2, [CHAT_WHOLE]), reporter=small)
    assert small.finished == []


def test_a_stream_failure_pickles_with_its_verdict():
    with pytest.raises(StreamFailed) as raised:
        read(httpx2, answering(httpx2, [CHAT_CUT]))
    copy = pickle.loads(pickle.dumps(raised.value))
    assert copy.verdict == raised.value.verdict and str(copy) == str(raised.value)


def test_the_current_span_is_marked():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("swallowed"):
        try:
            sdk_like(guarded_client([CHAT_LENGTH], raise_on=FAILURES))
        except StreamFailed:
            pass  # the application swallows it: the span still says
    with tracer.start_as_current_span("whole"):
        sdk_like(guarded_client([CHAT_WHOLE]))
    swallowed, whole = exporter.get_finished_spans()
    assert swallowed.status.status_code is StatusCode.ERROR
    assert swallowed.status.description == fastsse.MESSAGES["truncated_length"]
    assert swallowed.attributes["fastsse.category"] == "truncated_length"
    assert tuple(swallowed.attributes["gen_ai.response.finish_reasons"]) == ("length",)
    assert whole.status.status_code is StatusCode.UNSET
    assert whole.attributes["fastsse.category"] == "complete"
    assert trace.get_current_span().is_recording() is False


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.__name__)
def test_a_compression_bomb_is_judged_in_bounded_memory(lib):
    """100 MB of events that gzip to about 100 KB, in one chunk: judged a piece at a time (the
    reader's own library inflates it too: that is the reader's)."""
    import tracemalloc
    import zlib as zlib_

    event = b'data: {"id":"1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    compressor = zlib_.compressobj(9, zlib_.DEFLATED, 31)
    bomb = b"".join(compressor.compress(event * 10_000) for _ in range(100)) + compressor.flush()
    guard = Transport(lib.MockTransport(lambda r: None))
    request = lib.Request("POST", CHAT)
    response = lib.Response(200, headers={"content-type": "text/event-stream", "content-encoding": "gzip"})
    judgement = guard._judgement(request, response)
    tracemalloc.start()
    judgement.feed(bomb)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak
    assert judgement.finish("eof").category == "no_end_marker"


def test_an_answer_that_does_not_decode_as_it_says_is_not_judged():
    got, verdicts = read(
        httpx2, answering(httpx2, [b"not gzip at all"], headers={"content-encoding": "gzip"}), mode="sync"
    )
    assert verdicts == []


def test_the_scanners_bounds_are_options_and_bad_ones_are_refused_at_once():
    with pytest.raises(StreamFailed) as raised:
        read(httpx2, answering(httpx2, [CHAT_WHOLE]), max_event_bytes=100, max_line_bytes=100)
    assert raised.value.category == "limit_exceeded"
    _, verdicts = read(httpx2, answering(httpx2, [CHAT_WHOLE]), max_event_bytes=1 << 20, max_line_bytes=1 << 20)
    assert verdicts[0].complete
    with pytest.raises(ValueError):
        Transport(httpx2.MockTransport(lambda r: None), protocol="smoke-signals")


CHUNKINGS = {"whole": lambda data: [data], "by 7 bytes": lambda data: chunked(data, 7)}


def leaving_after_first_event(client) -> bool:
    """A reader that takes the first event and leaves (breaks out, closes the answer); whether
    it had left when an exception came."""
    left = False
    try:
        with client.stream("POST", CHAT, json={}) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    left = True
                    break
            response.close()
    except StreamFailed:
        assert not left, "leaving raised"
        return False
    return left


def stopping_at_the_finish(client) -> None:
    """A reader that stops at the event that carries the finish reason, without reading the
    closing events after it, as LiteLLM does with Anthropic's message_delta."""
    with client.stream("POST", CHAT, json={}) as response:
        try:
            for line in response.iter_lines():
                if '"finish_reason":"' in line:
                    break
        finally:
            response.close()


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_leaving_mid_answer_never_raises_however_it_was_chunked(chunking):
    """Leaving is the reader's own cut: it never raises.  (An answer that had ended cut before
    the reader read its first event, all in one chunk, raises at that read, before it left.)"""
    for answer in (CHAT_CUT, CHAT_NO_DONE, CHAT_WHOLE):
        left = leaving_after_first_event(guarded_client(CHUNKINGS[chunking](answer)))
        assert left or (chunking == "whole" and answer == CHAT_NO_DONE)


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_a_reader_that_stops_at_the_finish_is_judged_however_it_was_chunked(chunking):
    """The closing events are read before the finish reaches the reader: a dropped [DONE]
    raises where it reads, and a whole answer is judged complete."""
    with pytest.raises(StreamFailed) as raised:
        stopping_at_the_finish(guarded_client(CHUNKINGS[chunking](CHAT_NO_DONE)))
    assert raised.value.category == "no_end_marker"
    verdicts = []
    stopping_at_the_finish(guarded_client(CHUNKINGS[chunking](CHAT_WHOLE), on_verdict=lambda v, r: verdicts.append(v)))
    assert [v.category for v in verdicts] == ["complete"]


def test_by_default_only_what_the_application_cannot_see_raises():
    verdicts = []
    sdk_like(guarded_client([CHAT_LENGTH], on_verdict=lambda v, r: verdicts.append(v)))  # finish_reason says it
    assert [v.category for v in verdicts] == ["truncated_length"]
    assert "truncated_length" not in UNSEEN and "no_end_marker" in UNSEEN and FAILURES > UNSEEN
    with pytest.raises(StreamFailed):
        sdk_like(guarded_client([CHAT_NO_DONE]))


def test_a_plain_sse_feed_is_not_an_answer():
    """SSE of no LLM dialect (an app's own feed, read by a client that also reads answers),
    from a path that names no protocol: heard by on_verdict, never raised or reported."""
    feed = b'event: price\ndata: {"price": 3}\n\nevent: price\ndata: {"price": 4}\n\n'
    verdicts = []
    got, _ = read(
        httpx2, answering(httpx2, [feed]), url="http://app.test/feed", on_verdict=lambda v, r: verdicts.append(v)
    )
    assert got == [feed] and [(v.protocol, v.events) for v in verdicts] == [("unknown", 2)]


def test_sse_without_its_content_type_on_a_generation_path_is_judged():
    with pytest.raises(StreamFailed) as raised:
        read(httpx2, answering(httpx2, [CHAT_CUT], headers={"content-type": "text/plain; charset=utf-8"}))
    assert raised.value.category == "no_end_marker"
    got, verdicts = read(httpx2, answering(httpx2, [b'{"id": 1}'], headers={"content-type": "application/json"}))
    assert verdicts == []


def test_raw_deflate_is_read():
    import zlib as zlib_

    compressor = zlib_.compressobj(6, zlib_.DEFLATED, -zlib_.MAX_WBITS)
    raw = compressor.compress(CHAT_CUT) + compressor.flush()
    with pytest.raises(StreamFailed) as raised:
        read(httpx2, answering(httpx2, [raw], headers={"content-encoding": "deflate"}))
    assert raised.value.category == "no_end_marker"


def test_an_answer_left_unjudged_is_said_in_the_log(caplog):
    url = "http://quiet.test/v1/chat/completions"
    for _ in range(3):  # said once for its host, path and encoding
        read(httpx2, answering(httpx2, [b"\x8b\x00"], headers={"content-encoding": "x-snappy"}), url=url)
    read(httpx2, answering(httpx2, [b"not gzip"], headers={"content-encoding": "gzip"}), url=url)
    said = [r.getMessage() for r in caplog.records if r.name == "fastsse.guard"]
    assert len(said) == 2 and "x-snappy" in said[0] and "gzip" in said[1]
    assert all("quiet.test/v1/chat/completions" in line for line in said)


class _Handlers:
    """Error classes as an SDK has them (openai's names), for the User-Agent test below."""

    class APIError(Exception):
        pass

    class APIConnectionError(APIError):
        pass

    class APITimeoutError(APIConnectionError):
        pass


def test_the_failure_is_the_sdks_own_error_by_retryability(monkeypatch):
    """Told by the User-Agent: a failure a retry can help is the SDK's connection error (which
    retry code retries), one it cannot is its base API error; a transport's break is still the
    transport's error too."""
    import sys

    monkeypatch.setitem(sys.modules, "openai", _Handlers)

    def failing(answer, fail=None, **options):
        transport = Transport(httpx2.MockTransport(answering(httpx2, [answer], fail=fail)), **options)
        with pytest.raises(StreamFailed) as raised:
            sdk_like(httpx2.Client(transport=transport, headers={"user-agent": "OpenAI/Python 3.57.0"}))
        return raised.value

    cut = failing(CHAT_NO_DONE)
    assert isinstance(cut, _Handlers.APIConnectionError) and cut.retryable and cut.request is not None
    limit = failing(CHAT_LENGTH, raise_on=FAILURES)
    assert isinstance(limit, _Handlers.APIError) and not isinstance(limit, _Handlers.APIConnectionError)
    timeout = failing(CHAT_CUT, fail=httpx2.ReadTimeout("idle"))
    assert isinstance(timeout, _Handlers.APITimeoutError) and isinstance(timeout, httpx2.ReadTimeout)
    assert str(timeout) == timeout.verdict.message and timeout.category == "transport_error"


def test_an_answer_let_go_of_unclosed_is_judged_when_asked():
    """An SDK that raises at an event it cannot read and leaves the answer in a reference
    cycle (LiteLLM at a corrupt Bedrock frame): judge_abandoned (the reporter calls it when
    it closes) judges it as its reader left it; an answer still being read is not touched."""
    from fastsse.guard import judge_abandoned

    verdicts = []
    client = guarded_client([b'data: {"broken\n\n', CHAT_CUT], on_verdict=lambda v, r: verdicts.append(v))

    def read_and_let_go():
        response = client.send(client.build_request("POST", CHAT, json={}), stream=True)
        chunks = response.iter_raw()
        next(chunks)  # the reader stops at the event it cannot read
        cycle = {"chunks": chunks}
        cycle["self"] = cycle  # only the garbage collector ends it

    gc.disable()
    try:
        read_and_let_go()
        live = client.send(client.build_request("POST", CHAT, json={}), stream=True)
        live_chunks = live.iter_raw()
        next(live_chunks)
        assert verdicts == []
        judge_abandoned()
    finally:
        gc.enable()
    assert [v.category for v in verdicts] == ["malformed_event"]
    with pytest.raises(StreamFailed):  # the live one reads on, and is judged at its own end
        b"".join(live_chunks)
    live.close()


def test_an_on_verdict_that_raises_never_cuts_the_answer(caplog):
    def failing(verdict, request):
        raise KeyError("a bug in the application's callback")

    got, _ = read(httpx2, answering(httpx2, chunked(CHAT_WHOLE, 9)), on_verdict=failing)
    assert b"".join(got) == CHAT_WHOLE
    assert any("on_verdict raised" in r.getMessage() for r in caplog.records)


def test_a_break_while_reading_ahead_hands_over_what_came_first():
    """The connection breaks after the finish, before [DONE]: the reader has every chunk that
    came, then the failure (the transport's, as it is)."""
    chunks = chunked(CHAT_NO_DONE, 11)
    handler = answering(httpx2, chunks, fail=httpx2.ReadError("reset"))
    client = httpx2.Client(transport=Transport(httpx2.MockTransport(handler)))
    got = []
    with pytest.raises(StreamFailed) as raised, client.stream("POST", CHAT, json={}) as response:
        for chunk in response.iter_raw():
            got.append(chunk)
    assert b"".join(got) == CHAT_NO_DONE
    assert raised.value.category == "transport_error" and isinstance(raised.value, httpx2.ReadError)


@pytest.mark.parametrize("content_type", ["text/plain", "application/octet-stream", None])
def test_an_unlabelled_answer_is_judged_only_if_it_is_sse(content_type):
    headers = {"content-type": content_type} if content_type else {}

    def unlabelled(body):
        stream = answering(httpx2, [body])(None).stream  # (streamed, as a socket's body is)
        return lambda request: httpx2.Response(200, headers=headers, stream=stream)

    whole_json = b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": []}'
    verdicts = []
    for body in (whole_json, b"", b"\n"):  # a non-streamed answer, or nothing: not judged
        client = httpx2.Client(
            transport=Transport(httpx2.MockTransport(unlabelled(body)), on_verdict=lambda v, r: verdicts.append(v))
        )
        assert client.post(CHAT, json={}).content == body and verdicts == []
    client = httpx2.Client(transport=Transport(httpx2.MockTransport(unlabelled(CHAT_CUT))))
    with pytest.raises(StreamFailed):
        client.post(CHAT, json={})
    # protocol= names the dialect of streams, not which answers are streams
    client = httpx2.Client(transport=Transport(httpx2.MockTransport(unlabelled(b"PK\x03\x04")), protocol="chat"))
    assert client.get("http://provider.test/v1/files/file-1/content").content == b"PK\x03\x04"


def test_an_answer_over_the_reporters_capture_is_said_in_the_log(caplog):
    class Small:
        capture_limit = 10

        def report(self, finished):
            raise AssertionError("reported past the capture limit")

    read(httpx2, answering(httpx2, [CHAT_WHOLE]), reporter=Small())
    said = [r.getMessage() for r in caplog.records if r.name == "fastsse.guard"]
    assert len(said) == 1 and "capture limit (10 bytes)" in said[0]

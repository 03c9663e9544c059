"""The guard's transports, each case on httpx and on httpx2, sync and async, with a stand-in
inner transport that answers given chunks (or breaks after them)."""

from __future__ import annotations

import asyncio
import gzip
import pickle

import httpx
import httpx2
import pytest

import fastsse
from fastsse.guard import AsyncTransport, StreamFailed, Transport

from .events import CHAT_CUT, CHAT_LENGTH, CHAT_WHOLE, GEMINI_ARRAY, OLLAMA_WHOLE, chunked

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
        chunks = chunked(CHAT_WHOLE, 7)
        got, verdicts = read(lib, answering(lib, chunks), mode=mode)
        assert got == chunks
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
            read(lib, handler, mode=mode)
        assert raised.value.category == "truncated_length"

    def test_an_encoding_it_cannot_read_passes_unjudged_and_unchanged(self, lib, mode):
        got, verdicts = read(lib, answering(lib, [b"\x8b\x00"], headers={"content-encoding": "x-snappy"}), mode=mode)
        assert got == [b"\x8b\x00"] and verdicts == []

    def test_brotli_is_read_when_it_is_installed(self, lib, mode):
        brotli = pytest.importorskip("brotli")
        handler = answering(lib, chunked(brotli.compress(CHAT_LENGTH), 5), headers={"content-encoding": "br"})
        with pytest.raises(StreamFailed) as raised:
            read(lib, handler, mode=mode)
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

    @pytest.mark.parametrize("cut", [CHAT_CUT, CHAT_LENGTH, CHAT_WHOLE[:-30]])
    @pytest.mark.parametrize("transport", ["reset", "timeout", "error"])
    def test_a_break_before_the_end_is_judged_as_the_scanner_judges_it(self, lib, mode, cut, transport):
        failure = {"reset": lib.ReadError("x"), "timeout": lib.ReadTimeout("x"), "error": lib.RemoteProtocolError("x")}
        with pytest.raises(StreamFailed) as raised:
            read(lib, answering(lib, [cut], fail=failure[transport]), mode=mode)
        assert raised.value.verdict == fastsse.scan(cut, "chat", transport)

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
        sdk_like(guarded_client([CHAT_LENGTH, b": trailing comment after the end\n\n"]))
    assert raised.value.category == "truncated_length"


def test_a_reader_that_drops_its_iterator_at_the_end_marker_hears_of_it_only_in_on_verdict():
    """Breaking out of ``for line in response.iter_lines()`` closes the library's generators
    as they are dropped, and an exception raised there is lost (Python reports it as
    unraisable): such a reader is told by on_verdict, the span and the reporter, not by an
    exception.  The SDKs hold their iterator and close the answer themselves."""
    verdicts = []
    client = guarded_client([CHAT_LENGTH], on_verdict=lambda v, r: verdicts.append(v))
    with client.stream("POST", CHAT, json={}) as response:
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
    client = guarded_client([CHAT_LENGTH])
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
            sdk_like(guarded_client([CHAT_LENGTH]))
        except StreamFailed:
            sdk_like(guarded_client([CHAT_LENGTH]))
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
            sdk_like(guarded_client([CHAT_LENGTH]))
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

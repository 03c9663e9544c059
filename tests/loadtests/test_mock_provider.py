"""The mock provider over real HTTP: every fault of every protocol reaches the client as its name
says (judged by fastsse from the bytes a raw socket read), the byte log tells the truth, and the
streams are shaped as the real captures in shared/corpus are.

A fixture that says the wrong thing invalidates every study made with it, so the mock is held to
three witnesses: fastsse's verdict, its own log, and the corpus.
"""

from __future__ import annotations

import json
import re
import socket
import time

import pytest

from fastsse import scan
from loadtests.wire import CONTENT_TYPES, EXPECTED_CATEGORY, EXPECTED_OVER_HTTP, FAULTS, PROTOCOLS, applies, wire
from tests.fastsse.conftest import CORPUS, corpus_file
from tests.loadtests.mock_helpers import CASES, PATHS, STALL_SECONDS, Mock, generation, request, stream_path


@pytest.fixture(scope="module")
def mock(tmp_path_factory):
    running = Mock(tmp_path_factory.mktemp("mock"))
    yield running
    running.stop()


# ---------------------------------------------------------------------------------------------
# every fault of every protocol, over HTTP
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("protocol", "fault"), CASES, ids=[f"{d}-{f}" for d, f in CASES])
def test_every_fault_reaches_the_client_as_its_name_says(mock, protocol, fault):
    before = len(mock.entries())
    got = request(mock.port, "POST", stream_path(protocol, f"/{fault}"), generation(protocol))
    assert got["status"] == 200
    assert got["headers"]["content-type"].startswith(CONTENT_TYPES.get(protocol, "text/event-stream"))
    transport = "reset" if got["ending"] == "reset" else "eof"
    assert got["ending"] == {"reset": "reset"}.get(fault, "eof"), got["ending"]
    verdict = scan(got["body"], protocol, transport)
    assert verdict.category == EXPECTED_OVER_HTTP[fault], verdict
    assert scan(got["body"], protocol).category == EXPECTED_CATEGORY[fault]
    assert verdict.protocol == protocol or fault == "empty"
    if fault == "stall":  # half: a busy machine can shorten the silence seen (read late)
        assert got["longest_gap"] >= STALL_SECONDS * 0.5
    # the log says what went on the wire, to the byte
    (entry,) = mock.entries()[before:]
    assert entry["fault"] == entry["applied"] == fault and entry["protocol"] == protocol
    assert entry["bytes_sent"] == len(got["body"])
    expected = wire(protocol, fault)
    assert entry["terminal_sent"] is expected.terminal_sent
    assert entry["ending"] == expected.ending
    if fault in ("F1", "F3", "reset", "stall"):
        assert entry["text_chars"] > 0, "a cut stream should carry part of the answer"


def test_a_healthy_stream_carries_the_whole_readable_answer(mock):
    got = request(mock.port, "POST", PATHS["chat"], generation("chat"))
    text = "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
        for line in got["body"].decode().split("\n\n")
        if line.startswith("data: {") and '"choices":[{' in line
    )
    assert text.startswith("Sentence 1 of 6 ") and text.endswith(
        "Sentence 6 of 6 of the mock provider's answer, which keeps going until it is complete."
    )


def test_once_faults_the_first_answer_and_heals_its_retries(mock):
    prefix = f"/F1-once.t{time.monotonic_ns()}"
    first, second, third = (
        scan(request(mock.port, "POST", stream_path("responses", prefix), generation("responses"))["body"], "responses")
        for _ in range(3)
    )
    assert first.category == "no_end_marker"
    assert second.category == third.category == "complete"
    other = scan(
        request(mock.port, "POST", stream_path("responses", prefix + "x"), generation("responses"))["body"], "responses"
    )
    assert other.category == "no_end_marker", "another prefix has a once of its own"
    entries = [e for e in mock.entries() if e["path"].startswith(prefix + "/")]
    assert [e["applied"] for e in entries] == ["F1", "F0", "F0"] and all(e["once"] for e in entries)


def test_a_fallback_without_streaming_gets_one_json_answer(mock):
    """One CLI asks again without streaming when a stream breaks: transport faults are the
    stream's, a model's limit is said in the whole answer's own words."""
    whole = request(mock.port, "POST", "/F1/v1/chat/completions", generation("chat", False))
    answer = json.loads(whole["body"])
    assert whole["headers"]["content-type"] == "application/json"
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert "Sentence 6 of 6" in answer["choices"][0]["message"]["content"]
    expected = {
        "chat": ("choices", 0, "finish_reason", "length"),
        "responses": ("status", "incomplete"),
        "anthropic": ("stop_reason", "max_tokens"),
        "gemini": ("candidates", 0, "finishReason", "MAX_TOKENS"),
    }
    for protocol, (*keys, value) in expected.items():
        path = PATHS[protocol].replace("streamGenerateContent?alt=sse", "generateContent")
        got = json.loads(request(mock.port, "POST", "/F4" + path, generation(protocol, False))["body"])
        for key in keys:
            got = got[key]
        assert got == value, protocol


def test_the_endpoints_a_client_probes_answer(mock):
    assert request(mock.port, "HEAD", "/")["status"] == 200
    models = json.loads(request(mock.port, "GET", "/F4/v1/models")["body"])
    assert models["object"] == "list" and {m["object"] for m in models["data"]} == {"model"}
    count = request(mock.port, "POST", "/v1/messages/count_tokens", {"model": "m", "messages": []})
    assert json.loads(count["body"]) == {"input_tokens": 12}
    count = request(mock.port, "POST", "/v1beta/models/gemini-2.5-flash:countTokens", {})
    assert count["status"] == 200 and "totalTokens" in json.loads(count["body"])
    missing = request(mock.port, "POST", "/v1/embeddings", {"model": "m"})
    assert missing["status"] == 404 and "no such endpoint" in json.loads(missing["body"])["error"]["message"]


def test_a_body_that_is_not_json_is_a_400_with_a_reason(mock):
    sock = socket.create_connection(("127.0.0.1", mock.port), timeout=5)
    sock.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: 5\r\n\r\nnope!")
    reply = b""
    while piece := sock.recv(65536):
        reply += piece
    sock.close()
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"not JSON" in reply


def test_keep_alive_serves_one_request_after_another(mock):
    sock = socket.create_connection(("127.0.0.1", mock.port), timeout=5)
    body = json.dumps(generation("anthropic")).encode()
    one = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    sock.sendall(one + one)
    reply = b""
    # Read until the second answer has begun and ended (its status line, its last chunk).
    while (
        reply.count(b"HTTP/1.1 ") < 2
        or b"message_stop" not in reply.rsplit(b"HTTP/1.1", 1)[1]
        or not reply.endswith(b"0\r\n\r\n")
    ):
        piece = sock.recv(65536)
        assert piece, f"the connection closed after {reply.count(b'HTTP/1.1 ')} answer(s)"
        reply += piece
    sock.close()
    assert reply.count(b"HTTP/1.1 200 OK") == 2


# ---------------------------------------------------------------------------------------------
# the shapes the corpus shows
# ---------------------------------------------------------------------------------------------
def events(body: bytes) -> list[tuple[str | None, object]]:
    """(event name, parsed data) of each SSE event with JSON data; [DONE] as the string."""
    out = []
    for block in re.split(rb"\r?\n\r?\n", body):
        name, data = None, []
        for line in block.decode("utf-8", "replace").splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if not data:
            continue
        text = "\n".join(data)
        try:
            out.append((name, json.loads(text)))
        except ValueError:
            out.append((name, text))
    return out


def kind(protocol: str, name: str | None, data) -> str:
    if isinstance(data, str):
        return data
    if "error" in data and protocol in ("chat", "gemini"):
        return "error"
    if protocol in ("responses", "anthropic"):
        return data.get("type", "?")
    if protocol == "chat":
        return "usage" if data.get("choices") == [] else "chunk"
    return "chunk"


def key_paths(value, prefix: str = "") -> set[str]:
    """Every key path of a JSON value, list positions folded to []."""
    paths = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            paths.add(prefix + key)
            paths |= key_paths(inner, prefix + key + ".")
    elif isinstance(value, list):
        for inner in value:
            paths |= key_paths(inner, prefix + "[].")
    return paths


def pooled(protocol: str, event_kind: str, data) -> set[tuple[str, str]]:
    """(pool, path) of each key path: a Responses event's response object (and its output items)
    has one schema whichever event carries it, and so is compared with all of them; and every
    Responses event carries a sequence_number since 2025 (the corpus's one response.incomplete
    capture is from before)."""
    out = set()
    for path in key_paths(data):
        if protocol == "responses" and path.startswith(("response.output.[].", "item.")):
            out.add(("item", path.removeprefix("response.output.[].").removeprefix("item.")))
        elif protocol == "responses" and path.startswith("response."):
            out.add(("response", path))
        elif protocol == "responses" and path in ("type", "sequence_number"):
            out.add(("every event", path))  # the one capture of some events predates the field
        else:
            out.add((event_kind, path))
    return out


def corpus_shapes(protocol: str) -> set[tuple[str, str]]:
    shapes = set()
    for path in sorted((CORPUS / protocol).glob("*.sse")):
        for name, data in events(path.read_bytes()):
            shapes.add((kind(protocol, name, data), ""))
            shapes |= pooled(protocol, kind(protocol, name, data), data)
    return shapes


# Fields the mock sends that no capture of the corpus holds, each with where it is documented.
UNCAPTURED = {
    # the streamed mid-stream error (PROTOCOLS.md: "Anthropic ... event: error"); no capture
    ("anthropic", "error"): "PROTOCOLS.md §anthropic mid-stream error (no capture, see §7)",
    ("anthropic", "error.type"): "PROTOCOLS.md §anthropic mid-stream error",
    ("anthropic", "error.message"): "PROTOCOLS.md §anthropic mid-stream error",
    ("anthropic", "type"): "PROTOCOLS.md §anthropic mid-stream error",
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_event_is_shaped_as_the_captures_are(protocol):
    """Every event type the mock sends exists in the corpus, and every field path it fills is
    one that a real capture of that event type fills (the mock invents no field)."""
    corpus_file("MANIFEST.tsv")  # skips with a reason without the corpus
    if not (CORPUS / protocol).is_dir():
        pytest.skip(
            f"the corpus holds no capture of {protocol}: tests/fastsse (test_categories.py, test_framings.py) "
            "hold its shapes to the providers' documents and its frames to botocore's decoder"
        )
    shapes = corpus_shapes(protocol)
    invented = []
    for fault in FAULTS:
        if not applies(protocol, fault):
            continue
        sent = wire(protocol, fault, reasoning="Thought 1: look again." if fault != "F5" else "")
        whole = events(sent.body)[:-1] if fault == "F3" else events(sent.body)  # half an event
        for name, data in whole:
            event_kind = kind(protocol, name, data)
            if (event_kind, "") not in shapes and (protocol, event_kind) not in UNCAPTURED:
                invented.append((fault, event_kind, "(no such event)"))
            if isinstance(data, str):
                continue
            if protocol in ("responses", "anthropic"):
                assert name == data.get("type"), "the event: name is the data's type"
            for pool, path in sorted(pooled(protocol, event_kind, data) - shapes):
                if (protocol, path) not in UNCAPTURED:
                    invented.append((fault, pool, path))
    assert not invented, invented


# Faults whose real twin is in the corpus: the mock's stream and the capture end the same way
# (the same closing event kinds) and fastsse says the same of both.
CORPUS_TWINS = {
    ("chat", "F0"): "chat/openai-tool-call-usage.sse",
    ("chat", "F4"): "chat/openai-length-truncation.sse",
    ("responses", "F0"): "responses/openai-basic-pong.sse",
    ("responses", "F4"): "responses/openai-incomplete-max-output-tokens.sse",
    ("responses", "error"): "responses/openai-error-then-failed.sse",
    ("anthropic", "F0"): "anthropic/basic-end-turn.sse",
    ("anthropic", "F4"): "anthropic/max-tokens-mid-tool-use.sse",
    ("gemini", "F0"): "gemini/basic-stop-crlf.sse",
}


@pytest.mark.parametrize(("protocol", "fault"), sorted(CORPUS_TWINS), ids=[f"{d}-{f}" for d, f in sorted(CORPUS_TWINS)])
def test_a_fault_ends_as_its_real_capture_does(protocol, fault):
    captured = corpus_file(CORPUS_TWINS[protocol, fault])
    sent = wire(protocol, fault)
    tail = 3 if protocol == "chat" else 2

    def ending(body: bytes) -> list[str]:
        return [kind(protocol, n, d) for n, d in events(body)][-tail:]

    assert ending(sent.body) == ending(captured)
    assert scan(sent.body, protocol).category == scan(captured, protocol).category
    if protocol == "gemini":
        assert sent.body.endswith(b"\r\n\r\n") and captured.endswith(b"\r\n\r\n")
    if (protocol, fault) == ("responses", "F4"):
        final = events(sent.body)[-1][1]["response"]
        real = events(captured)[-1][1]["response"]
        assert (
            (final["status"], final["incomplete_details"])
            == (real["status"], real["incomplete_details"])
            == ("incomplete", {"reason": "max_output_tokens"})
        )


def test_gemini_errors_come_as_bare_json_as_captured():
    captured = corpus_file("gemini/error-mid-stream-bare-json.sse")
    sent = wire("gemini", "error").pieces[-1]
    assert not sent.startswith(b"data:") and sent.lstrip().startswith(b"{")
    assert b"\n{" in captured or captured.split(b"\n\n")[-1].lstrip().startswith(b"{")
    assert json.loads(sent)["error"]["status"] == "UNAVAILABLE"

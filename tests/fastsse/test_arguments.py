"""The transport argument, and what the scanner refuses: bad protocols, limits and transports,
feeding after close.
"""

from __future__ import annotations

import pytest

from .events import (
    COMPLETE_STREAMS,
    PROTOCOLS,
)
from .feeding import feed


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("transport", ["reset", "timeout", "error"])
@pytest.mark.parametrize("shape", ["complete", "cut", "empty"])
def test_transport_failure_wins_whatever_the_bytes(judge, protocol, transport, shape):
    data = COMPLETE_STREAMS[protocol]
    data = {"complete": data, "cut": data[: len(data) // 2], "empty": b""}[shape]
    verdict = judge(data, protocol, transport)
    assert verdict.category == "transport_error"
    assert verdict.transport == transport
    assert verdict.retryable is True
    assert verdict.complete is False
    assert verdict.protocol == protocol


def test_transport_does_not_override_an_exceeded_limit(judge):
    verdict = judge(COMPLETE_STREAMS["chat"], "chat", "timeout", max_line_bytes=64)
    assert verdict.category == "limit_exceeded"
    assert verdict.transport == "timeout"


def test_invalid_transport(impl):
    with pytest.raises(ValueError):
        impl.scan(COMPLETE_STREAMS["chat"], "chat", "closed")
    scanner = impl.Scanner("chat")
    scanner.feed(COMPLETE_STREAMS["chat"])
    with pytest.raises(ValueError):
        scanner.close("EOF")


@pytest.mark.parametrize("protocol", ["openai", "Chat", "", "unknown", "gemini "])
def test_invalid_protocol(impl, protocol):
    with pytest.raises(ValueError):
        impl.Scanner(protocol)
    with pytest.raises(ValueError):
        impl.scan(b"", protocol)


@pytest.mark.parametrize("bad", [0, -1, True])
@pytest.mark.parametrize("name", ["max_line_bytes", "max_event_bytes"])
def test_invalid_limits(impl, name, bad):
    with pytest.raises(ValueError):
        impl.Scanner("chat", **{name: bad})


def test_feed_after_close(impl):
    scanner = impl.Scanner("anthropic")
    scanner.feed(COMPLETE_STREAMS["anthropic"])
    assert scanner.close().category == "complete"
    with pytest.raises(RuntimeError):
        scanner.feed(b"event: ping\n\n")
    with pytest.raises(RuntimeError):
        scanner.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_empty_feeds_change_nothing(impl, protocol):
    data = COMPLETE_STREAMS[protocol]
    chunks = [b""] + [bytes([b]) + b"" for b in data[:5]] + [b"", data[5:], b""]
    assert feed(impl, chunks, protocol) == impl.scan(data, protocol)

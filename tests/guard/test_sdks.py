"""The bar of the guard: the official SDKs (openai chat and responses, anthropic, google-genai,
sync and async) with the guard in their HTTP client, against the mock provider and every fault
it injects.  Every fault the application cannot see reaches it as a ``StreamFailed`` carrying
the fault's category (raised where it reads, or as the cause of the SDK's own error), caught
by the SDK's own handler too; a fault the SDK reports itself (a token limit, reasoning only, no
finish reason) raises only when asked (``raise_on=FAILURES``); every healthy answer arrives
whole, and its verdict is complete."""

from __future__ import annotations

import asyncio
import gc
import importlib

import pytest

from fastsse.guard import FAILURES, UNSEEN, StreamFailed, stream_failure
from loadtests.wire import EXPECTED_OVER_HTTP, FAULTS, applies

from .apps import APPS

WHOLE = "Sentence 6 of 6 of the mock provider's answer, which keeps going until it is complete"
CASES = [
    (name, protocol, app, fault, mode)
    for name, protocol, sync, async_ in APPS
    for mode, app in (("sync", sync), ("async", async_))
    for fault in FAULTS
    if applies(protocol, fault)
]


# The error class each SDK's applications catch.
SDK_ERRORS = {
    "openai": ("openai", "OpenAIError"),
    "anthropic": ("anthropic", "AnthropicError"),
    "google-genai": ("google.genai.errors", "APIError"),
    "ollama": ("ollama", "ResponseError"),
}


def sdk_error(name: str) -> type:
    module, attribute = next(value for key, value in SDK_ERRORS.items() if name.startswith(key))
    return getattr(importlib.import_module(module), attribute)


def run(app, base: str, mode: str, **options):
    return asyncio.run(app(base, **options)) if mode == "async" else app(base, **options)


@pytest.mark.parametrize(
    ("name", "protocol", "app", "fault", "mode"), CASES, ids=[f"{c[0]}-{c[4]}-{c[3]}" for c in CASES]
)
def test_every_fault_reaches_the_application(name, protocol, app, fault, mode, mock):
    verdicts = []
    base = f"http://127.0.0.1:{mock.port}" + ("" if fault == "F0" else f"/{fault}")
    options = {"on_verdict": lambda verdict, request: verdicts.append(verdict)}
    if fault == "F0":
        text = run(app, base, mode, **options)
        assert " ".join(text.split()).endswith(WHOLE + "."), text[-200:]
        assert [v.category for v in verdicts] == ["complete"]
        assert verdicts[0].protocol == protocol
        return
    if EXPECTED_OVER_HTTP[fault] not in UNSEEN:  # the SDK reports it: raises only when asked
        run(app, base, mode, **options)
        assert [v.category for v in verdicts] == [EXPECTED_OVER_HTTP[fault]]
        verdicts.clear()
        options["raise_on"] = FAILURES
    with pytest.raises(Exception) as raised:  # noqa: PT011 - StreamFailed, or the SDK's own error caused by it
        run(app, base, mode, **options)
    if isinstance(raised.value, StreamFailed):  # (else the SDK's own error, the failure its cause)
        assert isinstance(raised.value, sdk_error(name)), f"{type(raised.value).__mro__} escapes the SDK's handler"
    failure = stream_failure(raised.value)
    if failure is None and (name, fault) == ("google-genai", "error"):
        # google-genai raises its own error at the error chunk and leaves the answer unread
        # and unclosed: the guard judges it when the answer is let go.
        assert type(raised.value).__name__ == "ServerError", raised.value
        del raised
        gc.collect()
        assert [v.category for v in verdicts] == ["upstream_error"]
        return
    assert failure is not None, f"{type(raised.value).__name__}: {raised.value}"
    assert failure.category == EXPECTED_OVER_HTTP[fault], failure.verdict
    assert str(failure) == failure.verdict.message
    assert [v.category for v in verdicts] == [failure.category]
    if fault == "reset":  # the transport error is kept, as the cause
        assert failure.__cause__ is not None and type(failure.__cause__).__name__ in (
            "ReadError",
            "RemoteProtocolError",
        )

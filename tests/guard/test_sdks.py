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
from .guard_page import table

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


def seen(raised: BaseException | None, verdicts: list) -> str:
    """What the application saw, as the guard page's table says it: the whole answer, the
    exception it got (the guard's, or the SDK's own with the guard's failure as its cause), or
    no exception where the SDK reports the fault itself."""
    if raised is None:
        return "whole" if [v.category for v in verdicts] == ["complete"] else f"no exception ({verdicts[0].category})"
    failure = stream_failure(raised)
    if failure is raised:
        return f"StreamFailed: {failure.category}"
    if failure is not None:
        return f"{type(raised).__name__} ← {failure.category}"
    return type(raised).__name__


DOCUMENTED = table("what-the-application-sees")


@pytest.mark.parametrize(
    ("name", "protocol", "app", "fault", "mode"), CASES, ids=[f"{c[0]}-{c[4]}-{c[3]}" for c in CASES]
)
def test_every_fault_reaches_the_application(name, protocol, app, fault, mode, mock):
    verdicts = []
    base = f"http://127.0.0.1:{mock.port}" + ("" if fault == "F0" else f"/{fault}")
    options = {"on_verdict": lambda verdict, request: verdicts.append(verdict)}
    raised = None
    try:
        text = run(app, base, mode, **options)
    except Exception as exc:  # noqa: BLE001 - what the application gets is the finding
        raised = exc
    if (name, fault) == ("google-genai", "error"):
        gc.collect()  # google-genai leaves the answer unclosed: judged when it is let go
    assert seen(raised, verdicts) == DOCUMENTED[name, fault], "the guard page's table says otherwise"
    if fault == "F0":
        assert " ".join(text.split()).endswith(WHOLE + "."), text[-200:]
        assert [v.category for v in verdicts] == ["complete"]
        assert verdicts[0].protocol == protocol
        return
    assert [v.category for v in verdicts] == [EXPECTED_OVER_HTTP[fault]]
    if raised is None:  # a fault the SDK reports itself: raised when asked
        assert EXPECTED_OVER_HTTP[fault] not in UNSEEN
        verdicts.clear()
        with pytest.raises(Exception) as asked:  # noqa: PT011 - StreamFailed, or the SDK's own error caused by it
            run(app, base, mode, **options, raise_on=FAILURES)
        raised = asked.value
    if isinstance(raised, StreamFailed):  # (else the SDK's own error, the failure its cause)
        assert isinstance(raised, sdk_error(name)), f"{type(raised).__mro__} escapes the SDK's handler"
        connection = getattr(importlib.import_module(sdk_error(name).__module__), "APIConnectionError", None)
        if connection is not None and name.startswith(("openai", "anthropic")):
            # generic retry code retries the SDK's connection error: only what a retry can help
            assert isinstance(raised, connection) == raised.retryable, type(raised).__mro__
    failure = stream_failure(raised)
    if failure is None:
        assert (name, fault) == ("google-genai", "error"), f"{type(raised).__name__}: {raised}"
        return
    assert failure.category == EXPECTED_OVER_HTTP[fault], failure.verdict
    assert str(failure) == failure.verdict.message
    if fault == "reset":  # the transport error is kept, as the cause
        assert failure.__cause__ is not None and type(failure.__cause__).__name__ in (
            "ReadError",
            "RemoteProtocolError",
        )

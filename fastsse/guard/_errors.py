"""``StreamFailed`` as the application's own handlers expect it: an instance of the error the
SDK reading the answer raises for a failed request, and of the transport's error that broke it.

An application already catches ``openai.OpenAIError`` (or ``anthropic.APIError``,
``google.genai.errors.APIError``) and ``httpx.TransportError``; a failure the guard raises must
be caught there too, and still be a ``StreamFailed``.  So the exception raised is of a class
made for the pair (cached): ``StreamFailed`` first, then

- the transport's own exception class, when a transport error broke the answer (a reset is
  still ``httpx2.ReadError``, a read timeout ``httpx2.ReadTimeout``);
- the SDK's, told by the request's User-Agent (the SDK must be imported already): a failure
  that a retry can help (``retryable``) is the SDK's connection error (``APITimeoutError`` for
  a timeout), which generic retry code retries; one that a retry cannot help is the SDK's base
  API error, which it does not.

The SDKs' constructors are not called (each wants a response or a status the guard does not
have): the attributes their handlers read are set instead.
"""

from __future__ import annotations

import sys
from typing import Any

from .._verdict import TRANSPORT_ERROR
from ._failure import StreamFailed

# (what the User-Agent holds, the SDK's module, its connection error, its timeout, its base)
_SDKS = (
    ("OpenAI/Python", "openai", "APIConnectionError", "APITimeoutError", "APIError"),
    ("Anthropic/Python", "anthropic", "APIConnectionError", "APITimeoutError", "APIError"),
    ("AnthropicBedrock/Python", "anthropic", "APIConnectionError", "APITimeoutError", "APIError"),
    ("google-genai-sdk/", "google.genai.errors", "APIError", "APIError", "APIError"),
    ("ollama-python/", "ollama", "ResponseError", "ResponseError", "ResponseError"),
)
_CLASSES: dict[tuple[type, ...], type[StreamFailed]] = {}
# What the SDKs' handlers read of their errors, set as their constructors would: None, but the
# message (and ollama's error) is the verdict's.
_ATTRIBUTES = ("message", "body", "code", "param", "type", "status", "details", "response", "error", "status_code")


def _sdk_error(request: Any, retryable: bool, timeout: bool) -> type | None:
    agent = request.headers.get("user-agent", "") if request is not None else ""
    for mark, module_name, connection, timed_out, base in _SDKS:
        if mark in agent:
            module = sys.modules.get(module_name)
            if module is None:
                return None
            name = (timed_out if timeout else connection) if retryable else base
            found = getattr(module, name, None)
            return found if isinstance(found, type) and issubclass(found, Exception) else None
    return None


def failure(verdict: Any, request: Any, cause: BaseException | None = None) -> StreamFailed:
    """The ``StreamFailed`` to raise for ``verdict``, the answer to ``request`` (``cause``: the
    transport's exception that broke it, if one did)."""
    bases: list[type] = [StreamFailed]
    if cause is not None and verdict.category == TRANSPORT_ERROR:
        bases.append(type(cause))
    sdk = _sdk_error(request, verdict.retryable, verdict.transport == "timeout")
    if sdk is not None and not any(issubclass(base, sdk) for base in bases):
        bases.append(sdk)
    key = tuple(bases)
    cls = _CLASSES.get(key)
    if cls is None:
        try:
            # (its message is the verdict's, whatever __str__ the SDK's class has)
            cls = type("StreamFailed", key, {"__module__": "fastsse.guard", "__str__": BaseException.__str__})
        except TypeError:  # classes that cannot be combined (their layouts differ)
            cls = StreamFailed
        _CLASSES[key] = cls
    exc = cls.__new__(cls)
    StreamFailed.__init__(exc, verdict, request)
    if cls is not StreamFailed:
        for name in _ATTRIBUTES:
            _set(exc, name, verdict.message if name in ("message", "error") else None)  # (error: ollama's)
        _set(exc, "_request", request)  # httpx's
    return exc


def _set(exc: BaseException, name: str, value: object) -> None:
    try:
        if not hasattr(type(exc), name) or not isinstance(getattr(type(exc), name), property):
            object.__setattr__(exc, name, value)
    except (AttributeError, TypeError):
        pass

"""``StreamFailed``: what the guard raises for an answer that is not complete, and
``stream_failure``, which finds it among an exception's causes."""

from __future__ import annotations

from typing import Any

from .. import Verdict


class StreamFailed(Exception):
    """A streamed answer that is not complete: ``verdict`` says how (its ``message`` is this
    exception's), ``retryable`` whether sending the same request again can help, ``request``
    the HTTP library's request it answered (None when built by hand)."""

    def __init__(self, verdict: Verdict, request: Any = None) -> None:
        Exception.__init__(self, verdict.message)  # (not the SDK error class a subclass adds)
        self.verdict = verdict
        self.request = request

    @property
    def category(self) -> str:
        return self.verdict.category

    @property
    def retryable(self) -> bool:
        return self.verdict.retryable

    def __reduce__(self) -> tuple[type[StreamFailed], tuple[Verdict]]:
        # (the class made for an SDK is not importable by name: a copy is a plain StreamFailed)
        return (StreamFailed, (self.verdict,))


def stream_failure(exc: BaseException | None) -> StreamFailed | None:
    """The ``StreamFailed`` that ``exc`` is, or that caused it (its ``__cause__`` or
    ``__context__``, however deep); None when there is none."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, StreamFailed):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None

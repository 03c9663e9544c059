"""The current OpenTelemetry span, told what the guard found, when ``opentelemetry-api`` is
installed (else nothing happens).  A failed answer marks the span ERROR with the verdict's
sentence, so that a failure the application swallows still leaves its trace red; every judged
answer sets ``fastsse.category`` and, when the provider sent one, ``gen_ai.response.finish_reasons``
(the OpenTelemetry GenAI semantic conventions' attribute)."""

from __future__ import annotations

from .. import Verdict

try:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode
except ImportError:  # optional: without it the guard marks nothing
    INSTALLED = False
else:
    INSTALLED = True


def mark(verdict: Verdict) -> None:
    if not INSTALLED:
        return
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attribute("fastsse.category", verdict.category)
    finish = verdict.finish_reason_raw or verdict.finish_reason
    if finish:
        span.set_attribute("gen_ai.response.finish_reasons", [finish])
    if not verdict.complete:
        span.set_attribute("fastsse.retryable", verdict.retryable)
        span.set_status(Status(StatusCode.ERROR, verdict.message))

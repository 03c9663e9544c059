"""The guard: fastsse inside an application's HTTP client, where a cut answer would otherwise
pass for a finished one.

Wrap the transport the SDK's client uses (httpx or httpx2; neither is a dependency)::

    import httpx2, openai
    from fastsse.guard import StreamFailed, Transport

    client = openai.OpenAI(http_client=httpx2.Client(transport=Transport(httpx2.HTTPTransport())))

Every streamed answer is judged as the application reads it, its bytes unchanged, with the
protocol told by the request's path (or detected), once, at its end (its end event, a
provider's error, the body's end or a transport error).  When the verdict is a failure the
application cannot see for itself (``UNSEEN``: a cut, a dropped end event, half an event, a
provider's error, ...), the application gets ``StreamFailed`` (carrying the ``Verdict``) where
it reads, in the place of the chunk that ended the answer; or as the cause of the SDK's own
error when the SDK raises first (``stream_failure(exc)`` finds it).  The exception is also the
SDK's own error class (its connection error when a retry can help, its base API error when
not) and, after a transport error, that error's class: the handlers an application has catch
it.  Answers that do not stream, and answers that are not a success, pass untouched.

Options (keywords of ``Transport`` and ``AsyncTransport``):

- ``raise_on``: the categories that raise (default ``UNSEEN``; ``FAILURES`` is every one but
  ``complete``; an empty set raises nothing, for a guard that only watches);
- ``on_verdict(verdict, request)``: called with every verdict, complete ones too;
- ``reporter``: sends each judged answer to the verdict service in the background
  (``fastsse_service.reporter.Reporter``);
- ``protocol``: the protocol of every answer, instead of the one the path tells;
- ``mark_span``: with ``opentelemetry-api`` installed, the current span is marked (default on);
- ``max_event_bytes``, ``max_line_bytes``: the scanner's bounds (fastsse's defaults).

This package, unlike the rest of fastsse, lives beside I/O: it wraps a transport.  It does none
of its own (the reporter does, and is the service's).
"""

from ._failure import StreamFailed, stream_failure
from ._judgement import FAILURES, UNSEEN, Finished, Reporter, judge_abandoned
from ._transport import AsyncTransport, Transport

for _public in (AsyncTransport, Finished, StreamFailed, Transport, stream_failure):
    _public.__module__ = __name__  # tracebacks and reprs name fastsse.guard, not its private modules

__all__ = [
    "FAILURES",
    "UNSEEN",
    "AsyncTransport",
    "Finished",
    "Reporter",
    "StreamFailed",
    "Transport",
    "judge_abandoned",
    "stream_failure",
]

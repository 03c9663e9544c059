"""``fastsse-service tap``: a reverse proxy in front of an LLM API that posts every streamed
answer it relays to the verdict service.  proxy.py relays, spool.py keeps and posts,
identify.py tells what a request is.

spool.py and identify.py need neither the service's settings nor a web framework (the guard's
reporter uses them in an application): the proxy is imported when it is asked for.
"""

from __future__ import annotations

__all__ = ["Tap", "run"]


def __getattr__(name: str):
    if name in __all__:
        from . import proxy

        return getattr(proxy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

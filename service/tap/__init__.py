"""``fastsse-service tap``: a reverse proxy in front of an LLM API that posts every streamed
answer it relays to the verdict service.  proxy.py relays, spool.py keeps and posts,
identify.py tells what a request is."""

from .proxy import Tap, run

__all__ = ["Tap", "run"]

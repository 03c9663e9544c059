"""The Python twin's ``Caches``: the same object as the compiled twin's, holding nothing.

The compiled twin's caches (``_caches.pxd``: templates of repeated events, the last few
judgements) only skip work whose answer is already known.  The Python twin is the reference
that they are checked against, so it does that work every time: it reads every event and
judges every stream afresh.  Its ``Caches`` exists so that code which passes one, or clears the
default one, runs unchanged on either twin; it stays empty.
"""

from __future__ import annotations


class Caches:
    """What scanners learn from the streams they read, for the streams after them (nothing,
    in the Python twin)."""

    __slots__ = ()

    def clear(self) -> None:
        """Forget every template and judgement (there are none)."""

    def stats(self) -> dict[str, int]:
        """The compiled twin's figures, all zero here."""
        return {"template_slots": 0, "template_tries": 0, "template_score": 0, "judgements": 0}

    def template_bytes(self) -> list[bytes]:
        """The bytes every template keeps (none)."""
        return []


default_caches = Caches()

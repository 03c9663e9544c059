"""fastsse: was a streamed LLM answer complete, or silently cut off?

Feed the raw bytes of one captured streamed response (Server-Sent Events, Bedrock's AWS event
stream, Ollama's NDJSON) to a ``Scanner`` (or pass them whole to ``scan``) and get one
``Verdict``.  Sans-IO: no sockets, files or logging in here.

The scanner is compiled (Cython) when the extension was built, with a pure-Python twin that
gives identical verdicts; ``FASTSSE_NO_EXTENSIONS=1`` forces the twin, ``IMPLEMENTATION`` says
which one runs.  What scanners learn from one stream for the next (templates of repeated
events, recent judgements) lives in a ``Caches`` object: ``default_caches`` for the process
unless a scanner is given its own.
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import TYPE_CHECKING

from ._limits import AUTO, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES, UNKNOWN_PROTOCOL
from ._protocols import PROTOCOLS, protocol_for_path, stream_protocol
from ._verdict import CATEGORIES, MESSAGES, RETRYABLE, TRANSPORTS, Verdict

if TYPE_CHECKING:  # both twins have one API; the Python twin's is the one type checkers read
    from ._scanner_py import Caches, Scanner, default_caches, scan

    IMPLEMENTATION: str
elif os.environ.get("FASTSSE_NO_EXTENSIONS"):
    from ._scanner_py import Caches, Scanner, default_caches, scan

    IMPLEMENTATION = "python"
else:
    try:
        from ._scanner import Caches, Scanner, default_caches, scan
    except ImportError:  # not built (e.g. a source checkout without a compiler)
        from ._scanner_py import Caches, Scanner, default_caches, scan

        IMPLEMENTATION = "python"
    else:
        IMPLEMENTATION = "cython"

try:
    # The one source of the version: the installed package's metadata (pyproject.toml).
    __version__ = metadata.version("fastsse")
except metadata.PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AUTO",
    "CATEGORIES",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "IMPLEMENTATION",
    "MESSAGES",
    "PROTOCOLS",
    "RETRYABLE",
    "TRANSPORTS",
    "UNKNOWN_PROTOCOL",
    "Caches",
    "Scanner",
    "default_caches",
    "protocol_for_path",
    "stream_protocol",
    "__version__",
    "Verdict",
    "scan",
]

"""The service without its database: the ceiling bench_service.py measures the service against.

Every post takes the service's own path (the server stack, credentials, parameters, scanning and
hashing, the writer's queue and batches, metrics, the answer), except that the writer's store
keeps nothing: a batch "commits" in memory at once.  What this serves is the most the service
could serve with any database on the same machine; what it serves with one is less by what
storing costs.  A benchmark's tool only: its 201 means nothing was stored.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastsse_service import app  # noqa: E402
from fastsse_service.stores import DiscardingStore  # noqa: E402


def served_app() -> app.Service:
    # The database the benchmark gives (a scratch SQLite file) still holds the schema and
    # serves the reads; the posts' verdicts go nowhere.  The benchmark posts a new stream_id
    # every time, so no post is a duplicate that the store would have to read back.
    return app.served_app(store=DiscardingStore())


if __name__ == "__main__":
    from served import serve

    serve("bench.nodb_app:served_app", factory=True, migrate=True)

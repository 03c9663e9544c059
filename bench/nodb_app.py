"""The service without its database: the ceiling bench_service.py measures the service against.

Every post takes the service's own path (the server stack, credentials, parameters, scanning and
hashing, the writer's queue and batches, metrics, the answer), except that the writer's store
keeps nothing: a batch "commits" in memory at once.  What this serves is the most the service
could serve with any database on the same machine; what it serves with one is less by what
storing costs.  A benchmark's tool only: its 201 means nothing was stored.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service import app, writer  # noqa: E402


class MemoryStore(writer._Store):
    """Takes every row as new and gives it an id; keeps nothing (the benchmark posts a new
    stream_id every time, so no post is a duplicate)."""

    def __init__(self, engine, shard: int) -> None:
        self._ids = itertools.count(1)

    async def insert(self, rows: list[dict]) -> dict[tuple[str, str], tuple]:
        return {(row["gateway"], row["stream_id"]): (next(self._ids), None, None) for row in rows}


def served_app() -> app.Service:
    # The writer picks its store by the database URL: an SQLite URL (the scratch file the
    # benchmark gives, which still holds the schema and serves the reads) gets this one.
    writer._SqliteStore = MemoryStore
    return app.served_app()


if __name__ == "__main__":
    from served import serve

    serve("bench.nodb_app:served_app", factory=True, migrate=True)

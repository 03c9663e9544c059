"""Where the writer's batches go: one store per kind of database, and one that keeps nothing."""

from __future__ import annotations

from sqlalchemy import Engine

from .base import Store
from .discard import DiscardingStore

__all__ = ["DiscardingStore", "Store", "open_store"]


def open_store(engine: Engine) -> Store:
    """The store for the engine's database (its connection is made at the first batch)."""
    if engine.dialect.name == "postgresql":
        from .postgres import PostgresStore

        return PostgresStore(engine)
    from .sqlite import SqliteStore

    return SqliteStore(engine)

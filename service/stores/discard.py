"""A store that keeps nothing: every row is new and nothing is read back.  The service with it
is the service without its database (bench/nodb_app.py measures what that serves)."""

from __future__ import annotations

import itertools
from datetime import timedelta

from .base import Inserted, Key, Message, Store


class DiscardingStore(Store):
    def __init__(self) -> None:
        super().__init__(None)
        self._ids = itertools.count(1)

    async def insert(self, rows: list[dict]) -> dict[Key, Inserted]:
        return {(row["gateway"], row["stream_id"]): (next(self._ids), None, None) for row in rows}

    async def read(self, keys: list[Key]) -> dict[Key, dict]:
        return {}

    async def keep_messages(self, messages: list[Message]) -> dict[tuple[str, str], tuple[str, str]]:
        return {}

    async def forget_messages(self, *, before: int) -> None:
        pass

    async def upkeep(self, retention: timedelta | None) -> None:
        pass

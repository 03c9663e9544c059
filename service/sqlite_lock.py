"""One writer at a time across the processes that write one SQLite file."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path


class SqliteWriteLock:
    """One writer at a time across the processes of one SQLite file, with an flock beside it.

    SQLite lets one transaction write at a time and makes the others poll for its lock, sleeping
    longer and longer; a blocking flock hands the turn over the moment the writer before commits.
    """

    def __init__(self, database: Path | None) -> None:
        self._path = None if database is None else Path(f"{database}.writer-lock")
        self._fd: int | None = None
        self._local = threading.Lock()  # the prune and the batches of one process

    def __enter__(self):
        self._local.acquire()
        try:
            self._lock_file(fcntl.LOCK_EX)
        except BaseException:
            self._local.release()
            raise
        return self

    def enter_now(self) -> bool:
        """Take the lock if nobody holds it (then leave() it), without waiting."""
        if not self._local.acquire(blocking=False):
            return False
        try:
            self._lock_file(fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._local.release()
            return False
        except BaseException:
            self._local.release()
            raise
        return True

    def _lock_file(self, operation: int) -> None:
        if self._path is None:  # an in-memory database: one process only
            return
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, operation)

    def __exit__(self, *exc) -> None:
        self.leave()

    def leave(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._local.release()

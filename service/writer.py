"""The writer: commits verdicts in shared transactions (group commit), one writer per process.

Requests put their row on a bounded queue and wait.  The writer, a task on the event loop that
serves the requests, takes whatever has queued up (up to a batch), hands it to its store
(service/stores/), which writes all rows and their per-minute rollups in one transaction and
commits, and only then answers each request.  A full queue or a failed transaction answers
503: a 2xx is only ever sent for a committed row.  Between batches the store keeps up: old rows
pruned (rollups are kept), partitions made ahead.

The store is passed in, as httpx's client takes a transport: stores.open_store(engine) for the
service's database, stores.DiscardingStore() for a service without one (the benchmarks), or a
test's own.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import time
from datetime import timedelta

from sqlalchemy.exc import SQLAlchemyError

from . import metrics
from .rollups import rollup_counts
from .stores import Store

log = logging.getLogger(__name__)

CREATED = "created"  # a new row was committed
DUPLICATE = "duplicate"  # the same stream_id with the same bytes was already stored
CONFLICT = "conflict"  # the same stream_id was already stored with different bytes
REUSED = "reused"  # a signed post's webhook-id was kept for another post (stream_id or bytes)
# How often the ids of signed posts past the timestamp window are let go.
FORGET_MESSAGES_INTERVAL_SECONDS = 60.0


class WriterUnavailable(Exception):
    """The verdict could not be committed now; the caller should retry later.  ``unknown``:
    the verdict may still be committed (the commit timed out, or the database failed while a
    transaction that carried it was under way), else it surely was not."""

    def __init__(self, reason: str, *, unknown: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unknown = unknown


@dataclasses.dataclass(frozen=True, slots=True)
class WriteResult:
    outcome: str
    row: dict  # the stored row (for a duplicate or conflict: the one stored first)


@dataclasses.dataclass(frozen=True, slots=True)
class Message:
    """The id and time a gateway signed a post with (auth.SignedPost; for a stream of a signed
    batch, batches.stream_message)."""

    message_id: str
    timestamp: int


@dataclasses.dataclass(slots=True)
class _Pending:
    row: dict
    tool_label: str
    done: asyncio.Future
    message: Message | None = None


class VerdictWriter:
    """The group commit of one process: a task on the event loop that serves its posts
    (``start`` and ``stop`` are awaited on that loop, ``write`` is called on it)."""

    def __init__(
        self,
        store: Store,
        *,
        queue_size: int,
        batch_size: int,
        metrics_tools: frozenset[str],
        batch_wait_seconds: float = 0.0,
        retention_days: float = 0.0,
        retention_interval_seconds: float = 3600.0,
        webhook_tolerance_seconds: int = 300,
    ) -> None:
        self.store = store
        self._queue: collections.deque[_Pending] = collections.deque()  # bounded by queue_size
        self._queue_size = queue_size
        self._arrived = asyncio.Event()  # a row was queued, or stop() was called
        self._stopping = False
        self._task: asyncio.Task | None = None
        self._batch_size = batch_size
        self._batch_wait = batch_wait_seconds
        self._metrics_tools = metrics_tools
        self._retention = timedelta(days=retention_days) if retention_days else None
        self._retention_interval = retention_interval_seconds
        self._next_upkeep = 0.0  # at once: the partitions before the first batch
        self._webhook_tolerance = webhook_tolerance_seconds
        self._next_forget = 0.0  # at once (a restart leaves ids behind), then while ids are kept
        self._kept_messages = False  # since the ids were last let go

    @property
    def queued(self) -> int:
        """Verdicts waiting for their batch."""
        return len(self._queue)

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="verdict-writer")
        self._task.add_done_callback(_report_a_crash)

    async def stop(self) -> None:
        """Commit what is queued, then stop."""
        self._stopping = True
        self._arrived.set()
        try:
            if self._task is not None:
                # waited for, not awaited: a task that died of a bug was logged as it
                # happened (_report_a_crash) and does not raise here again
                await asyncio.wait([self._task])
        finally:
            await self.store.close()

    def submit(self, row: dict, *, message: Message | None = None) -> asyncio.Future:
        """Queue ``row`` for the next commit; the future is its WriteResult, or the
        WriterUnavailable that says why it was not stored.  Raises WriterUnavailable at once
        when the queue is full or the writer stopping.  ``message``: the signed post's id and
        time, kept beside the verdict, so that no other post is stored under that id (REUSED)."""
        if self._stopping or (self._task is not None and self._task.done()):
            raise WriterUnavailable("the service is stopping")
        if len(self._queue) >= self._queue_size:
            raise WriterUnavailable("the write queue is full")
        done = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(row, metrics.tool_label(row["tool"], self._metrics_tools), done, message))
        self._arrived.set()
        metrics.DB_WRITE_QUEUE_DEPTH.inc()
        return done

    async def write(self, row: dict, *, timeout: float, message: Message | None = None) -> WriteResult:
        """Store ``row``, or say why not (``submit``, then its commit waited for)."""
        done = self.submit(row, message=message)
        # The row may still be committed after the timeout; a retry with the same stream_id
        # then gets the stored verdict back (200), so nothing is counted twice.
        timer = asyncio.get_running_loop().call_later(timeout, expire, done)
        try:
            return await done
        finally:
            timer.cancel()

    # -- the writer's task --------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._batches()
        finally:
            # Only a bug ends the batches with verdicts still queued: they get their 503 now,
            # not when their timeouts come.
            left = list(self._queue)
            self._queue.clear()
            metrics.DB_WRITE_QUEUE_DEPTH.dec(len(left))
            _settle(left, [WriterUnavailable("the writer stopped")] * len(left))

    async def _batches(self) -> None:
        await self._maintain_when_due()
        shared = False  # the last commit carried more than one verdict: they arrive together
        while self._queue or not self._stopping:
            if not self._queue:
                self._arrived.clear()
                try:
                    # Wake up now and then even when idle, so upkeep runs without traffic.
                    await asyncio.wait_for(self._arrived.wait(), min(self._retention_interval, 60.0))
                except asyncio.TimeoutError:
                    await self._maintain_when_due()
                continue
            # Under load, a commit that waits a moment for more verdicts carries more of them:
            # fewer transactions, less work per verdict for the writer and for the database.
            # It waits only while verdicts arrive together, so that a quiet service commits
            # each verdict at once.
            if shared and self._batch_wait > 0 and not self._stopping:
                await asyncio.sleep(self._batch_wait)
            batch = [self._queue.popleft() for _ in range(min(len(self._queue), self._batch_size))]
            metrics.DB_WRITE_QUEUE_DEPTH.dec(len(batch))
            shared = len(batch) > 1
            try:
                await self._commit(batch)
            except BaseException:  # a bug (see _run): the batch in hand gets its 503 too
                _settle(batch, [WriterUnavailable("the writer stopped")] * len(batch))
                raise
            await self._maintain_when_due()

    async def _commit(self, batch: list[_Pending]) -> None:
        started = time.perf_counter()
        try:
            results = await self._write_batch([p.row for p in batch], [p.message for p in batch])
        except Exception as exc:
            # Whatever went wrong, the transaction rolled back: answer 503 and keep the writer
            # alive for the next batch.  Database trouble is expected; anything else is a bug.
            metrics.DB_WRITE_ERRORS.inc()
            if _is_database_trouble(exc):
                log.warning("group commit of %d verdicts failed: %s", len(batch), type(exc).__name__)
            else:
                log.exception("group commit of %d verdicts failed", len(batch))
            # (an error while committing may come after the commit held: the outcome is unknown)
            failure = WriterUnavailable("the database failed while committing", unknown=True)
            _settle(batch, [failure] * len(batch))
            return
        metrics.DB_WRITE_SECONDS.observe(time.perf_counter() - started)
        metrics.DB_WRITE_BATCH.observe(len(batch))
        for pending, result in zip(batch, results, strict=True):
            if isinstance(result, WriteResult) and result.outcome == CREATED:
                metrics.count_stored(pending.tool_label, result.row, rollup_counts(result.row))
        _settle(batch, results)

    async def _write_batch(
        self, rows: list[dict], messages: list[Message | None]
    ) -> list[WriteResult | WriterUnavailable]:
        """Insert the rows and their rollups in one transaction; a duplicate key inserts nothing.
        Once that has committed, every new row is answered as created (and counted), even if
        what follows fails: the rows that needed it are then answered 503.  Before that, the
        ids of the signed posts are kept, and a row whose id another post has is not stored."""
        reused = await self._keep_messages(rows, messages) if any(messages) else set()
        first_of_key: dict[tuple[str, str], dict] = {}
        for index, row in enumerate(rows):
            if index not in reused:
                first_of_key.setdefault((row["gateway"], row["stream_id"]), row)
        new_ids = await self.store.insert(list(first_of_key.values()))  # raises: none stored
        stored: dict[tuple[str, str], dict] = {}
        failed: WriterUnavailable | None = None
        try:
            # Stored before: committed by now, read back as any reader would.
            stored = await self.store.read([key for key in first_of_key if key not in new_ids])
            orphans = [key for key in first_of_key if key not in new_ids and key not in stored]
            if orphans:
                # PostgreSQL: a key whose verdict is gone (retention dropped its day while a
                # post of it was on its way).  The key goes, and the verdict is stored anew.
                await self.store.forget_keys(orphans)
                again = await self.store.insert([first_of_key[key] for key in orphans])
                new_ids.update(again)
                stored.update(await self.store.read([key for key in orphans if key not in again]))
        except Exception as exc:
            if not _is_database_trouble(exc):
                raise  # a bug: the whole batch is answered 503
            metrics.DB_WRITE_ERRORS.inc()
            log.warning(
                "after a commit of %d verdicts, the rest of the batch failed: %s", len(new_ids), type(exc).__name__
            )
            failed = WriterUnavailable("the database failed after the commit", unknown=True)
        for key, (row_id, previous_category, previous_retryable) in new_ids.items():
            stored[key] = row = first_of_key[key]  # the request's own row, stored now
            row["id"] = row_id
            row["previous_category"] = previous_category
            row["previous_retryable"] = previous_retryable

        results: list[WriteResult | WriterUnavailable] = []
        for index, row in enumerate(rows):
            key = (row["gateway"], row["stream_id"])
            kept = stored.get(key)
            if index in reused:
                results.append(WriteResult(REUSED, row))
            elif kept is None:  # its key and its verdict came and went again meanwhile
                results.append(failed or WriterUnavailable("the verdict was removed while it was being stored"))
            elif row is first_of_key[key] and key in new_ids:
                results.append(WriteResult(CREATED, kept))
            elif kept["body_sha256"] == row["body_sha256"]:
                results.append(WriteResult(DUPLICATE, kept))
            else:
                results.append(WriteResult(CONFLICT, kept))
        return results

    async def _keep_messages(self, rows: list[dict], messages: list[Message | None]) -> set[int]:
        """Keep the id of each signed post with its stream_id and bytes (committed before the
        verdicts: an id kept for a verdict that then failed lets only the same post through,
        which is what the gateway's retry is).  Returns the indexes of the rows whose id was
        kept for another post, before or earlier in this batch."""
        posts: dict[tuple[str, str], tuple[str, str]] = {}  # (gateway, id) -> (stream_id, sha)
        new: list[tuple[str, str, str, str, int]] = []
        for row, message in zip(rows, messages, strict=True):
            if message is not None:
                key = (row["gateway"], message.message_id)
                if key not in posts:
                    posts[key] = (row["stream_id"], row["body_sha256"])
                    new.append((*key, row["stream_id"], row["body_sha256"], message.timestamp))
        kept_before = await self.store.keep_messages(new)
        self._kept_messages = True
        posts.update(kept_before)
        return {
            index
            for index, (row, message) in enumerate(zip(rows, messages, strict=True))
            if message is not None
            and posts[(row["gateway"], message.message_id)] != (row["stream_id"], row["body_sha256"])
        }

    async def _maintain_when_due(self) -> None:
        """Between batches: every retention interval, the store's upkeep (partitions made ahead,
        verdicts past retention removed); every minute while signed posts come, the ids of those
        signed before the timestamp window let go (their posts are refused by their time now)."""
        if time.monotonic() >= self._next_forget and (self._kept_messages or self._next_forget == 0.0):
            self._next_forget = time.monotonic() + FORGET_MESSAGES_INTERVAL_SECONDS
            self._kept_messages = False
            try:
                await self.store.forget_messages(before=int(time.time()) - self._webhook_tolerance)
            except Exception as exc:
                if _is_database_trouble(exc):
                    log.warning("letting old webhook-ids go failed (tried again later): %s", type(exc).__name__)
                else:  # a bug: logged, and the writer goes on storing verdicts
                    log.exception("letting old webhook-ids go failed (tried again later)")
        if time.monotonic() < self._next_upkeep:
            return
        self._next_upkeep = time.monotonic() + self._retention_interval
        try:
            await self.store.upkeep(self._retention)
        except Exception as exc:
            if _is_database_trouble(exc):
                log.warning("database upkeep failed (tried again in a minute): %s", type(exc).__name__)
            else:  # a bug: logged, and the writer goes on storing verdicts
                log.exception("database upkeep failed (tried again in a minute)")
            self._next_upkeep = time.monotonic() + 60


def _is_database_trouble(exc: Exception) -> bool:
    """What the database may raise at any time (answered 503 and logged without a traceback),
    from SQLAlchemy or from the driver, which the writer also uses without SQLAlchemy; any
    other exception is a bug."""
    return isinstance(exc, (SQLAlchemyError, WriterUnavailable)) or type(exc).__module__.startswith(
        ("psycopg", "sqlite3")
    )


def _report_a_crash(task: asyncio.Task) -> None:
    """The writer's task ended on an exception (a bug: it catches what the database raises)."""
    if not task.cancelled() and task.exception() is not None:
        log.error(
            "the verdict writer stopped; every post gets 503 until the service restarts", exc_info=task.exception()
        )


def expire(done: asyncio.Future) -> None:
    """A verdict not committed in time: its outcome is unknown (it may still be committed)."""
    if not done.done():
        done.set_exception(WriterUnavailable("the database did not commit in time", unknown=True))


def _settle(batch: list[_Pending], outcomes: list) -> None:
    """Hand every request of the batch its result (or its 503)."""
    for pending, outcome in zip(batch, outcomes, strict=True):
        if pending.done.done():
            continue  # the request stopped waiting (timeout or disconnect); the commit stands
        if isinstance(outcome, BaseException):
            pending.done.set_exception(outcome)
        else:
            pending.done.set_result(outcome)

"""The tap's way to the verdict service: every captured stream goes to a bounded on-disk spool
first, and posters send the spooled streams to the ingestion API, retrying until it answers,
deleting each file once the service has acknowledged it.

So a slow or dead verdict service never slows the client (the client's stream is long finished
when its capture is posted), a tap restart loses nothing that was spooled, and the only
payload the tap keeps is what waits here.  The attempts of one request are posted in order, by
one poster: the service links each attempt to the one stored before it.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import gzip
import json
import logging
import os
import random
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

try:
    import httpx
except ImportError:  # an application with only httpx2 (the current SDKs), for the guard's reporter
    import httpx2 as httpx  # type: ignore[no-redef]

log = logging.getLogger(__name__)

SUFFIX = ".stream"
# Answers that will never change if the same post is sent again: the file is set aside.
# (404 and 405 say the tap's TAP_INGEST is wrong, not the capture: kept and retried, as for a
# refused token.)
_REJECTED = {400, 409, 413, 415, 422}
_MISCONFIGURED = {401, 403, 404, 405}
# What is set aside is kept for a look, within a tenth of the spool's bound (oldest dropped).
REJECTED_SHARE = 0.1
_BACKOFF_START, _BACKOFF_CAP = 0.5, 30.0
# Posts are compressed, about ten to one: with zstd where Python has it (the standard library's
# from 3.14; the tap's own dependency, backports.zstd, before), which costs the service less to
# decode than gzip (`make bench-service`); else with the standard library's gzip, so that the
# guard's reporter needs nothing more inside an application.  Either compresses a 20 KB stream
# in well under a millisecond, in a thread.  Bodies smaller than this go as they are.
COMPRESS_MIN_BYTES = 1024
COMPRESSION = "zstd"
try:
    from compression import zstd as _zstd
except ImportError:
    try:
        from backports import zstd as _zstd
    except ImportError:
        COMPRESSION = "gzip"
_compress: Callable[[bytes], bytes] = (
    functools.partial(_zstd.compress, level=3)
    if COMPRESSION == "zstd"
    else functools.partial(gzip.compress, compresslevel=6, mtime=0)
)
# Captures that wait are posted this many to a batch at most (the service's MAX_BATCH_STREAMS
# is 1000 by default): 64 makes a post carry what 64 did, and a batch of 20 kB streams stays
# about 1.3 MB, a few hundred kB compressed.
BATCH_STREAMS = 64
BATCH_MAX_BYTES = 4 << 20  # and at most this much of them (one larger capture goes alone)


class _Then(enum.Enum):
    """What _post_batch may say to do next besides waiting a while."""

    ALONE = "alone"  # the batch was refused whole: post its captures one by one


def batch_item(params: dict, body: bytes) -> bytes:
    """One stream of a batch (POST /v1/streams/batch; service/batches.py): its head, a line of
    JSON with its parameters and its length, then its bytes."""
    return json.dumps({**params, "length": len(body)}, separators=(",", ":")).encode() + b"\n" + body


@dataclass(frozen=True, slots=True)
class Spooled:
    name: str
    partition: str  # the attempts of one request share it, and so a poster


class Spool:
    """A directory of captured streams, each one file: a JSON line of its ingest parameters,
    then its bytes.  At most ``max_bytes`` of disk in all (pending and rejected), each file
    counted as the whole blocks it takes (a small capture takes a block); a capture that would
    pass it is dropped, counted and logged.  Files are written whole (to a temporary name, then
    renamed) and readable by their owner only: they hold payload."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.pending_dir = Path(directory) / "pending"
        self.rejected_dir = Path(directory) / "rejected"
        for path in (Path(directory), self.pending_dir, self.rejected_dir):
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(path, 0o700)  # also when it was there before: the files hold payload
        self.max_bytes = max_bytes
        # The file system's allocation unit: a file takes whole ones (4 KiB on most).
        self.unit = os.statvfs(self.pending_dir).f_frsize or 4096
        self.dropped = 0
        self._lock = threading.Lock()
        for stale in self.pending_dir.glob("*.tmp"):  # a write cut short by a crash
            stale.unlink(missing_ok=True)
        self.used_bytes = sum(
            self._on_disk(p.stat().st_size) for d in (self.pending_dir, self.rejected_dir) for p in d.iterdir()
        )

    def _on_disk(self, size: int) -> int:
        """What a file of ``size`` bytes takes: whole allocation units, at least one."""
        return max(1, -(-size // self.unit)) * self.unit

    def put(self, params: dict, body: bytes) -> Spooled | None:
        header = json.dumps(params, separators=(",", ":")).encode() + b"\n"
        size = self._on_disk(len(header) + len(body))
        with self._lock:
            if self.used_bytes + size > self.max_bytes:
                self.dropped += 1
                return None
            self.used_bytes += size
        name = f"{time.time_ns():019d}-{params['stream_id']}{SUFFIX}"
        temporary = self.pending_dir / (name + ".tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(header)
                file.write(body)
            os.replace(temporary, self.pending_dir / name)
        except OSError:
            with self._lock:
                self.used_bytes -= size
            temporary.unlink(missing_ok=True)
            raise
        return Spooled(name, params.get("request_id") or params["stream_id"])

    def read(self, name: str) -> tuple[dict, bytes]:
        data = (self.pending_dir / name).read_bytes()
        header, _, body = data.partition(b"\n")
        return json.loads(header), body

    def pending(self) -> list[Spooled]:
        """What waits, oldest first (the names begin with the time they were spooled)."""
        waiting = []
        for path in sorted(self.pending_dir.glob("*" + SUFFIX)):
            try:
                with path.open("rb") as file:
                    params = json.loads(file.readline())
                waiting.append(Spooled(path.name, params.get("request_id") or params["stream_id"]))
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                # Not a capture this spool wrote whole (a crash may leave one empty): set
                # aside, so that one bad file never stops the rest from being posted.
                log.error("spooled file %s is unreadable (%s): set aside in %s", path.name, exc, self.rejected_dir)
                try:
                    self.reject(path.name)
                except OSError:
                    pass
        return waiting

    def delete(self, name: str) -> None:
        path = self.pending_dir / name
        size = self._on_disk(path.stat().st_size)
        path.unlink()
        with self._lock:
            self.used_bytes -= size

    def reject(self, name: str) -> None:
        """Set aside a capture the service refused for good.  The set-aside files are counted
        in the bound and kept within a tenth of it, the oldest deleted first, so that a run of
        refusals never fills the spool."""
        os.replace(self.pending_dir / name, self.rejected_dir / name)
        kept = sorted(self.rejected_dir.glob("*" + SUFFIX))
        sizes = [self._on_disk(path.stat().st_size) for path in kept]
        total, allowed = sum(sizes), self.max_bytes * REJECTED_SHARE
        for path, size in zip(kept, sizes, strict=True):
            if total <= allowed:
                break
            path.unlink(missing_ok=True)
            total -= size
            with self._lock:
                self.used_bytes -= size

    def rejected(self) -> list[str]:
        return sorted(p.name for p in self.rejected_dir.glob("*" + SUFFIX))


class Poster:
    """Posts spooled captures to ``{ingest}/v1/streams`` with ``concurrency`` posters; each
    request's attempts go to the same poster, in the order they were spooled.

    ``batch``: a poster takes up to that many captures that wait in its queue and posts them as
    one batch (``/v1/streams/batch``); what each stream was answered says which files go.  A
    service without batches (one older than them answers 404 or 405) gets every later capture
    posted alone, and so does a batch it refuses whole (a 413 or a 400: each capture then gets
    its own answer).

    ``compress``: bodies go compressed (COMPRESSION: zstd, or gzip where Python has no zstd).
    A service that does not decode them (one older than compressed posts answers 415) gets
    every later post as it is; a body that decodes too well for the service's ratio bound (413
    naming MAX_DECODED_RATIO) is posted again as it is."""

    def __init__(
        self,
        spool: Spool,
        ingest_url: str,
        token: str,
        *,
        concurrency: int = 4,
        timeout_seconds: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        compress: bool = True,
        batch: int = BATCH_STREAMS,
    ) -> None:
        self.spool = spool
        self.compress = compress
        self.batch = batch
        self.url = ingest_url.rstrip("/") + "/v1/streams"
        self.headers = {"authorization": f"Bearer {token}"} if token else {}
        self.timeout_seconds = timeout_seconds
        self._transport = transport
        self._queues: list[asyncio.Queue[Spooled]] = [asyncio.Queue() for _ in range(concurrency)]
        self._workers: list[asyncio.Task] = []
        self._client: httpx.AsyncClient | None = None
        self.posted = self.retried = self.refused = 0
        self._outstanding = 0

    async def start(self) -> None:
        self._client = httpx.AsyncClient(timeout=self.timeout_seconds, transport=self._transport, trust_env=False)
        for spooled in await asyncio.to_thread(self.spool.pending):
            self.submit(spooled)
        self._workers = [
            asyncio.create_task(self._work(queue), name=f"tap-poster-{n}") for n, queue in enumerate(self._queues)
        ]

    def submit(self, spooled: Spooled) -> None:
        index = zlib.crc32(spooled.partition.encode()) % len(self._queues)
        self._outstanding += 1
        self._queues[index].put_nowait(spooled)

    def waiting(self) -> int:
        """Captures submitted and not yet posted or set aside."""
        return self._outstanding

    async def drain(self, timeout: float) -> bool:
        """Wait until everything submitted has been posted (or set aside); False on timeout."""
        try:
            await asyncio.wait_for(asyncio.gather(*(q.join() for q in self._queues)), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    async def stop(self, grace_seconds: float = 5.0) -> None:
        """Post what can be posted within the grace period; the rest stays in the spool."""
        await self.drain(grace_seconds)
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()

    async def _work(self, queue: asyncio.Queue) -> None:
        while True:
            taken = [await queue.get()]
            while len(taken) < self.batch and not queue.empty():  # what waits, in order
                taken.append(queue.get_nowait())
            try:
                await self._deliver(taken)
            finally:
                for _ in taken:
                    self._outstanding -= 1
                    queue.task_done()

    async def _deliver(self, taken: list[Spooled]) -> None:
        """Post these captures, in a batch while there are several and the service takes
        batches, else one by one, until the service acknowledges or refuses each for good."""
        delay = _BACKOFF_START
        waiting, alone = taken, False
        while waiting:
            if len(waiting) > 1 and self.batch > 1 and not alone:
                waiting, then = await self._post_batch(waiting)
                if then is _Then.ALONE:
                    alone, wait = True, None
                else:
                    wait = then
            else:
                wait = await self._post(waiting[0].name)
                if wait is None:
                    waiting = waiting[1:]
            if wait is None:
                continue
            self.retried += 1
            await asyncio.sleep(wait if wait > 0 else delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, _BACKOFF_CAP)

    async def _post_batch(self, waiting: list[Spooled]) -> tuple[list[Spooled], float | None | _Then]:
        """Post these captures as one batch.  Returns those still to post, and how long to wait
        before that (None: at once; 0: the usual backoff), or _Then.ALONE: post them one by one."""
        read, rest = await asyncio.to_thread(self._read_some, waiting)
        if not read:
            return rest, None
        body = b"".join(batch_item(params, data) for _spooled, params, data in read)
        try:
            response = await self._send(self.url + "/batch", None, body)
        except httpx.HTTPError as exc:
            log.warning("verdict service unreachable (%s); %d streams stay spooled", type(exc).__name__, len(read))
            return waiting, 0
        status = response.status_code
        if status in (404, 405):
            log.info("the verdict service does not take batches: posting each stream alone")
            self.batch = 1
            return waiting, None
        if status in (400, 413):  # refused whole: each capture gets its own answer alone
            log.warning(
                "the verdict service refused a batch (%d: %s): posting its streams alone", status, _detail(response)
            )
            return waiting, _Then.ALONE
        if status != 207:
            if status in _MISCONFIGURED:
                log.error(
                    "the verdict service refuses the tap's posts (%d: %s): check TAP_INGEST "
                    "and the token; streams stay spooled until it is fixed",
                    status,
                    _detail(response),
                )
                return waiting, _BACKOFF_CAP
            log.warning(
                "the verdict service answered a batch %d (%s); its streams stay spooled", status, _detail(response)
            )
            return waiting, _retry_after(response)
        try:
            items = response.json()["items"]
            answers = {item["index"]: (item["status"], item.get("detail")) for item in items}
        except (ValueError, KeyError, TypeError):
            log.warning("the verdict service answered a batch 207 without its items; its streams stay spooled")
            return waiting, 0
        again = []
        for index, (spooled, params, _data) in enumerate(read):
            item_status, detail = answers.get(index, (None, None))
            if item_status is not None and item_status < 300:
                await asyncio.to_thread(self.spool.delete, spooled.name)
                self.posted += 1
            elif item_status in _REJECTED:
                await asyncio.to_thread(self.spool.reject, spooled.name)
                self.refused += 1
                log.error(
                    "the verdict service refused stream %s for good (%d: %s); kept in %s",
                    params["stream_id"],
                    item_status,
                    json.dumps(detail)[:300] if not isinstance(detail, str) else detail[:300],
                    self.spool.rejected_dir,
                )
            else:
                again.append(spooled)
        if again:
            log.warning("the verdict service did not store %d streams of a batch; they stay spooled", len(again))
        return again + rest, 0 if again else None

    def _read_some(self, waiting: list[Spooled]) -> tuple[list[tuple[Spooled, dict, bytes]], list[Spooled]]:
        """The captures of the next batch, read, as many as BATCH_MAX_BYTES holds (one at
        least); and those left for after it."""
        read: list[tuple[Spooled, dict, bytes]] = []
        size = 0
        partitions: set[str] = set()
        for at, spooled in enumerate(waiting):
            try:
                params, data = self.spool.read(spooled.name)
            except FileNotFoundError:
                continue
            # (two attempts of one request never share a batch: the service may store the
            # later one and not the earlier, which would then be stored after it)
            if read and (size + len(data) > BATCH_MAX_BYTES or spooled.partition in partitions):
                return read, waiting[at:]
            partitions.add(spooled.partition)
            read.append((spooled, params, data))
            size += len(data)
        return read, []

    async def _send(self, url: str, params: dict | None, body: bytes) -> httpx.Response:
        """POST ``body``, compressed when it is worth it and the service takes it; as it is
        again when the service does not decode it (415) or finds it too compressible."""
        assert self._client is not None, "start() first"
        if self.compress and len(body) >= COMPRESS_MIN_BYTES:
            packed = await asyncio.to_thread(_compress, body)
            headers = {**self.headers, "content-encoding": COMPRESSION}
            response = await self._client.post(url, params=params, content=packed, headers=headers)
            if response.status_code == 415:
                log.info("the verdict service does not decode compressed posts: posting them as they are")
                self.compress = False
            elif not (response.status_code == 413 and "MAX_DECODED_RATIO" in _detail(response)):
                return response
        return await self._client.post(url, params=params, content=body, headers=self.headers)

    async def _post(self, name: str) -> float | None:
        """None when done with this file; else how long to wait before trying again
        (0: the usual backoff)."""
        try:
            params, body = await asyncio.to_thread(self.spool.read, name)
        except FileNotFoundError:
            return None
        try:
            response = await self._send(self.url, params, body)
        except httpx.HTTPError as exc:
            log.warning("verdict service unreachable (%s); %s stays spooled", type(exc).__name__, params["stream_id"])
            return 0
        status = response.status_code
        if status < 300:
            await asyncio.to_thread(self.spool.delete, name)
            self.posted += 1
            return None
        detail = _detail(response)
        if status in _REJECTED:
            await asyncio.to_thread(self.spool.reject, name)
            self.refused += 1
            log.error(
                "the verdict service refused stream %s for good (%d: %s); kept in %s",
                params["stream_id"],
                status,
                detail,
                self.spool.rejected_dir,
            )
            return None
        if status in _MISCONFIGURED:
            log.error(
                "the verdict service refuses the tap's posts (%d: %s): check TAP_INGEST "
                "and the token; streams stay spooled until it is fixed",
                status,
                detail,
            )
            return _BACKOFF_CAP
        log.warning("the verdict service answered %d (%s); %s stays spooled", status, detail, params["stream_id"])
        return _retry_after(response)


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        return response.reason_phrase
    return json.dumps(detail)[:300] if not isinstance(detail, str) else detail[:300]


def _retry_after(response: httpx.Response) -> float:
    raw = response.headers.get("retry-after", "")
    try:
        return min(max(float(raw), 0.0), _BACKOFF_CAP * 4)
    except ValueError:
        return 0

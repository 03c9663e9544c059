"""How the ingestion service holds up: memory on a huge upload, and verdicts stored per second.

Starts ``python -m fastsse_service serve`` (one worker) as a real process on 127.0.0.1 and measures, on
the database given (SQLite file by default, or ``--database-url postgresql+psycopg://...``):

* peak RSS growth of the server while one client streams a 200 MiB chunked body that is one
  endless SSE line: the scanner stops buffering at its limit and the upload is read and dropped
  chunk by chunk, so the server's memory should stay near MAX_EVENT_BYTES;
* verdicts committed per second with N concurrent gateways posting typical chat streams
  (each a new stream_id), and how many verdicts each group-commit transaction carried.

    python bench/bench_ingest.py
    python bench/bench_ingest.py --database-url postgresql+psycopg://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
TOKEN = "bench-secret"
INGEST = {"Authorization": f"Bearer {TOKEN}"}
CHUNK_BYTES = 64 * 1024


def chat_stream(words: int) -> bytes:
    def chunk(delta: dict, finish: str | None) -> bytes:
        event = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o-2024-08-06",
            "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"

    body = chunk({"role": "assistant", "content": ""}, None)
    body += b"".join(chunk({"content": f" word{i}"}, None) for i in range(words))
    return body + chunk({}, "stop") + b"data: [DONE]\n\n"


def status_kib(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.M).group(1))


class Service:
    def __init__(self, database_url: str, **env: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fastsse_service", "serve", "--port", str(self.port)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={
                **os.environ,
                "DATABASE_URL": database_url,
                "INGEST_TOKENS": f"gw:{TOKEN}",
                "LOG_LEVEL": "warning",
                "RETENTION_DAYS": "0",
                **env,
            },
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("the service did not start")

    def metric(self, name: str) -> float:
        text = httpx.get(f"{self.url}/metrics").text
        match = re.search(rf"^{name} (\S+)$", text, re.M)
        return float(match.group(1)) if match else 0.0

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def huge_upload(service: Service, mib: int) -> None:
    def body():
        yield b"data: "
        piece = b"x" * CHUNK_BYTES
        for _ in range(mib * 1024 * 1024 // CHUNK_BYTES):
            yield piece

    Path(f"/proc/{service.process.pid}/clear_refs").write_text("5")  # reset the peak
    before = status_kib(service.process.pid, "VmRSS")
    started = time.perf_counter()
    response = httpx.post(
        f"{service.url}/v1/streams", params={"stream_id": "huge"}, content=body(), headers=INGEST, timeout=300
    )
    seconds = time.perf_counter() - started
    peak = status_kib(service.process.pid, "VmHWM")
    verdict = response.json()
    print(
        f"  one {mib} MiB chunked upload, a single endless line: HTTP {response.status_code}, "
        f"{verdict.get('category')} (limit: {verdict.get('limit')}), {seconds:.1f} s "
        f"({mib / seconds:.0f} MiB/s)"
    )
    print(
        f"  server RSS before {before / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB: "
        f"growth {(peak - before) / 1024:.1f} MiB (MAX_EVENT_BYTES 8 MiB)"
    )


def throughput(service: Service, clients: int, posts: int, words: int) -> None:
    body = chat_stream(words)
    batches_before = (
        service.metric("fastsse_db_write_batch_verdicts_sum"),
        service.metric("fastsse_db_write_batch_verdicts_count"),
    )

    def gateway(worker: int) -> list[float]:
        latencies = []
        with httpx.Client(base_url=service.url, timeout=60) as http:
            for i in range(worker, posts, clients):
                started = time.perf_counter()
                response = http.post("/v1/streams", params={"stream_id": f"t{i}"}, content=body, headers=INGEST)
                latencies.append(time.perf_counter() - started)
                if response.status_code != 201:
                    raise SystemExit(f"HTTP {response.status_code}: {response.text}")
        return latencies

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        latencies = sorted(x for part in pool.map(gateway, range(clients)) for x in part)
    seconds = time.perf_counter() - started
    verdicts = service.metric("fastsse_db_write_batch_verdicts_sum") - batches_before[0]
    transactions = service.metric("fastsse_db_write_batch_verdicts_count") - batches_before[1]
    print(
        f"  {posts} posts of {len(body) / 1000:.1f} kB from {clients} concurrent gateways: "
        f"{posts / seconds:.0f} verdicts/s stored, latency p50 "
        f"{latencies[len(latencies) // 2] * 1000:.1f} ms, p99 "
        f"{latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms"
    )
    print(
        f"  {verdicts:.0f} verdicts in {transactions:.0f} transactions: "
        f"{verdicts / max(transactions, 1):.1f} verdicts per commit (group commit)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url")
    parser.add_argument("--upload-mib", type=int, default=200)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--posts", type=int, default=2000)
    parser.add_argument("--words", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        url = args.database_url or f"sqlite:///{scratch}/bench.sqlite3"
        print(f"database {url.split('@')[-1]}")
        service = Service(url, MAX_BODY_BYTES=str((args.upload_mib + 1) * 1024 * 1024))
        try:
            huge_upload(service, args.upload_mib)
            throughput(service, args.clients, args.posts, args.words)
        finally:
            service.stop()


if __name__ == "__main__":
    main()

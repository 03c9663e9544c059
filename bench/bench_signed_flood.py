"""A signing gateway's posts while someone floods the service with made-up signed posts.

Issue 25 found that posts with made-up signing headers, their bodies dribbled, filled every slot
a worker kept for signed posts: real signing gateways got 503 for as long as that went on. Now
a signature is checked before the body is read, so a made-up one is refused at its head.

Starts the service (``fastsse-service serve``, one worker, SQLite) on 127.0.0.1 and runs, one
after the other, for ``--seconds`` each:

- **alone**: a signing gateway posts complete streams, ``--gateway-concurrency`` at a time, each
  with a new stream_id and its own signature;
- **flooded**: the same gateway, while ``--dribblers`` connections send made-up signed heads and
  then a byte of their body a second (reconnecting as soon as they are answered), and ``wrk``
  (a C load generator) posts made-up signed posts as fast as the service answers them.

Prints, per phase, the gateway's posts per second, how they were answered and their p50 and
p99, and what the flood got: the dribblers' connections, their answers, and the longest any of
them stayed open; wrk's posts per second and answers.

    python bench/bench_signed_flood.py              # about 30 seconds
    python bench/bench_signed_flood.py --seconds 20 --dribblers 1000

Needs ``wrk`` (Debian package).  Talks to 127.0.0.1 only, and stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_service import Server  # noqa: E402
from fastsse_service.auth import sign_post  # noqa: E402
from loadtests.wire import short_stream  # noqa: E402
from loadtests.wrk import post_streams  # noqa: E402

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
GATEWAY_ADDRESS = "127.0.0.3"  # wrk posts from 127.0.0.1, the dribblers from 127.0.0.2
DRIBBLER_ADDRESS = "127.0.0.2"
BODY = short_stream(text="a signed answer")


async def gateway(url: str, seconds: float, concurrency: int, tag: str) -> dict:
    """A signing gateway: each post signed for its own target; latencies and answers."""
    latencies: list[float] = []
    statuses: collections.Counter = collections.Counter()
    deadline = time.monotonic() + seconds
    counter = 0

    async def one_lane(client: httpx.AsyncClient) -> None:
        nonlocal counter
        while time.monotonic() < deadline:
            counter += 1
            target = f"/v1/streams?stream_id={tag}-{counter}&tool=bench"
            started = time.perf_counter()
            try:
                answer = await client.post(target, content=BODY, headers=sign_post(SECRET, target, BODY))
                statuses[answer.status_code] += 1
            except httpx.HTTPError as exc:
                statuses[type(exc).__name__] += 1
            latencies.append(time.perf_counter() - started)

    # From an address of its own: the flood's addresses spend their failed credentials (past
    # FAILED_CREDENTIALS_BURST an address gets 429s, whatever it presents).
    transport = httpx.AsyncHTTPTransport(local_address=GATEWAY_ADDRESS)
    async with httpx.AsyncClient(base_url=url, timeout=30, transport=transport) as client:
        await asyncio.gather(*(one_lane(client) for _ in range(concurrency)))
    latencies.sort()
    return {
        "posts": len(latencies),
        "per_second": len(latencies) / seconds,
        "statuses": dict(statuses),
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
    }


async def dribbler(port: int, deadline: float, n: int, report: dict) -> None:
    """Made-up signed heads, then a byte of body a second; again as soon as answered."""
    attempt = 0
    while time.monotonic() < deadline:
        attempt += 1
        target = f"/v1/streams?stream_id=forged-{n}-{attempt}"
        forged = sign_post("whsec_" + "A" * 32, target, BODY)  # a secret the service does not know
        head = "".join(f"{name}: {value}\r\n" for name, value in forged.items())
        opened = time.monotonic()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(DRIBBLER_ADDRESS, 0))
        except OSError:
            report["refused_connections"] += 1
            await asyncio.sleep(0.1)
            continue
        report["connections"] += 1
        try:
            writer.write(f"POST {target} HTTP/1.1\r\nhost: x\r\n{head}content-length: 100000\r\n\r\n".encode())
            status = None
            while status is None and time.monotonic() < deadline:
                try:
                    line = await asyncio.wait_for(reader.readline(), 1.0)
                    status = line.split()[1].decode() if line else "closed"
                except asyncio.TimeoutError:
                    writer.write(b"d")  # one more byte of the body
            report["answers"][status or "still open at the end"] += 1
        except OSError:
            report["answers"]["reset"] += 1
        finally:
            report["longest_open_s"] = max(report["longest_open_s"], time.monotonic() - opened)
            writer.close()


async def flood(port: int, seconds: float, dribblers: int) -> dict:
    report = {"connections": 0, "refused_connections": 0, "answers": collections.Counter(), "longest_open_s": 0.0}
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(dribbler(port, deadline, n, report) for n in range(dribblers)))
    report["answers"] = dict(report["answers"])
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--gateway-concurrency", type=int, default=4)
    parser.add_argument("--dribblers", type=int, default=256)
    parser.add_argument("--wrk-connections", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fastsse-flood-") as scratch:
        root = Path(scratch)
        body_file = root / "forged.sse"
        body_file.write_bytes(BODY)
        env = {
            "DATABASE_URL": f"sqlite:///{root / 'verdicts.sqlite3'}",
            "INGEST_TOKENS": f"signer:{SECRET}",
            "RETENTION_DAYS": "0",
        }
        server = Server([sys.executable, "-m", "fastsse_service", "serve"], env, root / "service.log")
        try:
            alone = asyncio.run(gateway(server.url, args.seconds, args.gateway_concurrency, "alone"))

            async def flooded_phase():
                wrk_run = asyncio.to_thread(
                    post_streams,
                    server.url,
                    "forged-signature",
                    [body_file],
                    tag="forged",
                    seconds=args.seconds,
                    connections=args.wrk_connections,
                    threads=1,
                    count_statuses=True,
                )
                return await asyncio.gather(
                    gateway(server.url, args.seconds, args.gateway_concurrency, "flooded"),
                    flood(server.port, args.seconds, args.dribblers),
                    wrk_run,
                )

            flooded, dribbled, wrk_result = asyncio.run(flooded_phase())
        finally:
            server.stop()
    print(f"service: 1 worker, SQLite, MAX_INFLIGHT_POSTS 64; {args.seconds:g} s a phase")
    print(f"{'phase':<9} {'gateway posts/s':>16} {'p50 ms':>8} {'p99 ms':>8}  answers")
    for name, figures in (("alone", alone), ("flooded", flooded)):
        print(
            f"{name:<9} {figures['per_second']:>16.1f} {figures['p50_ms']:>8.1f} {figures['p99_ms']:>8.1f}  "
            f"{figures['statuses']}"
        )
    print(
        f"dribblers ({args.dribblers}): {dribbled['connections']} connections, answers {dribbled['answers']}, "
        f"longest open {dribbled['longest_open_s']:.2f} s, connections refused {dribbled['refused_connections']}"
    )
    print(
        f"wrk ({args.wrk_connections} connections): {wrk_result['rps']:.0f} made-up signed posts/s, "
        f"answers {wrk_result['statuses']}"
    )


if __name__ == "__main__":
    main()

"""What the guard costs an application: the official SDK's own stream iteration with and without
``fastsse.guard`` in its HTTP client, on the same varied streams, side by side in one run.

For each protocol (openai chat, openai Responses, anthropic Messages), a seeded corpus of
realistic healthy streams (loadtests/wire.py) is served from memory by an httpx2 transport in
4 KiB chunks, as a socket would hand them over, and read through the SDK as an application
does (every event parsed into the SDK's types).  The two ways take turns, round after round,
and each keeps its best round (the machine is noisy; the turns share its noise).  Printed:
CPU per stream and the guard's share of it (target: at most 5 %), and every guarded stream's
verdict (all must be complete).

Then the time to the first event: a stream whose first chunk comes at once and the rest
100 ms later, read with and without the guard; the guard feeds each chunk as it passes, so
the first event must come as early either way (the median of 30 of each is printed).

    python bench/bench_guard.py                  # 4 MB per protocol, 7 rounds
    python bench/bench_guard.py --quick          # 0.5 MB per protocol, 3 rounds
    python bench/bench_guard.py --instructions   # and instructions counted by callgrind
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anthropic  # noqa: E402
import httpx2  # noqa: E402
import openai  # noqa: E402

import fastsse  # noqa: E402
from fastsse.guard import Transport  # noqa: E402
from loadtests.wire import build_corpus  # noqa: E402

CHUNK = 4096
KEY = "sk-bench"


class Served(httpx2.SyncByteStream):
    def __init__(self, body: bytes, pause_after_first: float = 0.0) -> None:
        self.body, self.pause = body, pause_after_first

    def __iter__(self):
        body = self.body
        for start in range(0, len(body), CHUNK):
            yield body[start : start + CHUNK]
            if start == 0 and self.pause:
                time.sleep(self.pause)


class Provider:
    """An httpx2 transport that answers each request with the next stream of its list."""

    def __init__(self, streams: list[bytes], pause_after_first: float = 0.0) -> None:
        self.streams, self.next, self.pause = streams, 0, pause_after_first

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = self.streams[self.next % len(self.streams)]
        self.next += 1
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Served(body, self.pause), request=request
        )


def client(protocol: str, transport):
    http = httpx2.Client(transport=transport)
    if protocol == "anthropic":
        return anthropic.Anthropic(base_url="http://provider.test", api_key=KEY, max_retries=0, http_client=http)
    return openai.OpenAI(base_url="http://provider.test/v1", api_key=KEY, max_retries=0, http_client=http)


def read_one(protocol: str, sdk) -> int:
    """One streamed answer through the SDK, as an application reads it; the events read."""
    events = 0
    if protocol == "chat":
        for _ in sdk.chat.completions.create(model="m", stream=True, messages=[{"role": "user", "content": "x"}]):
            events += 1
    elif protocol == "responses":
        for _ in sdk.responses.create(model="m", input="x", stream=True):
            events += 1
    else:
        for _ in sdk.messages.create(
            model="m", max_tokens=64, stream=True, messages=[{"role": "user", "content": "x"}]
        ):
            events += 1
    return events


def cpu_per_stream(protocol: str, streams: list[bytes], rounds: int) -> dict:
    """Each stream read both ways in turn (which goes first alternates), so that the machine's
    drift falls on both alike; each way's best round."""
    verdicts: Counter = Counter()
    plain = client(protocol, httpx2.MockTransport(Provider(streams)))
    guarded = client(
        protocol,
        Transport(httpx2.MockTransport(Provider(streams)), on_verdict=lambda v, r: verdicts.update([v.category])),
    )
    best = {"plain": float("inf"), "guarded": float("inf")}
    clock = time.thread_time
    for _ in range(rounds):
        spent = {"plain": 0.0, "guarded": 0.0}
        for n in range(len(streams)):
            for mode in ("plain", "guarded") if n % 2 == 0 else ("guarded", "plain"):
                started = clock()
                read_one(protocol, plain if mode == "plain" else guarded)
                spent[mode] += clock() - started
        for mode in spent:
            best[mode] = min(best[mode], spent[mode] / len(streams))
    return {**best, "verdicts": dict(verdicts)}


def instructions(protocol: str, megabytes: float) -> dict:
    """Instructions per stream, each way, counted by callgrind (the machine's noise does not
    move them): one process per way reads the corpus once, one only builds it; the difference
    is the reading."""
    runs = {}
    for mode in ("plain", "guarded"):
        for reps in (0, 1):
            command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
            command += [__file__, "--count-one", protocol, mode, str(reps), "--megabytes", str(megabytes)]
            runs[mode, reps] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    counted = {}
    for key, process in runs.items():
        _, stderr = process.communicate(timeout=3600)
        found = re.search(r"Collected : (\d+)", stderr)
        if process.returncode or not found:
            raise SystemExit(f"callgrind failed for {key}: {stderr[-500:]}")
        counted[key] = int(found[1])
    streams = len(build_corpus(protocol, int(megabytes * 1e6), seed=7))
    return {mode: (counted[mode, 1] - counted[mode, 0]) / streams for mode in ("plain", "guarded")}


def count_one(protocol: str, mode: str, reps: int, megabytes: float) -> None:
    streams = build_corpus(protocol, int(megabytes * 1e6), seed=7)
    inner = httpx2.MockTransport(Provider(streams))
    sdk = client(protocol, Transport(inner) if mode == "guarded" else inner)
    read_one(protocol, client(protocol, Transport(httpx2.MockTransport(Provider(streams[:1])))))  # imports alike
    for _ in range(reps):
        for _ in streams:
            read_one(protocol, sdk)


def first_event_seconds(protocol: str, stream: bytes, guard: bool, times: int = 30) -> float:
    took = []
    for _ in range(times):
        provider = httpx2.MockTransport(Provider([stream], pause_after_first=0.1))
        sdk = client(protocol, Transport(provider) if guard else provider)
        started = time.perf_counter()
        if protocol == "chat":
            answer = sdk.chat.completions.create(model="m", stream=True, messages=[{"role": "user", "content": "x"}])
        elif protocol == "responses":
            answer = sdk.responses.create(model="m", input="x", stream=True)
        else:
            answer = sdk.messages.create(
                model="m", max_tokens=64, stream=True, messages=[{"role": "user", "content": "x"}]
            )
        iterator = iter(answer)
        next(iterator)
        took.append(time.perf_counter() - started)
        for _ in iterator:
            pass
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="0.5 MB per protocol, 3 rounds")
    parser.add_argument("--megabytes", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions with callgrind (1 MB, minutes)"
    )
    parser.add_argument("--count-one", nargs=3, metavar=("PROTOCOL", "MODE", "REPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count_one:
        protocol, mode, reps = args.count_one
        count_one(protocol, mode, int(reps), args.megabytes)
        return
    megabytes, rounds = (0.5, 3) if args.quick else (args.megabytes, args.rounds)
    print(
        f"fastsse {fastsse.__version__} ({fastsse.IMPLEMENTATION}); openai {openai.__version__}, "
        f"anthropic {anthropic.__version__}, httpx2 {httpx2.__version__}; python {sys.version.split()[0]}"
    )
    print(f"{megabytes:g} MB of varied healthy streams per protocol, {CHUNK} B chunks, best of {rounds} rounds\n")
    print(f"{'protocol':<10} {'streams':>7} {'SDK alone':>12} {'SDK + guard':>12} {'guard adds':>10}  verdicts")
    worst = 0.0
    for protocol in ("chat", "responses", "anthropic"):
        streams = build_corpus(protocol, int(megabytes * 1e6), seed=7)
        result = cpu_per_stream(protocol, streams, rounds)
        share = result["guarded"] / result["plain"] - 1
        worst = max(worst, share)
        print(
            f"{protocol:<10} {len(streams):>7} {result['plain'] * 1e6:>9.0f} µs {result['guarded'] * 1e6:>9.0f} µs "
            f"{share:>+9.1%}  {result['verdicts']}"
        )
    print(f"\nthe guard's largest share of the SDK's CPU per stream: {worst:+.1%} (target: at most +5 %)\n")
    if args.instructions:
        print("instructions per stream, callgrind, 1 MB of the same streams per protocol:")
        for protocol in ("chat", "responses", "anthropic"):
            counted = instructions(protocol, 1.0)
            share = counted["guarded"] / counted["plain"] - 1
            print(
                f"  {protocol:<10} SDK alone {counted['plain'] / 1e6:8.2f} M   SDK + guard "
                f"{counted['guarded'] / 1e6:8.2f} M   guard adds {share:+.2%}"
            )
        print()
    print("time to the first event (first chunk at once, the rest 100 ms later), median of 30:")
    for protocol in ("chat", "responses", "anthropic"):
        stream = build_corpus(protocol, 20_000, seed=11, min_bytes=10_000, max_bytes=20_000)[0]
        plain = first_event_seconds(protocol, stream, guard=False)
        guarded = first_event_seconds(protocol, stream, guard=True)
        print(f"  {protocol:<10} SDK alone {plain * 1e3:6.2f} ms   SDK + guard {guarded * 1e3:6.2f} ms")


if __name__ == "__main__":
    main()

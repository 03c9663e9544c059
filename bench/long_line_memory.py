"""Memory a Scanner holds while a line that never ends is fed to it.

A broken or hostile upstream can send one endless line.  With the default limits a Scanner
must keep at most ``max_line_bytes`` (8 MiB) of it, give up with ``limit_exceeded`` and count
the rest without holding it.  This feeds ``b"data: xxx..."`` with no newline, 64 KiB at a time,
reusing one chunk so the line itself never exists in memory, and prints one JSON line:

    python bench/long_line_memory.py [MiB]      # default 200

Run in its own interpreter (bench_scanner.py does so) that imports nothing but fastsse, so the
peak it reads is the Scanner's, not a corpus's or another library's.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, as bench_scanner

import fastsse  # noqa: E402

CHUNK_BYTES = 64 * 1024


def status_kib(field: str) -> int | None:
    """A VmRSS/VmHWM value from /proc/self/status, in KiB (None off Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the peak read afterwards is this run's."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def endless_line_chunks(total_bytes: int):
    first = b"data: " + b"x" * (CHUNK_BYTES - 6)
    rest = b"x" * CHUNK_BYTES
    yield first
    for _ in range(total_bytes // CHUNK_BYTES - 1):
        yield rest


def feed_endless_line(total_bytes: int) -> fastsse.Verdict:
    scanner = fastsse.Scanner()
    for chunk in endless_line_chunks(total_bytes):
        scanner.feed(chunk)
    return scanner.close()


def measure(total_mib: int) -> dict:
    total_bytes = total_mib * 1024 * 1024
    feed_endless_line(4 * CHUNK_BYTES)  # a short warm-up: lazy imports and first-call caches
    gc.collect()
    peak_was_reset = reset_peak_rss()
    rss_before, hwm_before = status_kib("VmRSS"), status_kib("VmHWM")
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    verdict = feed_endless_line(total_bytes)
    seconds = time.perf_counter() - start
    hwm_after = status_kib("VmHWM")
    maxrss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    # A second pass under tracemalloc: it slows allocation, so it is not the one timed.
    tracemalloc.start()
    feed_endless_line(total_bytes)
    _current, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    return {
        "implementation": fastsse.IMPLEMENTATION,
        "category": verdict.category,
        "limit": verdict.limit,
        "bytes": verdict.bytes,
        "seconds": seconds,
        "peak_was_reset": peak_was_reset,
        "rss_before_kib": rss_before,
        "hwm_before_kib": hwm_before,
        "hwm_after_kib": hwm_after,
        "maxrss_before_kib": maxrss_before,
        "maxrss_growth_kib": maxrss_after - maxrss_before,
        "tracemalloc_peak_bytes": traced_peak,
    }


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 200)))

"""wrk (a C load generator) posting streams to the service: the one way the benchmarks and the
overload run drive it (``post_streams.lua`` beside this file)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().with_name("post_streams.lua")


def post_streams(
    url: str,
    token: str,
    bodies: list[Path],
    *,
    tag: str,
    seconds: float,
    connections: int,
    threads: int = 2,
    pace_ms: int = 0,
    count_statuses: bool = False,
    timeout_s: int = 10,
    batch: int = 0,
    prepared_batches: bool = False,
) -> dict:
    """Post the stream files in turn for ``seconds``, each post with a stream_id of its own
    (``tag`` keeps runs against one database apart).  Returns what wrk measured: requests,
    seconds, rps, p50_ms, p99_ms, max_ms, non_2xx, socket_errors, timeouts; with
    ``count_statuses`` also the answers by status, the 503s without Retry-After
    (``no_retry_after``) and the posts acknowledged (201 or 200).  ``batch``: post the streams
    that many at a time to POST /v1/streams/batch (a request is then a batch; wrk cannot see
    each stream's own status in its 207, so count what was stored instead).
    ``prepared_batches``: the files are whole batches (made beforehand, compressed as their
    names end: .zst, .gz), each posted once."""
    command = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{seconds:g}s",
        "--timeout",
        f"{timeout_s}s",
        "-s",
        str(SCRIPT),
        url,
        "--",
        tag,
        str(pace_ms),
        "1" if count_statuses else "0",
        f"files:{threads}" if prepared_batches else str(batch),
        token,
        *map(str, bodies),
    ]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
    match = re.search(r"^RESULT (\{.*\})$", out, re.M)
    if not match:
        raise RuntimeError(f"wrk printed no result:\n{out}")
    result = json.loads(match[1])
    result["rps"] = result["requests"] / result["seconds"]
    if count_statuses:
        result["acknowledged"] = result["statuses"].get("201", 0) + result["statuses"].get("200", 0)
    return result
